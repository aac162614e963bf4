// The ledger on PostgreSQL (`--ledger postgres://...`), for several hosts sharing one ledger. The rules are rules.ts's,
// the same as SQLite's; here they are carried out in PostgreSQL's terms:
// - a claim is ONE statement per batch, INSERT ... SELECT FROM unnest(...) ON CONFLICT (key) DO NOTHING RETURNING key,
//   committed (autocommit) before the send, and only while the claiming run's lease is current;
// - a settle is one statement per batch, fenced on the owning run and the pending status;
// - a run is a lease on the server's clock (runs.lease_expires_at), renewed by a heartbeat; a run whose lease ran out
//   is dead wherever it ran (no pid is asked), and takeovers happen under a transaction-scoped advisory lock;
// - a read-only open (dry-run, the commands that only read) reads everything in one READ ONLY transaction.
import { hostname } from 'node:os';
import pg from 'pg';
import { LeadledgerError, LedgerError, UsageError } from '../../errors.js';
import { ERASED_KEY, EVENT_COLUMNS, tombstoneHash } from '../queries.js';
import {
  claimsOf,
  LeaseKeeper,
  leaseTimes,
  ORPHAN_DETAIL,
  ORPHAN_ERROR,
  holdsAgainst,
  ORPHAN_PENDING,
  IMPLIED_ATTEMPT,
  MATERIALIZE_ATTEMPT,
  RELEASED_RUN,
  importedPersonKey,
  settleRecords,
  takeLedger,
  type SettleRecord,
  type LeaseTimes,
  type RunHolder,
} from '../rules.js';
import { numberParams, type SqlDb } from '../sql.js';
import type { LedgerStore, SharedWriteResult, StorageFacts } from '../store.js';
import { databaseIdentity } from '../../pg-identity.js';
import { redactPgUrl } from '../../pg-url.js';
import type { ClaimInput, EventStatus, KnownKey, LedgerEventRow, Settlement } from '../types.js';
import { copyField, copyIn } from './copy.js';
import { PG_MIGRATIONS, PG_OLDEST_READABLE_VERSION, PG_SCHEMA_VERSION, PG_TABLES } from './schema.js';

/** The schema a ledger lives in unless ?schema= or LEADLEDGER_LEDGER_SCHEMA names another. */
export const DEFAULT_SCHEMA = 'leadledger';

const INT8 = 20;
const now = () => new Date().toISOString();

type Queryable = pg.Pool | pg.PoolClient;

/** A SqlDb on a pool (each statement its own transaction) or on one client (inside a transaction). */
export class PgDb implements SqlDb {
  readonly dialect = 'postgres' as const;
  private static cursors = 0;

  constructor(
    private readonly q: Queryable,
    private readonly pool: pg.Pool,
    /** True when q is a client inside a transaction (transaction() and iterate() then use it as it is). */
    private readonly inTx: boolean,
    /** The ledger's name, for the errors. */
    private readonly name: string,
  ) {}

  async all<T>(sql: string, params: unknown[] = []): Promise<T[]> {
    return (await query(this.q, this.name, numberParams(sql), params)).rows as T[];
  }

  async get<T>(sql: string, params: unknown[] = []): Promise<T | undefined> {
    return (await this.all<T>(sql, params))[0];
  }

  async run(sql: string, params: unknown[] = []): Promise<number> {
    return (await query(this.q, this.name, numberParams(sql), params)).rowCount ?? 0;
  }

  // A cursor, FETCHed a page at a time: rows stream, and one transaction reads them all from one snapshot.
  async *iterate<T>(sql: string, params: unknown[] = []): AsyncIterable<T> {
    const name = `leadledger_cursor_${++PgDb.cursors}`;
    const client = this.inTx
      ? (this.q as pg.PoolClient)
      : await this.pool.connect().catch((e: unknown) => Promise.reject(pgFailure(e, this.name)));
    let began = false;
    try {
      if (!this.inTx) {
        await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
        began = true;
      }
      await client.query(`DECLARE ${name} NO SCROLL CURSOR FOR ${numberParams(sql)}`, params);
      for (;;) {
        const page = await client.query(`FETCH FORWARD 2000 FROM ${name}`);
        for (const r of page.rows) yield r as T;
        if (page.rows.length < 2000) break;
      }
      await client.query(`CLOSE ${name}`);
      if (began) await client.query('COMMIT');
    } catch (e) {
      if (began) await client.query('ROLLBACK').catch(() => undefined);
      throw pgFailure(e, this.name);
    } finally {
      if (!this.inTx) client.release();
    }
  }

  async transaction<T>(fn: (tx: SqlDb) => Promise<T>): Promise<T> {
    if (this.inTx) return fn(this);
    const client = await this.pool.connect().catch((e: unknown) => Promise.reject(pgFailure(e, this.name)));
    try {
      await client.query('BEGIN');
      const r = await fn(new PgDb(client, this.pool, true, this.name));
      await client.query('COMMIT');
      return r;
    } catch (e) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw pgFailure(e, this.name);
    } finally {
      client.release();
    }
  }
}

/**
 * An error of the ledger's database as the ledger's (exit 5, naming it): a server gone, a connection refused, a
 * statement refused. Thrown here, where it is known to be the ledger's: the postgres sink's errors are its own.
 */
export function pgFailure(e: unknown, name: string): unknown {
  if (e instanceof LeadledgerError || !(e instanceof Error)) return e;
  return new LedgerError(`ledger ${name}: ${e.message}`);
}

