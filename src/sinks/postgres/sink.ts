// PostgreSQL sink: leads go into the user's own table, one row per email, by the upsert the table's unique email
// index allows. `--existing skip` is INSERT ... ON CONFLICT DO NOTHING (a person already there is `exists`, with the
// row's id read back in the same transaction); `--existing update` updates the mapped columns of that row instead.
// One transaction per batch of up to a thousand leads, one statement per step whatever the batch size (unnest over
// one array per column), on a small pool.
//
// Exactly once across crashes: the ledger commits the claim before send() and the outcome after it. A batch whose
// COMMIT was sent but not answered (a lost connection, the run killed) may or may not be in the table: its leads are
// in doubt, and the next run looks their emails up (lookupMany, a batch at a time) before sending any again. Even a
// re-send cannot make a second row: the unique index on email sees to that.
//
// Outcomes are per lead. A lead the database refuses for any reason of its own (a value that does not fit its
// column's type, a CHECK, another unique index, a trigger's RAISE EXCEPTION, any SQLSTATE that is not about the
// connection, the server or the table as a whole) fails alone, with its own error: a batch that meets such an error
// is split in halves until the refused leads stand alone. Bisecting costs nothing while no lead is refused (a batch
// is still one statement per step), and about 2·log2(1000) ≈ 20 small transactions per refused lead of a batch,
// where a savepoint per lead would cost a thousand more statements in every batch. Errors that pass with time (a
// lost connection, a deadlock, the server restarting) are retried with backoff, the batch whole; errors about the
// table or the server (a column dropped, a read-only server, a full disk) fail the batch whole, retryable.
import pg from 'pg';
import { CredentialsError, ExitCode, LeadledgerError, UsageError } from '../../errors.js';
import type { Lead } from '../../mapping/types.js';
import { chooseUrl, resolvePgConnection, type PgConnection } from './connection.js';
import { displayName, parseQualifiedName, quoteIdent, quoteQualified, type QualifiedName } from './identifier.js';
import { createTableSql, planColumns, readTable, type ColumnPlan, type TableShape } from './table.js';
import { databaseIdentity } from '../../pg-identity.js';
import type { CircuitBreaker } from '../transport/breaker.js';
import { redact } from '../transport/redact.js';
import { backoffDelay, pause, retryPolicy, withRetries } from '../transport/retry.js';
import type {
  FieldNotHeld,
  LookupResult,
  SendItem,
  SharedDatabaseWriter,
  Sink,
  SinkCapabilities,
  SinkCheck,
  SinkOutcome,
} from '../types.js';

/** The config file's `sinks.postgres` section. */
export interface PostgresSinkConfig {
  /** Lead field (email, name, first_name, ..., created_at, or a custom field) → the column that holds it. */
  columns?: Record<string, string>;
}

export interface PostgresSinkOptions {
  /** --pg-url, and the environment variable it came from (none: argv, where a password is refused). */
  url?: string;
  urlFrom?: string;
  env: Record<string, string | undefined>;
  /** --table (default leads): `name`, `schema.name`, "Quoted" parts. */
  table?: string;
  /** --create-table: create the table when it does not exist. */
  createTable?: boolean;
  existing?: 'skip' | 'update';
  config?: PostgresSinkConfig;
  /** The custom fields of the config (fields.custom), which fill the columns of their names. */
  customFields?: string[];
  /** Connections (2-4). */
  poolSize?: number;
  timeoutMs?: number;
  maxRetries?: number;
  baseDelayMs?: number;
  /**
   * The run's circuit breaker (transport/breaker.ts), as the HTTP sinks have it: connections the server refuses in a
   * row, none getting through, open it, and the batches not written are released instead of each retrying on.
   */
  breaker?: CircuitBreaker;
  /** What a person should read on stderr (a created table, a custom field with no column). */
  warn?: (message: string) => void;
}

/** The lead's standard fields and the columns named after them (table.ts LEAD_COLUMNS; email is always one). */
const LEAD_FIELD_COLUMNS: Array<[keyof Omit<Lead, 'custom'>, string]> = [
  ['name', 'name'],
  ['firstName', 'first_name'],
  ['lastName', 'last_name'],
  ['phone', 'phone'],
  ['company', 'company'],
  ['source', 'source'],
];
const NONE: readonly FieldNotHeld[] = Object.freeze([]);

/** How long a statement, or the wait for a connection, may take. */
const DEFAULT_TIMEOUT_MS = 30_000;

