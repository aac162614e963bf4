// `leadledger ledger migrate --to postgres://...`: copies a ledger (events, runs, attempts, tombstones) into an empty
// one, in one transaction of the destination, then compares the counts. The source is opened read-only and read in
// one snapshot: nothing of it changes, and a push may go on writing it meanwhile (what it writes after the snapshot
// is not copied: stop pushes to the old ledger before switching).
import { LedgerError, UsageError } from '../../errors.js';
import { EVENT_COLUMNS, RUN_COLUMNS } from '../../ledger/queries.js';
import { upgradeEmails } from '../../ledger/email-keys.js';
import { openLedgerStore } from '../../ledger/open.js';
import { PG_EMAIL_KEYS_VERSION } from '../../ledger/postgres/schema.js';
import { EMAIL_KEYS_VERSION } from '../../ledger/schema.js';
import { SqliteDb, type SqlDb } from '../../ledger/sql.js';
import type { LedgerStore } from '../../ledger/store.js';
import type { CommandContext } from '../context.js';
import { ledgerName, openExistingLedger, resolveLedger } from './access.js';

/** Options of `ledger migrate`. */
export interface LedgerMigrateOptions {
  /** The source (--ledger, LEADLEDGER_LEDGER or the default). */
  ledger?: string;
  /** The destination: a postgres:// URL (or another ledger file), which must hold no ledger rows yet. */
  to: string;
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
  const source = await openExistingLedger(from, { readonly: true, env: ctx.env });
  let dest: LedgerStore | undefined;
  try {
    dest = (await openLedgerStore(to, { env: ctx.env, cwd: ctx.cwd }))!;
    const d = dest;
    const version = (await source.storageFacts()).schemaVersion;
    const emailsAsTyped = version < (source.kind === 'sqlite' ? EMAIL_KEYS_VERSION : PG_EMAIL_KEYS_VERSION);
    const result = await snapshot(source.sql, async (src) => {
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
        for (const t of TABLES) counts[t].copied = await count(tx, t);
        const short = TABLES.filter((t) => counts[t].copied !== counts[t].source);
        if (short.length)
          throw new LedgerError(
            `ledger migrate: ${short.map((t) => `${t} ${counts[t].copied} of ${counts[t].source}`).join(', ')} arrived; nothing was kept`,
          );
        // A source read as it was, older than the emails' one form (read-only opens do not upgrade): its rows are
        // upgraded here, as the source's own next write would have (after the count, which they may lessen by merging).
        if (emailsAsTyped) await upgradeEmails(tx);
      });
      return counts;
    });
    return { ledger: ledgerName(from), to: ledgerName(to), tables: result };
  } finally {
    await dest?.close();
    await source.close();
  }
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
