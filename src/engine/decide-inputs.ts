// The audit half of the pipeline, shared by push, its dry-run and replay --from: read → map → decide, in batches.
// Large JSONL and CSV inputs are parsed and mapped by worker threads (map-pool.ts) while this thread decides in
// input order; JSON arrays and small inputs are read and mapped here. Both paths yield the same decisions.
import { statSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { encodeMapped } from './block.js';
import { Decider } from './decider.js';
import type { Decision, DecisionTally } from '../decide/types.js';
import { ledgerFailure } from '../ledger/failure.js';
import { OTHER_RUN_SINCE } from '../ledger/rules.js';
import type { Ledger } from '../ledger/ledger.js';
import type { LedgerStore } from '../ledger/store.js';
import { localLedger, type ThreadedLedger } from '../ledger/threaded.js';
import { PrefetchedLedger } from './prefetch-ledger.js';
import { LedgerIndex } from './ledger-index.js';
import { createMapper, mapItem, type MapOptions } from '../mapping/map-record.js';
import type { Mapped } from '../mapping/types.js';
import type { OpenedInput } from '../sources/open-input.js';
import { csvSettings, readFormat, readInputsWith } from '../sources/read-inputs.js';
import type { ReaderContext } from '../sources/reader-context.js';
import type { InputInfo, RawReject, RawUnread, ReadOptions } from '../sources/types.js';
import { sampleDates } from '../presets/date-sample.js';
import { recognizerFor } from '../presets/read-as.js';
import type { Recognizer } from '../presets/recognize.js';
import type { SourceDef } from '../presets/types.js';
import { MapPool, type DecodedBlock, type MapWorkerInit } from './map-pool.js';
import { readCsvParallel } from './read-csv-parallel.js';
import { readJsonlParallel } from './read-jsonl-parallel.js';

/** What the audit half needs. */
export interface DecideInputsOptions {
  inputs: string[];
  read: ReadOptions;
  map: MapOptions;
  /** Absent in a dry-run before the ledger file exists. */
  ledger?: LedgerStore;
  /** Stops reading between batches (and, given as read.signal too, abandons a wait on stdin or a FIFO). */
  stop?: AbortSignal;
  /**
   * Map workers for JSONL and CSV: 'auto' uses one per core for inputs larger than the sniffed head (small inputs are not
   * worth a worker's start-up); a number forces that many for every JSONL input (tests); 0 never uses workers.
   */
  workers?: 'auto' | number;
  /** Keys held in memory before the run memory spills (tests make it tiny). */
  memoryCapacity?: number;
  /** Rows past which a read-only ledger is looked up in SQLite instead of indexed (tests: 0 forces lookups). */
  indexMaxRows?: number;
  /** Bytes read into each block of a JSONL file, or cut into a block of CSV (tests make it small, for more blocks). */
  blockBytes?: number;
  /**
   * Only counts are wanted (a dry-run without report rows): decisions go to the tally, made whole only where it
   * wants them, and every batch yielded is empty (one per block, for progress and stopping).
   */
  tally?: DecisionTally;
  /** A part of an input that could not be read (it gets no decision). */
  onUnread?: (u: RawUnread) => void;
  /**
   * The source every input is read as (--preset, the config's "preset"); 'generic' reads every input by field names
   * alone. Otherwise each input whose first records (or header) a source claims is read as that source.
   */
  preset?: SourceDef | 'generic';
  /** Filled in as records are decided: what the run report says beside the decisions. */
  stats?: DecideStats;
  /**
   * The run that took its ledger alone (the run lock; not --no-lock). Until another run starts, the ledger changes
   * only by what this run decides, so a snapshot of the ledger's keys and people tells which of them the ledger need
   * not be asked about (see useFilter, useAsyncFilter).
   */
  exclusiveRun?: number;
  /**
   * The run claims what it decides new (a push), and a claim records each event's payload hash: the map workers take
   * it, off the deciding thread. A dry-run leaves it to the few events that need it (hashLater in createMapper).
   */
  hashPayloads?: boolean;
  /**
   * The namespace of the run's downstream keys (a push's): the map workers take each event's key, off the deciding
   * thread (LeadEvent.downstreamKey). Absent, or in-thread, the sender takes them.
   */
  downstreamNamespace?: string;
}

/** What a run counts beside its decisions. */
export interface DecideStats {
  /** Records decided whose phone was written without a calling code (read in the default country, if any). */
  nationalPhones: number;
}

const DECISION_SLICE = 512;

/**
 * A batch of decisions, with the bytes of the inputs (as on disk) their records came from: progress against
 * ReadOptions.onTotalBytes, spread over the batch. An empty batch may carry bytes too (a tally, a block of rejects).
 */
export type DecisionSlice = Decision[] & { bytes?: number };

function slice(decisions: Decision[], bytes: number): DecisionSlice {
  const out = decisions as DecisionSlice;
  if (bytes) out.bytes = bytes;
  return out;
}

/**
 * Yields the decisions for every record of the inputs, in input order, a batch at a time (or, with a tally, counts
 * them). An empty batch says the input went idle (a quiet stdin): a consumer sends what it holds rather than wait. A decision's event reads its block's buffers until the next batches are asked for: a consumer that keeps
 * one longer calls `event.detach()` first.
 */
export async function* decideInputs(o: DecideInputsOptions): AsyncGenerator<DecisionSlice> {
  const mapper = createMapper(o.map, { hashLater: true });
  // Progress: bytes read from the inputs (as on disk), and how many of them blocks have carried on so far.
  let rawRead = 0;
  let carried = 0;
  const readOptions = {
    ...o.read,
    onBytesRead: (n: number) => {
      rawRead += n;
      o.read.onBytesRead?.(n);
    },
  };
  // A read-only ledger is what a dry-run gets: nothing writes it during the run, so it can be read once into an
  // index (ledger-index.ts) that the workers probe; one the index cannot hold is looked up by the workers in
  // SQLite, ahead of the decisions. A writing run claims as it goes, so there lookups stay with the decider.
  // SQLite is asked by the decider (and a dry-run's map workers) itself; a ledger that answers asynchronously
  // (PostgreSQL) is asked a block ahead, here, and its dry-run index is read before the first input.
  const sqlite = o.ledger?.kind === 'sqlite' ? localLedger(o.ledger as Ledger | ThreadedLedger) : undefined;
  const prefetched = o.ledger && !sqlite ? new PrefetchedLedger(o.ledger) : undefined;
  const readonlyLedger = sqlite?.readonly ? sqlite : undefined;
  const decider = new Decider({ ledger: sqlite ?? prefetched, memoryCapacity: o.memoryCapacity });
  if (prefetched && o.ledger!.readonly) {
    // Erased keys are only hashes, which no fingerprint can be checked against: then every block is looked up.
    const tombstones = await o.ledger!.sql.get('SELECT 1 AS one FROM tombstones LIMIT 1');
    if (!tombstones) {
      const { indexPages } = await import('../ledger/postgres/index-rows.js');
      try {
        decider.index = await LedgerIndex.fromRows(indexPages(o.ledger!), o.indexMaxRows);
      } catch (e) {
        throw ledgerFailure(e, o.ledger!.path);
      }
    }
  }

  const run = o.exclusiveRun;
  if (sqlite && !sqlite.readonly && run !== undefined)
    useFilter(decider, sqlite, o.inputs, () => !sqlite.otherRunSince(run), o.indexMaxRows);
  if (prefetched && !o.ledger!.readonly && run !== undefined)
    await useAsyncFilter(prefetched, o.ledger!, o.inputs, run, o.indexMaxRows);

  const want = o.workers ?? 'auto';
  let pool: MapPool | undefined;
  // Built when the first input is read. With map workers, once they have their first blocks: they map those while
  // this thread scans the ledger, and the blocks that come back without ledger codes are looked up here. Built
  // first, the scan (~0.17 s for 400,000 events) kept the workers waiting for their first block.
  let indexTried = !readonlyLedger;
  const useIndex = (): void => {
    if (indexTried) return;
    indexTried = true;
    try {
      decider.index = LedgerIndex.build(readonlyLedger!.db, o.indexMaxRows);
    } catch (e) {
      // Read inside the input's loop: a damaged ledger must not pass for a failure of the input being read.
      throw ledgerFailure(e, readonlyLedger!.path);
    }
  };
  const shareLedger = (): void => {
    if (!pool || pool.ledgerShared) return;
    useIndex();
    pool.share(
      decider.index
        ? { index: decider.index.shared() }
        : readonlyLedger
          ? { ledgerPath: readonlyLedger.path }
          : undefined,
    );
  };

  // What every map worker is started with, whether the pool boots early (below) or with the first input it maps.
  const poolInit: MapWorkerInit = {
    map: o.map,
    select: o.read.select,
    hashPayloads: o.hashPayloads,
    downstreamNamespace: o.downstreamNamespace,
  };

  // A large first file will be mapped by the workers: they boot (~60 ms: an isolate and the mapping modules) while
  // this thread opens and sniffs it, instead of after. Should it be a JSON array after all, they go unused.
  if (want !== 0 && o.read.format !== 'json' && largeFile(o.inputs[0]))
    pool = new MapPool(want === 'auto' ? availableParallelism() : want, poolInit);

  async function* read(opened: OpenedInput, info: InputInfo, ctx: ReaderContext): AsyncGenerator<DecodedBlock> {
    // How the input's dates read (the order of day and month of each field), from its first records: its records are
    // decided one by one, and the first must already be read as the others are.
    const dates = await sampleDates(opened, info, o.map, o.read.select, (head, map) =>
      recognizerFor(head, info, map, o.preset),
    );
    if (dates) ctx.dates = dates.fields;
    // An input of a source leadledger knows is read record by record as that source wrote it, in this thread (its
    // records may hold several events, or be log lines around them). JSON documents always are: each record is
    // recognized on its own. Any other input keeps the generic path, where workers map it from its bytes.
    const recognizer = recognizerFor(opened, info, dates ? { ...o.map, dateColumns: dates.columns } : o.map, o.preset);
    if (recognizer) {
      useIndex();
      yield* mapInThread(opened, info, ctx, recognizer);
      return;
    }
    const size = want === 'auto' ? (opened.complete ? 0 : availableParallelism()) : want;
    if ((info.format === 'jsonl' || info.format === 'csv') && size > 0) {
      pool ??= new MapPool(size, poolInit);
      pool.useDateColumns(dates?.columns);
      if (info.format === 'jsonl') yield* readJsonlParallel(opened, ctx, pool, shareLedger, o.blockBytes);
      else {
        yield* readCsvParallel(opened, ctx, pool, csvSettings(info), shareLedger, o.blockBytes);
      }
      return;
    }
    useIndex();
    mapper.useDateColumns(dates?.columns);
    yield* mapInThread(opened, info, ctx);
  }
  async function* mapInThread(
    opened: OpenedInput,
    info: InputInfo,
    ctx: ReaderContext,
    recognizer?: Recognizer,
  ): AsyncGenerator<DecodedBlock> {
    if (recognizer) ctx.readAs = recognizer.readAs;
    for await (const batch of readFormat(opened, info, ctx)) {
      const mapped: Mapped[] = [];
      for (const item of batch) {
        if (item.kind === 'unread') o.onUnread?.(item);
        else if (recognizer) recognizer.push(item, mapped);
        else mapped.push(mapItem(mapper, item));
      }
      // A reader's empty batch: its input went idle.
      yield { block: encodeMapped(mapped), source: ctx.source, lineBase: 0, idle: batch.length === 0 };
    }
  }

  try {
    const rejected = (r: RawReject | RawUnread): DecodedBlock => {
      if (r.kind === 'unread') o.onUnread?.(r);
      return { block: encodeMapped(r.kind === 'unread' ? [] : [mapItem(mapper, r)]), source: r.source, lineBase: 0 };
    };
    for await (const b of readInputsWith(o.inputs, readOptions, read, rejected)) {
      if (o.stop?.aborted) return;
      if (b.unread) for (const u of b.unread) o.onUnread?.(u);
      if (prefetched) await prefetched.prepare(b.block, decider.index);
      // Progress: the input bytes a block came from (its own count, else what was read since the last block) are
      // spread over its slices of decisions, so that the share shown is of records decided, not read ahead.
      const n = b.block.n;
      const bytes = b.bytes ?? Math.max(0, rawRead - carried);
      carried += bytes;
      const share = (from: number, to: number): number =>
        n === 0 ? bytes : Math.round((bytes * to) / n) - Math.round((bytes * from) / n);
      if (o.tally) {
        decider.countBlock(b.block, b.source, b.lineBase, o.tally);
        decider.release(b.block, b.release);
        yield slice([], bytes);
        continue;
      }
      if (n === 0 && !b.idle) {
        // Nothing to decide (a line too long, a part not read): its bytes go with the next block.
        if (b.bytes === undefined) carried -= bytes;
        continue;
      }
      if (n === 0) {
        yield slice([], bytes);
        continue;
      }
      // A block's decisions go out a slice at a time: the consumer drops each before the next is made, so they
      // die young instead of a whole block's worth surviving into the old generation.
      for (let from = 0; from < n; from += DECISION_SLICE) {
        if (from > 0 && o.stop?.aborted) return;
        const to = Math.min(n, from + DECISION_SLICE);
        yield slice(decider.decideBlock(b.block, b.source, b.lineBase, from, to), share(from, to));
      }
      decider.release(b.block, b.release);
    }
  } finally {
    if (o.stats) o.stats.nationalPhones += decider.nationalPhones;
    decider.close();
    // Not awaited: the workers are torn down (~10 ms) while the report is written.
    void pool?.close();
  }
}

/**
 * Input bytes per ledger row from which a writing run indexes its ledger first. The scan reads whole rows, ~1.2 µs
 * each (807,692 rows of a pushed ledger: 0.98 s); it saves ~2.5 µs for each new event of the input (its key and
 * its person, not asked of SQLite), nothing for one the ledger holds. At one row per 500 bytes of input (about two
 * rows for every five events of ~200 bytes), a rerun of an input the ledger already holds whole loses under a tenth
 * of its time (4.5 µs an event), and an input of new events gains. Below it (a daily file against a ledger of
 * years), each block asks SQLite, as without the index.
 */
const FILTER_BYTES_PER_ROW = 500;

/**
 * Gives a writing run's decider the ledger's keys and people as they are now, to skip the SQLite lookups of those it
 * does not hold: in a push of new events, nearly all of them (bench scenario 10, the lookups: 8% of the main
 * thread). Only where the index pays for itself (FILTER_BYTES_PER_ROW, measured on the files given, not stdin) and
 * can be built (LedgerIndex.build: no tombstones, at most maxRows).
 */
function useFilter(
  decider: Decider,
  ledger: Ledger,
  inputs: string[],
  held: () => boolean,
  maxRows = LedgerIndex.MAX_ROWS,
): void {
  const bytes = inputBytes(inputs);
  try {
    // The rowids given so far: at least the rows there are (a writing run has migrated the ledger to a rowid table).
    const rows = (ledger.db.prepare('SELECT max(rowid) AS n FROM events').get() as { n: number | null }).n ?? 0;
    // Past maxRows the index gives up, after reading them all: not started.
    if (rows * FILTER_BYTES_PER_ROW > bytes || rows > maxRows) return;
    decider.filter = LedgerIndex.build(ledger.db, maxRows);
  } catch (e) {
    throw ledgerFailure(e, ledger.path);
  }
  decider.filterValid = held;
}

/**
 * useFilter for a ledger that answers asynchronously (PostgreSQL): its rows counted only up to what the input pays
 * for, its index read by a cursor as a dry-run reads it, and whether another run may have written since asked
 * before each block's lookups (PrefetchedLedger.prepare). A run whose lease ran out is still 'running' until a run marks it:
 * the filter is then dropped, which costs lookups, never a decision.
 */
async function useAsyncFilter(
  prefetched: PrefetchedLedger,
  store: LedgerStore,
  inputs: string[],
  run: number,
  maxRows = LedgerIndex.MAX_ROWS,
): Promise<void> {
  const most = Math.min(Math.floor(inputBytes(inputs) / FILTER_BYTES_PER_ROW), maxRows);
  const other = () => store.sql.get(OTHER_RUN_SINCE, [run, run]);
  try {
    if (await other()) return;
    if (await store.sql.get('SELECT 1 AS one FROM tombstones LIMIT 1')) return;
    const counted = await store.sql.get<{ n: number | string }>(
      'SELECT count(*) AS n FROM (SELECT 1 FROM events LIMIT ?) AS e',
      [most + 1],
    );
    if (Number(counted?.n ?? 0) > most) return;
    const { indexPages } = await import('../ledger/postgres/index-rows.js');
    prefetched.filter = await LedgerIndex.fromRows(indexPages(store), maxRows);
  } catch (e) {
    throw ledgerFailure(e, store.path);
  }
  prefetched.filterValid = async () => !(await other());
}

/** The bytes of the inputs that are files (see fileBytes). */
function inputBytes(inputs: string[]): number {
  return inputs.reduce((sum, input) => sum + fileBytes(input), 0);
}

// Inputs of this many bytes are always mapped by workers (a sniffed head is far smaller).
const LARGE_INPUT = 8 << 20;

function largeFile(input: string | undefined): boolean {
  return input !== undefined && fileBytes(input) >= LARGE_INPUT;
}

// The size of an input that is a regular file; 0 for stdin, a glob, a directory or a missing file (read() decides
// what those are when it opens them).
function fileBytes(input: string): number {
  if (input === '-') return 0;
  try {
    const st = statSync(input);
    return st.isFile() ? st.size : 0;
  } catch {
    return 0;
  }
}
