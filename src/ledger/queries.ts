// Read-only queries behind `ledger list`, `ledger show`, `ledger runs` and `ledger export`. Filters are built as
// SQL with bound parameters only: values a person types never become SQL text.
import { sha256 } from '../hash.js';
import { IMPLIED_ATTEMPT, IMPLIED_ATTEMPT_COLUMNS } from './rules.js';
import type { SqlDb } from './sql.js';
import type { EventStatus, KnownKey, LedgerEventRow } from './types.js';

/** The statuses an events row may have. */
export const EVENT_STATUSES: readonly EventStatus[] = ['pending', 'sent', 'failed', 'in_doubt', 'queued'];

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

/** One attempt of an event, as the attempts table records it (id null: the one its sent row records, IMPLIED_ATTEMPT). */
export interface AttemptRow {
  id: number | null;
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

/** LIKE as SQLite reads it (case-insensitive for ASCII) on either database: PostgreSQL's ILIKE. */
export function likeOp(db: SqlDb): 'LIKE' | 'ILIKE' {
  return db.dialect === 'postgres' ? 'ILIKE' : 'LIKE';
}

/** The WHERE clause (possibly empty) and its parameters for a filter. */
export function whereClause(f: EventFilter, like: 'LIKE' | 'ILIKE' = 'LIKE'): { sql: string; params: unknown[] } {
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
    parts.push(`(source = ? OR source ${like} ? ESCAPE '\\')`);
    params.push(f.source, '%/' + escapeLike(f.source));
  }
  if (f.runId !== undefined) {
    parts.push('run_id = ?');
    params.push(f.runId);
  }
  return { sql: parts.length ? 'WHERE ' + parts.join(' AND ') : '', params };
}

/** Events matching a filter, most recently updated first; `limit` 0 means all. */
export async function listEvents(
  db: SqlDb,
  f: EventFilter,
  limit: number,
): Promise<{ rows: LedgerEventRow[]; total: number }> {
  const w = whereClause(f, likeOp(db));
  const total = (await db.get<{ n: number }>(`SELECT count(*) AS n FROM events ${w.sql}`, w.params))!.n;
  const lim = limit > 0 ? `LIMIT ${Math.floor(limit)}` : '';
  const rows = await db.all<LedgerEventRow>(
    `SELECT ${EVENT_COLUMNS} FROM events ${w.sql} ORDER BY updated_at DESC, key ${lim}`,
    w.params,
  );
  return { rows, total };
}

/** Streams events matching a filter in a stable order (first seen, then key), for exports of any size. */
export function iterateEvents(db: SqlDb, f: EventFilter): AsyncIterable<LedgerEventRow> {
  const w = whereClause(f, likeOp(db));
  return db.iterate<LedgerEventRow>(
    `SELECT ${EVENT_COLUMNS} FROM events ${w.sql} ORDER BY first_seen_at, key`,
    w.params,
  );
}

/** One events row by key. */
export function getEvent(db: SqlDb, key: string): Promise<LedgerEventRow | undefined> {
  return db.get<LedgerEventRow>(`SELECT ${EVENT_COLUMNS} FROM events WHERE key = ?`, [key]);
}

/** The attempts recorded for a key, oldest first: its attempts rows, and the attempt its sent row records. */
export function attemptsFor(db: SqlDb, key: string): Promise<AttemptRow[]> {
  return db.all<AttemptRow>(
    `SELECT id, key, run_id, at, outcome, detail FROM attempts WHERE key = ?
     UNION ALL SELECT NULL, ${IMPLIED_ATTEMPT_COLUMNS} FROM events e WHERE e.key = ? AND ${IMPLIED_ATTEMPT}
     ORDER BY at, id NULLS LAST`,
    [key, key],
  );
}

/** How many of the events rows `where` picks record an attempt themselves (IMPLIED_ATTEMPT): gone with the row. */
export async function impliedAttempts(db: SqlDb, where: string, params: unknown[]): Promise<number> {
  const r = await db.get<{ n: number | string }>(
    `SELECT count(*) AS n FROM events e WHERE (${where}) AND ${IMPLIED_ATTEMPT}`,
    params,
  );
  return Number(r?.n ?? 0);
}

/** Runs by id, in id order; unknown ids are left out. */
export async function runsById(db: SqlDb, ids: number[]): Promise<RunRow[]> {
  if (!ids.length) return [];
  return db.all<RunRow>(
    `SELECT ${RUN_COLUMNS} FROM runs WHERE id IN (${ids.map(() => '?').join(',')}) ORDER BY id`,
    ids,
  );
}

/** The most recent runs first; `limit` 0 means all. */
export async function listRuns(db: SqlDb, limit: number): Promise<{ rows: RunRow[]; total: number }> {
  const total = (await db.get<{ n: number }>('SELECT count(*) AS n FROM runs'))!.n;
  const lim = limit > 0 ? `LIMIT ${Math.floor(limit)}` : '';
  return { rows: await db.all<RunRow>(`SELECT ${RUN_COLUMNS} FROM runs ORDER BY id DESC ${lim}`), total };
}

/** True when the key was erased by `forget --email` (only sha256('key|' + key) remains). */
export async function isTombstoned(db: SqlDb, key: string): Promise<boolean> {
  return !!(await db.get('SELECT 1 AS one FROM tombstones WHERE key_hash = ?', [tombstoneHash(key)]));
}

/** The columns of an events row, in the schema's order (what SELECT * reads on SQLite). */
export const EVENT_COLUMNS =
  'key, key_kind, payload_hash, natural_key, status, failure, outcome, crm_id, attempts, last_error, sink, downstream_key, lead_json, source, source_line, event_time, run_id, first_seen_at, updated_at, sent_at';
/** The columns of a runs row, in the schema's order (PostgreSQL's runs also hold the lease). */
export const RUN_COLUMNS = 'id, command, args_json, host, pid, started_at, heartbeat_at, ended_at, status, counts_json';

/** The tombstone of an erased key, as Ledger.lookupKeys looks it up. */
export function tombstoneHash(key: string): string {
  return sha256('key|' + key);
}

/** What a lookup answers for an erased key: done (a duplicate from now on), with nothing of the person kept. */
export const ERASED_KEY: KnownKey = Object.freeze({
  payloadHash: null,
  status: 'sent',
  failure: null,
  runId: null,
  tombstone: true,
});
