// CSV read by the map pool. Well-formed CSV is cut into blocks of whole records (csv-cuts.ts finds line ends
// outside quoted fields) that every worker parses on its own, behind a copy of the header, so parsing runs on all
// cores. Input the cutter cannot vouch for (stray quotes, text after a closing quote, an encoding whose bytes it
// cannot read) goes, from the last safe cut on, to one worker that parses the rest as one stream, exactly as the
// in-thread reader would. A block that still ends inside a quoted field (it cannot, if the cutter is right) is read
// again that way from its first byte, so no decision depends on a cut being right.
import { LeadledgerError } from '../errors.js';
import { INTS, I_LINE, received } from './block.js';
import { mergeRecoded } from '../sources/decode-text.js';
import type { OpenedInput } from '../sources/open-input.js';
import type { CsvSettings } from '../sources/read-csv.js';
import type { ReaderContext } from '../sources/reader-context.js';
import { CsvCuts } from './csv-cuts.js';
import type { DecodedBlock, MapJobResult, MapPool } from './map-pool.js';

let streams = 0;

/** How CSV inputs were read so far in this process: blocks cut, and inputs (or their rests) streamed (tests). */
export const csvReadStats = { blocks: 0, streamed: 0 };

// Blocks of about a read chunk: enough records per message, few enough bytes held per block.
const BLOCK_BYTES = 1 << 20;
// No cut found in this many bytes (lines ending in a lone CR, a giant quoted field): stream the rest.
const MAX_UNCUT = 16 << 20;
// Encodings in which quote, delimiter and LF are single ASCII bytes (the cutter reads bytes).
const ASCII_COMPATIBLE = /^(utf-?8|windows-125\d|cp125\d|latin-?1|iso-?8859-\d+|ascii|us-ascii)$/i;

interface Pending {
  result: Promise<MapJobResult>;
  /** A split block: its bytes (kept until it is decided, in case it must be read again) and the LFs before it. */
  split?: { raw: Buffer[]; lines: number; last: boolean };
}

/**
 * Yields the mapped records of one CSV input in input order, as the in-thread reader would. `started` is called
 * once, when the workers have their first blocks and this thread would wait for them.
 */