// One statement; its error is the ledger's.
async function query<R extends pg.QueryResultRow>(
  q: Queryable,
  name: string,
  sql: string,
  params: unknown[],
): Promise<pg.QueryResult<R>> {
  try {
    return await q.query<R>(sql, params);
  } catch (e) {
    throw pgFailure(e, name);
  }
}

// A claim of a batch: rows this run inserts, only while its lease is current. $1-$9 are one array per column.
const CLAIM_SQL = `INSERT INTO events (key, key_kind, payload_hash, natural_key, status, sink, downstream_key, lead_json, source, source_line, event_time, run_id, first_seen_at, updated_at)
  SELECT k, kk, ph, nk, 'pending', $10, dk, lj, src, ln, et, $11, $12, $12
  FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::int[], $9::text[])
    AS c(k, kk, ph, nk, dk, lj, src, ln, et)
  WHERE EXISTS (SELECT 1 FROM runs WHERE id = $11 AND status = 'running' AND lease_expires_at > now())
  ON CONFLICT (key) DO NOTHING RETURNING key`;

function claimParams(rows: ClaimInput[], runId: number, sink: string): unknown[] {
  return [
    rows.map((c) => c.key),
    rows.map((c) => c.keyKind),
    rows.map((c) => c.payloadHash),
    rows.map((c) => c.naturalKey ?? null),
    rows.map((c) => c.downstreamKey),
    rows.map((c) => c.leadJson),
    rows.map((c) => c.source),
    rows.map((c) => c.line),
    rows.map((c) => c.eventTime ?? null),
    sink,
    runId,
    now(),
  ];
}

// A settle of a batch: fenced on the owning run and the pending status; its attempts recorded either way (those that
// moved their row to sent, by the row: IMPLIED_ATTEMPT). A key with several records: the first changes the row, as
// on SQLite, and each is an attempts row. The INSERT's WHERE is mayBeInRow's rule (rules.ts), c.crm_id being the
// row's CRM id after the settle.
//
// Both joins are written so that their cost is linear in the batch, whatever the table's statistics say:
// - The rows are found by key (the primary key), one lookup per record, or on a small table by a hash join over it.
//   The pending status and the run are compared with columns of f (f.expect, f.run), not constants: no restriction
//   on events is left for the statistics to misjudge. A constant status let the planner start from the
//   events_status index, whose statistics know nothing of the pending rows (they live between a claim and its
//   settle, and ANALYZE seldom sees one), and join each of the batches' pending rows to every record of this one: a
//   push of a million events to the JSONL sink on this ledger spent 11.5 s in one such settle. A constant run, one
//   the statistics have not seen yet (every run, at its start), was estimated at one row, and the planner rescanned
//   the batch for each row of a sequential scan: 4.3 s a settle on a ledger of a few thousand events.
// - The records are matched to the changed rows by a hash join (LEFT JOIN). NOT EXISTS under an OR is no anti-join:
//   it scanned the changed rows once per record, 2,000 × 2,000 for a JSONL batch (120 ms a settle).
// Exported, with its parameters, for the test of its plan (test/ledger/pg-plans.test.ts).
export const SETTLE_SQL = `WITH s AS (
    SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[],
      $12::boolean[]) WITH ORDINALITY AS s(key, status, outcome, failure, crm, error, attempt, detail, repeated, ord)
  ), changed AS (
    UPDATE events e SET status = f.status, outcome = f.outcome, failure = f.failure, crm_id = COALESCE(f.crm, e.crm_id),
      last_error = f.error, attempts = e.attempts + 1, updated_at = $9,
      sent_at = CASE WHEN f.status = 'sent' THEN $9 ELSE e.sent_at END,
      lead_json = CASE WHEN f.status = 'sent' AND $11 THEN NULL ELSE e.lead_json END
    FROM (SELECT DISTINCT ON (key) *, 'pending'::text AS expect, $10::bigint AS run FROM s ORDER BY key, ord) f
    WHERE e.key = f.key AND e.run_id = f.run AND e.status = f.expect RETURNING e.key, e.crm_id
  )
  INSERT INTO attempts (key, run_id, at, outcome, detail) SELECT s.key, $10, $9, s.attempt, s.detail
    FROM s LEFT JOIN changed c ON c.key = s.key
    WHERE s.status <> 'sent' OR s.repeated OR c.key IS NULL OR (s.crm IS NULL AND c.crm_id IS NOT NULL)
    ORDER BY s.ord`;

export function settleParams(rec: SettleRecord[], runId: number, dropSentPayloads: boolean): unknown[] {
  return [
    rec.map((s) => s.key),
    rec.map((s) => s.status),
    rec.map((s) => s.outcome),
    rec.map((s) => s.failure),
    rec.map((s) => s.crmId),
    rec.map((s) => s.error),
    rec.map((s) => s.attempt),
    rec.map((s) => s.detail),
    now(),
    runId,
    dropSentPayloads,
    rec.map((s) => s.repeated),
  ];
}

