// Worker thread of the parallel audit: parses and maps blocks of JSONL lines that the main thread cut on line
// boundaries, so the CPU-heavy half (JSON.parse, phone parsing, hashing) runs on every core while the main
// thread reads bytes and decides in input order.
import { parentPort, workerData } from 'node:worker_threads';
import { LedgerLookup } from '../ledger/lookup.js';
import { createMapper } from '../mapping/map-record.js';
import type { LeadEvent, Mapped } from '../mapping/types.js';
import { readJsonl } from '../sources/read-jsonl.js';
import { compileSelector } from '../sources/select-path.js';
import type { RawItem } from '../sources/types.js';
import { CsvStream } from './csv-stream.js';
import type { MapBlock, MapJob, MapJobResult, MapWorkerInit } from './map-pool.js';

const init = workerData as MapWorkerInit;
const mapper = createMapper(init.map);
const selector = init.select === undefined ? null : compileSelector(init.select);
const lookup = init.ledgerPath === undefined ? undefined : LedgerLookup.open(init.ledgerPath);
const port = parentPort!;

async function* one(bytes: Uint8Array): AsyncGenerator<Buffer> {
  yield Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

// Records carry source '' and block-relative lines: the main thread, which knows both, fills them in.
// readJsonl only awaits already-settled promises here, so each block finishes before the next message is taken
// and replies leave in the order the jobs came.
port.on('message', async (job: MapJob) => {
  if (job.csv) return csvJob(job, job.csv);
  const ctx = { source: '', selector, progress: { line: 0 }, midInput: !job.first };
  const out: Mapped[] = [];
  for await (const batch of readJsonl(one(job.bytes), ctx)) {
    for (const item of batch) out.push(toMapped(item));
  }
  // One JSON string is cheaper to pass than a structured clone of thousands of small objects.
  const reply: MapJobResult = { seq: job.seq, lines: ctx.progress.line, json: JSON.stringify({ items: out, ...lookUp(out) }) };
  port.postMessage(reply);
});

// Every key of the block and the people of events the ledger does not hold: a superset of what Decider would
// query for the block (it skips keys already in its run memory), so its decisions are the same.
function lookUp(items: Mapped[]): Pick<MapBlock, 'known' | 'delivered'> {
  if (!lookup) return { known: [], delivered: [] };
  const events = items.filter((m): m is LeadEvent => m.kind === 'event');
  const known = lookup.lookupKeys([...new Set(events.map((e) => e.key))]);
  const naturals = [...new Set(events.filter((e) => e.naturalKey && !known.has(e.key)).map((e) => e.naturalKey!))];
  return { known: [...known], delivered: [...lookup.lookupDelivered(naturals)] };
}

function toMapped(item: RawItem): Mapped {
  return item.kind === 'reject' ? { kind: 'invalid', source: '', line: item.line, reason: item.reason } : mapper(item);
}

const csvStreams = new Map<number, CsvStream>();

// CSV lines are absolute (one parser sees the whole input), so its answers report 0 lines for the main thread to add.
function csvJob(job: MapJob, csv: NonNullable<MapJob['csv']>): void {
  let s = csvStreams.get(csv.stream);
  if (!s) {
    s = new CsvStream(csv.settings, selector, toMapped, (seq, items, error) => {
      const reply: MapJobResult = error === undefined ? { seq, lines: 0, json: JSON.stringify({ items, ...lookUp(items) }) } : { seq, lines: 0, json: '', error };
      port.postMessage(reply);
    });
    csvStreams.set(csv.stream, s);
    const id = csv.stream;
    void s.done.finally(() => csvStreams.delete(id));
  }
  s.push(job.seq, Buffer.from(job.bytes.buffer, job.bytes.byteOffset, job.bytes.byteLength), csv.end);
}