/** Leads per transaction. */
export const PG_MAX_BATCH = 1000;

/** Thrown from the driver's password callback: the server asked for a password and none was found. */
class NoPasswordError extends Error {}

/**
 * pg.Client whose failed connect closes its socket. An error raised on the client's side of the handshake (no
 * password to give) leaves the socket open otherwise, and pg.Pool does not close it: the process would wait for the
 * server's authentication_timeout (a minute) before it could exit.
 */
class ClosingClient extends pg.Client {
  override connect(): Promise<pg.Client>;
  override connect(callback: ((err: Error) => void) | ((err: null, c: pg.Client) => void)): void;
  override connect(callback?: ((err: Error) => void) | ((err: null, c: pg.Client) => void)): Promise<pg.Client> | void {
    const close = () =>
      (this as unknown as { connection?: { stream?: { destroy(): void } } }).connection?.stream?.destroy();
    if (!callback)
      return super.connect().catch((e: unknown) => {
        close();
        throw e;
      });
    super.connect((err: Error | null, c?: pg.Client) => {
      if (err) close();
      (callback as (err: Error | null, c?: pg.Client) => void)(err, c);
    });
  }
}

/** SQLSTATEs worth a retry: connection exceptions, serialization failure, deadlock, shutdown, too many connections. */
const TRANSIENT_STATE = /^(08...|40001|40P01|57P0[123]|53300|57014|55P03)$/;
/**
 * SQLSTATE classes about the table, the server or the session, never about one lead: the whole batch would fail
 * alike, so it is not split. 0A feature not supported, 0B/25/2D/3B transaction states, 0L/0P/2B/28 roles and
 * privileges, 24/26/34 cursors and statements, 3D/3F no such database or schema, 42 syntax or access rule (a column
 * dropped, a missing privilege), 53 insufficient resources, 55 object not in the state needed, 57 operator
 * intervention, 58 system error, 72 snapshot, F0 configuration, XX internal. Every other class (22 data, 23
 * integrity, P0 PL/pgSQL's RAISE, 09/27 triggers, 2F/38/39 routines, 44 check option, 54 program limits such as an
 * index row too large, and classes a trigger makes up) may be about one lead: its batch is split to find it.
 */
const BATCH_STATE = /^(0A|0B|0L|0P|24|25|26|28|2B|2D|34|3B|3D|3F|42|53|55|57|58|72|F0|XX)/;
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
]);

function sqlState(e: unknown): string | undefined {
  const c = (e as { code?: unknown } | null)?.code;
  return typeof c === 'string' && /^[0-9A-Z]{5}$/.test(c) ? c : undefined;
}

/**
 * A connection that could not be made (refused, unresolved, unreachable, timed out while connecting): the code the
 * breaker counts, or undefined for anything the server itself answered (a SQLSTATE, a password refused).
 */
function connectFailure(e: unknown): string | undefined {
  if (sqlState(e) || e instanceof NoPasswordError) return undefined;
  const code = (e as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && NETWORK_CODES.has(code)) return code;
  // pg.Pool's connectionTimeoutMillis: no connection within --timeout.
  return /timeout exceeded when trying to connect|connection timeout/i.test((e as Error)?.message ?? '')
    ? 'ETIMEDOUT'
    : undefined;
}

/** No answer came: the connection broke or timed out (the server may have done the work). */
function isLostConnection(e: unknown): boolean {
  const code = (e as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && NETWORK_CODES.has(code)) return true;
  if (sqlState(e)) return false;
  return /Connection terminated|connection timeout|timeout exceeded|Query read timeout|Client has encountered a connection error|not queryable/i.test(
    (e as Error)?.message ?? '',
  );
}

/** One lead to write: its position in the batch, its email and one value per planned column. */
interface Row {
  i: number;
  email: string;
  values: Array<string | null>;
  update: boolean;
}

/** How one attempt at a batch ended. */
type Attempt =
  | { kind: 'done'; outcomes: Map<number, SinkOutcome> }
  | { kind: 'unknown' | 'transient' | 'refused' | 'schema' | 'credentials' | 'stopped'; reason: string };

/** The sink for a PostgreSQL table of the user's. */
export class PostgresSink implements Sink {
  readonly name = 'postgres';
  readonly capabilities: SinkCapabilities = {
    maxBatch: PG_MAX_BATCH,
    honoursIdempotencyKey: false,
  };
  private readonly sql: Statements;
  readonly shared: SharedDatabaseWriter;
  /** The standard fields no column takes, and the custom fields one does (fieldsNotHeld). */
  private readonly unplanned: Array<{ field: keyof Omit<Lead, 'custom'>; notHeld: FieldNotHeld }>;
  private readonly customPlanned: Set<string>;
  private readonly customNotHeld = new Map<string, FieldNotHeld>();