// A claim of rows already in the ledger (a replay of failed or in-doubt events, a retry): only while the row is in one
// of the statuses it is claimed from, and the run's lease is current. Linear in the batch whatever the statistics
// say, as the settle is (by key, or on a smaller table by a hash join over it): the statuses are a column of a
// MATERIALIZED list, not constants the events_status index could serve. A replay right after a run that failed
// 800,000 events (statistics taken before, when all were sent) read every failed row through that index for each
// batch of 2,000 keys: 258 ms a batch, and more as the failures grow.
// Exported for the test of its plan (test/ledger/pg-plans.test.ts).
export const CLAIM_EXISTING_SQL = `WITH c AS MATERIALIZED (SELECT k, ?::text[] AS expect FROM unnest(?::text[]) AS c(k))
  UPDATE events e SET status = 'pending', run_id = ?, sink = ?, updated_at = ?
  FROM c WHERE e.key = c.k AND e.status = ANY(c.expect)
    AND EXISTS (SELECT 1 FROM runs WHERE id = ? AND status = 'running' AND lease_expires_at > now())
  RETURNING e.key`;

// A release: the rows this run inserted and never sent removed, the others back to the status they were claimed from.
// Like the settle, it is linear in the batch whatever the statistics say (by key, or on a smaller table by a hash
// join over it): the pending status and the run are compared with columns of a MATERIALIZED list (opaque to the
// planner), not constants the planner could misjudge.
// Exported for the test of their plans (test/ledger/pg-plans.test.ts).
export const RELEASE_DROP_SQL = `WITH d AS MATERIALIZED (
    SELECT k, 'pending'::text AS expect, ?::bigint AS run FROM unnest(?::text[]) AS d(k)
  )
  DELETE FROM events e USING d WHERE e.key = d.k AND e.run_id = d.run AND e.status = d.expect`;
export const RELEASE_BACK_SQL = `WITH b AS MATERIALIZED (
    SELECT *, 'pending'::text AS expect, ?::bigint AS run FROM unnest(?::text[], ?::text[]) AS b(key, status)
  ), moved AS (
    UPDATE events e SET status = b.status, updated_at = ?, run_id = ${RELEASED_RUN('b.status', 'e')} FROM b
    WHERE e.key = b.key AND e.run_id = b.run AND e.status = b.expect RETURNING e.key
  )
  INSERT INTO attempts (key, run_id, at, outcome, detail) SELECT key, ?, ?, 'released', ? FROM moved`;

// The events of a batch the sink wrote in this same transaction, written in their final status by one COPY
// (claimWriteSettle): one write per event, no pending row, no update. The tables are named with their schema: the
// sink's statements ran under its own search_path.
const SETTLED_COLUMNS =
  'key, key_kind, payload_hash, natural_key, status, failure, outcome, crm_id, attempts, last_error, sink, ' +
  'downstream_key, lead_json, source, source_line, event_time, run_id, first_seen_at, updated_at, sent_at';

/** The settled events rows of a batch in COPY's text format, SETTLED_COLUMNS in order. */
function settledCopyText(
  rows: ClaimInput[],
  settled: Map<string, SettleRecord>,
  sink: string,
  runId: number,
  at: string,
  dropSentPayloads: boolean,
): string {
  // The fields every row of the batch shares, escaped once.
  const tail = `\t${copyField(runId)}\t${copyField(at)}\t${copyField(at)}\t`;
  const sinkField = copyField(sink);
  let out = '';
  for (const c of rows) {
    const s = settled.get(c.key);
    // Every key written has its outcome; one without would be recorded as nothing it is: the batch rolls back.
    if (!s) throw new Error(`no outcome for event ${c.key}`);
    const sent = s.status === 'sent';
    out +=
      copyField(c.key) +
      '\t' +
      copyField(c.keyKind) +
      '\t' +
      copyField(c.payloadHash) +
      '\t' +
      copyField(c.naturalKey) +
      '\t' +
      copyField(s.status) +
      '\t' +
      copyField(s.failure) +
      '\t' +
      copyField(s.outcome) +
      '\t' +
      copyField(s.crmId) +
      '\t1\t' +
      copyField(s.error) +
      '\t' +
      sinkField +
      '\t' +
      copyField(c.downstreamKey) +
      '\t' +
      copyField(sent && dropSentPayloads ? null : c.leadJson) +
      '\t' +
      copyField(c.source) +
      '\t' +
      copyField(c.line) +
      '\t' +
      copyField(c.eventTime) +
      tail +
      (sent ? copyField(at) : '\\N') +
      '\n';
  }
  return out;
}

/** The attempts rows of a batch's events that were not sent (those sent, their row records: IMPLIED_ATTEMPT). */
function settledAttemptsSql(schema: string): string {
  return `INSERT INTO ${schema}.attempts (key, run_id, at, outcome, detail)
    SELECT key, $4, $5, outcome, detail FROM unnest($1::text[], $2::text[], $3::text[]) WITH ORDINALITY AS a(key, outcome, detail, ord)
    ORDER BY ord`;
}

// Whether the run still holds its lease, on the clock as it is now (the transaction's now() is when it began,
// before the sink's write): the last statement before the COMMIT of a shared write. Not locked: another run that
// marks this one crashed between the check and the COMMIT finds no pending row of the batch to take (its events go
// in settled), and a claim of one of its keys waits for this transaction's insert, then conflicts with it.
function leaseHeldSql(schema: string): string {
  return `SELECT 1 AS held FROM ${schema}.runs WHERE id = $1 AND status = 'running' AND lease_expires_at > clock_timestamp()`;
}

// The events columns a push's statements filter on: keys claimed and looked up, people, pending rows, a run's own.
const ANALYZE_COLUMNS = 'key, natural_key, status, run_id';

/** Where a ledger URL points: the connection, and the schema that holds the ledger. */
export interface PgTarget {
  config: pg.PoolConfig;
  schema: string;
  /** The URL without a password, for messages. */
  name: string;
}

