// Worker thread of the parallel audit: parses and maps blocks of JSONL lines (or CSV records) that the main thread
// cut on line (record) boundaries, so the CPU-heavy half (parsing, phone normalization, hashing, a dry-run's ledger
// lookups) runs on every core while the main thread reads bytes and decides in input order.
import { parentPort, workerData } from 'node:worker_threads';
import { BlockEncoder, buffersOf, encodeMapped, fillLedger, type BlockBuffers, type MappedBlock } from '../decide/block.js';
import { LedgerIndex } from '../decide/ledger-index.js';
import { LedgerLookup } from '../ledger/lookup.js';
import { createMapper, mapItem } from '../mapping/map-record.js';
import type { Mapped } from '../mapping/types.js';
import { FastJsonl, mapJsonlBlock } from './fast-jsonl.js';
import { FastCsv, mapCsvBlock } from './fast-csv.js';
import { compileSelector } from '../sources/select-path.js';
import type { RawItem } from '../sources/types.js';
import { CsvStream } from './csv-stream.js';
import type { ReaderContext } from '../sources/reader-context.js';
import type { MapJob, MapJobResult, MapRecycle, MapShareLedger, MapWorkerInit } from './map-pool.js';

const init = workerData as MapWorkerInit;
const mapper = createMapper(init.map, { hashLater: true });
const fast = FastJsonl.allowed(mapper, init.select) ? new FastJsonl(mapper) : undefined;
const fastCsv = FastCsv.allowed(mapper, init.select) ? new FastCsv(mapper) : undefined;
const selector = init.select === undefined ? null : compileSelector(init.select);
let lookup: LedgerLookup | undefined;
const port = parentPort!;
let index: LedgerIndex | undefined;

// Records carry source '' and block-relative lines: the main thread, which knows both, fills them in.
// JSONL blocks are mapped synchronously, and the CSV readers only await already-settled promises here, so each
// block finishes before the next message is taken and replies leave in the order the jobs came.
// Buffers the main thread gave back, to encode the next blocks' strings into.
const spares: BlockBuffers[] = [];

port.on('message', async (msg: MapJob | MapRecycle | MapShareLedger) => {
  if ('index' in msg) {
    index = LedgerIndex.fromShared(msg.index);
    return;
  }
  if ('ledgerPath' in msg) {
    lookup = LedgerLookup.open(msg.ledgerPath);
    return;
  }
  if ('recycle' in msg) {
    if (spares.length < 4) spares.push(msg.recycle);
    return;
  }
  const job = msg;
  if (job.csv) return csvJob(job, job.csv);
  const enc = new BlockEncoder(job.bytes.length >>> 7, spares.pop());
  const lines = mapJsonlBlock(Buffer.from(job.bytes.buffer, job.bytes.byteOffset, job.bytes.byteLength), job.first, enc, mapper, fast, selector);
  reply({ seq: job.seq, lines, block: lookUp(enc.finish()), spare: job.bytes.buffer as ArrayBuffer });
});


// A block travels as three transferred buffers (numbers, string offsets, UTF-8 bytes): nothing is cloned.
function reply(r: MapJobResult): void {
  const b = buffersOf(r.block);
  const transfer = [b.ints, b.offs, b.bytes];
  if (r.spare) transfer.push(r.spare);
  port.postMessage(r, transfer);
}

// With a read-only ledger, every key of the block is looked up here, beside parsing (in the shared index, else in
// SQLite): a superset of what the decider would query (it skips keys already in its run memory), so its decisions
// are the same.
function lookUp(block: MappedBlock): MappedBlock {
  if (index) index.fill(block);
  else if (lookup) fillLedger(block, lookup);
  return block;
}

function toMapped(item: RawItem): Mapped {
  return mapItem(mapper, item);
}

const csvStreams = new Map<number, CsvStream>();

// CSV lines are absolute (one parser sees the whole input), so its answers report 0 lines for the main thread to add.
function csvJob(job: MapJob, csv: NonNullable<MapJob['csv']>): void {
  if (csv.split) return void csvBlock(job, csv, csv.split);
  let s = csvStreams.get(csv.stream);
  if (!s) {
    s = new CsvStream(csv.settings, selector, csv.lineOffset, toMapped, (seq, items, error) => {
      reply(error === undefined ? { seq, lines: 0, block: lookUp(encodeMapped(items)) } : { seq, lines: 0, block: encodeMapped([]), error });
    });
    csvStreams.set(csv.stream, s);
    const id = csv.stream;
    void s.done.finally(() => csvStreams.delete(id));
  }
  s.push(job.seq, Buffer.from(job.bytes.buffer, job.bytes.byteOffset, job.bytes.byteLength), csv.end);
}

// A CSV block of whole records: parsed on its own, behind a copy of the input's header so that its rows get the
// same columns, with lines moved to where the block sits in the input (see mapCsvBlock for who reads what).
async function csvBlock(job: MapJob, csv: NonNullable<MapJob['csv']>, split: { header: Uint8Array; last: boolean }): Promise<void> {
  const ctx: ReaderContext = { source: '', selector, progress: { line: 0 }, lineOffset: csv.lineOffset, batchSize: 64 };
  const header = Buffer.from(split.header.buffer, split.header.byteOffset, split.header.byteLength);
  const body = Buffer.from(job.bytes.buffer, job.bytes.byteOffset, job.bytes.byteLength);
  try {
    const enc = new BlockEncoder(job.bytes.length >>> 6, spares.pop());
    await mapCsvBlock(header, body, split.last, csv.settings, ctx, enc, toMapped, fastCsv);
    reply({ seq: job.seq, lines: 0, block: lookUp(enc.finish()), unclosedQuote: ctx.unclosedQuote === true, spare: job.bytes.buffer as ArrayBuffer });
  } catch (e) {
    reply({ seq: job.seq, lines: 0, block: encodeMapped([]), error: (e as Error).message });
  }
}
