// A SQLite ledger whose claims, settles and releases are committed on a thread of their own (write-thread.ts), on a
// second connection to the same file: a push's reading, deciding and sending go on while the last batch's claim or
// settle commits, instead of waiting for it. These writes are what bounded a push of a million events to the JSONL
// sink (bench scenario 10): about 11 of its 19 seconds on the one thread. Everything else, lookups included, stays
// on the main connection, which sees every write the thread committed (WAL: each read takes the newest snapshot).
//
// Nothing of the ledger's rules changes: each call is still one committed transaction, answered only once it has
// committed, so a claim still commits before its send and a settle after it; the thread takes the calls in the order
// they were made. Killed, the process loses the thread with it, as it would lose the main thread: what committed
// stays, what did not never happened.
import type { Worker } from 'node:worker_threads';
import { LedgerError } from '../errors.js';
import { startWorker } from '../thread.js';
import { Checkpointer, WRITER_CHECKPOINT_PAGES } from './checkpointer.js';
import type { Ledger } from './ledger.js';
import type { LedgerStore } from './store.js';
import { claimColumns, settleColumns, type ClaimColumns, type SettleColumns } from './columns.js';
import type { ClaimInput, EventStatus, Settlement } from './types.js';

/** What the writer thread is started with. */
export interface WriterInit {
  /** The ledger file, absolute. */
  file: string;
  /** The writer connection's wal_autocheckpoint: the fallback, should the checkpointer fall behind. */
  checkpointPages: number;
}

/**
 * The checkpointer starts with the run's 16th write: a push of a few batches, whose WAL never nears a checkpoint,
 * does not pay for a thread (a push of 25 events: 12% more CPU with it started up front).
 */
const CHECKPOINTER_AFTER_WRITES = 16;

/** A write the thread carries out: one Ledger method and its arguments (or the end of the thread's connection). */
export type WriteOp =
  | { op: 'claimNew'; claims: ClaimColumns; runId: number; sink: string }
  | { op: 'claimExisting'; keys: string[]; runId: number; from: EventStatus[]; sink: string }
  | { op: 'settle'; settlements: SettleColumns; runId: number }
  | { op: 'release'; items: Array<{ key: string; to: EventStatus | null }>; runId: number; detail: string }
  | { op: 'heartbeat'; runId: number }
  | { op: 'close' };

/** One write for the thread, answered by a WriteReply with the same id. */
export type WriteRequest = WriteOp & { id: number; dropSentPayloads: boolean };

/**
 * The thread's answer: what a claim took (claimExisting: the keys; claimNew: the keys of the batch it did not take,
 * nearly always none), or the error the write met (its SQLite code kept).
 */
export interface WriteReply {
  id: number;
  keys?: string[];
  notTaken?: string[];
  error?: { name: string; message: string; code?: string; stack?: string };
}

interface Waiter {
  resolve(r: WriteReply): void;
  reject(e: Error): void;
}

/**
 * The SQLite ledger of a run that writes it: `local` for everything but the four writes a push makes per batch and
 * the run's heartbeat. The heartbeat goes through the thread too: on the main connection it would wait for the write
 * lock behind the thread's transactions (up to 0.4 s measured), stopping the main thread while it waits.
 */
export class ThreadedLedger implements LedgerStore {
  readonly kind = 'sqlite' as const;
  private readonly worker: Worker;
  private checkpointer: Checkpointer | undefined;
  private writes = 0;
  private readonly waiting = new Map<number, Waiter>();
  private seq = 0;
  private failure: Error | undefined;
  private closed: Promise<void> | undefined;

  constructor(readonly local: Ledger) {
    this.worker = startWorker('write-thread', import.meta.url, {
      workerData: { file: local.path, checkpointPages: WRITER_CHECKPOINT_PAGES } satisfies WriterInit,
    });
    this.worker.on('message', (r: WriteReply) => {
      const w = this.waiting.get(r.id);
      this.waiting.delete(r.id);
      if (r.error) w?.reject(rebuilt(r.error));
      else w?.resolve(r);
    });
    // A thread that is gone takes its connection with it: the run cannot record what it sends, so it stops, as it
    // would on any error of the ledger (exit 5). What the thread committed stays; the next run finds the rest.
    const fail = (why: string) => {
      this.failure ??= new LedgerError(`cannot write ledger ${local.path}: its writer thread ${why}`);
      for (const w of this.waiting.values()) w.reject(this.failure);
      this.waiting.clear();
    };
    this.worker.on('error', (e) => fail(`failed: ${e.message}`));
    this.worker.on('exit', (code) => fail(this.closed ? 'was closed' : `exited (code ${code})`));
    // Waiting for nothing, the thread must not keep the process alive (an awaited reply does, while there is one).
    this.worker.unref();
  }

  private call(req: WriteOp): Promise<WriteReply> {
    if (this.failure) return Promise.reject(this.failure);
    if (this.closed && req.op !== 'close') return Promise.reject(new Error(`ledger ${this.local.path} was closed`));
    if (++this.writes === CHECKPOINTER_AFTER_WRITES && !this.closed && req.op !== 'close') this.startCheckpointer();
    const id = ++this.seq;
    return new Promise<WriteReply>((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      if (this.waiting.size === 1) this.worker.ref();
      try {
        this.worker.postMessage({ ...req, id, dropSentPayloads: this.local.dropSentPayloads } satisfies WriteRequest);
      } catch (e) {
        // Not sent (a value that cannot cross to the thread): nothing waits for an answer.
        this.waiting.delete(id);
        reject(e);
      }
    }).finally(() => {
      if (!this.waiting.size) this.worker.unref();
    });
  }

