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
import type { Ledger } from './ledger.js';
import type { LedgerStore } from './store.js';
import type { ClaimInput, EventStatus, Settlement } from './types.js';

/** What the writer thread is started with. */
export interface WriterInit {
  /** The ledger file, absolute. */
  file: string;
  /** The writer connection's wal_autocheckpoint: the fallback, should the checkpointer fall behind. */
  checkpointPages: number;
}

/** What the checkpointer thread (checkpoint-thread.ts) is started with. */
export interface CheckpointerInit {
  /** The ledger file, absolute. */
  file: string;
  /** Milliseconds between two checkpoints. */
  everyMs: number;
}

/**
 * How often the checkpointer copies the WAL back into the file. Replaying a push's claims and settles of a million
 * events, checkpoints taken every 50 ms on a thread of their own took the writer's time from 10.6 to 9.7 s (four
 * pairs); every 200 or 500 ms gained less.
 */
export const CHECKPOINT_EVERY_MS = 50;

/**
 * The writer connection's own autocheckpoint while a checkpointer runs beside it (a push's WAL, copied every 50 ms,
 * holds a few MiB): 256 MiB, four times what a writing connection otherwise lets the WAL hold, so that the writer
 * checkpoints only should the checkpointer fail or fall far behind.
 */
export const WRITER_CHECKPOINT_PAGES = 65_536;

/**
 * The checkpointer starts with the run's 16th write: a push of a few batches, whose WAL never nears a checkpoint,
 * does not pay for a thread (a push of 25 events: 12% more CPU with it started up front).
 */
const CHECKPOINTER_AFTER_WRITES = 16;

/**
 * A batch of claims as it crosses to the thread: a column per field, each source name once. An array of objects is
 * cloned with every property name of every object, and rebuilt an object at a time (the clone of a push's claims
 * and settles was a tenth of the main thread's samples, and more of the writer's).
 */
export interface ClaimColumns {
  keys: string[];
  keyKinds: string[];
  payloadHashes: string[];
  naturalKeys: Array<string | undefined>;
  downstreamKeys: string[];
  leadJsons: string[];
  sources: string[];
  /** Each claim's source, as an index into `sources`. */
  sourceOf: Int32Array;
  lines: Float64Array;
  eventTimes: Array<string | undefined>;
}

/** Settlements as they cross to the thread: a column per field (see ClaimColumns). */
export interface SettleColumns {
  keys: string[];
  statuses: Array<Settlement['status']>;
  outcomes: Array<Settlement['outcome']>;
  failures: Array<Settlement['failure']>;
  crmIds: Array<string | undefined>;
  errors: Array<string | undefined>;
}

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
  private checkpointer: Worker | undefined;
  private checkpointerGone = false;
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
    let c: Worker;
    try {
      c = startWorker('checkpoint-thread', import.meta.url, {
        workerData: { file: this.local.path, everyMs: CHECKPOINT_EVERY_MS } satisfies CheckpointerInit,
      });
    } catch {
      return; // no thread to be had: the writer's autocheckpoint copies the WAL, as it does for a short run
    }
    this.checkpointer = c;
    c.on('error', () => undefined);
    c.once('exit', () => {
      this.checkpointerGone = true;
    });
    c.unref();
  }

  /** Whether the checkpointer thread was started (the run's writes reached CHECKPOINTER_AFTER_WRITES). */
  get checkpointing(): boolean {
    return this.checkpointer !== undefined;
  }

  /** Stops the checkpointer between two checkpoints, and closes its connection (or ends the thread, if it is stuck). */
  private async stopCheckpointer(): Promise<void> {
    const c = this.checkpointer;
    // A thread that is gone already (it failed, or was ended) would answer nothing: there is nothing to wait for.
    if (!c || this.checkpointerGone) return;
    await new Promise<void>((resolve) => {
      // Kept referenced: the wait is what holds the process until the thread answers (or 5 s pass).
      const timer = setTimeout(done, 5000);
      function done(): void {
        clearTimeout(timer);
        resolve();
      }
      c.once('message', done);
      c.once('exit', done);
      c.once('error', done);
      try {
        c.postMessage('close');
      } catch {
        done();
      }
    });
    await c.terminate();
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

/** Claims as columns, for the thread. */
export function claimColumns(items: ClaimInput[]): ClaimColumns {
  const n = items.length;
  const c: ClaimColumns = {
    keys: [],
    keyKinds: [],
    payloadHashes: [],
    naturalKeys: [],
    downstreamKeys: [],
    leadJsons: [],
    sources: [],
    sourceOf: new Int32Array(n),
    lines: new Float64Array(n),
    eventTimes: [],
  };
  // Filled by push, not map: an array that V8 holds as holey crosses postMessage element by element with its
  // index (a "sparse" array), and the optimized map of a batch of claims made them so (measured: 30 of a push's
  // 41 claims).
  let last = -1;
  for (let i = 0; i < n; i++) {
    const it = items[i]!;
    c.keys.push(it.key);
    c.keyKinds.push(it.keyKind);
    c.payloadHashes.push(it.payloadHash);
    c.naturalKeys.push(it.naturalKey);
    c.downstreamKeys.push(it.downstreamKey);
    c.leadJsons.push(it.leadJson);
    c.eventTimes.push(it.eventTime);
    if (last < 0 || c.sources[last] !== it.source) {
      last = c.sources.indexOf(it.source);
      if (last < 0) last = c.sources.push(it.source) - 1;
    }
    c.sourceOf[i] = last;
    c.lines[i] = it.line;
  }
  return c;
}

/** The claims of ClaimColumns, as the Ledger takes them. */
export function claimsFromColumns(c: ClaimColumns): ClaimInput[] {
  return c.keys.map((key, i) => ({
    key,
    keyKind: c.keyKinds[i]!,
    payloadHash: c.payloadHashes[i]!,
    naturalKey: c.naturalKeys[i],
    downstreamKey: c.downstreamKeys[i]!,
    leadJson: c.leadJsons[i]!,
    source: c.sources[c.sourceOf[i]!]!,
    line: c.lines[i]!,
    eventTime: c.eventTimes[i],
  }));
}

/** Settlements as columns, for the thread. */
export function settleColumns(settlements: Settlement[]): SettleColumns {
  return {
    keys: settlements.map((s) => s.key),
    statuses: settlements.map((s) => s.status),
    outcomes: settlements.map((s) => s.outcome),
    failures: settlements.map((s) => s.failure),
    crmIds: settlements.map((s) => s.crmId),
    errors: settlements.map((s) => s.error),
  };
}

/** The settlements of SettleColumns, as the Ledger takes them (fields it does not hold left out, as given). */
export function settlementsFromColumns(c: SettleColumns): Settlement[] {
  return c.keys.map((key, i) => {
    const s: Settlement = { key, status: c.statuses[i]! };
    if (c.outcomes[i] !== undefined) s.outcome = c.outcomes[i];
    if (c.failures[i] !== undefined) s.failure = c.failures[i];
    if (c.crmIds[i] !== undefined) s.crmId = c.crmIds[i];
    if (c.errors[i] !== undefined) s.error = c.errors[i];
    return s;
  });
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
