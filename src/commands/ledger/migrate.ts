// `leadledger ledger migrate --to postgres://...`: copies a ledger (events, runs, attempts, tombstones) into an empty
// one, in one transaction of the destination, then compares the counts. It holds the source as a run does, recorded
// there as a run of its own: refused (exit 5, naming the run) while a push or another command holds it, or, with
// --wait, once that run is done; and no push starts on it until the copy is done. Copied while a push went on
// writing, the new ledger lacked what the push settled after the copy's snapshot: leads sent, their ledger rows not
// copied, sent again by the next push on the new ledger. The source is read in one snapshot, and nothing of it
// changes but the record of the migrate's own run.
import { accessSync, constants } from 'node:fs';
import { dirname } from 'node:path';
import { LedgerError, UsageError } from '../../errors.js';
import { EVENT_COLUMNS, RUN_COLUMNS } from '../../ledger/queries.js';
import { upgradeEmails } from '../../ledger/email-keys.js';
import { openLedgerStore } from '../../ledger/open.js';
import { PG_EMAIL_KEYS_VERSION } from '../../ledger/postgres/schema.js';
import { LedgerInUse } from '../../ledger/rules.js';
import { EMAIL_KEYS_VERSION } from '../../ledger/schema.js';
import { SqliteDb, type SqlDb } from '../../ledger/sql.js';
import { isPostgresUrl, stopKeepAlive, type LedgerStore } from '../../ledger/store.js';
import type { CommandContext } from '../context.js';
import { ledgerName, openExistingLedger, resolveLedger } from './access.js';

/** Options of `ledger migrate`. */
export interface LedgerMigrateOptions {
  /** The source (--ledger, LEADLEDGER_LEDGER or the default). */
  ledger?: string;
  /** The destination: a postgres:// URL (or another ledger file), which must hold no ledger rows yet. */
  to: string;
  /** While another run holds the source, wait for it this long (ms) instead of exiting 5 at once. */
  wait?: number;
}

/** What was copied: the rows of each table, counted in the source and in the destination after the copy. */
export interface LedgerMigrateResult {
  ledger: string;
  to: string;
  tables: Record<Table, { source: number; copied: number }>;
}

type Table = 'events' | 'runs' | 'attempts' | 'tombstones';

const COLUMNS: Record<Table, string> = {
  runs: RUN_COLUMNS,
  events: EVENT_COLUMNS,
  attempts: 'id, key, run_id, at, outcome, detail',
  tombstones: 'key_hash',
};
// Events in the order they were first seen: a SQLite ledger (schema v3) keeps them in the order they are inserted.
const ORDER: Record<Table, string> = {
  runs: 'id',
  events: 'first_seen_at, key',
  attempts: 'id',
  tombstones: 'key_hash',
};
// Runs first: the order a reader of a half-copied ledger would want, though the copy is one transaction anyway.
const TABLES: Table[] = ['runs', 'events', 'attempts', 'tombstones'];
// Rows per INSERT: 500 events of 20 columns are 10,000 parameters, below both databases' limits.
const CHUNK = 500;

