// The store of record: which event keys were seen, claimed, sent, failed or are in doubt. SQLite through
// better-sqlite3; every write that guards a side effect is one committed statement (claim before, settle after).
import type Database from 'better-sqlite3';
import { closeSync, existsSync, mkdirSync, openSync, statSync } from 'node:fs';
import { hostname } from 'node:os';
import { dirname, resolve } from 'node:path';
import { LedgerError } from '../errors.js';
import { openReadOnly, openReadWrite } from './connect.js';
import { claimColumns, settleColumns, settlementAt, type ClaimColumns, type SettleColumns } from './columns.js';
import { compactSqlite } from './erase.js';
import { ledgerFailure } from './failure.js';
import { identifyLedgerFile } from './identify.js';
import { LedgerLookup } from './lookup.js';
import { MIGRATIONS, OLDEST_READABLE_VERSION, SCHEMA_VERSION } from './schema.js';
import {
  IMPLIED_ATTEMPT,
  importedPersonKey,
  holdsAgainst,
  ledgerInUse,
  MATERIALIZE_ATTEMPT,
  mayBeInRow,
  mayBeInRowOf,
  ORPHAN_DETAIL,
  ORPHAN_ERROR,
  ORPHAN_PENDING,
  OTHER_RUN_SINCE,
  RELEASED_RUN,
  settleRecord,
} from './rules.js';
import { SqliteDb } from './sql.js';
import type { LedgerStore, StorageFacts } from './store.js';
import type { ClaimInput, EventStatus, KnownKey, LedgerEventRow, Settlement } from './types.js';

/** Where the ledger lives unless --ledger or LEADLEDGER_LEDGER says otherwise. */
export const DEFAULT_LEDGER = '.leadledger/ledger.db';

/** The ledger a command uses: the flag, then LEADLEDGER_LEDGER, then ./.leadledger/ledger.db (as given, not resolved). */
export function ledgerPath(
  flag: string | undefined,
  env: Record<string, string | undefined>,
  configured?: string,
): string {
  // --ledger, LEADLEDGER_LEDGER, the config's "ledger", the default: flags > environment > config > defaults.
  return flag ?? (env.LEADLEDGER_LEDGER?.trim() || undefined) ?? configured ?? DEFAULT_LEDGER;
}

/** Pages in the WAL before a writing connection checkpoints it (see the constructor). */
const WAL_CHECKPOINT_PAGES = 16_384;

/** A claim of a new event: its row, pending, unless the key is in the ledger already. */
const CLAIM_NEW_SQL = `INSERT INTO events (key, key_kind, payload_hash, natural_key, status, sink, downstream_key, lead_json, source, source_line, event_time, run_id, first_seen_at, updated_at)
  VALUES (?, ?, ?, ?, 'pending', ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(key) DO NOTHING`;

/** The ledger needs a schema upgrade, and another process holds its write lock (upgrading it, most likely). */
export class MigrationBusy extends LedgerError {
  constructor(readonly file: string) {
    super(`cannot upgrade ledger ${file}: another process holds it (upgrading it too, or writing)`);
  }
}

/** A live run holding the ledger for longer than this without a heartbeat is taken to be dead. */
const HEARTBEAT_STALE_MS = 120_000;

const now = () => new Date().toISOString();

/**
 * Opens (creating when writable and missing) the ledger; undefined when read-only and the file does not exist or
 * holds nothing yet. A file that is not a leadledger ledger is refused (LedgerError) before SQLite writes to it.
 */
export function openLedger(path: string, opts: { readonly?: boolean } = {}): Ledger | undefined {
  const file = resolve(path);
  if (opts.readonly && !existsSync(file)) return undefined;
  let db: Database.Database | undefined;
  try {
    if (!opts.readonly && !existsSync(file)) {
      mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
      // Created 0600 before SQLite opens it; SQLite gives -wal and -shm the same mode.
      closeSync(openSync(file, 'a', 0o600));
    }
    // Asked before the connection below switches the file to WAL mode or migrates it: both write.
    if (identifyLedgerFile(file) === 'empty' && opts.readonly) return undefined;
    db = opts.readonly ? openReadOnly(file) : openReadWrite(file);
    return new Ledger(db, file, !!opts.readonly);
  } catch (e) {
    db?.close();
    if (e instanceof MigrationBusy) throw e;
    const failure = ledgerFailure(e, file, 'cannot open');
    if (failure instanceof LedgerError) throw failure;
    throw new LedgerError(`cannot open ledger ${file}: ${(e as Error).message}`);
  }
}

