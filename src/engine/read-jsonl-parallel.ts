// JSONL read and mapped by the map pool: the main thread only cuts the byte stream at the last newline of each
// chunk (one lastIndexOf per MB), so lines never straddle blocks; the workers parse and map.
import { LeadledgerError } from '../errors.js';
import { encodeMapped, received } from './block.js';
import { mergeRecoded } from '../sources/decode-text.js';
import { MAX_LINE_BYTES, tooLongLine } from '../sources/read-jsonl.js';
import type { RawUnread } from '../sources/types.js';
import type { OpenedInput } from '../sources/open-input.js';
import type { ReaderContext } from '../sources/reader-context.js';
import type { DecodedBlock, MapJobResult, MapPool } from './map-pool.js';

const LF = 0x0a;
// Bytes read at a time into a block's buffer (besides the start of a line carried over).
const READ_CHUNK = 1 << 20;
// The marker of a line too long to read, in the queue of blocks, and the block that stands for it.
const EMPTY = encodeMapped([]);
const TOO_LONG = { seq: -1, lines: 1, block: EMPTY } as MapJobResult;

// Reads on past the rest of a line too long to read (its bytes dropped); returns the bytes after its end, having
// marked it. At the end of the input the line ends there.
async function skipLine(read: NonNullable<OpenedInput['direct']>, mark: () => void): Promise<Uint8Array> {
  const scratch = new Uint8Array(READ_CHUNK);
  for (;;) {
    const n = await read(scratch, 0, scratch.length);
    if (n === 0) {
      mark();
      return new Uint8Array(0);
    }
    const nl = scratch.subarray(0, n).indexOf(LF);
    if (nl >= 0) {
      mark();
      return Buffer.from(scratch.subarray(nl + 1, n));
    }
  }
}

/**
 * Yields the mapped records of one JSONL input in input order, numbered as the sequential reader numbers them.
 * `started` is called once, when the workers have their first blocks and this thread would wait for them.
 */
