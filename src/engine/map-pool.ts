// A pool of map workers (map-worker.ts): blocks of JSONL bytes in, mapped records out, replies in job order.
import type { Worker } from 'node:worker_threads';
import { LedgerError } from '../errors.js';
import { startWorker } from '../thread.js';
import type { MapOptions } from '../mapping/map-record.js';
import type { DateColumns } from '../mapping/times.js';
import { buffersOf, type BlockBuffers, type MappedBlock } from './block.js';
import type { Recoded } from '../sources/decode-text.js';
import type { CsvSettings } from '../sources/read-csv.js';
import type { RawUnread } from '../sources/types.js';
import type { SharedLedgerIndex } from './ledger-index.js';
import { detachEarly } from './detach-early.js';

/** What every worker is started with. */
export interface MapWorkerInit {
  map: MapOptions;
  select?: string;
  /** Take each event's payload hash in the worker (DecideInputsOptions.hashPayloads). */
  hashPayloads?: boolean;
  /** Take each event's downstream key in the worker, for this namespace (DecideInputsOptions.downstreamNamespace). */
  downstreamNamespace?: string;
}

/** One block of whole JSONL lines, or the next chunk of a CSV input streamed to one worker. */
export interface MapJob {
  seq: number;
  bytes: Uint8Array;
  /** The block starts the input (a BOM may open its first line). */
  first: boolean;
  /**
   * CSV, streamed: the input's stream id and settings; its chunks go in order to one worker, which parses them as
   * one text. Split: the bytes are whole records (cut by csv-cuts.ts), parsed on their own behind a copy of the
   * header. lineOffset is added to every line either way.
   */
  csv?: {
    stream: number;
    settings: CsvSettings;
    end: boolean;
    lineOffset: number;
    split?: { header: Uint8Array; last: boolean };
  };
}

/** A block's records (lines counted from 1 at the block's start, ledger codes filled in by a dry-run's worker). */
export interface MapJobResult {
  seq: number;
  /** Lines in the block (blank ones included), to number the next block's lines. */
  lines: number;
  block: MappedBlock;
  /** The worker failed on this job (e.g. undecodable input): the input fails as it would in-thread. */
  error?: string;
  /** The error is the ledger's (a damaged one, looked up here): the run fails with a LedgerError, not the input. */
  ledgerError?: boolean;
  /** The job's input buffer, given back for the next job's bytes (JSONL jobs). */
  spare?: ArrayBuffer;
  /** A split CSV block ended inside a quoted field. */
  unclosedQuote?: boolean;
  /**
   * Lines that were not UTF-8 and were read as Windows-1252: in CSV, their first line is the input's; in JSONL, it is
   * counted from the block's first line (the main thread adds the lines before the block).
   */
  recoded?: Recoded;
  /** Which worker answered (set by the pool). */
  worker?: number;
}

/** Buffers given back to a worker: a decided block's, to encode its next block into. */
export interface MapRecycle {
  recycle: BlockBuffers;
}

/** The date columns of the input whose blocks come next (MapOptions.dateColumns); null: none. */
export interface MapDates {
  dates: DateColumns | null;
}

/**
 * A dry-run's read-only ledger, shared with every worker before its first job so that blocks come back looked up:
 * its index, or the ledger file (which each worker then opens read-only) when it has none.
 */
export type MapShareLedger = { index: SharedLedgerIndex } | { ledgerPath: string };

// Buffers kept for reuse on each side: enough for the blocks in flight, so steady state allocates nothing.
const SPARES = 8;

// A worker holds one block (a MB of lines) and its records at a time; without a limit V8 lets each heap grow to
// gigabytes before collecting (peak RSS is a target: under 300 MB for any input size). 64 MB of old generation
// still holds a line of several MB; records die young (workers read 64 at a time), so 4 MB of young generation
// measured as fast as 32 and saves ~25 MB per worker.
const WORKER_LIMITS = { maxOldGenerationSizeMb: 64, maxYoungGenerationSizeMb: 4 };

// Job buffers are at least a read chunk (1 MB) plus a line's worth, so a given-back one fits the next chunk.
const MIN_JOB_BUFFER = (1 << 20) + (64 << 10);

interface Waiter {
  resolve(r: MapJobResult): void;
  reject(e: Error): void;
}

detachEarly(); // loaded before an audit starts: see detach-early.ts

/** Round-robin pool; each worker answers its jobs in the order it got them, so results come back in submit order. */
export class MapPool {
  private readonly workers: Worker[] = [];
  private readonly waiting: Array<Map<number, Waiter>> = [];
  private next = 0;
  private seq = 0;
  private failure: Error | undefined;
  private readonly spares: ArrayBuffer[] = [];

