// CSV read by a map worker: this thread only reads bytes and passes them on, in order, to one worker, which parses
// (csv-parse, quote state and all) and maps them, while this thread decides. A second worker would need the file
// cut on record boundaries, which quotes make unsafe to find without parsing.
import { INTS, I_LINE, received } from '../decide/block.js';
import type { OpenedInput } from '../sources/open-input.js';
import type { CsvSettings } from '../sources/read-csv.js';
import type { ReaderContext } from '../sources/reader-context.js';
import { type DecodedBlock, type MapJobResult, type MapPool } from './map-pool.js';

let streams = 0;

/** Yields the mapped records of one CSV input in input order, as the in-thread reader would. */
export async function* readCsvParallel(opened: OpenedInput, ctx: ReaderContext, pool: MapPool, settings: CsvSettings): AsyncGenerator<DecodedBlock> {
  const stream = streams++;
  const worker = stream % pool.size;
  const maxInFlight = 4;
  const inFlight: Array<Promise<MapJobResult>> = [];
  let first = true;

  const take = async (): Promise<DecodedBlock> => {
    const block = received((await inFlight.shift()!).block);
    // CSV lines are absolute: one worker parses the whole input.
    if (block.n > 0) ctx.progress.line = block.ints[(block.n - 1) * INTS + I_LINE]!;
    return { block, source: ctx.source, lineBase: 0 };
  };
  const submit = (bytes: Uint8Array, end: boolean): void => {
    const p = pool.submit(bytes, first, { stream, settings, end }, worker);
    p.catch(() => {}); // surfaces when its turn comes
    inFlight.push(p);
    first = false;
  };

  try {
    for await (const chunk of opened.chunks) {
      submit(chunk, false);
      while (inFlight.length >= maxInFlight) yield await take();
    }
    submit(new Uint8Array(0), true);
  } catch (err) {
    // A read error (a truncated gzip): the records before it are still decided, as the in-thread reader yields
    // them before failing; then the input fails at the line reached.
    while (inFlight.length > 0) yield await take();
    throw err;
  }
  while (inFlight.length > 0) yield await take();
}