/**
 * The ledger on SQLite: lookups for decide/, claims and settlements for deliver/, runs and their lock. Its calls
 * answer at once (the storage is synchronous); the rules they follow are rules.ts's, shared with PostgreSQL.
 */
export class Ledger implements LedgerStore {
  readonly kind = 'sqlite' as const;
  private readonly stmts = new Map<string, Database.Statement>();
  private readonly lookup: LedgerLookup;
  private sqlDb: SqliteDb | undefined;
  /** Retention: drop the stored lead once an event is sent (config retention.sentPayloads = "drop"). */
  dropSentPayloads = false;

  constructor(
    readonly db: Database.Database,
    readonly path: string,
    readonly readonly: boolean,
  ) {
    db.pragma('busy_timeout = 5000');
    if (!readonly) {
      // Switching to WAL needs a moment alone with the file: two runs opening a new ledger at once may collide.
      for (let i = 0; db.pragma('journal_mode', { simple: true }) !== 'wal'; i++) {
        try {
          db.pragma('journal_mode = WAL');
        } catch (e) {
          if ((e as { code?: string }).code !== 'SQLITE_BUSY' || i > 100) throw e;
          sleepSync(20);
        }
      }
      db.pragma('synchronous = NORMAL');
      // A push commits a claim and a settle per batch, and each commit appends every page it changed to the WAL:
      // checkpointed every 1,000 pages (SQLite's default), a page changed by many batches in a row (the people
      // index's, the newest events') is copied back to the file, and synced, over and over. Every 16,384 pages
      // (64 MiB at most in the WAL), each such page is copied once per checkpoint: scenario 10 of the bench,
      // a push of a million events, 24.8 → 20.9 s. close() still empties the WAL.
      db.pragma(`wal_autocheckpoint = ${WAL_CHECKPOINT_PAGES}`);
    }
    this.migrate();
    this.lookup = new LedgerLookup(db, path);
  }

  private migrate(): void {
    const version = this.db.pragma('user_version', { simple: true }) as number;
    if (version > SCHEMA_VERSION) {
      throw new LedgerError(
        `ledger ${this.path} has schema version ${version}, newer than this leadledger (${SCHEMA_VERSION}): upgrade leadledger`,
      );
    }
    if (version === SCHEMA_VERSION) return;
    if (this.readonly) {
      // Read-only, an older ledger is read as it is when nothing read has changed since (a dry-run in a folder
      // leadledger may not write must not need an upgrade); the next writing run migrates it.
      if (version >= OLDEST_READABLE_VERSION) return;
      throw new LedgerError(
        `ledger ${this.path} needs a schema upgrade (v${version} → v${SCHEMA_VERSION}); run a command that writes it first`,
      );
    }
    // A step may rebuild a table (v3: about 5 s per million events) while holding the write lock. Another process
    // opening the ledger meanwhile gets MigrationBusy after a second, not "database is locked" after 5 s (before
    // its run starts, where --wait cannot help): openLedgerStore waits and opens again, with the event loop free
    // for Ctrl-C, and then finds the step done.
    this.db.pragma('busy_timeout = 1000');
    try {
      for (let v = version; v < SCHEMA_VERSION; v++) {
        this.db
          .transaction(() => {
            // Another process may have run this step while we waited for the write lock.
            if ((this.db.pragma('user_version', { simple: true }) as number) > v) return;
            const step = MIGRATIONS[v]!;
            if (typeof step === 'string') this.db.exec(step);
            else step(this.db);
            this.db.pragma(`user_version = ${v + 1}`);
          })
          .immediate();
      }
    } catch (e) {
      if ((e as { code?: string }).code === 'SQLITE_BUSY') throw new MigrationBusy(this.path);
      throw e;
    } finally {
      this.db.pragma('busy_timeout = 5000');
    }
  }

  /** The database, for the management queries shared with PostgreSQL. */
  get sql(): SqliteDb {
    return (this.sqlDb ??= new SqliteDb(this.db));
  }

  private stmt(sql: string): Database.Statement {
    let s = this.stmts.get(sql);
    if (!s) {
      s = this.db.prepare(sql);
      this.stmts.set(sql, s);
    }
    return s;
  }

  /** Looks up many keys at once (decide/ batches them); absent keys are not in the map. */
  lookupKeys(keys: string[]): Map<string, KnownKey> {
    return this.lookup.lookupKeys(keys);
  }