/** Reads a postgres:// URL: ?schema= (else LEADLEDGER_LEDGER_SCHEMA, else "leadledger"); PGPASSWORD and ~/.pgpass apply. */
export function pgTarget(url: string, env: Record<string, string | undefined>): PgTarget {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new UsageError(`--ledger: cannot read the PostgreSQL URL '${redactPgUrl(url)}'`);
  }
  const schema = u.searchParams.get('schema') ?? env.LEADLEDGER_LEDGER_SCHEMA ?? DEFAULT_SCHEMA;
  u.searchParams.delete('schema');
  // The password from the environment goes into the URL the driver reads: its URL parse overrides a separate field.
  if (!u.password && env.PGPASSWORD) u.password = encodeURIComponent(env.PGPASSWORD);
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(schema))
    throw new UsageError(`--ledger: the schema name '${schema}' must be lower-case letters, digits and _`);
  const config: pg.PoolConfig = {
    connectionString: u.toString(),
    // A sink in the ledger's database writes each batch on one of these, for as long as the batch takes (--concurrency
    // of them at once, 4 by default): the lease's renewals and the lookups need connections left beside them.
    max: 10,
    application_name: 'leadledger',
    // Every statement of the ledger names its tables unqualified: they are the schema's.
    options: `-c search_path=${schema}`,
    // count(*) and ids are bigint: numbers, as SQLite gives them (ids and counts stay far below 2^53).
    types: {
      getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
        oid === INT8 ? (v: string) => Number(v) : textParser(oid, format)) as typeof pg.types.getTypeParser,
    },
  };
  // Shown without the password, and without the rest of the query string, which may carry one (?sslpassword=).
  const shown = new URL(u.toString());
  if (shown.password) shown.password = '***';
  shown.search = '';
  shown.hash = '';
  if (schema !== DEFAULT_SCHEMA) shown.searchParams.set('schema', schema);
  return { config, schema, name: shown.toString() };
}

// The driver's own parser of a type (typed: its declaration returns any).
const textParser = pg.types.getTypeParser as (oid: number, format?: 'text' | 'binary') => (v: string) => unknown;

/**
 * Opens the ledger in a PostgreSQL database: created (schema and tables) and migrated on first writable use;
 * undefined when read-only and the database holds no ledger in that schema yet.
 */
export async function openPostgresLedger(
  url: string,
  opts: { readonly: boolean; env: Record<string, string | undefined> },
): Promise<PostgresLedger | undefined> {
  const target = pgTarget(url, opts.env);
  const pool = new pg.Pool(target.config);
  // An idle client's error (the server went away) must not crash the process: the next query reports it.
  pool.on('error', () => undefined);
  let client: pg.PoolClient | undefined;
  try {
    if (opts.readonly) {
      client = await pool.connect();
      await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
      const version = await schemaVersion(client, target);
      if (version === undefined) {
        await client.query('COMMIT');
        client.release();
        await pool.end();
        return undefined;
      }
      if (version > PG_SCHEMA_VERSION) throw newerSchema(target, version);
      // An older ledger is read as it is while nothing read has changed since (as SQLite's); the next writing run
      // migrates it.
      if (version < PG_OLDEST_READABLE_VERSION)
        throw new LedgerError(
          `ledger ${target.name} needs a schema upgrade (v${version} → v${PG_SCHEMA_VERSION}); run a command that writes it first`,
        );
      return new PostgresLedger(pool, client, target, true, opts.env);
    }
    await migrate(pool, target);
    const database = await databaseIdentity(pool);
    return new PostgresLedger(pool, undefined, target, false, opts.env, database);
  } catch (e) {
    client?.release();
    await pool.end().catch(() => undefined);
    if (e instanceof LedgerError || e instanceof UsageError) throw e;
    throw new LedgerError(`cannot open ledger ${target.name}: ${(e as Error).message}`);
  }
}

function newerSchema(t: PgTarget, version: number): LedgerError {
  return new LedgerError(
    `ledger ${t.name} has schema version ${version}, newer than this leadledger (${PG_SCHEMA_VERSION}): upgrade leadledger`,
  );
}

// The version in the schema's ledger_meta; undefined when there is no ledger there. A schema that holds tables but
// no ledger_meta is someone else's: refused, never written. Whether ledger_meta is there and whether other tables are
// is asked in one statement, so of one snapshot: asked in two, a run that found no ledger_meta, then the tables of
// the ledger another run had just created, took that new ledger for someone else's tables and stopped (exit 5; two
// runs starting at once on a new database, as cron on several hosts does). Exported for the test of that race.
export async function schemaVersion(q: Pick<pg.ClientBase, 'query'>, t: PgTarget): Promise<number | undefined> {
  const found = await q.query<{ meta: number; tables: number }>(
    `SELECT count(*) FILTER (WHERE c.relname = 'ledger_meta' AND c.relkind = 'r')::int AS meta, count(*)::int AS tables
     FROM pg_class c JOIN pg_namespace s ON s.oid = c.relnamespace WHERE s.nspname = $1 AND c.relkind IN ('r', 'v', 'm', 'p')`,
    [t.schema],
  );
  if (found.rows[0]!.meta === 0) {
    if (found.rows[0]!.tables > 0)
      throw new LedgerError(
        `schema ${t.schema} of ${t.name} holds tables that are not a leadledger ledger; it was left untouched (pass ?schema=<another> in the URL)`,
      );
    return undefined;
  }
  const r = await q.query<{ app: string; version: number }>(`SELECT app, version FROM ${t.schema}.ledger_meta`);
  if (r.rows[0]?.app !== 'leadledger')
    throw new LedgerError(`schema ${t.schema} of ${t.name} is not a leadledger ledger; it was left untouched`);
  return r.rows[0].version;
}

