// What is in a ledger, counted: behind `ledger stats`.
import type Database from 'better-sqlite3';
import { existsSync, statSync } from 'node:fs';

/** Counts and sizes of one ledger. */
export interface LedgerStats {
  schemaVersion: number;
  events: number;
  byStatus: Array<{ status: string; failure: string | null; count: number }>;
  bySource: Array<{ source: string | null; count: number }>;
  byRun: Array<{ runId: number | null; command: string | null; status: string | null; count: number }>;
  oldestFirstSeen: string | null;
  newestFirstSeen: string | null;
  /** Sent rows whose payload was pruned (lead_json NULL), of those not imported. */
  payloadsPruned: number;
  attempts: number;
  runs: number;
  tombstones: number;
  /** Bytes on disk: the database and its -wal and -shm files (WAL mode keeps recent writes in -wal). */
  size: { db: number; wal: number; shm: number; total: number };
}

/** Counts a ledger's rows by status, source and run, and measures its files. */
export function collectStats(db: Database.Database, file: string): LedgerStats {
  const count = (sql: string) => (db.prepare(sql).get() as { n: number }).n;
  const byStatus = db
    .prepare('SELECT status, failure, count(*) AS count FROM events GROUP BY status, failure ORDER BY count DESC')
    .all() as LedgerStats['byStatus'];
  const bySource = db
    .prepare('SELECT source, count(*) AS count FROM events GROUP BY source ORDER BY count DESC, source')
    .all() as LedgerStats['bySource'];
  const byRun = db
    .prepare(
      `SELECT e.run_id AS runId, r.command AS command, r.status AS status, count(*) AS count
       FROM events e LEFT JOIN runs r ON r.id = e.run_id GROUP BY e.run_id ORDER BY e.run_id DESC`,
    )
    .all() as LedgerStats['byRun'];
  const span = db.prepare('SELECT min(first_seen_at) AS oldest, max(first_seen_at) AS newest FROM events').get() as {
    oldest: string | null;
    newest: string | null;
  };
  const size = (p: string) => (existsSync(p) ? statSync(p).size : 0);
  const files = { db: size(file), wal: size(file + '-wal'), shm: size(file + '-shm') };
  return {
    schemaVersion: db.pragma('user_version', { simple: true }) as number,
    events: count('SELECT count(*) AS n FROM events'),
    byStatus,
    bySource,
    byRun,
    oldestFirstSeen: span.oldest,
    newestFirstSeen: span.newest,
    payloadsPruned: count(
      `SELECT count(*) AS n FROM events WHERE status = 'sent' AND lead_json IS NULL AND key_kind <> 'imported'`,
    ),
    attempts: count('SELECT count(*) AS n FROM attempts'),
    runs: count('SELECT count(*) AS n FROM runs'),
    tombstones: count('SELECT count(*) AS n FROM tombstones'),
    size: { ...files, total: files.db + files.wal + files.shm },
  };
}