  /**
   * Natural keys already delivered, or possibly delivered (a send in flight or in doubt), with the event key:
   * a second event of that person must not create a second record while the first one's fate is unknown.
   */
  lookupDelivered(naturalKeys: string[]): Map<string, string> {
    return this.lookup.lookupDelivered(naturalKeys);
  }

  /** The key of an event that delivered (or may have delivered) this person, as lookupDelivered finds it. */
  deliveredBy(naturalKey: string): string | undefined {
    return this.lookupDelivered([naturalKey]).get(naturalKey);
  }

  /** The normalized lead stored for a key (for conflict diffs and replay). */
  getLeadJson(key: string): string | undefined {
    try {
      const r = this.stmt('SELECT lead_json FROM events WHERE key = ?').get(key) as
        { lead_json: string | null } | undefined;
      return r?.lead_json ?? undefined;
    } catch (e) {
      throw ledgerFailure(e, this.path);
    }
  }

  /**
   * Takes the ledger for a run: one run at a time per ledger. In one IMMEDIATE transaction, runs whose process is
   * gone are marked crashed and the new run is inserted, so two starting runs can't both see the ledger free.
   */
  startRun(command: string, args: Record<string, unknown>, opts: { exclusive: boolean; waitMs?: number }): number {
    const deadline = Date.now() + (opts.waitMs ?? 0);
    for (;;) {
      const holder = this.db
        .transaction(() => {
          const running = this.stmt(
            `SELECT id, host, pid, heartbeat_at, command FROM runs WHERE status = 'running'`,
          ).all() as Array<{ id: number; host: string; pid: number; heartbeat_at: string; command: string }>;
          const live = running.filter((r) => isAlive(r.host, r.pid, r.heartbeat_at));
          const dead = running.filter((r) => !live.includes(r));
          for (const r of dead)
            this.stmt(`UPDATE runs SET status = 'crashed', ended_at = ? WHERE id = ?`).run(now(), r.id);
          const holder = live.find((r) => holdsAgainst(r.command, command));
          if (opts.exclusive && holder) return { id: holder.id, host: holder.host, pid: holder.pid };
          const t = now();
          const info = this.stmt(
            `INSERT INTO runs (command, args_json, host, pid, started_at, heartbeat_at, status) VALUES (?, ?, ?, ?, ?, ?, 'running')`,
          ).run(command, JSON.stringify(args), hostname(), process.pid, t, t);
          return Number(info.lastInsertRowid);
        })
        .immediate();
      if (typeof holder === 'number') return holder;
      if (Date.now() >= deadline) {
        throw ledgerInUse(this.path, holder, opts.waitMs);
      }
      sleepSync(Math.min(500, Math.max(10, deadline - Date.now())));
    }
  }

  /**
   * Whether another run may have written the ledger since `runId` started: one started after it (with --no-lock, or
   * a `ledger import`, which takes no lock; running or already ended: ids only grow), or one still running. A run
   * that holds the lock found none live when it started, and marked the dead ones crashed.
   */
  otherRunSince(runId: number): boolean {
    return !!this.stmt(OTHER_RUN_SINCE).get(runId, runId);
  }

  /** Records that a run is alive (called every few seconds while it works). */
  heartbeat(runId: number): void {
    this.stmt(`UPDATE runs SET heartbeat_at = ? WHERE id = ?`).run(now(), runId);
  }

  /** Heartbeats a run every few seconds while it works, so other runs see it alive; clear the timer to stop. */
  keepAlive(runId: number, everyMs = 5000): NodeJS.Timeout {
    const t = setInterval(() => this.heartbeat(runId), everyMs);
    t.unref();
    return t;
  }

  /** Closes a run record with its status and counts. */
  finishRun(runId: number, status: 'done' | 'failed' | 'interrupted', counts: unknown): void {
    this.stmt(`UPDATE runs SET status = ?, ended_at = ?, counts_json = ? WHERE id = ?`).run(
      status,
      now(),
      JSON.stringify(counts),
      runId,
    );
  }