export async function* readCsvParallel(
  opened: OpenedInput,
  ctx: ReaderContext,
  pool: MapPool,
  settings: CsvSettings,
  started?: () => void,
  blockBytes = BLOCK_BYTES,
): AsyncGenerator<DecodedBlock> {
  const maxInFlight = pool.size * 2; // two blocks per worker: four, as for JSONL, measured no faster here
  const queue: Pending[] = [];
  const d = settings.delimiter;
  // The cutter follows RFC 4180's quoting: cells written with backslash escapes are streamed to one worker instead.
  const cuts =
    d.length === 1 && d.charCodeAt(0) < 0x80 && ASCII_COMPATIBLE.test(settings.encoding) && !settings.escapes
      ? new CsvCuts(d.charCodeAt(0))
      : undefined;
  let held: Buffer[] = []; // bytes read since the last block was cut
  let heldBytes = 0;
  let heldFrom = 0; // stream offset of the held bytes
  let heldLines = 0; // LFs before them
  let header: Uint8Array | undefined; // the input's bytes up to the end of its header row
  let stream: { id: number; worker: number } | undefined; // once streaming, every later byte goes there
  let ended = false;

  const submit = (
    bytes: Uint8Array | Uint8Array[],
    first: boolean,
    csv: Parameters<MapPool['submit']>[2],
    to?: number,
  ): Promise<MapJobResult> => {
    const result = pool.submit(bytes, first, csv, to);
    result.catch(() => {}); // surfaces when its turn comes
    return result;
  };
  const lineOffset = (lines: number): number => (header ? lines - cuts!.headerLines : 0);

  // Cuts the held bytes at the last record boundary (or, at the end of the input, takes them all) into a block.
  const cutBlock = (last: boolean): void => {
    csvReadStats.blocks++;
    // The block is the held pieces up to the cut (the piece the cut falls in is split; nothing is joined).
    const end = last ? heldBytes : cuts!.lastCut - heldFrom;
    const raw: Buffer[] = [];
    for (let need = end; need > 0;) {
      const h = held[0]!;
      if (h.length <= need) {
        raw.push(h);
        held.shift();
        need -= h.length;
      } else {
        raw.push(h.subarray(0, need));
        held[0] = h.subarray(need);
        need = 0;
      }
    }
    const first = header === undefined;
    let lines = heldLines;
    if (first) {
      // The first block goes out as the others do, its header apart (the header is the input's bytes up to the end
      // of its header row: behind it, the rest reads as from the input's start), so that its rows take the fast
      // path too, instead of the general one that kept the decider waiting for it.
      header = Uint8Array.prototype.slice.call(Buffer.concat(raw), 0, cuts!.headerEnd);
      dropBytes(raw, header.length);
      lines = cuts!.headerLines;
    }
    const csv = { stream: -1, settings, end: true, lineOffset: lineOffset(lines), split: { header: header!, last } };
    queue.push({ result: submit(raw, first, csv), split: { raw, lines, last } });
    heldBytes -= end;
    heldFrom += end;
    heldLines = cuts!.lastCutLines;
  };

  // One worker parses everything from here: `bytes` are whole records (from the input's start, or from a cut,
  // then behind a copy of the header). They go a block at a time: the worker answers each job with all the records
  // parsed from it, and a job of everything read so far (a wrong cut found when many blocks were in flight) held
  // so many that it ran out of memory (64 MB of heap: a worker's limit).
  const startStream = (bytes: Buffer[], lines: number, atStart = header === undefined): void => {
    csvReadStats.streamed++;
    const id = streams++;
    const s = (stream = { id, worker: id % pool.size });
    let job: Uint8Array[] = atStart ? [] : [header!];
    let jobBytes = 0;
    let first = true;
    const send = (): void => {
      queue.push({
        result: submit(
          job,
          first && atStart,
          { stream: id, settings, end: false, lineOffset: atStart ? 0 : lineOffset(lines) },
          s.worker,
        ),
      });
      first = false;
      job = [];
      jobBytes = 0;
    };
    for (const b of bytes) {
      if (jobBytes > 0 && jobBytes + b.length > blockBytes) send();
      job.push(b);
      jobBytes += b.length;
    }
    if (job.length > 0 || first) send();
    if (ended) endStream();
  };
  const endStream = (): void => {
    queue.push({
      result: submit(
        new Uint8Array(0),
        false,
        { stream: stream!.id, settings, end: true, lineOffset: 0 },
        stream!.worker,
      ),
    });
  };

  const take = async (): Promise<DecodedBlock | undefined> => {
    // Cleared first: should it throw (a damaged ledger), it is not called again.
    const start = started;
    started = undefined;
    start?.();
    const p = queue.shift()!;
    const r = await p.result;
    if (p.split && r.unclosedQuote && !p.split.last) {
      // The cut was wrong after all: this block and everything after it is read again, as one stream.
      const later = queue.splice(0).flatMap((x) => x.split!.raw);
      const rest = held;
      held = [];
      heldBytes = 0;
      // Behind a copy of the header, as every block is (the first one too: its header went apart).
      startStream([...p.split.raw, ...later, ...rest], p.split.lines);
      return undefined;
    }
    const block = received(r.block);
    if (block.n > 0) ctx.progress.line = block.ints[(block.n - 1) * INTS + I_LINE]!;
    if (r.recoded) ctx.recoded = mergeRecoded(ctx.recoded, r.recoded);
    const out: DecodedBlock = { block, source: ctx.source, lineBase: 0 };
    if (p.split && r.worker !== undefined) out.release = () => pool.recycle(r.worker!, block);
    return out;
  };
  async function* drain(keep: number): AsyncGenerator<DecodedBlock> {
    while (queue.length > keep) {
      const b = await take();
      if (b) yield b;
    }
  }

  try {
    for await (const chunk of opened.chunks) {
      // An idle input's empty chunk: CSV blocks are cut by size and quotes, not by time; nothing to pass on.
      if (chunk.length === 0) continue;
      if (stream) {
        queue.push({
          result: submit(chunk, false, { stream: stream.id, settings, end: false, lineOffset: 0 }, stream.worker),
        });
      } else {
        cuts?.feed(chunk);
        held.push(chunk);
        heldBytes += chunk.length;
        // Cuts found before the input turned irregular stay good: the cutter stops at the first doubt.
        const cuttable = cuts !== undefined && cuts.headerEnd >= 0 && cuts.lastCut > heldFrom;
        if (cuttable && !cuts.irregular && heldBytes >= blockBytes) cutBlock(false);
        else if (!cuts || cuts.irregular || heldBytes >= MAX_UNCUT) {
          if (cuttable) cutBlock(false);
          // Split blocks are checked before the stream starts, so a wrong cut never meets a running stream.
          yield* drain(0);
          if (!stream) startStream(held, heldLines);
          held = [];
          heldBytes = 0;
        }
      }
      yield* drain(maxInFlight - 1);
    }
    ended = true;
    if (stream) endStream();
    else if (cuts && header !== undefined) {
      // The last block: one parse sees it to its end, an unclosed quote and all.
      if (heldBytes > 0) cutBlock(true);
    } else {
      startStream(held, heldLines); // a small input: one block, parsed as the in-thread reader would
      held = [];
    }
  } catch (err) {
    // An error with an exit code of its own (a damaged ledger, met by a worker or by the index) ends the run: no
    // block after it is decided.
    if (err instanceof LeadledgerError) throw err;
    // A read error (a truncated gzip): the records before it are still decided, as the in-thread reader yields
    // them before failing; then the input fails at the line reached. The whole records read but not yet cut into
    // a block (up to a block's worth: ~17,000 rows of a test export were dropped) go out as a last block.
    ended = true;
    const cutting = !stream && cuts !== undefined && !cuts.irregular && cuts.headerEnd >= 0;
    if (stream) endStream();
    else if (cutting && cuts.lastCut > heldFrom) cutBlock(false);
    yield* drain(0);
    if (cutting) ctx.progress.line = Math.max(ctx.progress.line, cuts.lastCutLines); // blank rows count, as in-thread
    throw err;
  }
  yield* drain(0);
}

// Drops the first n bytes of a list of pieces (in place).
function dropBytes(pieces: Uint8Array[], n: number): void {
  while (n > 0 && pieces.length > 0) {
    const p = pieces[0]!;
    if (p.length <= n) {
      pieces.shift();
      n -= p.length;
    } else {
      pieces[0] = p.subarray(n);
      n = 0;
    }
  }
}
