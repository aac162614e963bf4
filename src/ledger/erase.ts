// Removing events from the ledger: `forget <key...>` (the events become eligible again) and `forget --email`
// (LGPD/GDPR erasure: the person's rows go, their keys stay known only as tombstones, and no byte of the address
// remains in the database or its WAL). Callers hold the run lock, so no live run owns a row being deleted.
import type Database from 'better-sqlite3';
import { LedgerError } from '../errors.js';
import { escapeLike, tombstoneHash } from './queries.js';

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
export function planForgetKeys(db: Database.Database, keys: string[]): ForgetKeysPlan {
  const get = db.prepare('SELECT key, status, run_id AS runId FROM events WHERE key = ?');
  const tomb = db.prepare('SELECT 1 FROM tombstones WHERE key_hash = ?').pluck();
  const plan: ForgetKeysPlan = { found: [], missing: [], tombstoned: [] };
  for (const key of new Set(keys)) {
    const row = get.get(key) as ForgetTarget | undefined;
    if (row) plan.found.push(row);
    else if (tomb.get(tombstoneHash(key))) plan.tombstoned.push(key);
    else plan.missing.push(key);
  }
  return plan;
}

/** Deletes events rows and their attempts in one transaction; the keys count as new on the next push. */
export function forgetKeys(db: Database.Database, keys: string[]): { deleted: number; attemptsDeleted: number } {
  return db.transaction(() => deleteRows(db, [...new Set(keys)])).immediate();
}

/** Finds everything an erasure of this (normalized) address would touch. */
export function planErasure(db: Database.Database, email: string): ErasurePlan {
  const found = personRows(db, email);
  const keys = new Set(found.map((r) => r.key));
  const attemptRows = db.prepare('SELECT key FROM attempts WHERE key = ?').pluck();
  let attempts = 0;
  for (const k of keys) attempts += attemptRows.all(k).length;
  const pattern = likePattern(email);
  const scrubAttempts = (
    db.prepare(`SELECT key FROM attempts WHERE detail LIKE ? ESCAPE '\\'`).pluck().all(pattern) as string[]
  ).filter((k) => !keys.has(k)).length;
  const scrubEvents = (
    db
      .prepare(`SELECT key FROM events WHERE ${EVENT_TEXT_COLUMNS.map((c) => `${c} LIKE ? ESCAPE '\\'`).join(' OR ')}`)
      .pluck()
      .all(...EVENT_TEXT_COLUMNS.map(() => pattern)) as string[]
  ).filter((k) => !keys.has(k)).length;
  const scrubRuns = db
    .prepare(`SELECT count(*) FROM runs WHERE ${RUN_TEXT_COLUMNS.map((c) => `${c} LIKE ? ESCAPE '\\'`).join(' OR ')}`)
    .pluck()
    .get(...RUN_TEXT_COLUMNS.map(() => pattern)) as number;
  return { found, attempts, scrub: { attempts: scrubAttempts, events: scrubEvents, runs: scrubRuns } };
}

/**
 * Erases a person: tombstones, then deletes, their rows (so their old events stay duplicates), scrubs the address
 * from the text of other rows, then compacts the file so no freed page or WAL frame still holds it.
 */
export function eraseEmail(db: Database.Database, email: string): ErasureResult {
  // Deleted cells are overwritten with zeros instead of only being unlinked; VACUUM then rebuilds every page.
  db.pragma('secure_delete = ON');
  const pattern = likePattern(email);
  const re = new RegExp(email.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'), 'gi');
  const scrubText = (v: string | null) => (v === null ? null : v.replace(re, ERASED));
  const counts = db
    .transaction(() => {
      const rows = personRows(db, email);
      const insTomb = db.prepare('INSERT INTO tombstones (key_hash) VALUES (?) ON CONFLICT DO NOTHING');
      let tombstonesAdded = 0;
      for (const r of rows) tombstonesAdded += insTomb.run(tombstoneHash(r.key)).changes;
      const { deleted, attemptsDeleted } = deleteRows(
        db,
        rows.map((r) => r.key),
      );

      const scrubbed = { attempts: 0, events: 0, runs: 0 };
      const attempts = db
        .prepare(`SELECT id, detail FROM attempts WHERE detail LIKE ? ESCAPE '\\'`)
        .all(pattern) as Array<{ id: number; detail: string }>;
      const updAttempt = db.prepare('UPDATE attempts SET detail = ? WHERE id = ?');
      for (const a of attempts) scrubbed.attempts += updAttempt.run(scrubText(a.detail), a.id).changes;
      for (const col of EVENT_TEXT_COLUMNS) {
        const hits = db
          .prepare(`SELECT key, ${col} AS v FROM events WHERE ${col} LIKE ? ESCAPE '\\'`)
          .all(pattern) as Array<{ key: string; v: string }>;
        const upd = db.prepare(`UPDATE events SET ${col} = ? WHERE key = ?`);
        for (const h of hits) scrubbed.events += upd.run(scrubText(h.v), h.key).changes;
      }
      for (const col of RUN_TEXT_COLUMNS) {
        const hits = db
          .prepare(`SELECT id, ${col} AS v FROM runs WHERE ${col} LIKE ? ESCAPE '\\'`)
          .all(pattern) as Array<{ id: number; v: string }>;
        const upd = db.prepare(`UPDATE runs SET ${col} = ? WHERE id = ?`);
        for (const h of hits) scrubbed.runs += upd.run(scrubText(h.v), h.id).changes;
      }
      return { deleted, attemptsDeleted, tombstonesAdded, scrubbed };
    })
    .immediate();
  const walTruncated = compact(db);
  return { ...counts, walTruncated };
}

/**
 * Rewrites the database without free pages (VACUUM), then copies the WAL back and truncates it to zero bytes.
 * Returns false when another connection held the WAL, so old frames may survive until the next checkpoint.
 */
export function compact(db: Database.Database): boolean {
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
function deleteRows(db: Database.Database, keys: string[]): { deleted: number; attemptsDeleted: number } {
  const delEvent = db.prepare('DELETE FROM events WHERE key = ?');
  const delAttempts = db.prepare('DELETE FROM attempts WHERE key = ?');
  let deleted = 0;
  let attemptsDeleted = 0;
  for (const key of keys) {
    deleted += delEvent.run(key).changes;
    attemptsDeleted += delAttempts.run(key).changes;
  }
  return { deleted, attemptsDeleted };
}

/** Rows that belong to the person: their natural key, or the address anywhere in the stored lead or the key. */
function personRows(db: Database.Database, email: string): ForgetTarget[] {
  const pattern = likePattern(email);
  // LIKE is case-insensitive for ASCII, so an address stored as typed ("Ana@X.io") is found too.
  return db
    .prepare(
      `SELECT key, status, run_id AS runId FROM events
      WHERE natural_key = ? OR lead_json LIKE ? ESCAPE '\\' OR key LIKE ? ESCAPE '\\' ORDER BY first_seen_at, key`,
    )
    .all(email, pattern, pattern) as ForgetTarget[];
}

function likePattern(value: string): string {
  return '%' + escapeLike(value) + '%';
}