  private constructor(
    private readonly pool: pg.Pool,
    private readonly conn: PgConnection,
    private readonly table: Required<QualifiedName>,
    private readonly plan: ColumnPlan,
    private readonly o: PostgresSinkOptions,
    database: { id: string; searchPath: string },
  ) {
    this.sql = statements(table, plan);
    const planned = new Set(plan.columns.map((c) => c.field));
    this.unplanned = LEAD_FIELD_COLUMNS.filter(([, column]) => !planned.has(column)).map(([field, column]) => ({
      field,
      notHeld: { field, why: this.noColumn(column) },
    }));
    this.customPlanned = new Set(
      plan.columns.filter((c) => c.field.startsWith('custom:')).map((c) => c.field.slice('custom:'.length)),
    );
    // The same statements as send()'s, on the ledger's connection in the ledger's transaction: nothing is retried
    // or split there; whatever the database throws rolls that transaction back, and the batch takes send() after.
    // They run under this sink's search_path (the names its table's types and defaults were read with, which the
    // ledger's connection does not have) and its statement timeout, both for that transaction only.
    this.shared = {
      database: database.id,
      write: async (client, items) => {
        await client.query(`SELECT set_config('search_path', $1, true), set_config('statement_timeout', $2, true)`, [
          database.searchPath,
          `${o.timeoutMs ?? DEFAULT_TIMEOUT_MS}`,
        ]);
        const { out, rows } = this.rowsOf(items);
        const outcomes = new Map<number, SinkOutcome>();
        for (const round of rounds(rows)) await this.writeRound(client, round, outcomes);
        for (const [i, o] of outcomes) out[i] = o;
        return out;
      },
    };
  }

  /** Connects, reads the table (creating it with --create-table) and plans the columns; refuses what cannot work. */
  static async open(o: PostgresSinkOptions): Promise<PostgresSink> {
    const { url, from } = chooseUrl(o.url, o.urlFrom, o.env);
    const conn = resolvePgConnection(url, from, o.env);
    const q = parseQualifiedName(o.table ?? 'leads');
    const timeoutMs = o.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    const pool = new pg.Pool({
      ...conn.config,
      Client: ClosingClient,
      password:
        conn.config.password ??
        (() => {
          throw new NoPasswordError('no password');
        }),
      max: Math.min(4, Math.max(2, o.poolSize ?? 4)),
      connectionTimeoutMillis: timeoutMs,
      statement_timeout: timeoutMs,
      // A backstop for a connection that goes silent without breaking: a COMMIT cut by it is in doubt.
      query_timeout: timeoutMs + 5_000,
      idleTimeoutMillis: 30_000,
    });
    // An idle connection the server closed (a restart): the pool drops it and the next checkout opens another.
    pool.on('error', () => undefined);
    try {
      const shape = await retrying(o, () => prepareTable(pool, q, o));
      const plan = planColumns(shape, {
        columns: o.config?.columns,
        customFields: o.customFields ?? [],
        update: o.existing === 'update',
      });
      for (const w of plan.warnings) o.warn?.(w);
      const database = await retrying(o, async () => ({
        id: await databaseIdentity(pool),
        searchPath: (await pool.query<{ p: string }>(`SELECT current_setting('search_path') AS p`)).rows[0]!.p,
      }));
      return new PostgresSink(pool, conn, shape.name, plan, o, database);
    } catch (e) {
      await pool.end().catch(() => undefined);
      throw startError(e, conn);
    }
  }

  /** The lead's fields that no column of the table takes. */
  fieldsNotHeld(item: SendItem): readonly FieldNotHeld[] {
    let out: FieldNotHeld[] | undefined;
    for (const u of this.unplanned) if (item.lead[u.field]) (out ??= []).push(u.notHeld);
    for (const [k, v] of Object.entries(item.lead.custom ?? {})) {
      if (v === '' || this.customPlanned.has(k)) continue;
      let f = this.customNotHeld.get(k);
      if (!f) this.customNotHeld.set(k, (f = { field: `custom.${k}`, why: this.noColumn(k) }));
      (out ??= []).push(f);
    }
    return out ?? NONE;
  }