  /**
   * Pending rows whose owner run is no longer running were claimed and maybe sent, but never settled: the send's
   * outcome is unknown, so they become in_doubt. Returns how many rows changed.
   */
  markOrphansInDoubt(): number {
    const t = now();
    return this.db
      .transaction(() => {
        const rows = this.stmt(`SELECT key FROM events WHERE ${ORPHAN_PENDING}`).all() as Array<{ key: string }>;
        for (const r of rows) {
          this.stmt(
            `UPDATE events SET status = 'in_doubt', updated_at = ?, last_error = ? WHERE key = ? AND status = 'pending'`,
          ).run(t, ORPHAN_ERROR, r.key);
          this.stmt(`INSERT INTO attempts (key, run_id, at, outcome, detail) VALUES (?, NULL, ?, 'unknown', ?)`).run(
            r.key,
            t,
            ORPHAN_DETAIL,
          );
        }
        return rows.length;
      })
      .immediate();
  }

  /**
   * Claims new events for a run: INSERT ... ON CONFLICT DO NOTHING, committed before any send. Only keys this call
   * inserted are returned; a key another process claimed first is not, and must not be sent.
   */
  claimNew(items: ClaimInput[], runId: number, sink: string): Set<string> {
    const notTaken = new Set(this.claimNewFromColumns(claimColumns(items), runId, sink));
    const claimed = new Set<string>();
    for (const it of items) if (!notTaken.has(it.key)) claimed.add(it.key);
    return claimed;
  }

  /**
   * claimNew of a batch as columns (how the writer thread receives it), with no object per claim: the keys of the
   * batch it did not take, nearly always none. A key twice in the batch is taken by its first claim (rules.ts's
   * claimsOf, which PostgreSQL's claim uses, keeps the same one).
   */
  claimNewFromColumns(c: ClaimColumns, runId: number, sink: string): string[] {
    const t = now();
    const ins = this.stmt(CLAIM_NEW_SQL);
    const n = c.keys.length;
    const inserted = new Uint8Array(n);
    let all = true;
    this.db
      .transaction(() => {
        for (let i = 0; i < n; i++) {
          const r = ins.run(
            c.keys[i],
            c.keyKinds[i],
            c.payloadHashes[i],
            c.naturalKeys[i] ?? null,
            sink,
            c.downstreamKeys[i],
            c.leadJsons[i],
            c.sources[c.sourceOf[i]!],
            c.lines[i],
            c.eventTimes[i] ?? null,
            runId,
            t,
            t,
          );
          if (r.changes === 1) inserted[i] = 1;
          else all = false;
        }
      })
      .immediate();
    if (all) return [];
    // A key whose insert changed nothing is not taken, unless this batch's own earlier claim of it inserted it.
    const took = new Set<string>();
    const missed = new Set<string>();
    for (let i = 0; i < n; i++) (inserted[i] ? took : missed).add(c.keys[i]!);
    return [...missed].filter((k) => !took.has(k));
  }

  /**
   * Claims events already in the ledger (retryable failures, in-doubt rows, replays): an UPDATE guarded by the
   * expected statuses, so of two runs only one moves a row to pending.
   */
  claimExisting(keys: string[], runId: number, fromStatuses: EventStatus[], sink: string): Set<string> {
    const claimed = new Set<string>();
    const t = now();
    const sql = `UPDATE events SET status = 'pending', run_id = ?, sink = ?, updated_at = ? WHERE key = ? AND status IN (${fromStatuses.map((s) => `'${s}'`).join(',')})`;
    const upd = this.stmt(sql);
    // A sent row taken again keeps its last attempt, which only the row recorded, as an attempts row.
    const keep = fromStatuses.includes('sent')
      ? this.stmt(`${MATERIALIZE_ATTEMPT} FROM events e WHERE e.key = ? AND ${IMPLIED_ATTEMPT}`)
      : undefined;
    this.db
      .transaction(() => {
        for (const k of keys) {
          keep?.run(k);
          if (upd.run(runId, sink, t, k).changes === 1) claimed.add(k);
        }
      })
      .immediate();
    return claimed;
  }

  /** Commits the outcome of sends; only rows this run still owns as pending change. */
  settle(settlements: Settlement[], runId: number): void {
    this.settleFromColumns(settleColumns(settlements), runId);
  }

