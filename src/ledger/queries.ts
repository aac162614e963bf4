// Read-only queries behind `ledger list`, `ledger show`, `ledger runs` and `ledger export`. Filters are built as
// SQL with bound parameters only: values a person types never become SQL text.
import type Database from 'better-sqlite3';
import { sha256 } from '../hash.js';
import type { EventStatus, LedgerEventRow } from './types.js';

/** The statuses an events row may have. */
export const EVENT_STATUSES: readonly EventStatus[] = ['pending', 'sent', 'failed', 'in_doubt'];

/** Which timestamp --since/--until apply to. */
export type TimeField = 'first_seen' | 'updated';

/** Filters shared by list and export; every field is optional and they combine with AND. */
export interface EventFilter {
  status?: EventStatus[];
  /** Inclusive lower bound on the chosen timestamp. */
  since?: Date;
  /** Exclusive upper bound on the chosen timestamp. */
  until?: Date;
  timeField?: TimeField;
  /** An input file: matched whole, or as the last part of a path (`events.jsonl` matches `logs/events.jsonl`). */
  source?: string;
  /** Rows last touched by this run. */
  runId?: number;
}

/** One attempt of an event, as the attempts table records it. */
export interface AttemptRow {
  id: number;
  key: string;
  run_id: number | null;
  at: string;
  outcome: string;
  detail: string | null;
}

/** A runs row as stored. */
export interface RunRow {
  id: number;
  command: string;
  args_json: string;
  host: string;
  pid: number;
  started_at: string;
  heartbeat_at: string;
  ended_at: string | null;
  status: string;
  counts_json: string | null;
}

/** Escapes a value for LIKE ... ESCAPE '\'; e-mail addresses and file names hold `_`, which LIKE reads as a wildcard. */
export function escapeLike(value: string): string {
  return value.replace(/[\\%_]/g, (c) => '\\' + c);
}

/** The WHERE clause (possibly empty) and its parameters for a filter. */
export function whereClause(f: EventFilter): { sql: string; params: unknown[] } {
  const parts: string[] = [];
  const params: unknown[] = [];
  if (f.status?.length) {
    parts.push(`status IN (${f.status.map(() => '?').join(',')})`);
    params.push(...f.status);
  }
  // Timestamps are stored as toISOString() text, so string comparison is time order.
  const col = f.timeField === 'updated' ? 'updated_at' : 'first_seen_at';
  if (f.since) {
    parts.push(`${col} >= ?`);
    params.push(f.since.toISOString());
  }
  if (f.until) {
    parts.push(`${col} < ?`);
    params.push(f.until.toISOString());
  }
  if (f.source !== undefined) {
    parts.push(`(source = ? OR source LIKE ? ESCAPE '\\')`);
    params.push(f.source, '%/' + escapeLike(f.source));
  }
  if (f.runId !== undefined) {
    parts.push('run_id = ?');
    params.push(f.runId);
  }
  return { sql: parts.length ? 'WHERE ' + parts.join(' AND ') : '', params };
}

/** Events matching a filter, most recently updated first; `limit` 0 means all. */
export function listEvents(
  db: Database.Database,
  f: EventFilter,
  limit: number,
): { rows: LedgerEventRow[]; total: number } {
  const w = whereClause(f);
  const total = (db.prepare(`SELECT count(*) AS n FROM events ${w.sql}`).get(...w.params) as { n: number }).n;
  const lim = limit > 0 ? `LIMIT ${Math.floor(limit)}` : '';
  const rows = db
    .prepare(`SELECT * FROM events ${w.sql} ORDER BY updated_at DESC, key ${lim}`)
    .all(...w.params) as LedgerEventRow[];
  return { rows, total };
}

/** Streams events matching a filter in a stable order (first seen, then key), for exports of any size. */
export function iterateEvents(db: Database.Database, f: EventFilter): IterableIterator<LedgerEventRow> {
  const w = whereClause(f);
  return db
    .prepare(`SELECT * FROM events ${w.sql} ORDER BY first_seen_at, key`)
    .iterate(...w.params) as IterableIterator<LedgerEventRow>;
}

/** One events row by key. */
export function getEvent(db: Database.Database, key: string): LedgerEventRow | undefined {
  return db.prepare('SELECT * FROM events WHERE key = ?').get(key) as LedgerEventRow | undefined;
}

/** The attempts recorded for a key, oldest first. */
export function attemptsFor(db: Database.Database, key: string): AttemptRow[] {
  return db.prepare('SELECT * FROM attempts WHERE key = ? ORDER BY at, id').all(key) as AttemptRow[];
}

/** Runs by id, in id order; unknown ids are left out. */
export function runsById(db: Database.Database, ids: number[]): RunRow[] {
  if (!ids.length) return [];
  return db
    .prepare(`SELECT * FROM runs WHERE id IN (${ids.map(() => '?').join(',')}) ORDER BY id`)
    .all(...ids) as RunRow[];
}

/** The most recent runs first; `limit` 0 means all. */
export function listRuns(db: Database.Database, limit: number): { rows: RunRow[]; total: number } {
  const total = (db.prepare('SELECT count(*) AS n FROM runs').get() as { n: number }).n;
  const lim = limit > 0 ? `LIMIT ${Math.floor(limit)}` : '';
  return { rows: db.prepare(`SELECT * FROM runs ORDER BY id DESC ${lim}`).all() as RunRow[], total };
}

/** True when the key was erased by `forget --email` (only sha256('key|' + key) remains). */
export function isTombstoned(db: Database.Database, key: string): boolean {
  return !!db.prepare('SELECT 1 FROM tombstones WHERE key_hash = ?').get(tombstoneHash(key));
}

/** The tombstone of an erased key, as Ledger.lookupKeys looks it up. */
export function tombstoneHash(key: string): string {
  return sha256('key|' + key);
}