// Creates and migrates the schema in one transaction, under an advisory lock taken for that transaction only (safe
// behind PgBouncer): two runs starting at once on a new database migrate it once.
async function migrate(pool: pg.Pool, t: PgTarget): Promise<void> {
  const c = await pool.connect();
  try {
    // Most runs find the schema current: asked first without the lock.
    const seen = await schemaVersion(c, t);
    if (seen === PG_SCHEMA_VERSION) return;
    if (seen !== undefined && seen > PG_SCHEMA_VERSION) throw newerSchema(t, seen);
    await c.query('BEGIN');
    try {
      await c.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`leadledger:schema:${t.schema}`]);
      let version = await schemaVersion(c, t);
      if (version === undefined) {
        await c.query(`CREATE SCHEMA IF NOT EXISTS ${t.schema}`);
        await c.query(
          `CREATE TABLE ${t.schema}.ledger_meta (id integer PRIMARY KEY CHECK (id = 1), app text NOT NULL, version integer NOT NULL)`,
        );
        await c.query(`INSERT INTO ${t.schema}.ledger_meta (id, app, version) VALUES (1, 'leadledger', 0)`);
        version = 0;
      }
      if (version > PG_SCHEMA_VERSION) throw newerSchema(t, version);
      for (let v = version; v < PG_SCHEMA_VERSION; v++) {
        const step = PG_MIGRATIONS[v]!;
        if (typeof step === 'string') await c.query(step);
        else await step(new PgDb(c, pool, true, t.name));
      }
      await c.query(`UPDATE ${t.schema}.ledger_meta SET version = $1`, [PG_SCHEMA_VERSION]);
      await c.query('COMMIT');
    } catch (e) {
      await c.query('ROLLBACK').catch(() => undefined);
      throw e;
    }
  } finally {
    c.release();
  }
}

/** The ledger on PostgreSQL. */
export class PostgresLedger implements LedgerStore {
  readonly kind = 'postgres' as const;
  readonly path: string;
  dropSentPayloads = false;
  readonly sql: PgDb;
  readonly lease: LeaseTimes;

  constructor(
    private readonly pool: pg.Pool,
    /** The read-only transaction's client (read-only opens only). */
    private readonly roClient: pg.PoolClient | undefined,
    readonly target: PgTarget,
    readonly readonly: boolean,
    env: Record<string, string | undefined>,
    /** Writable opens: the database and role (pg-identity.ts), for a sink that can share its transactions. */
    readonly database?: string,
  ) {
    this.path = target.name;
    this.sql = roClient ? new PgDb(roClient, pool, true, target.name) : new PgDb(pool, pool, false, target.name);
    this.lease = leaseTimes(env);
  }

  private q(): Queryable {
    return this.roClient ?? this.pool;
  }

  // Statistics. A push that fills a ledger outruns autovacuum's ANALYZE, and without statistics the planner takes
  // `natural_key = ANY($1)` to match most of the table: the people lookup of every batch scanned events whole, half
  // the server's time in bench scenario 8 (its plan with statistics: an index scan, 4.5 ms against 37 ms at 160,000
  // rows). So the store analyzes events itself once it has inserted 10,000 rows, and again each time that count has
  // grown tenfold: two ANALYZEs (each a sample of 30,000 rows) in a push of a million. Statistics need not follow the
  // table's growth: the planner scales their row counts by the table's pages, and the people are counted as a share
  // of the rows (n_distinct < 0), so a sample at 100,000 rows still plans the lookup at 800,000 as an index scan.
  // With one ANALYZE per doubling, seven in bench scenario 8, they took 1.23 s of the server's time; now 0.20 s. Only
  // of the columns the push's lookups filter on (ANALYZE_COLUMNS): the sample costs the server half as much as with
  // all twenty, and autovacuum analyzes the others for the ledger commands in its own time. On a connection of its
  // own, not waited for: a failure (another role's table, a server going away) only leaves the statistics as they
  // were. It skips a table another session holds locked (a VACUUM, an index build) rather than wait, holding a
  // connection and, at close(), the run's end.
  private inserted = 0;
  private analyzeAt = 10_000;
  private analyzing: Promise<void> | undefined;

  private noteInserted(n: number): void {
    this.inserted += n;
    if (this.inserted < this.analyzeAt || this.analyzing) return;
    this.analyzeAt = this.inserted * 10;
    this.analyzing = this.pool
      .query(`ANALYZE (SKIP_LOCKED) ${this.target.schema}.events (${ANALYZE_COLUMNS})`)
      .then(
        () => undefined,
        () => undefined,
      )
      .finally(() => {
        this.analyzing = undefined;
      });
  }

  // One statement, on the read-only transaction or the pool; its error is the ledger's.
  private query<R extends pg.QueryResultRow = pg.QueryResultRow>(
    sql: string,
    params: unknown[] = [],
  ): Promise<pg.QueryResult<R>> {
    return query<R>(this.q(), this.path, sql, params);
  }