  private noColumn(column: string): string {
    return `no column of ${displayName(this.table)} takes it: add a ${quoteIdent(column)} column, or map one in sinks.postgres.columns`;
  }

  /**
   * doctor: opening connected and found the table (its columns planned); this asks the server whether the role may
   * INSERT into it, and UPDATE it where --existing update will.
   */
  async check(): Promise<SinkCheck> {
    const r = await this.pool.query<{ ins: boolean; upd: boolean; role: string }>(
      `SELECT has_table_privilege($1, 'INSERT') AS ins, has_table_privilege($1, 'UPDATE') AS upd, current_user AS role`,
      [quoteQualified(this.table)],
    );
    const { ins, upd, role } = r.rows[0]!;
    const grant = (what: string) =>
      `GRANT ${what} ON ${quoteQualified(this.table)} TO ${quoteIdent(role)} (as the table's owner)`;
    if (!ins)
      return {
        status: 'fail',
        message: `${this.describe()}: role ${role} may not INSERT into the table`,
        hint: grant('INSERT, UPDATE'),
        exitCode: ExitCode.credentials,
      };
    if (!upd && this.o.existing === 'update')
      return {
        status: 'fail',
        message: `${this.describe()}: role ${role} may INSERT but not UPDATE (--existing update needs it)`,
        hint: grant('UPDATE'),
        exitCode: ExitCode.credentials,
      };
    return { status: 'ok', message: `${this.describe()}: connected; the table is there; role ${role} may INSERT` };
  }

  /** "PostgreSQL postgres://user@host:5432/db table public.leads": never the password. */
  describe(): string {
    return `PostgreSQL ${this.conn.display} table ${displayName(this.table)}`;
  }

  /** Writes up to PG_MAX_BATCH leads in one transaction; one outcome per item, same order. */
  async send(items: SendItem[], signal?: AbortSignal): Promise<SinkOutcome[]> {
    const { out, rows } = this.rowsOf(items);
    if (rows.length) for (const [i, o] of await this.write(rows, signal)) out[i] = o;
    return out;
  }

  /** The rows to write, and the outcomes of the leads that cannot be written (no email, a NOT NULL left empty). */
  private rowsOf(items: SendItem[]): { out: SinkOutcome[]; rows: Row[] } {
    const out: SinkOutcome[] = new Array<SinkOutcome>(items.length);
    const rows: Row[] = [];
    items.forEach((item, i) => {
      const email = item.lead.email;
      if (!email) {
        out[i] = {
          kind: 'failed',
          permanent: true,
          reason: 'no email: the postgres sink keeps one row per email address',
        };
        return;
      }
      const values = this.plan.columns.map((p) => valueOf(p.field, item));
      const missing = this.plan.columns.findIndex(
        (p, j) => values[j] === null && p.column.notNull && p.column.defaultExpr === undefined,
      );
      if (missing >= 0) {
        const p = this.plan.columns[missing]!;
        out[i] = {
          kind: 'failed',
          permanent: true,
          reason: `column ${quoteIdent(p.column.name)} is NOT NULL without a default, and the lead has no ${fieldName(p.field)}`,
        };
        return;
      }
      rows.push({
        i,
        email,
        values,
        update: item.mode === 'update' || this.o.existing === 'update',
      });
    });
    return { out, rows };
  }

  /** Looks one person up by email (a phone natural key is never in this table: not found). */
  async lookup(naturalKey: string, signal?: AbortSignal): Promise<LookupResult> {
    return (await this.lookupMany([naturalKey], signal))[0]!;
  }

  /** Looks people up by email, a thousand per query; one result per key, same order. */
  async lookupMany(naturalKeys: string[], signal?: AbortSignal): Promise<LookupResult[]> {
    const found = new Map<string, string | null>();
    const emails = [...new Set(naturalKeys.filter((k) => k.includes('@')))];
    for (let i = 0; i < emails.length; i += PG_MAX_BATCH) {
      const chunk = emails.slice(i, i + PG_MAX_BATCH);
      const res = await retrying({ ...this.o, signal }, () =>
        this.pool.query<{ id: string | null; email: string }>(this.sql.select, [chunk]),
      ).catch((e: unknown) => {
        throw this.failure(e, 'lookup');
      });
      for (const r of res.rows) found.set(r.email.toLowerCase(), r.id);
    }
    return naturalKeys.map((k) => {
      if (!found.has(k)) return { found: false };
      const id = found.get(k);
      return id != null ? { found: true, crmId: id } : { found: true };
    });
  }