  /**
   * settle of a batch as columns (how the writer thread receives it): the plain sends that are nearly all of a
   * push's settles are written from the columns, with no object per settlement.
   */
  settleFromColumns(c: SettleColumns, runId: number): void {
    const t = now();
    const n = c.keys.length;
    // A key twice in one settle: each of its records is an attempts row of its own (mayBeInRow). Counted only when
    // the batch has one.
    const counts = new Set(c.keys).size === n ? undefined : keyCounts(c.keys);
    const set = `UPDATE events SET status = @status, outcome = @outcome, failure = @failure, crm_id = COALESCE(@crm, crm_id), last_error = @error,
         attempts = attempts + 1, updated_at = @t, sent_at = CASE WHEN @status = 'sent' THEN @t ELSE sent_at END,
         lead_json = CASE WHEN @status = 'sent' AND @drop = 1 THEN NULL ELSE lead_json END
       WHERE key = @key AND run_id = @run AND status = 'pending'`;
    const upd = this.stmt(set);
    // A send the row can record itself (mayBeInRow): the same UPDATE, only where the row will hold its CRM id.
    // Asked first, and the plain UPDATE after when it changes nothing, so that no statement returns rows (RETURNING
    // cost a push of a million events 5%).
    const updInRow = this.stmt(`${set} AND (@crm IS NOT NULL OR crm_id IS NULL)`);
    // The settle of nearly every event of a push: sent, with no CRM id and no error. The same change as updInRow's,
    // written out for that case: five positional parameters bound instead of nine named ones, no CASE (a push of a
    // million events to the JSONL sink: its settles' time, replayed alone, 3.5 → 3.1 s).
    const sentPlain = this.stmt(
      `UPDATE events SET status = 'sent', outcome = ?, failure = NULL, last_error = NULL, attempts = attempts + 1,
         updated_at = ?, sent_at = ?${this.dropSentPayloads ? ', lead_json = NULL' : ''}
       WHERE key = ? AND run_id = ? AND status = 'pending' AND crm_id IS NULL`,
    );
    const hist = this.stmt(`INSERT INTO attempts (key, run_id, at, outcome, detail) VALUES (?, ?, ?, ?, ?)`);
    this.db
      .transaction(() => {
        for (let i = 0; i < n; i++) {
          const key = c.keys[i]!;
          const repeated = counts !== undefined && counts.get(key)! > 1;
          if (
            mayBeInRowOf(c.statuses[i]!, repeated) &&
            c.crmIds[i] == null &&
            c.errors[i] == null &&
            c.failures[i] == null &&
            sentPlain.run(c.outcomes[i] ?? null, t, t, key, runId).changes === 1
          )
            continue;
          const s = settleRecord(settlementAt(c, i), repeated);
          const p = {
            status: s.status,
            outcome: s.outcome,
            failure: s.failure,
            crm: s.crmId,
            error: s.error,
            t,
            key: s.key,
            run: runId,
            drop: this.dropSentPayloads ? 1 : 0,
          };
          if (mayBeInRow(s) && updInRow.run(p).changes === 1) continue;
          upd.run(p);
          hist.run(s.key, runId, t, s.attempt, s.detail);
        }
      })
      .immediate();
  }

  /**
   * Undoes claims whose send never left (the run stopped while it waited for the rate limiter or a connection):
   * nothing reached the CRM. A row this run inserted is removed, as if it had never been claimed (the next run
   * decides it new); a row claimed from another status returns to it. Only rows this run still owns as pending.
   */
  release(items: Array<{ key: string; to: EventStatus | null }>, runId: number, detail: string): void {
    const t = now();
    const del = this.stmt(`DELETE FROM events WHERE key = ? AND run_id = ? AND status = 'pending'`);
    const back = this.stmt(
      `UPDATE events SET status = @to, updated_at = @t, run_id = ${RELEASED_RUN('@to', 'events')}
       WHERE key = @key AND run_id = @run AND status = 'pending'`,
    );
    const hist = this.stmt(`INSERT INTO attempts (key, run_id, at, outcome, detail) VALUES (?, ?, ?, 'released', ?)`);
    this.db
      .transaction(() => {
        for (const it of items) {
          if (it.to === null) del.run(it.key, runId);
          else if (back.run({ to: it.to, t, key: it.key, run: runId }).changes === 1)
            hist.run(it.key, runId, t, detail);
        }
      })
      .immediate();
  }

  /** Rows in a status for a sink, oldest first, with what a re-send needs. */
  rowsInStatus(status: EventStatus, sink?: string): LedgerEventRow[] {
    const sql = `SELECT * FROM events WHERE status = ? ${sink ? 'AND sink = ?' : ''} ORDER BY first_seen_at, key`;
    return (sink ? this.stmt(sql).all(status, sink) : this.stmt(sql).all(status)) as LedgerEventRow[];
  }