  async lookupKeys(keys: string[]): Promise<Map<string, KnownKey>> {
    const out = new Map<string, KnownKey>();
    if (!keys.length) return out;
    const r = await this.query<{
      key: string;
      payload_hash: string | null;
      status: EventStatus;
      failure: KnownKey['failure'];
      run_id: number | null;
    }>('SELECT key, payload_hash, status, failure, run_id FROM events WHERE key = ANY($1::text[])', [keys]);
    for (const row of r.rows)
      out.set(row.key, { payloadHash: row.payload_hash, status: row.status, failure: row.failure, runId: row.run_id });
    const absent = keys.filter((k) => !out.has(k));
    if (absent.length) {
      const hashes = new Map(absent.map((k) => [tombstoneHash(k), k]));
      const t = await this.query<{ key_hash: string }>(
        'SELECT key_hash FROM tombstones WHERE key_hash = ANY($1::text[])',
        [[...hashes.keys()]],
      );
      for (const row of t.rows) out.set(hashes.get(row.key_hash)!, ERASED_KEY);
    }
    return out;
  }

  async lookupDelivered(naturalKeys: string[]): Promise<Map<string, string>> {
    const out = new Map<string, string>();
    if (!naturalKeys.length) return out;
    const r = await this.query<{ natural_key: string; key: string }>(
      `SELECT natural_key, key FROM events WHERE natural_key = ANY($1::text[]) AND status IN ('sent', 'pending', 'in_doubt', 'queued')`,
      [naturalKeys],
    );
    for (const row of r.rows) if (!out.has(row.natural_key)) out.set(row.natural_key, row.key);
    return out;
  }

  async getLeadJson(key: string): Promise<string | undefined> {
    const r = await this.query<{ lead_json: string | null }>('SELECT lead_json FROM events WHERE key = $1', [key]);
    return r.rows[0]?.lead_json ?? undefined;
  }

  /**
   * Takes the ledger for a run. Each try is one transaction under an advisory lock: runs whose lease ran out are
   * marked crashed, then the run is inserted with its lease, unless (exclusive) a live run holds the ledger.
   */
  startRun(
    command: string,
    args: Record<string, unknown>,
    opts: { exclusive: boolean; waitMs?: number },
  ): Promise<number> {
    return takeLedger(
      this.path,
      opts.waitMs,
      () =>
        this.sql.transaction(async (tx) => {
          await tx.get('SELECT pg_advisory_xact_lock(hashtextextended(?, 0)) AS locked', [
            `leadledger:runs:${this.target.schema}`,
          ]);
          await tx.run(
            `UPDATE runs SET status = 'crashed', ended_at = ?, lease_expires_at = NULL WHERE status = 'running' AND (lease_expires_at IS NULL OR lease_expires_at < now())`,
            [now()],
          );
          if (opts.exclusive) {
            const live = (
              await tx.all<RunHolder & { command: string }>(
                `SELECT id, host, pid, command FROM runs WHERE status = 'running' ORDER BY id`,
              )
            ).find((r) => holdsAgainst(r.command, command));
            if (live) return { id: live.id, host: live.host, pid: live.pid };
          }
          const t = now();
          const r = await tx.get<{ id: number }>(
            `INSERT INTO runs (command, args_json, host, pid, started_at, heartbeat_at, status, lease_expires_at)
             VALUES (?, ?, ?, ?, ?, ?, 'running', now() + ? * interval '1 millisecond') RETURNING id`,
            [command, JSON.stringify(args), hostname(), process.pid, t, t, this.lease.ttlMs],
          );
          return r!.id;
        }),
      (ms) => new Promise((res) => setTimeout(res, ms)),
    );
  }

  /** Renews the run's lease on a timer; live() turns false when it cannot (deliver/ then starts no more sends). */
  keepAlive(runId: number): LeaseKeeper {
    return new LeaseKeeper(this.lease, async () => {
      // Renewed only while still current: a lease that ran out may already have been taken over.
      const n = await this.sql.run(
        `UPDATE runs SET heartbeat_at = ?, lease_expires_at = now() + ? * interval '1 millisecond'
         WHERE id = ? AND status = 'running' AND lease_expires_at >= now()`,
        [now(), this.lease.ttlMs, runId],
      );
      return n === 1;
    });
  }

  async finishRun(runId: number, status: 'done' | 'failed' | 'interrupted', counts: unknown): Promise<void> {
    await this.sql.run(
      `UPDATE runs SET status = ?, ended_at = ?, counts_json = ?, lease_expires_at = NULL WHERE id = ?`,
      [status, now(), JSON.stringify(counts), runId],
    );
  }

  /** Marks runs whose lease ran out crashed, then their pending rows (and any no running run owns) in doubt. */
  markOrphansInDoubt(): Promise<number> {
    const t = now();
    return this.sql.transaction(async (tx) => {
      await tx.run(
        `UPDATE runs SET status = 'crashed', ended_at = ?, lease_expires_at = NULL WHERE status = 'running' AND (lease_expires_at IS NULL OR lease_expires_at < now())`,
        [t],
      );
      const r = await tx.get<{ n: number }>(
        `WITH moved AS (
           UPDATE events SET status = 'in_doubt', updated_at = ?, last_error = ? WHERE ${ORPHAN_PENDING} RETURNING key
         ), noted AS (
           INSERT INTO attempts (key, run_id, at, outcome, detail) SELECT key, NULL, ?, 'unknown', ? FROM moved RETURNING 1
         ) SELECT count(*) AS n FROM moved`,
        [t, ORPHAN_ERROR, t, ORPHAN_DETAIL],
      );
      return r!.n;
    });
  }