/** Copies the ledger into an empty destination and checks that every table arrived whole. */
export async function ledgerMigrate(o: LedgerMigrateOptions, ctx: CommandContext): Promise<LedgerMigrateResult> {
  if (!o.to) throw new UsageError('ledger migrate needs --to <postgres://... or a file>');
  const from = resolveLedger(o.ledger, ctx);
  const to = resolveLedger(o.to, ctx);
  if (from === to) throw new UsageError('ledger migrate: --to names the ledger being copied');
  const held = await hold(from, { to: ledgerName(to) }, o.wait, ctx);
  let source: LedgerStore | undefined;
  let dest: LedgerStore | undefined;
  try {
    // Read through a store of its own, read-only: one snapshot, on PostgreSQL too (its read-only store is one
    // transaction), taken once the source is held, so that it holds all that the run before wrote.
    source = await openExistingLedger(from, { readonly: true, env: ctx.env });
    const s = source;
    dest = (await openLedgerStore(to, { env: ctx.env, cwd: ctx.cwd }))!;
    const d = dest;
    const version = (await s.storageFacts()).schemaVersion;
    const emailsAsTyped = version < (s.kind === 'sqlite' ? EMAIL_KEYS_VERSION : PG_EMAIL_KEYS_VERSION);
    const result = await snapshot(s.sql, async (src) => {
      const counts = {} as LedgerMigrateResult['tables'];
      for (const t of TABLES) counts[t] = { source: await count(src, t), copied: 0 };
      await d.sql.transaction(async (tx) => {
        for (const t of TABLES) {
          if ((await count(tx, t)) > 0)
            throw new LedgerError(
              `ledger migrate: ${ledgerName(to)} already holds ${t}; the destination must be a new, empty ledger`,
            );
        }
        for (const t of TABLES) await copy(src, tx, t);
        if (tx.dialect === 'postgres') {
          // Ids were copied as they were: the next run and attempt are numbered after them.
          for (const t of ['runs', 'attempts'] as const)
            await tx.get(
              `SELECT setval(pg_get_serial_sequence('${t}', 'id'), GREATEST((SELECT max(id) FROM ${t}), 1), (SELECT max(id) FROM ${t}) IS NOT NULL) AS v`,
            );
          // A run copied as running holds no lease: it can settle nothing here, so the next run finds it dead.
          await tx.run(`UPDATE runs SET lease_expires_at = now() WHERE status = 'running'`);
        }
        // This migrate's own run, copied as running, is done in the new ledger once this transaction commits.
        if (held.runId !== undefined)
          await tx.run(`UPDATE runs SET status = 'done', ended_at = ? WHERE id = ?`, [
            new Date().toISOString(),
            held.runId,
          ]);
        for (const t of TABLES) counts[t].copied = await count(tx, t);
        const short = TABLES.filter((t) => counts[t].copied !== counts[t].source);
        if (short.length)
          throw new LedgerError(
            `ledger migrate: ${short.map((t) => `${t} ${counts[t].copied} of ${counts[t].source}`).join(', ')} arrived; nothing was kept`,
          );
        // A source read as it was, older than the emails' one form (one this user may not write, so not held: read-only
        // opens do not upgrade; the hold's open upgrades the others): its rows are upgraded here, as the source's own
        // next write would have (after the count, which they may lessen by merging).
        if (emailsAsTyped) await upgradeEmails(tx);
      });
      return counts;
    });
    await held.finish('done', countsOf(result));
    // The new ledger's record of this run, copied while it ran, ends as the old one's does.
    const run = await held.record();
    if (run)
      await d.sql.run(
        `UPDATE runs SET status = ?, heartbeat_at = ?, ended_at = ?, counts_json = ?${d.sql.dialect === 'postgres' ? ', lease_expires_at = NULL' : ''} WHERE id = ?`,
        [run.status, run.heartbeat_at, run.ended_at, run.counts_json, run.id],
      );
    return { ledger: ledgerName(from), to: ledgerName(to), tables: result };
  } catch (e) {
    await held.finish('failed', { error: (e as Error).message });
    throw e;
  } finally {
    await dest?.close();
    await source?.close();
    await held.close();
  }
}

/** The source held for the copy: the migrate's run there (none when the source may not be written), and its end. */
interface Held {
  runId?: number;
  finish(status: 'done' | 'failed', counts: unknown): Promise<void>;
  /** The run's row as the source holds it. */
  record(): Promise<RunRecord | undefined>;
  close(): Promise<void>;
}

interface RunRecord {
  id: number;
  status: string;
  heartbeat_at: string | null;
  ended_at: string | null;
  counts_json: string | null;
}