export async function* readJsonlParallel(
  opened: OpenedInput,
  ctx: ReaderContext,
  pool: MapPool,
  started?: () => void,
  readChunk = READ_CHUNK,
): AsyncGenerator<DecodedBlock> {
  // Four blocks per worker in flight (each holds a few MB): with two, the workers waited for blocks a fifth of the
  // time (npm run bench:profile), and four made the 1M-line audit 4% faster (1.96 -> 1.87 s, measured A/B).
  const maxInFlight = pool.size * 4;
  const inFlight: Array<Promise<MapJobResult>> = [];
  // Bytes of each block in flight, for progress (a plain file's bytes are the input's bytes on disk; a gzip's or
  // stdin's blocks are not, and go without: decide-inputs then counts the bytes read).
  const sizes: number[] = [];
  const sized = opened.direct !== undefined;
  let carry: Buffer[] = [];
  let first = true;
  let lineBase = 0;

  const take = async (): Promise<DecodedBlock> => {
    // Cleared first: should it throw (a damaged ledger), it is not called again.
    const start = started;
    started = undefined;
    start?.();
    const r = await inFlight.shift()!;
    // The block's bytes go with it: they count as read as its records are decided (decide-inputs.ts).
    const size = sizes.shift() ?? 0;
    if (r === TOO_LONG) {
      // A line past MAX_LINE_BYTES, dropped by this thread as it was read: reported as the reader reports it.
      lineBase++;
      ctx.progress.line = lineBase;
      return {
        block: EMPTY,
        source: ctx.source,
        lineBase,
        unread: [tooLongLine(ctx.source, lineBase) as RawUnread],
        ...(sized ? { bytes: 0 } : {}),
      };
    }
    const block: DecodedBlock = { block: received(r.block), source: ctx.source, lineBase };
    if (sized) block.bytes = size;
    block.release = () => pool.recycle(r.worker!, block.block);
    // Lines of the block read as Windows-1252, at the input's lines (a worker numbers them from its block's first).
    if (r.recoded)
      ctx.recoded = mergeRecoded(ctx.recoded, { lines: r.recoded.lines, first: r.recoded.first + lineBase });
    lineBase += r.lines;
    ctx.progress.line = lineBase;
    return block;
  };
  const track = (p: Promise<MapJobResult>, size: number): void => {
    // Rejections surface when the block's turn comes; until then they must not count as unhandled.
    p.catch(() => {});
    inFlight.push(p);
    sizes.push(size);
    first = false;
  };
  const byteLength = (block: Uint8Array | Uint8Array[]): number =>
    Array.isArray(block) ? block.reduce((n, b) => n + b.length, 0) : block.length;
  // The size is taken first: submitting may transfer the buffer to a worker, leaving it empty here.
  const submit = (block: Uint8Array | Uint8Array[]): void => {
    const size = byteLength(block);
    track(pool.submit(block, first), size);
  };
  const submitOwned = (bytes: Uint8Array): void => {
    const size = bytes.length;
    track(pool.submitOwned(bytes, first), size);
  };
  // A line too long to read: its place in the order of blocks is kept by a marker.
  const tooLong = (): void => {
    inFlight.push(Promise.resolve(TOO_LONG));
    sizes.push(0);
    first = false;
  };

  try {
    if (opened.direct) {
      // A plain file is read straight into the buffers the workers give back: the bytes after a block's last
      // newline (the start of its next line) are copied to the start of the next one.
      let tail: Uint8Array = opened.head;
      const headCut = tail.lastIndexOf(LF);
      if (headCut >= 0) {
        submit(tail.subarray(0, headCut + 1));
        tail = tail.subarray(headCut + 1);
      }
      for (;;) {
        // The tail is the start of a line (no whole line): every line that ends in this buffer but its first is
        // in the bytes just read, so only the first can be past MAX_LINE_BYTES. A long line is read on a chunk at
        // a time (copied once a chunk: long lines are rare, and held to MAX_LINE_BYTES).
        const want = readChunk;
        const buf = pool.buffer(tail.length + want);
        buf.set(tail, 0);
        const n = await opened.direct(buf, tail.length, want);
        const length = tail.length + n;
        if (n === 0) {
          // The last line, without a trailing newline.
          if (length > MAX_LINE_BYTES) tooLong();
          else if (length > 0) submitOwned(buf.subarray(0, length));
          break;
        }
        // The buffer starts with a line: past the limit, it is dropped (read on to its end when it goes on).
        const firstEnd = buf.subarray(0, length).indexOf(LF);
        if (firstEnd === -1 && length > MAX_LINE_BYTES) {
          tail = await skipLine(opened.direct, tooLong);
          continue;
        }
        if (firstEnd > MAX_LINE_BYTES) {
          tooLong();
          // The rest is in the bytes just read: its whole lines go out, the start of the next is the tail.
          const rest = buf.subarray(firstEnd + 1, length);
          const restCut = rest.lastIndexOf(LF);
          if (restCut >= 0) submit(rest.subarray(0, restCut + 1));
          tail = Buffer.from(rest.subarray(restCut + 1));
          while (inFlight.length >= maxInFlight) yield await take();
          continue;
        }
        const cut = buf.lastIndexOf(LF, length - 1);
        // Copied before the buffer is handed over: the start of the next line, or a line longer than a buffer.
        tail = Buffer.from(buf.subarray(cut + 1, length));
        if (cut === -1) continue;
        submitOwned(buf.subarray(0, cut + 1));
        while (inFlight.length >= maxInFlight) yield await take();
      }
    } else {
      let carried = 0;
      let dropping = false; // the line being read is past MAX_LINE_BYTES
      for await (let chunk of opened.chunks) {
        if (chunk.length === 0) {
          // The input went idle (a quiet stdin): the blocks in flight are decided now, and the consumer told so.
          while (inFlight.length > 0) yield await take();
          yield { block: EMPTY, source: ctx.source, lineBase, idle: true };
          continue;
        }
        if (dropping) {
          const nl = chunk.indexOf(LF);
          if (nl === -1) continue;
          dropping = false;
          tooLong();
          chunk = chunk.subarray(nl + 1);
        }
        const cut = chunk.lastIndexOf(LF);
        if (cut === -1) {
          carry.push(chunk); // a line longer than a chunk: wait for its end
          carried += chunk.length;
          if (carried > MAX_LINE_BYTES) {
            carry = [];
            carried = 0;
            dropping = true;
          }
          continue;
        }
        if (carried > 0 && carried + chunk.indexOf(LF) > MAX_LINE_BYTES) {
          // The line carried so far ends in this chunk, past the limit: it is dropped, the rest is read.
          tooLong();
          carry = [];
          carried = 0;
          chunk = chunk.subarray(chunk.indexOf(LF) + 1);
          if (chunk.lastIndexOf(LF) === -1) {
            if (chunk.length > 0) carry.push(chunk);
            carried = chunk.length;
            continue;
          }
        }
        const at = chunk.lastIndexOf(LF);
        const head = chunk.subarray(0, at + 1);
        submit(carry.length > 0 ? [...carry, head] : head);
        carry = at + 1 < chunk.length ? [chunk.subarray(at + 1)] : [];
        carried = chunk.length - at - 1;
        while (inFlight.length >= maxInFlight) yield await take();
      }
      if (dropping) tooLong();
      else if (carry.length > 0) submit(carry); // the last line, without a trailing newline
    }
  } catch (err) {
    // An error with an exit code of its own (a damaged ledger, met by a worker or by the index) ends the run: no
    // block after it is decided.
    if (err instanceof LeadledgerError) throw err;
    // A read error (a truncated gzip): the records before it are still decided, as the in-thread reader yields
    // them before failing; then the input fails at the line reached.
    while (inFlight.length > 0) yield await take();
    throw err;
  }
  while (inFlight.length > 0) yield await take();
}
