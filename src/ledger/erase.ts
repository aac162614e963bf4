// Removing events from the ledger: `forget <key...>` (the events become eligible again) and `forget --email`
// (LGPD/GDPR erasure: the person's rows go, their keys stay known only as tombstones, and no byte of the address
// remains in the database or its WAL). Callers hold the run lock, so no live run owns a row being deleted.
import type Database from 'better-sqlite3';
import { emailSpellings } from '../email.js';
import { LedgerError } from '../errors.js';
import { escapeLike, impliedAttempts, likeOp, tombstoneHash } from './queries.js';
import { SqliteDb, type SqlDb } from './sql.js';
import type { LedgerStore } from './store.js';

/** An events row as a forget plan shows it. */
export interface ForgetTarget {
  key: string;
  status: string;
  runId: number | null;
}

/** What `forget <key...>` would delete, and the keys it cannot. */
export interface ForgetKeysPlan {
  found: ForgetTarget[];
  /** Keys not in the ledger at all. */
  missing: string[];
  /** Keys not in events because they were erased: they stay known as duplicates and are left alone. */
  tombstoned: string[];
}

/** What an erasure would remove: the person's rows, and where the address lingers in other rows' text. */
export interface ErasurePlan {
  found: ForgetTarget[];
  /** Attempts of the rows being deleted (they go with them). */
  attempts: number;
  /** Other rows whose text mentions the address: it is replaced by [erased]. */
  scrub: { attempts: number; events: number; runs: number };
}

/** What an erasure did, including whether the compaction left no old page behind. */
export interface ErasureResult {
  deleted: number;
  attemptsDeleted: number;
  tombstonesAdded: number;
  scrubbed: { attempts: number; events: number; runs: number };
  /** False when another connection kept the WAL from being emptied: old pages may hold the address until it is. */
  walTruncated: boolean;
}

/** Replaces the erased address in free text. */
export const ERASED = '[erased]';
/** Columns of events rows that are free text an address could be quoted in (errors, file names, sink targets). */
const EVENT_TEXT_COLUMNS = ['last_error', 'source', 'sink', 'crm_id'] as const;
const RUN_TEXT_COLUMNS = ['args_json', 'counts_json'] as const;

/** Looks up the keys to forget, sorting them into found, tombstoned and missing. */
export async function planForgetKeys(db: SqlDb, keys: string[]): Promise<ForgetKeysPlan> {
  const plan: ForgetKeysPlan = { found: [], missing: [], tombstoned: [] };
  for (const key of new Set(keys)) {
    const row = await db.get<ForgetTarget>('SELECT key, status, run_id AS "runId" FROM events WHERE key = ?', [key]);
    if (row) plan.found.push(row);
    else if (await db.get('SELECT 1 AS one FROM tombstones WHERE key_hash = ?', [tombstoneHash(key)]))
      plan.tombstoned.push(key);
    else plan.missing.push(key);
  }
  return plan;
}

/** Deletes events rows and their attempts in one transaction; the keys count as new on the next push. */
export function forgetKeys(db: SqlDb, keys: string[]): Promise<{ deleted: number; attemptsDeleted: number }> {
  return db.transaction((tx) => deleteRows(tx, [...new Set(keys)]));
}

/** Finds everything an erasure of this (normalized) address would touch, in any of its spellings. */
export async function planErasure(db: SqlDb, email: string): Promise<ErasurePlan> {
  const found = await personRows(db, email);
  const keys = new Set(found.map((r) => r.key));
  let attempts = 0;
  for (const k of keys)
    attempts +=
      (await db.all('SELECT key FROM attempts WHERE key = ?', [k])).length +
      (await impliedAttempts(db, 'key = ?', [k]));
  const mentions = (columns: readonly string[]) => mentionOf(db, email, columns);
  const inDetail = mentions(['detail']);
  const scrubAttempts = (
    await db.all<{ key: string }>(`SELECT key FROM attempts WHERE ${inDetail.sql}`, inDetail.params)
  ).filter((r) => !keys.has(r.key)).length;
  const inEvents = mentions(EVENT_TEXT_COLUMNS);
  const scrubEvents = (
    await db.all<{ key: string }>(`SELECT key FROM events WHERE ${inEvents.sql}`, inEvents.params)
  ).filter((r) => !keys.has(r.key)).length;
  const inRuns = mentions(RUN_TEXT_COLUMNS);
  const scrubRuns = (await db.get<{ n: number }>(`SELECT count(*) AS n FROM runs WHERE ${inRuns.sql}`, inRuns.params))!
    .n;
  return { found, attempts, scrub: { attempts: scrubAttempts, events: scrubEvents, runs: scrubRuns } };
}

/**
 * Erases a person: tombstones, then deletes, their rows (so their old events stay duplicates), scrubs the address
 * from the text of other rows, then compacts the storage so no freed page (or SQLite WAL frame) still holds it.
 */