  /**
   * Claims new events: one INSERT ... ON CONFLICT (key) DO NOTHING RETURNING key for the batch, committed before any
   * send, and only while the run's lease is current. Only the keys it inserted are this run's to send.
   */
  async claimNew(items: ClaimInput[], runId: number, sink: string): Promise<Set<string>> {
    const rows = claimsOf(items);
    if (!rows.length) return new Set();
    const r = await this.query<{ key: string }>(CLAIM_SQL, claimParams(rows, runId, sink));
    this.noteInserted(r.rows.length);
    return new Set(r.rows.map((x) => x.key));
  }

  /** Claims rows already in the ledger: one UPDATE guarded by the expected statuses (and the run's lease). */
  async claimExisting(keys: string[], runId: number, fromStatuses: EventStatus[], sink: string): Promise<Set<string>> {
    if (!keys.length) return new Set();
    const claim = (tx: SqlDb) =>
      tx.all<{ key: string }>(CLAIM_EXISTING_SQL, [fromStatuses, keys, runId, sink, now(), runId]);
    if (!fromStatuses.includes('sent')) return new Set((await claim(this.sql)).map((x) => x.key));
    // A sent row taken again keeps its last attempt, which only the row recorded, as an attempts row; the rows are
    // locked first, so that of two runs taking them only the one that moves them writes it.
    return this.sql.transaction(async (tx) => {
      await tx.run(
        `WITH e AS (SELECT * FROM events WHERE key = ANY(?::text[]) AND status = 'sent' FOR UPDATE)
         ${MATERIALIZE_ATTEMPT} FROM e WHERE ${IMPLIED_ATTEMPT}`,
        [keys],
      );
      return new Set((await claim(tx)).map((x) => x.key));
    });
  }

  /** Commits the outcomes of sends in one statement: only rows this run still owns as pending change. */
  async settle(settlements: Settlement[], runId: number): Promise<void> {
    const rec = settleRecords(settlements);
    if (!rec.length) return;
    await this.query(SETTLE_SQL, settleParams(rec, runId, this.dropSentPayloads));
  }

  /**
   * The sink's write and the settled events in one transaction on one connection (LedgerStore.claimWriteSettle).
   * An error before the COMMIT rolls it all back. A COMMIT that goes unanswered is asked after, on another
   * connection: a key of the batch in the ledger under this run means the transaction landed, whole.
   */
  async claimWriteSettle(
    items: ClaimInput[],
    runId: number,
    sink: string,
    write: (client: pg.ClientBase) => Promise<Settlement[]>,
    signal?: AbortSignal,
  ): Promise<SharedWriteResult> {
    const rows = claimsOf(items);
    if (!rows.length) return { kind: 'committed' };
    if (signal?.aborted) return { kind: 'rolled_back', reason: 'not begun: the run was stopped' };
    let client: pg.PoolClient;
    try {
      client = await this.pool.connect();
    } catch (e) {
      return { kind: 'rolled_back', reason: (e as Error).message };
    }
    let committing = false;
    let released = false;
    const release = (error?: Error) => {
      if (released) return;
      released = true;
      client.release(error);
    };
    // Cut by the hard stop: the connection is closed, so the server rolls back what is not committed.
    const cut = () => release(new Error('cut by the stop'));
    signal?.addEventListener('abort', cut, { once: true });
    // Stopped while the connection was being taken: the listener came too late to hear it.
    if (signal?.aborted) cut();
    try {
      await client.query('BEGIN');
      // The leads first, then their events in their final status: one write per event, no pending row, no update.
      // Should another run hold one of the keys, the whole transaction is rolled back and the batch takes the
      // ordinary path, whose claim tells who has each key.
      const settled = new Map(settleRecords(await write(client)).map((r) => [r.key, r]));
      const schema = this.target.schema;
      const at = now();
      const text = settledCopyText(rows, settled, sink, runId, at, this.dropSentPayloads);
      try {
        await copyIn(client, `${schema}.events (${SETTLED_COLUMNS})`, text);
      } catch (e) {
        // Another run holds one of the keys: the ordinary path's claim tells which.
        if (e instanceof pg.DatabaseError && e.code === '23505' && e.table === 'events') {
          await client.query('ROLLBACK');
          return { kind: 'rolled_back', reason: 'another run holds some of these events' };
        }
        throw e;
      }
      const unsent = rows.map((c) => settled.get(c.key)!).filter((r) => r.status !== 'sent');
      if (unsent.length)
        await client.query(settledAttemptsSql(schema), [
          unsent.map((r) => r.key),
          unsent.map((r) => r.attempt),
          unsent.map((r) => r.detail),
          runId,
          at,
        ]);
      if (!(await client.query(leaseHeldSql(schema), [runId])).rows.length) {
        await client.query('ROLLBACK');
        return { kind: 'rolled_back', reason: "the run's lease ran out" };
      }
      committing = true;
      await client.query('COMMIT');
      this.noteInserted(rows.length);
      return { kind: 'committed' };
    } catch (e) {
      const reason = (e as Error).message;
      // The server answered with an error: the transaction did not commit.
      if (!committing || e instanceof pg.DatabaseError) {
        if (!released) await client.query('ROLLBACK').catch(() => release(new Error('connection state unknown')));
        return { kind: 'rolled_back', reason };
      }
      release(new Error('connection state unknown'));
      if (signal?.aborted) return { kind: 'unknown', reason: `COMMIT cut by the stop: ${reason}` };
      try {
        const landed = await this.pool.query<{ key: string }>(
          `SELECT key FROM events WHERE key = ANY($1::text[]) AND run_id = $2 LIMIT 1`,
          [rows.map((r) => r.key), runId],
        );
        return landed.rows.length ? { kind: 'committed' } : { kind: 'rolled_back', reason };
      } catch {
        return { kind: 'unknown', reason: `COMMIT unanswered: ${reason}` };
      }
    } finally {
      signal?.removeEventListener('abort', cut);
      release();
    }
  }