  async close(): Promise<void> {
    await this.pool.end().catch(() => undefined);
  }

  /** The batch, retried while its errors pass with time, split while the database refuses some of its leads. */
  private async write(rows: Row[], signal?: AbortSignal): Promise<Map<number, SinkOutcome>> {
    const policy = retryPolicy(this.o);
    const breaker = this.o.breaker;
    // A backoff ends early when the run stops or the breaker opens.
    const waitSignal = breaker ? (signal ? AbortSignal.any([signal, breaker.signal]) : breaker.signal) : signal;
    for (let retry = 1; ; retry++) {
      // The server refused connection after connection: this batch is not written (no attempt of it committed: a
      // transient failure is one before COMMIT), its leads go back to the ledger as they were.
      if (breaker?.open) {
        const released: SinkOutcome = { kind: 'released', reason: `not sent: ${breaker.why()}` };
        return new Map(rows.map((row) => [row.i, released]));
      }
      const r = await this.attempt(rows, signal);
      if (r.kind === 'done') return r.outcomes;
      if (r.kind === 'credentials') throw new CredentialsError(r.reason);
      if (r.kind === 'refused' && rows.length > 1) {
        // Nothing of this batch was committed: halve it until the leads the database refuses stand alone.
        const half = Math.ceil(rows.length / 2);
        const a = await this.write(rows.slice(0, half), signal);
        const b = await this.write(rows.slice(half), signal);
        return new Map([...a, ...b]);
      }
      // The batch whole, under the same policy as every sink's requests.
      if (r.kind === 'transient' && retry <= policy.maxRetries && !signal?.aborted) {
        await pause(backoffDelay(policy, retry), waitSignal);
        continue;
      }
      const outcome: SinkOutcome =
        r.kind === 'unknown'
          ? { kind: 'unknown', reason: r.reason }
          : { kind: 'failed', permanent: r.kind === 'refused', reason: r.reason };
      return new Map(rows.map((row) => [row.i, outcome]));
    }
  }

  /** One transaction for the batch. Its client is released exactly once, destroyed when its state is unknown. */
  private async attempt(rows: Row[], signal?: AbortSignal): Promise<Attempt> {
    if (signal?.aborted) return { kind: 'stopped', reason: 'not sent: the run was stopped' };
    let client: pg.PoolClient;
    try {
      client = await this.pool.connect();
    } catch (e) {
      const code = connectFailure(e);
      if (code) this.o.breaker?.unreachable(code);
      return this.classify(e, false);
    }
    // A connection was made: the server is there, the breaker's count starts over.
    this.o.breaker?.reached();
    // A connection lost between two statements is an 'error' event of the client, and pg.Pool listens only while the
    // client is idle in it: unheard, it ended the process. The statement that comes next fails, and says so.
    const onClientError = (): void => undefined;
    client.on('error', onClientError);
    const release = (err?: Error): void => {
      client.off('error', onClientError);
      client.release(err);
    };
    let committing = false;
    let destroy = false;
    const work = (async (): Promise<Attempt> => {
      try {
        await client.query('BEGIN');
        const outcomes = new Map<number, SinkOutcome>();
        for (const round of rounds(rows)) await this.writeRound(client, round, outcomes);
        committing = true;
        await client.query('COMMIT');
        return { kind: 'done', outcomes };
      } catch (e) {
        if (isLostConnection(e)) destroy = true;
        else if (!committing) await client.query('ROLLBACK').catch(() => (destroy = true));
        return this.classify(e, committing);
      }
    })();
    let onAbort: (() => void) | undefined;
    const stopped = new Promise<'cut'>((resolve) => {
      onAbort = () => resolve('cut');
      signal?.addEventListener('abort', onAbort, { once: true });
    });
    const result = await Promise.race([work, stopped]);
    if (onAbort) signal?.removeEventListener('abort', onAbort);
    if (result === 'cut') {
      // Cut mid-transaction: closing the connection makes the server roll back what it has not committed, but a
      // COMMIT already on its way may land.
      void work.catch(() => undefined);
      release(new Error('send cut by the stop'));
      return { kind: 'unknown', reason: 'send cut by the stop: the batch may or may not be committed' };
    }
    release(destroy ? new Error('connection state unknown') : undefined);
    return result;
  }