  async claimNew(items: ClaimInput[], runId: number, sink: string): Promise<Set<string>> {
    const { notTaken } = await this.call({ op: 'claimNew', claims: claimColumns(items), runId, sink });
    const taken = new Set(items.map((it) => it.key));
    for (const k of notTaken ?? []) taken.delete(k);
    return taken;
  }

  async claimExisting(keys: string[], runId: number, from: EventStatus[], sink: string): Promise<Set<string>> {
    return new Set((await this.call({ op: 'claimExisting', keys, runId, from, sink })).keys);
  }

  async settle(settlements: Settlement[], runId: number): Promise<void> {
    await this.call({ op: 'settle', settlements: settleColumns(settlements), runId });
  }

  async release(items: Array<{ key: string; to: EventStatus | null }>, runId: number, detail: string): Promise<void> {
    await this.call({ op: 'release', items, runId, detail });
  }

  // The rest is the main connection's.
  get path(): string {
    return this.local.path;
  }
  get readonly(): boolean {
    return this.local.readonly;
  }
  get dropSentPayloads(): boolean {
    return this.local.dropSentPayloads;
  }
  set dropSentPayloads(v: boolean) {
    this.local.dropSentPayloads = v;
  }
  /**
   * The main connection's management queries. A push uses none of them on SQLite; note that a transaction held
   * across awaits here would make the thread's writes wait for it (SQLITE_BUSY after the busy timeout).
   */
  get sql(): LedgerStore['sql'] {
    return this.local.sql;
  }
  lookupKeys: LedgerStore['lookupKeys'] = (keys) => this.local.lookupKeys(keys);
  lookupDelivered: LedgerStore['lookupDelivered'] = (keys) => this.local.lookupDelivered(keys);
  getLeadJson: LedgerStore['getLeadJson'] = (key) => this.local.getLeadJson(key);
  startRun: LedgerStore['startRun'] = (command, args, opts) => this.local.startRun(command, args, opts);
  /** Heartbeats the run every few seconds, through the thread; a heartbeat that fails is retried by the next one. */
  keepAlive(runId: number, everyMs = 5000): NodeJS.Timeout {
    const t = setInterval(() => {
      this.call({ op: 'heartbeat', runId }).catch(() => undefined);
    }, everyMs);
    t.unref();
    return t;
  }
  finishRun: LedgerStore['finishRun'] = (runId, status, counts) => this.local.finishRun(runId, status, counts);
  markOrphansInDoubt: LedgerStore['markOrphansInDoubt'] = () => this.local.markOrphansInDoubt();
  rowsInStatus: LedgerStore['rowsInStatus'] = (status, sink) => this.local.rowsInStatus(status, sink);
  rowsByKeys: LedgerStore['rowsByKeys'] = (keys) => this.local.rowsByKeys(keys);
  storeLead: LedgerStore['storeLead'] = (key, json, hash) => this.local.storeLead(key, json, hash);
  importDelivered: LedgerStore['importDelivered'] = (entries, source) => this.local.importDelivered(entries, source);
  storageFacts: LedgerStore['storageFacts'] = () => this.local.storageFacts();
  integrity: LedgerStore['integrity'] = () => this.local.integrity();
  compact: LedgerStore['compact'] = () => this.local.compact();

  /**
   * The WAL's copy back into the file, off the writer (checkpoint-thread.ts). A checkpointer that fails only leaves
   * the copying to the writer's autocheckpoint: nothing waits for it, and its errors are no run's failure.
   */
  private startCheckpointer(): void {
    this.checkpointer = Checkpointer.start(this.local.path);
  }

  /** Whether the checkpointer thread was started (the run's writes reached CHECKPOINTER_AFTER_WRITES). */
  get checkpointing(): boolean {
    return this.checkpointer !== undefined;
  }

  /** Stops the checkpointer between two checkpoints, and closes its connection. */
  private async stopCheckpointer(): Promise<void> {
    await this.checkpointer?.stop();
  }

  /**
   * Closes the thread's connection first (after the writes asked for before), then the main one (which checkpoints
   * the WAL). Writes asked for after it are refused.
   */
  async close(): Promise<void> {
    this.closed ??= (async () => {
      if (!this.failure) {
        try {
          await this.call({ op: 'close' });
        } catch {
          // The thread is gone already: its connection with it.
        }
      }
      await this.worker.terminate();
      await this.stopCheckpointer();
      this.local.close();
    })();
    return this.closed;
  }
}

/** The main connection's Ledger of a SQLite store: what the decider looks keys up in, synchronously. */
export function localLedger(store: Ledger | ThreadedLedger): Ledger {
  return store instanceof ThreadedLedger ? store.local : store;
}

// The thread's error as the main thread throws it: a LedgerError stays one; SQLite's keep their code, so that
// ledgerFailure words them as it would on the main thread.
function rebuilt(e: NonNullable<WriteReply['error']>): Error {
  const err = e.name === 'LedgerError' ? new LedgerError(e.message) : Object.assign(new Error(e.message), e);
  if (e.stack) err.stack = e.stack;
  return err;
}