  /** Marks keys, or people by natural key, as already delivered (adopting leadledger on an existing CRM). */
  importDelivered(
    entries: Array<{ key?: string; naturalKey?: string; crmId?: string }>,
    source: string,
  ): { added: number; present: number } {
    const t = now();
    let added = 0;
    const ins = this.stmt(
      `INSERT INTO events (key, key_kind, natural_key, status, outcome, crm_id, source, first_seen_at, updated_at, sent_at)
       VALUES (?, 'imported', ?, 'sent', 'imported', ?, ?, ?, ?, ?) ON CONFLICT(key) DO NOTHING`,
    );
    this.db
      .transaction(() => {
        for (const e of entries) {
          const key = e.key ?? importedPersonKey(e.naturalKey);
          added += ins.run(key, e.naturalKey ?? null, e.crmId ?? null, source, t, t, t).changes;
        }
      })
      .immediate();
    return { added, present: entries.length - added };
  }

  /** Replaces the stored lead of an event (replay --from after a mapping fix), before it is claimed again. */
  storeLead(key: string, leadJson: string, payloadHash: string): void {
    this.stmt(
      `UPDATE events SET lead_json = ?, payload_hash = ?, updated_at = ? WHERE key = ? AND status <> 'pending'`,
    ).run(leadJson, payloadHash, now(), key);
  }

  /** Full rows for keys, in the order given; absent keys are skipped. */
  rowsByKeys(keys: string[]): LedgerEventRow[] {
    const out: LedgerEventRow[] = [];
    for (let i = 0; i < keys.length; i += 500) {
      const chunk = keys.slice(i, i + 500);
      // Padded to a power of two with a repeat (IN ignores it), so a long replay keeps a handful of statements.
      const params = [...chunk];
      while (params.length < Math.max(8, 2 ** Math.ceil(Math.log2(chunk.length)))) params.push(chunk[0]!);
      const rows = this.stmt(`SELECT * FROM events WHERE key IN (${placeholders(params.length)})`).all(
        ...params,
      ) as LedgerEventRow[];
      const byKey = new Map(rows.map((r) => [r.key, r]));
      for (const k of chunk) if (byKey.has(k)) out.push(byKey.get(k)!);
    }
    return out;
  }

  /** Schema version (PRAGMA user_version) and the bytes of the file and its -wal and -shm. */
  storageFacts(): StorageFacts {
    const size = (p: string) => (existsSync(p) ? statSync(p).size : 0);
    const files = { db: size(this.path), wal: size(this.path + '-wal'), shm: size(this.path + '-shm') };
    return {
      schemaVersion: this.db.pragma('user_version', { simple: true }) as number,
      size: { ...files, total: files.db + files.wal + files.shm },
    };
  }

  /** SQLite's integrity_check: empty when the file is sound. */
  integrity(): string[] {
    let found: string[];
    try {
      found = (this.db.pragma('integrity_check') as Array<{ integrity_check: string }>).map((r) => r.integrity_check);
    } catch (e) {
      // A badly damaged file can stop the check itself ("database disk image is malformed").
      found = [(e as Error).message];
    }
    return found.length === 1 && found[0] === 'ok' ? [] : found;
  }

  /** VACUUM, then the WAL emptied (see erase.ts's compactSqlite). */
  compact(): boolean {
    return compactSqlite(this.db);
  }

  /**
   * Closes the database, checkpointing the WAL when writable (a second connection of the same run, the writer
   * thread's, leaves that to the run's main connection, which closes last).
   */
  close(opts: { checkpoint?: boolean } = {}): void {
    if (!this.readonly && opts.checkpoint !== false) {
      try {
        this.db.pragma('wal_checkpoint(TRUNCATE)');
      } catch {
        // Another connection may hold the WAL; the next close checkpoints it.
      }
    }
    this.db.close();
  }
}

function placeholders(n: number): string {
  return n === 1 ? '?' : '?,'.repeat(n - 1) + '?';
}

function isAlive(host: string, pid: number, heartbeatAt: string): boolean {
  const fresh = Date.now() - Date.parse(heartbeatAt) < HEARTBEAT_STALE_MS;
  if (host !== hostname()) return fresh;
  try {
    process.kill(pid, 0);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  return fresh;
}

function sleepSync(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/** How many times each key is in keys. */
function keyCounts(keys: string[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const k of keys) counts.set(k, (counts.get(k) ?? 0) + 1);
  return counts;
}