  /** Writes rows of distinct emails: DO NOTHING for the skipped, an update then an upsert for the updated. */
  private async writeRound(client: pg.ClientBase, round: Row[], outcomes: Map<number, SinkOutcome>): Promise<void> {
    const skip = round.filter((r) => !r.update || !this.sql.update);
    const upd = round.filter((r) => r.update && this.sql.update);
    if (skip.length) {
      // Rows as arrays: no object per created lead (a push of a million creates most of its people here).
      const ins = await client.query<[string | null, string]>({
        text: this.sql.insertNothing,
        values: columnsOf(skip),
        rowMode: 'array',
      });
      const created = new Map<string, string | null>();
      for (const [id, email] of ins.rows) created.set(email.toLowerCase(), id);
      const rest = skip.filter((r) => !created.has(r.email));
      for (const r of skip) if (created.has(r.email)) outcomes.set(r.i, withId('created', created.get(r.email)));
      if (rest.length) {
        const sel = await client.query<{ id: string | null; email: string }>(this.sql.select, [
          rest.map((r) => r.email),
        ]);
        const there = byEmail(sel.rows);
        for (const r of rest)
          outcomes.set(
            r.i,
            there.has(r.email)
              ? withId('exists', there.get(r.email))
              : { kind: 'failed', permanent: false, reason: 'its row conflicted on email, then was gone' },
          );
      }
    }
    if (upd.length) {
      const u = await client.query<{ id: string | null; email: string }>(this.sql.update!, columnsOf(upd));
      const updated = byEmail(u.rows);
      for (const r of upd) if (updated.has(r.email)) outcomes.set(r.i, withId('updated', updated.get(r.email)));
      const rest = upd.filter((r) => !updated.has(r.email));
      if (rest.length) {
        // Not there a moment ago; if another writer inserted the person since, their row is updated instead.
        const ins = await client.query<{ id: string | null; email: string; inserted: boolean }>(
          this.sql.insertUpdate!,
          columnsOf(rest),
        );
        const got = new Map(ins.rows.map((x) => [x.email.toLowerCase(), x]));
        for (const r of rest) {
          const x = got.get(r.email);
          outcomes.set(
            r.i,
            x
              ? withId(x.inserted ? 'created' : 'updated', x.id)
              : { kind: 'failed', permanent: false, reason: 'the upsert returned no row' },
          );
        }
      }
    }
  }

  /** What an error means for the batch; `committing`: it came from the COMMIT, so the batch may be committed. */
  private classify(e: unknown, committing: boolean): Attempt {
    const state = sqlState(e);
    const reason = this.message(e);
    if (e instanceof NoPasswordError) return { kind: 'credentials', reason: this.noPassword() };
    if (committing && (isLostConnection(e) || !state))
      return { kind: 'unknown', reason: `COMMIT unanswered: ${reason}` };
    if (state === '28P01' || state === '28000' || state === '42501')
      return { kind: 'credentials', reason: `PostgreSQL at ${this.conn.display} refused: ${reason}` };
    if (isLostConnection(e) || (state && TRANSIENT_STATE.test(state))) return { kind: 'transient', reason };
    if (state && !BATCH_STATE.test(state)) return { kind: 'refused', reason: `PostgreSQL refused the lead: ${reason}` };
    // The table changed under the run (a column dropped), or anything else: the lead is not at fault; retried later.
    return { kind: 'schema', reason };
  }

  /** An error in words, without the password. */
  private message(e: unknown): string {
    const state = sqlState(e);
    return redact(`${(e as Error)?.message ?? String(e)}${state ? ` (${state})` : ''}`, this.conn.secrets);
  }

  private noPassword(): string {
    return noPasswordMessage(this.conn);
  }

  /** A LeadledgerError for an error met outside a batch (lookups). */
  private failure(e: unknown, what: string): Error {
    const a = this.classify(e, false);
    if (a.kind === 'credentials') return new CredentialsError(a.reason);
    return new LeadledgerError(`PostgreSQL ${what} failed: ${'reason' in a ? a.reason : ''}`, ExitCode.incomplete);
  }
}

/** The SQL of a planned table, built once: every identifier quoted, every value a parameter. */
interface Statements {
  insertNothing: string;
  select: string;
  update?: string;
  insertUpdate?: string;
}

