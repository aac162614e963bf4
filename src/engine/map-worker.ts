// Worker thread of the parallel audit: parses and maps blocks of JSONL lines (or CSV records) that the main thread
// cut on line (record) boundaries, so the CPU-heavy half (parsing, phone normalization, hashing, a dry-run's ledger
// lookups) runs on every core while the main thread reads bytes and decides in input order.
import { readlinkSync } from 'node:fs';
import { setPriority } from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import { LedgerError } from '../errors.js';
import {
  BlockEncoder,
  buffersOf,
  encodeMapped,
  fillLedger,
  setDownstreamNamespace,
  type BlockBuffers,
  type MappedBlock,
} from './block.js';
import { LedgerIndex } from './ledger-index.js';
import type { LedgerLookup } from '../ledger/lookup.js';
import { createMapper, mapItem } from '../mapping/map-record.js';
import type { Mapped } from '../mapping/types.js';
import { FastJsonl, mapJsonlBlock } from './fast-jsonl.js';
import type { FastCsv, mapCsvBlock } from './fast-csv.js';
import { mergeRecoded, type Recoded } from '../sources/decode-text.js';
import { compileSelector } from '../sources/select-path.js';
import type { RawItem } from '../sources/types.js';
import type { CsvStream } from './csv-stream.js';
import { detachEarly } from './detach-early.js';
import type { ReaderContext } from '../sources/reader-context.js';
import type { MapDates, MapJob, MapJobResult, MapRecycle, MapShareLedger, MapWorkerInit } from './map-pool.js';

detachEarly(); // before any of this worker's code is optimized: see detach-early.ts

// The nice value of a map worker's thread, on Linux (see yieldToDecider).
const WORKER_NICE = 5;
yieldToDecider();

const init = workerData as MapWorkerInit;
const mapper = createMapper(init.map, { hashLater: !init.hashPayloads });
if (init.downstreamNamespace !== undefined) setDownstreamNamespace(init.downstreamNamespace);
const fast = FastJsonl.allowed(mapper, init.select) ? new FastJsonl(mapper) : undefined;
// What only CSV inputs, or ledgers too large to index, need is loaded when first needed: a worker of a JSONL
// audit starts in half the time (~20 ms instead of ~45, measured), while the deciding thread builds the index.
let csvModules: Promise<CsvModules> | undefined;
interface CsvModules {
  CsvStream: typeof CsvStream;
  mapCsvBlock: typeof mapCsvBlock;
  fastCsv: FastCsv | undefined;
}
const loadCsv = (): Promise<CsvModules> =>
  (csvModules ??= Promise.all([import('./csv-stream.js'), import('./fast-csv.js')]).then(([stream, fast]) => ({
    CsvStream: stream.CsvStream,
    mapCsvBlock: fast.mapCsvBlock,
    fastCsv: fast.FastCsv.allowed(mapper, init.select) ? new fast.FastCsv(mapper) : undefined,
  })));
// Set while the SQLite lookups load: jobs wait for them, in the order they came.
let lookupLoading: Promise<void> | undefined;
const selector = init.select === undefined ? null : compileSelector(init.select);
let lookup: LedgerLookup | undefined;
// Why the ledger shared with this worker could not be opened: every block it would look up fails with it.
let lookupFailure: Error | undefined;
const port = parentPort!;
let index: LedgerIndex | undefined;

// Records carry source '' and block-relative lines: the main thread, which knows both, fills them in.
// Jobs that wait (for modules loading, for a CSV stream's parser) resume in the order they came, so a CSV stream's
// chunks are parsed in order; replies are matched to jobs by their sequence number, whatever their order.
// Buffers the main thread gave back, to encode the next blocks' strings into.
const spares: BlockBuffers[] = [];

port.on('message', (msg: MapJob | MapRecycle | MapShareLedger | MapDates) => void onMessage(msg));

async function onMessage(msg: MapJob | MapRecycle | MapShareLedger | MapDates): Promise<void> {
  if ('dates' in msg) {
    // After the jobs that wait for the ledger's lookups, which came before it (an earlier input's, were there any).
    if (lookupLoading) await lookupLoading;
    mapper.useDateColumns(msg.dates ?? undefined);
    return;
  }
  if ('index' in msg) {
    index = LedgerIndex.fromShared(msg.index);
    return;
  }
  if ('ledgerPath' in msg) {
    const path = msg.ledgerPath;
    lookupLoading = import('../ledger/lookup.js')
      .then((m) => {
        lookup = m.LedgerLookup.open(path);
      })
      .catch((e: unknown) => {
        lookupFailure = e instanceof Error ? e : new Error(String(e));
      })
      .finally(() => {
        lookupLoading = undefined;
      });
    return;
  }
  if ('recycle' in msg) {
    if (spares.length < 4) spares.push(msg.recycle);
    return;
  }
  const job = msg;
  if (lookupLoading) await lookupLoading;
  if (job.csv) return csvJob(job, job.csv, await loadCsv());
  const enc = new BlockEncoder(job.bytes.length >>> 7, spares.pop());
  // Lines read as Windows-1252 (not UTF-8), counted from the block's first: the main thread moves them to the input's.
  let recoded: Recoded | undefined;
  const lines = mapJsonlBlock(
    Buffer.from(job.bytes.buffer, job.bytes.byteOffset, job.bytes.byteLength),
    job.first,
    enc,
    mapper,
    fast,
    selector,
    (line) => (recoded = mergeRecoded(recoded, { lines: 1, first: line })),
  );
  let block: MappedBlock;
  try {
    block = lookUp(enc.finish());
  } catch (e) {
    return failed(job.seq, e);
  }
  const r: MapJobResult = { seq: job.seq, lines, block, spare: job.bytes.buffer as ArrayBuffer };
  if (recoded) r.recoded = recoded;
  reply(r);
}

