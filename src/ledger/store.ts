// What every ledger storage provides: the calls the rules (rules.ts) are carried out with, and the decisions,
// deliveries and commands run on. SQLite answers at once (better-sqlite3 is synchronous, so its hot path stays as
// it was); PostgreSQL answers with promises. Callers await every call, which serves both.
import type pg from 'pg';
import type { SqlDb } from './sql.js';
import type { LeaseKeeper } from './rules.js';
import type { ClaimInput, EventStatus, KnownKey, LedgerEventRow, Settlement } from './types.js';

/** A value now, or a promise of it. */
export type MaybePromise<T> = T | Promise<T>;

/** Counts and sizes a storage measures itself (the rest of `ledger stats` is shared SQL). */
export interface StorageFacts {
  schemaVersion: number;
  size: { db: number; wal: number; shm: number; total: number };
}

/**
 * How a claimWriteSettle ended: committed (every event of the batch written and recorded); rolled back (nothing of
 * it happened: the batch can take the ordinary path); or unknown, when the COMMIT went unanswered and asking
 * afterwards could not tell (then either all of it is in the ledger and the table, or none: the next run knows).
 */
export type SharedWriteResult =
  { kind: 'committed' } | { kind: 'rolled_back'; reason: string } | { kind: 'unknown'; reason: string };

/** A ledger, on SQLite or PostgreSQL. */
export interface LedgerStore {
  readonly kind: 'sqlite' | 'postgres';
  /** What the ledger is called in messages and reports: a file's path, or a URL without its password. */
  readonly path: string;
  readonly readonly: boolean;
  /** Retention: drop the stored lead once an event is sent (config retention.sentPayloads = "drop"). */
  dropSentPayloads: boolean;
  /** The database, for the shared management queries. */
  readonly sql: SqlDb;

  lookupKeys(keys: string[]): MaybePromise<Map<string, KnownKey>>;
  lookupDelivered(naturalKeys: string[]): MaybePromise<Map<string, string>>;
  getLeadJson(key: string): MaybePromise<string | undefined>;

  startRun(
    command: string,
    args: Record<string, unknown>,
    opts: { exclusive: boolean; waitMs?: number },
  ): MaybePromise<number>;
  /** Keeps the run's hold on the ledger alive until stopped; `live()` false means: start no more sends. */
  keepAlive(runId: number): LeaseKeeper | NodeJS.Timeout;
  finishRun(runId: number, status: 'done' | 'failed' | 'interrupted', counts: unknown): MaybePromise<void>;
  markOrphansInDoubt(): MaybePromise<number>;

  claimNew(items: ClaimInput[], runId: number, sink: string): MaybePromise<Set<string>>;
  claimExisting(keys: string[], runId: number, fromStatuses: EventStatus[], sink: string): MaybePromise<Set<string>>;
  settle(settlements: Settlement[], runId: number): MaybePromise<void>;
  /**
   * PostgreSQL: the database and role the ledger is in (pg-identity.ts). A sink in the same one can write in the
   * ledger's transaction (claimWriteSettle).
   */
  readonly database?: string;
  /**
   * Has `write` deliver new events on the ledger's own connection, and records them settled with what it returns,
   * all in ONE transaction (PostgreSQL, for a sink in the ledger's database): the leads and the records of their
   * events commit together or not at all, so no claim is ever left pending, and a kill leaves nothing in doubt.
   * Rolled back whole when another run holds any of the keys.
   */
  claimWriteSettle?(
    items: ClaimInput[],
    runId: number,
    sink: string,
    write: (client: pg.ClientBase) => Promise<Settlement[]>,
    signal?: AbortSignal,
  ): Promise<SharedWriteResult>;
  /**
   * Undoes claims of this run whose request never left (stopped first): a row it inserted is removed, one claimed
   * from another status returns to it. Only rows the run still owns as pending.
   */
  release(items: Array<{ key: string; to: EventStatus | null }>, runId: number, detail: string): MaybePromise<void>;

  rowsInStatus(status: EventStatus, sink?: string): MaybePromise<LedgerEventRow[]>;
  rowsByKeys(keys: string[]): MaybePromise<LedgerEventRow[]>;
  storeLead(key: string, leadJson: string, payloadHash: string): MaybePromise<void>;
  importDelivered(
    entries: Array<{ key?: string; naturalKey?: string; crmId?: string }>,
    source: string,
  ): MaybePromise<{ added: number; present: number }>;

  /** Schema version and bytes used. */
  storageFacts(): MaybePromise<StorageFacts>;
  /** The storage's own check of its files (SQLite's integrity_check): the problems found, none when sound. */
  integrity(): MaybePromise<string[]>;
  /** After an erasure: rewrites storage so that no freed page still holds what was erased; false if it could not. */
  compact(): MaybePromise<boolean>;
  close(): MaybePromise<void>;
}

/** True when --ledger names a PostgreSQL database rather than a file. */
export function isPostgresUrl(ledger: string): boolean {
  return /^postgres(ql)?:\/\//i.test(ledger);
}

/** Stops what keepAlive started (a lease keeper, or SQLite's heartbeat timer). */
export function stopKeepAlive(k: LeaseKeeper | NodeJS.Timeout | undefined): void {
  if (!k) return;
  if ('stop' in k && typeof k.stop === 'function') k.stop();
  else clearInterval(k as NodeJS.Timeout);
}

/** Whether the run may start another send: false once its lease is lost or overdue (SQLite's runs always may). */
export function mayStillSend(k: LeaseKeeper | NodeJS.Timeout | undefined): boolean {
  return !(k && 'live' in k && typeof k.live === 'function') || k.live();
}