function statements(table: Required<QualifiedName>, plan: ColumnPlan): Statements {
  const T = quoteQualified(table);
  const cols = plan.columns;
  const qe = quoteIdent(plan.email.name);
  const emailAt = cols.findIndex((c) => c.field === 'email');
  const unnest = `unnest(${cols.map((_, j) => `$${j + 1}::text[]`).join(', ')}) AS u(${cols.map((_, j) => `c${j}`).join(', ')})`;
  const val = (j: number) => `CAST(u.c${j} AS ${cols[j]!.column.type})`;
  const insertValue = (j: number) => {
    const d = cols[j]!.column.defaultExpr;
    // A field the lead does not have gets the column's default, as an INSERT that leaves the column out would.
    return d !== undefined ? `COALESCE(${val(j)}, ${d})` : val(j);
  };
  const target = plan.emailKey.kind === 'column' ? `(${qe})` : `(lower(${qe}))`;
  const id = plan.primaryKey ? `t.${quoteIdent(plan.primaryKey)}::text` : 'NULL::text';
  const ret = `RETURNING ${id} AS id, t.${qe}::text AS email`;
  const insert = `INSERT INTO ${T} AS t (${cols.map((c) => quoteIdent(c.column.name)).join(', ')}) SELECT ${cols.map((_, j) => insertValue(j)).join(', ')} FROM ${unnest} ON CONFLICT ${target}`;
  const select =
    plan.emailKey.kind === 'column'
      ? `SELECT ${id} AS id, t.${qe}::text AS email FROM ${T} AS t WHERE t.${qe} = ANY($1::${plan.email.type}[])`
      : `SELECT ${id} AS id, lower(t.${qe}) AS email FROM ${T} AS t WHERE lower(t.${qe}) = ANY($1::text[])`;
  // Updated: every mapped column but the email itself and created_at (when the person first came); a field the
  // lead does not have leaves its column as it is.
  const settable = cols.map((c, j) => ({ c, j })).filter(({ c }) => c.field !== 'email' && c.field !== 'created_at');
  const statementsOut: Statements = { insertNothing: `${insert} DO NOTHING ${ret}`, select };
  if (settable.length) {
    const match = plan.emailKey.kind === 'column' ? `t.${qe} = ${val(emailAt)}` : `lower(t.${qe}) = u.c${emailAt}`;
    statementsOut.update = `UPDATE ${T} AS t SET ${settable
      .map(({ c, j }) => `${quoteIdent(c.column.name)} = COALESCE(${val(j)}, t.${quoteIdent(c.column.name)})`)
      .join(', ')} FROM ${unnest} WHERE ${match} ${ret}`;
    statementsOut.insertUpdate = `${insert} DO UPDATE SET ${settable
      .map(({ c }) => {
        const q = quoteIdent(c.column.name);
        return `${q} = COALESCE(EXCLUDED.${q}, t.${q})`;
      })
      .join(', ')} ${ret}, (t.xmax = 0) AS inserted`;
  }
  return statementsOut;
}

/** Reads the table; creates it first with --create-table when it is missing, else says how to. */
async function prepareTable(pool: pg.Pool, q: QualifiedName, o: PostgresSinkOptions): Promise<TableShape> {
  const client = await pool.connect();
  try {
    const shape = await readTable(client, q);
    if (shape) return shape;
    const sql = createTableSql(q, { columns: o.config?.columns, customFields: o.customFields ?? [] });
    if (!o.createTable)
      throw new UsageError(
        `table ${displayName(q)} does not exist. This CREATE TABLE fits what leadledger writes: run it, or pass --create-table to have the push run it:\n\n${sql}`,
      );
    try {
      await client.query(sql);
      o.warn?.(`created table ${displayName(q)} (--create-table):\n${sql}`);
    } catch (e) {
      // Another run created it first: use theirs.
      if (sqlState(e) !== '42P07' && sqlState(e) !== '23505') throw e;
    }
    const created = await readTable(client, q);
    if (!created) throw new UsageError(`table ${displayName(q)} was created but cannot be read back`);
    return created;
  } finally {
    client.release();
  }
}

/** Runs fn under the sinks' retry policy (transport/retry.ts): errors that pass with time are retried. */
function retrying<T>(
  o: { maxRetries?: number; baseDelayMs?: number; signal?: AbortSignal },
  fn: () => Promise<T>,
): Promise<T> {
  return withRetries(retryPolicy(o), isTransient, fn, o.signal);
}

/** An error that passes with time: a lost connection, a deadlock, a server starting or shutting down. */
function isTransient(e: unknown): boolean {
  const state = sqlState(e);
  return !(e instanceof LeadledgerError) && (isLostConnection(e) || (!!state && TRANSIENT_STATE.test(state)));
}