// A job that failed: the main thread rejects it, as a LedgerError when the ledger is what failed (exit 5: a damaged
// ledger read here must not pass for a failure of the input), else as the input's failure.
function failed(seq: number, e: unknown): void {
  const error = e instanceof Error ? e.message : String(e);
  reply({ seq, lines: 0, block: encodeMapped([]), error, ledgerError: e instanceof LedgerError });
}

// A block travels as three transferred buffers (numbers, string offsets, UTF-8 bytes): nothing is cloned.
function reply(r: MapJobResult): void {
  const b = buffersOf(r.block);
  const transfer = [b.ints, b.offs, b.bytes];
  if (r.spare) transfer.push(r.spare);
  port.postMessage(r, transfer);
}

// With a read-only ledger, every key of the block is looked up here, beside parsing (in the shared index, else in
// SQLite): a superset of what the decider would query (it skips keys already in its run memory), so its decisions
// are the same. Blocks mapped before the ledger arrived (the first ones: it is shared once they are out) go
// without, and the decider looks them up.
function lookUp(block: MappedBlock): MappedBlock {
  if (index) index.fill(block);
  else if (lookupFailure !== undefined) throw lookupFailure;
  else if (lookup) fillLedger(block, lookup);
  return block;
}

function toMapped(item: RawItem): Mapped {
  return mapItem(mapper, item);
}

const csvStreams = new Map<number, CsvStream>();

// CSV lines are absolute (one parser sees the whole input), so its answers report 0 lines for the main thread to add.
function csvJob(job: MapJob, csv: NonNullable<MapJob['csv']>, m: CsvModules): void {
  if (csv.split) return void csvBlock(job, csv, csv.split, m);
  let s = csvStreams.get(csv.stream);
  if (!s) {
    s = new m.CsvStream(csv.settings, selector, csv.lineOffset, toMapped, (seq, items, error, recoded) => {
      if (error !== undefined) return reply({ seq, lines: 0, block: encodeMapped([]), error });
      let block: MappedBlock;
      try {
        block = lookUp(encodeMapped(items));
      } catch (e) {
        return failed(seq, e);
      }
      reply({ seq, lines: 0, block, recoded });
    });
    csvStreams.set(csv.stream, s);
    const id = csv.stream;
    void s.done.finally(() => csvStreams.delete(id));
  }
  s.push(job.seq, Buffer.from(job.bytes.buffer, job.bytes.byteOffset, job.bytes.byteLength), csv.end);
}

// A CSV block of whole records: parsed on its own, behind a copy of the input's header so that its rows get the
// same columns, with lines moved to where the block sits in the input (see mapCsvBlock for who reads what).
async function csvBlock(
  job: MapJob,
  csv: NonNullable<MapJob['csv']>,
  split: { header: Uint8Array; last: boolean },
  m: CsvModules,
): Promise<void> {
  const ctx: ReaderContext = { source: '', selector, progress: { line: 0 }, lineOffset: csv.lineOffset, batchSize: 64 };
  const header = Buffer.from(split.header.buffer, split.header.byteOffset, split.header.byteLength);
  const body = Buffer.from(job.bytes.buffer, job.bytes.byteOffset, job.bytes.byteLength);
  try {
    const enc = new BlockEncoder(job.bytes.length >>> 6, spares.pop());
    await m.mapCsvBlock(header, body, split.last, csv.settings, ctx, enc, toMapped, m.fastCsv);
    reply({
      seq: job.seq,
      lines: 0,
      block: lookUp(enc.finish()),
      unclosedQuote: ctx.unclosedQuote === true,
      recoded: ctx.recoded,
      spare: job.bytes.buffer as ArrayBuffer,
    });
  } catch (e) {
    failed(job.seq, e);
  }
}

// The deciding thread is the one that cannot be split: when it can run, it should, and the workers take the rest of
// the cores. On Linux a thread has its own nice value, so each worker lowers its own to 5 (the deciding thread keeps
// 0; raising it would take privileges). Measured on two cores, 1M events, alternating runs: the JSONL audit 1.25 ->
// 1.21 s, the CSV one 1.37 -> 1.31 s (medians of 8 and 6). Elsewhere (no /proc/thread-self) nothing changes.
function yieldToDecider(): void {
  try {
    const tid = Number(readlinkSync('/proc/thread-self').split('/').pop());
    if (tid > 0) setPriority(tid, WORKER_NICE);
  } catch {
    // not Linux, or not allowed: the workers keep the process's priority
  }
}