  constructor(
    size: number,
    private readonly init: MapWorkerInit,
  ) {
    for (let i = 0; i < size; i++) {
      const w = startWorker('map-worker', import.meta.url, { workerData: init, resourceLimits: WORKER_LIMITS });
      const waiting = new Map<number, Waiter>();
      w.on('message', (r: MapJobResult) => {
        r.worker = i;
        if (r.spare && this.spares.length < SPARES) this.spares.push(r.spare);
        const waiter = waiting.get(r.seq);
        waiting.delete(r.seq);
        if (r.error !== undefined) waiter?.reject(r.ledgerError ? new LedgerError(r.error) : new Error(r.error));
        else waiter?.resolve(r);
      });
      const fail = (e: Error) => {
        this.failure ??= e;
        for (const x of waiting.values()) x.reject(e);
        waiting.clear();
      };
      w.on('error', fail);
      w.on('exit', (code) => {
        if (code !== 0) fail(new Error(`map worker exited with code ${code}`));
      });
      // Not unref'd: an awaited reply is all that keeps the event loop alive at times. close() ends them.
      this.workers.push(w);
      this.waiting.push(waiting);
    }
  }

  /**
   * Maps one block (on the next worker in turn, or on worker `to`); the bytes (one piece or several, in order)
   * are copied once into a buffer the worker owns.
   */
  submit(pieces: Uint8Array | Uint8Array[], first: boolean, csv?: MapJob['csv'], to?: number): Promise<MapJobResult> {
    // The bytes are copied (into a buffer a worker gave back, when one is big enough) so that the copy's buffer can
    // be handed over without detaching the chunk.
    // Several pieces are copied straight into it: joining them first would make a block-sized garbage buffer
    // outside V8's heap per block, which V8 answers with full collections (measured on the CSV path).
    const list = Array.isArray(pieces) ? pieces : [pieces];
    let length = 0;
    for (const p of list) length += p.length;
    const own = this.buffer(length);
    let at = 0;
    for (const p of list) {
      own.set(p, at);
      at += p.length;
    }
    return this.submitOwned(own.subarray(0, length), first, csv, to);
  }

  /** A buffer of at least `bytes` bytes to fill and submitOwned: one a worker gave back, when one is big enough. */
  buffer(bytes: number): Uint8Array {
    const spare = this.spares.pop();
    return spare && spare.byteLength >= bytes ? new Uint8Array(spare) : new Uint8Array(Math.max(bytes, MIN_JOB_BUFFER));
  }

  /** Maps bytes (a view from the start of a buffer from buffer()), handing their buffer over to the worker. */
  submitOwned(bytes: Uint8Array, first: boolean, csv?: MapJob['csv'], to?: number): Promise<MapJobResult> {
    if (this.failure) return Promise.reject(this.failure);
    const i = to ?? this.next;
    if (to === undefined) this.next = (this.next + 1) % this.workers.length;
    const seq = this.seq++;
    const job: MapJob = { seq, bytes, first, csv };
    return new Promise((resolve, reject) => {
      this.waiting[i]!.set(seq, { resolve, reject });
      this.workers[i]!.postMessage(job, [bytes.buffer as ArrayBuffer]);
    });
  }

  /** Set once share() was called (with a ledger to share or without). */
  ledgerShared = false;

  /**
   * Shares the dry-run's ledger with every worker, which then fills the ledger codes of the blocks it maps from
   * then on (the decider looks up those of earlier blocks itself); undefined: there is none to share.
   */
  share(msg: MapShareLedger | undefined): void {
    this.ledgerShared = true;
    if (msg) for (const w of this.workers) w.postMessage(msg);
  }

  /**
   * Tells every worker how the dates of the input whose blocks come next are read (its own first records showed it:
   * date-sample.ts). Sent before its first block, after the last of the input before it was answered: a worker
   * reads its messages in order.
   */
  useDateColumns(dates: DateColumns | undefined): void {
    const msg: MapDates = { dates: dates ?? null };
    for (const w of this.workers) w.postMessage(msg);
  }

  /** Gives a decided block's buffers back to the worker that filled them. */
  recycle(worker: number, block: MappedBlock): void {
    const msg: MapRecycle = { recycle: buffersOf(block) };
    this.workers[worker]?.postMessage(msg, [msg.recycle.ints, msg.recycle.offs, msg.recycle.bytes]);
  }

  get size(): number {
    return this.workers.length;
  }

  /** Stops every worker. */
  async close(): Promise<void> {
    await Promise.all(this.workers.map((w) => w.terminate()));
  }
}

/** A block of mapped records ready for the decider: its source, and what to add to its lines. */
export interface DecodedBlock {
  block: MappedBlock;
  source: string;
  lineBase: number;
  /** Called once the block is decided: its buffers may be reused. */
  release?: () => void;
  /** Parts of the input read beside the block that could not be read (a line too long), before its records. */
  unread?: RawUnread[];
  /** The input went idle after this block (a quiet stdin): what was decided should not wait for more. */
  idle?: boolean;
  /**
   * Bytes of the input (as on disk) the block holds, when its reader knows (a plain JSONL file read by the
   * workers, whose blocks run megabytes ahead of the decisions); else the bytes read since the last block count.
   */
  bytes?: number;
}
