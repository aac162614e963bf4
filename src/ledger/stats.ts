// What is in a ledger, counted: behind `ledger stats`.
import { impliedAttempts } from './queries.js';
import type { LedgerStore } from './store.js';

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

/** Counts a ledger's rows by status, source and run, and measures its storage. */
export async function collectStats(store: LedgerStore): Promise<LedgerStats> {
  const db = store.sql;
  const count = async (sql: string) => (await db.get<{ n: number }>(sql))!.n;
  const byStatus = await db.all<LedgerStats['byStatus'][number]>(
    'SELECT status, failure, count(*) AS count FROM events GROUP BY status, failure ORDER BY count DESC, status, failure IS NOT NULL, failure',
  );
  const bySource = await db.all<LedgerStats['bySource'][number]>(
    'SELECT source, count(*) AS count FROM events GROUP BY source ORDER BY count DESC, source IS NOT NULL, source',
  );
  // r.command and r.status are grouped too: one run id has one of each (PostgreSQL wants them named).
  const byRun = await db.all<LedgerStats['byRun'][number]>(
    `SELECT e.run_id AS "runId", r.command AS command, r.status AS status, count(*) AS count
     FROM events e LEFT JOIN runs r ON r.id = e.run_id GROUP BY e.run_id, r.command, r.status ORDER BY e.run_id DESC NULLS LAST`,
  );
  const span = (await db.get<{ oldest: string | null; newest: string | null }>(
    'SELECT min(first_seen_at) AS oldest, max(first_seen_at) AS newest FROM events',
  ))!;
  const facts = await store.storageFacts();
  return {
    schemaVersion: facts.schemaVersion,
    events: await count('SELECT count(*) AS n FROM events'),
    byStatus,
    bySource,
    byRun,
    oldestFirstSeen: span.oldest,
    newestFirstSeen: span.newest,
    payloadsPruned: await count(
      `SELECT count(*) AS n FROM events WHERE status = 'sent' AND lead_json IS NULL AND key_kind <> 'imported'`,
    ),
    // The attempts rows, and the attempts sent rows record themselves.
    attempts: (await count('SELECT count(*) AS n FROM attempts')) + (await impliedAttempts(db, 'TRUE', [])),
    runs: await count('SELECT count(*) AS n FROM runs'),
    tombstones: await count('SELECT count(*) AS n FROM tombstones'),
    size: facts.size,
  };
}