export async function eraseEmail(store: LedgerStore, email: string): Promise<ErasureResult> {
  const db = store.sql;
  // Deleted cells are overwritten with zeros instead of only being unlinked; VACUUM then rebuilds every page.
  if (db instanceof SqliteDb) db.raw.pragma('secure_delete = ON');
  const re = new RegExp(
    emailSpellings(email)
      .map((s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
      .join('|'),
    'giu',
  );
  const scrubText = (v: string | null) => (v === null ? null : v.replace(re, ERASED));
  const counts = await db.transaction(async (tx) => {
    const rows = await personRows(tx, email);
    let tombstonesAdded = 0;
    for (const r of rows)
      tombstonesAdded += await tx.run('INSERT INTO tombstones (key_hash) VALUES (?) ON CONFLICT DO NOTHING', [
        tombstoneHash(r.key),
      ]);
    const { deleted, attemptsDeleted } = await deleteRows(
      tx,
      rows.map((r) => r.key),
    );

    const scrubbed = { attempts: 0, events: 0, runs: 0 };
    const inDetail = mentionOf(tx, email, ['detail']);
    const attempts = await tx.all<{ id: number; detail: string }>(
      `SELECT id, detail FROM attempts WHERE ${inDetail.sql}`,
      inDetail.params,
    );
    for (const a of attempts)
      scrubbed.attempts += await tx.run('UPDATE attempts SET detail = ? WHERE id = ?', [scrubText(a.detail), a.id]);
    for (const col of EVENT_TEXT_COLUMNS) {
      const inCol = mentionOf(tx, email, [col]);
      const hits = await tx.all<{ key: string; v: string }>(
        `SELECT key, ${col} AS v FROM events WHERE ${inCol.sql}`,
        inCol.params,
      );
      for (const h of hits)
        scrubbed.events += await tx.run(`UPDATE events SET ${col} = ? WHERE key = ?`, [scrubText(h.v), h.key]);
    }
    for (const col of RUN_TEXT_COLUMNS) {
      const inCol = mentionOf(tx, email, [col]);
      const hits = await tx.all<{ id: number; v: string }>(
        `SELECT id, ${col} AS v FROM runs WHERE ${inCol.sql}`,
        inCol.params,
      );
      for (const h of hits)
        scrubbed.runs += await tx.run(`UPDATE runs SET ${col} = ? WHERE id = ?`, [scrubText(h.v), h.id]);
    }
    return { deleted, attemptsDeleted, tombstonesAdded, scrubbed };
  });
  const walTruncated = await store.compact();
  return { ...counts, walTruncated };
}

/**
 * Rewrites a SQLite database without free pages (VACUUM), then copies the WAL back and truncates it to zero bytes.
 * Returns false when another connection held the WAL, so old frames may survive until the next checkpoint.
 */
export function compactSqlite(db: Database.Database): boolean {
  try {
    db.exec('VACUUM');
  } catch (e) {
    throw new LedgerError(
      `could not compact the ledger (VACUUM): ${(e as Error).message}; close other leadledger processes and run the command again`,
    );
  }
  const r = (db.pragma('wal_checkpoint(TRUNCATE)') as Array<{ busy: number; log: number; checkpointed: number }>)[0];
  // Not in WAL mode (log = -1) there is no WAL to empty: VACUUM wrote the main file directly.
  return !r || r.log === -1 || (r.busy === 0 && r.log === r.checkpointed);
}

// Rows and their attempts go together: an attempt left behind would keep the key (and its error text) around.
async function deleteRows(db: SqlDb, keys: string[]): Promise<{ deleted: number; attemptsDeleted: number }> {
  let deleted = 0;
  let attemptsDeleted = 0;
  for (const key of keys) {
    attemptsDeleted += await impliedAttempts(db, 'key = ?', [key]);
    deleted += await db.run('DELETE FROM events WHERE key = ?', [key]);
    attemptsDeleted += await db.run('DELETE FROM attempts WHERE key = ?', [key]);
  }
  return { deleted, attemptsDeleted };
}

/**
 * Rows that belong to the person: their natural key, or the address anywhere in the stored lead or the key, in any
 * of its spellings (emailSpellings: a ledger read before its upgrade, a CRM's error, hold them as they were written).
 */
function personRows(db: SqlDb, email: string): Promise<ForgetTarget[]> {
  const spellings = emailSpellings(email);
  const inText = mentionOf(db, email, ['lead_json', 'key']);
  return db.all<ForgetTarget>(
    `SELECT key, status, run_id AS "runId" FROM events
      WHERE natural_key IN (${spellings.map(() => '?').join(', ')}) OR ${inText.sql} ORDER BY first_seen_at, key`,
    [...spellings, ...inText.params],
  );
}

// SQL that is true where one of the columns mentions the address, in any of its spellings. LIKE is case-insensitive
// for ASCII (ILIKE on PostgreSQL), so an address stored as typed ("Ana@X.io") is found too.
function mentionOf(db: SqlDb, email: string, columns: readonly string[]): { sql: string; params: string[] } {
  const like = likeOp(db);
  const patterns = emailSpellings(email).map((s) => '%' + escapeLike(s) + '%');
  return {
    sql: '(' + columns.flatMap((c) => patterns.map(() => `${c} ${like} ? ESCAPE '\\'`)).join(' OR ') + ')',
    params: columns.flatMap(() => patterns),
  };
}