/** The error a failed start ends the run with: the password's source named, the password itself never. */
function startError(e: unknown, conn: PgConnection): unknown {
  if (e instanceof LeadledgerError) return e;
  const state = sqlState(e);
  const msg = redact(`${(e as Error)?.message ?? String(e)}${state ? ` (${state})` : ''}`, conn.secrets);
  const at = `PostgreSQL at ${conn.display}`;
  if (e instanceof NoPasswordError) return new UsageError(noPasswordMessage(conn));
  if (state === '28P01' || state === '28000')
    return new CredentialsError(
      `${at} rejected the login of ${conn.target.user}: ${msg}; ${conn.passwordFrom ? `the password came from ${conn.passwordFrom}` : 'no password was found'}${conn.pgpassIgnored ? ` (${conn.pgpassIgnored})` : ''}`,
    );
  // No such database (3D000), or no such schema for --table (3F000): the names given are the user's to fix.
  if (state === '3D000' || state === '3F000') return new UsageError(`${at}: ${msg}`);
  if (state === '42501') return new CredentialsError(`${at}: ${msg}`);
  if (state?.startsWith('42')) return new UsageError(`${at}: ${msg}`);
  return new LeadledgerError(`cannot use ${at}: ${msg}`, ExitCode.incomplete);
}

function noPasswordMessage(conn: PgConnection): string {
  return (
    `PostgreSQL at ${conn.display} asks for a password for ${conn.target.user}, and none was found: ` +
    `set PGPASSWORD, add a line ${conn.target.host}:${conn.target.port}:${conn.target.database}:${conn.target.user}:<password> ` +
    `to ${conn.pgpassFile} (mode 0600), or put the URL with its password in LEADLEDGER_PG_URL or DATABASE_URL` +
    (conn.pgpassIgnored ? ` (${conn.pgpassIgnored})` : '')
  );
}

/** The value a planned field takes from an item; '' counts as absent. */
function valueOf(field: string, item: SendItem): string | null {
  const l: Lead = item.lead;
  const v =
    field === 'email'
      ? l.email
      : field === 'name'
        ? l.name
        : field === 'first_name'
          ? l.firstName
          : field === 'last_name'
            ? l.lastName
            : field === 'phone'
              ? l.phone
              : field === 'company'
                ? l.company
                : field === 'source'
                  ? l.source
                  : field === 'created_at'
                    ? item.occurredAt
                    : l.custom?.[field.slice('custom:'.length)];
  return v === undefined || v === '' ? null : v;
}

function fieldName(field: string): string {
  return field.startsWith('custom:') ? field.slice('custom:'.length) : field;
}

/** Splits rows so that no email is twice in one statement (an upsert may touch a row once per statement). */
function rounds(rows: Row[]): Row[][] {
  const out: Row[][] = [];
  const seen = new Map<string, number>();
  for (const r of rows) {
    const n = seen.get(r.email) ?? 0;
    seen.set(r.email, n + 1);
    (out[n] ??= []).push(r);
  }
  return out;
}

/** The batch's values a column at a time, each as the text[] literal its `$n::text[]` parameter takes. */
function columnsOf(rows: Row[]): string[] {
  return rows[0]!.values.map((_, j) => textArray(rows, j));
}

// What a quoted element of an array literal escapes.
const ARRAY_SPECIAL = /[\\"]/;
const ARRAY_SPECIAL_ALL = /[\\"]/g;

/**
 * Column j of the rows as a PostgreSQL array literal: the text the driver would make of the same array (every
 * element quoted, backslash and double quote escaped, NULL for null), with an element escaped only when it holds
 * one of those two. The driver's own conversion runs two replacements over every element: 3% of the deciding
 * thread of a push of a million events into this sink (bench scenario 7), whose time this takes 1.5% off.
 */
export function textArray(rows: Array<{ values: Array<string | null> }>, j: number): string {
  let out = '{';
  for (let i = 0; i < rows.length; i++) {
    const v = rows[i]!.values[j]!;
    if (i > 0) out += ',';
    if (v === null) out += 'NULL';
    else out += '"' + (ARRAY_SPECIAL.test(v) ? v.replace(ARRAY_SPECIAL_ALL, '\\$&') : v) + '"';
  }
  return out + '}';
}

function byEmail(rows: Array<{ id: string | null; email: string }>): Map<string, string | null> {
  return new Map(rows.map((r) => [r.email.toLowerCase(), r.id]));
}

function withId(kind: 'created' | 'updated' | 'exists', id: string | null | undefined): SinkOutcome {
  return id != null ? { kind, crmId: id } : { kind };
}