  /** As SQLite's release: in one transaction, inserted rows removed, re-claimed ones back to their status. */
  async release(items: Array<{ key: string; to: EventStatus | null }>, runId: number, detail: string): Promise<void> {
    if (!items.length) return;
    const t = now();
    const drop = items.filter((i) => i.to === null).map((i) => i.key);
    const back = items.filter((i) => i.to !== null);
    await this.sql.transaction(async (tx) => {
      if (drop.length) await tx.run(RELEASE_DROP_SQL, [runId, drop]);
      if (back.length)
        await tx.run(RELEASE_BACK_SQL, [runId, back.map((i) => i.key), back.map((i) => i.to), t, runId, t, detail]);
    });
  }

  async rowsInStatus(status: EventStatus, sink?: string): Promise<LedgerEventRow[]> {
    return this.sql.all<LedgerEventRow>(
      `SELECT ${EVENT_COLUMNS} FROM events WHERE status = ? ${sink ? 'AND sink = ?' : ''} ORDER BY first_seen_at, key`,
      sink ? [status, sink] : [status],
    );
  }

  async rowsByKeys(keys: string[]): Promise<LedgerEventRow[]> {
    if (!keys.length) return [];
    const rows = await this.sql.all<LedgerEventRow>(`SELECT ${EVENT_COLUMNS} FROM events WHERE key = ANY(?::text[])`, [
      keys,
    ]);
    const byKey = new Map(rows.map((r) => [r.key, r]));
    const out: LedgerEventRow[] = [];
    for (const k of keys) if (byKey.has(k)) out.push(byKey.get(k)!);
    return out;
  }

  async storeLead(key: string, leadJson: string, payloadHash: string): Promise<void> {
    await this.sql.run(
      `UPDATE events SET lead_json = ?, payload_hash = ?, updated_at = ? WHERE key = ? AND status <> 'pending'`,
      [leadJson, payloadHash, now(), key],
    );
  }

  async importDelivered(
    entries: Array<{ key?: string; naturalKey?: string; crmId?: string }>,
    source: string,
  ): Promise<{ added: number; present: number }> {
    const t = now();
    // A person imported without an event key gets a derived key: the email itself never becomes a key.
    const keys = entries.map((e) => e.key ?? importedPersonKey(e.naturalKey));
    // One key twice in one statement: the first is inserted, as SQLite's loop does.
    const first = new Map<string, number>();
    keys.forEach((k, i) => first.has(k) || first.set(k, i));
    const idx = [...first.values()];
    const r = await this.query(
      `INSERT INTO events (key, key_kind, natural_key, status, outcome, crm_id, source, first_seen_at, updated_at, sent_at)
       SELECT k, 'imported', nk, 'sent', 'imported', crm, $4, $5, $5, $5 FROM unnest($1::text[], $2::text[], $3::text[]) AS i(k, nk, crm)
       ON CONFLICT (key) DO NOTHING`,
      [
        idx.map((i) => keys[i]),
        idx.map((i) => entries[i]!.naturalKey ?? null),
        idx.map((i) => entries[i]!.crmId ?? null),
        source,
        t,
      ],
    );
    const added = r.rowCount ?? 0;
    return { added, present: entries.length - added };
  }

  async storageFacts(): Promise<StorageFacts> {
    const v = await this.sql.get<{ version: number }>('SELECT version FROM ledger_meta');
    const s = await this.sql.get<{ n: number | null }>(
      `SELECT sum(pg_total_relation_size(c.oid))::bigint AS n FROM pg_class c JOIN pg_namespace s ON s.oid = c.relnamespace
       WHERE s.nspname = ? AND c.relkind = 'r'`,
      [this.target.schema],
    );
    const db = s?.n ?? 0;
    return { schemaVersion: v?.version ?? 0, size: { db, wal: 0, shm: 0, total: db } };
  }

  /** The schema's tables and columns against what leadledger writes: the problems found. */
  async integrity(): Promise<string[]> {
    const cols = await this.sql.all<{ t: string; c: string }>(
      `SELECT table_name AS t, string_agg(column_name::text, ',' ORDER BY ordinal_position) AS c
       FROM information_schema.columns WHERE table_schema = ? GROUP BY table_name`,
      [this.target.schema],
    );
    const found = new Map(cols.map((r) => [r.t, r.c]));
    const problems: string[] = [];
    for (const [table, expected] of Object.entries(PG_TABLES)) {
      const got = found.get(table);
      if (got === undefined) problems.push(`table ${table} is missing`);
      else if (got !== expected) problems.push(`table ${table} has columns ${got}, expected ${expected}`);
    }
    return problems;
  }

  /** VACUUM FULL of the tables: no dead row version of what was erased stays in their files. */
  async compact(): Promise<boolean> {
    try {
      await this.query('VACUUM FULL events, attempts, runs, tombstones');
      return true;
    } catch {
      return false;
    }
  }

  async close(): Promise<void> {
    await this.analyzing;
    if (this.roClient) {
      await this.roClient.query('COMMIT').catch(() => undefined);
      this.roClient.release();
    }
    await this.pool.end();
  }
}