/**
 * Takes the source ledger as a run does, and keeps it (a lease renewed on PostgreSQL, a heartbeat on SQLite) until
 * finished: while another run holds it, exit 5 naming that run, or with `waitMs` say so and wait. A ledger file
 * this user may not write is copied without: no run of this user can write it meanwhile either.
 */
async function hold(
  path: string,
  args: Record<string, unknown>,
  waitMs: number | undefined,
  ctx: CommandContext,
): Promise<Held> {
  let l: LedgerStore;
  try {
    l = await openExistingLedger(path, { readonly: false, env: ctx.env, stop: ctx.stop });
  } catch (e) {
    if (isPostgresUrl(path) || mayWrite(path)) throw e;
    ctx.warn?.(`${ledgerName(path)} may not be written here, so it is copied without holding it`);
    return { finish: async () => undefined, record: async () => undefined, close: async () => undefined };
  }
  try {
    let runId: number;
    try {
      runId = await l.startRun('ledger migrate', args, { exclusive: true });
    } catch (e) {
      if (!(e instanceof LedgerInUse) || !waitMs) throw e;
      const h = e.holder;
      ctx.warn?.(
        `ledger ${ledgerName(path)} is in use by run ${h.id} (pid ${h.pid} on ${h.host}): waiting up to ${Math.round(waitMs / 1000)} s for it`,
      );
      runId = await l.startRun('ledger migrate', args, { exclusive: true, waitMs });
    }
    const lease = l.keepAlive(runId);
    let finished = false;
    return {
      runId,
      async finish(status, counts) {
        if (finished) return;
        finished = true;
        stopKeepAlive(lease);
        await l.finishRun(runId, status, counts);
      },
      record: () =>
        l.sql.get<RunRecord>('SELECT id, status, heartbeat_at, ended_at, counts_json FROM runs WHERE id = ?', [runId]),
      async close() {
        stopKeepAlive(lease);
        await l.close();
      },
    };
  } catch (e) {
    await l.close();
    throw e;
  }
}

// Whether this user may write a ledger file: the file, and its folder (where SQLite keeps its -wal and -shm).
function mayWrite(file: string): boolean {
  try {
    accessSync(file, constants.W_OK);
    accessSync(dirname(file), constants.W_OK);
    return true;
  } catch {
    return false;
  }
}

// Only the numbers go into the run record.
function countsOf(tables: LedgerMigrateResult['tables']): Record<string, number> {
  return Object.fromEntries(Object.entries(tables).map(([t, c]) => [`${t}.copied`, c.copied]));
}

// Reads the source in one snapshot: SQLite's read transaction (a read-only store on PostgreSQL already is one).
async function snapshot<T>(db: SqlDb, fn: (db: SqlDb) => Promise<T>): Promise<T> {
  if (!(db instanceof SqliteDb)) return fn(db);
  db.raw.exec('BEGIN');
  try {
    return await fn(db);
  } finally {
    db.raw.exec('COMMIT');
  }
}

async function count(db: SqlDb, t: Table): Promise<number> {
  return (await db.get<{ n: number }>(`SELECT count(*) AS n FROM ${t}`))!.n;
}

async function copy(src: SqlDb, dest: SqlDb, t: Table): Promise<void> {
  const cols = COLUMNS[t].split(',').map((c) => c.trim());
  const row = `(${cols.map(() => '?').join(', ')})`;
  let batch: unknown[][] = [];
  const flush = async () => {
    if (!batch.length) return;
    await dest.run(`INSERT INTO ${t} (${cols.join(', ')}) VALUES ${batch.map(() => row).join(', ')}`, batch.flat());
    batch = [];
  };
  for await (const r of src.iterate<Record<string, unknown>>(`SELECT ${COLUMNS[t]} FROM ${t} ORDER BY ${ORDER[t]}`)) {
    batch.push(cols.map((c) => r[c] ?? null));
    if (batch.length >= CHUNK) await flush();
  }
  await flush();
}
