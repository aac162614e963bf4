// Opens one input as a stream of decompressed byte chunks, with its first bytes available up front so that
// format, encoding and delimiter can be sniffed without reading the input twice (stdin cannot be re-read).

import { closeSync, constants, createReadStream, openSync, statSync } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import { createTextDecoding } from './decode-text.js';
import { gunzipMembers, type GzipEnd } from './gunzip-members.js';
import type { ResolvedInput } from './resolve-inputs.js';
import { watchStream } from './watch-stream.js';

const LF = 0x0a;

/** How many decompressed bytes are kept up front for sniffing. */
export const HEAD_BYTES = 64 * 1024;

/** Large reads: the JSONL hot path is dominated by per-chunk overhead below ~256 KB. */
const READ_CHUNK = 1 << 20;

/** An opened input: its first bytes, and every chunk (including those first bytes) in order. */
export interface OpenedInput {
  /** The first bytes of the (decompressed) content, up to HEAD_BYTES or the whole input if shorter. */
  head: Buffer;
  /** True when `head` is the whole input. */
  complete: boolean;
  /** True when the raw bytes started with the gzip magic number. */
  gzip: boolean;
  /**
   * All decompressed chunks from the start; iterate once. Stops (and releases the file) if the loop breaks. An input
   * that is not a plain file yields an empty chunk each time it has been quiet for a while (watch-stream.ts).
   */
  chunks: AsyncIterable<Buffer>;
  /** Releases the file or stream, whether or not `chunks` was iterated (safe to call twice). */
  close(): Promise<void>;
  /**
   * A plain file (not stdin, not gzip) that `head` does not hold whole: instead of iterating `chunks`, a reader may
   * take `head` and then read the rest straight into its own buffers, in order, `length` bytes at most a call (0 at
   * the end). Reading into buffers that are reused saves a new buffer per chunk and a copy of it.
   */
  direct?: (into: Uint8Array, offset: number, length: number) => Promise<number>;
  /** The input was UTF-16 (its BOM said so) and is given as UTF-8: every reader reads UTF-8. */
  transcodedFrom?: 'utf-16le' | 'utf-16be';
  /** Its lines ended with CR alone (classic Mac OS, some exporters): given with LF, as every reader splits lines. */
  crLines?: true;
  /** A gzip input: what followed its last member, known once `chunks` has been read to its end. */
  gzipEnd?: GzipEnd;
}

/**
 * Opens a file or stdin, transparently gunzipping when the content starts with 1f 8b, and giving UTF-16 (a BOM of
 * FF FE or FE FF, as Meta Lead Ads downloads are) as UTF-8. Stdin and other inputs that are not plain files (a FIFO)
 * are watched (watch-stream.ts): `signal` abandons a wait on them (ReadStopped), and when they go quiet their
 * chunks include empty ones, so that what was read is passed on.
 */
export async function openInput(
  input: ResolvedInput,
  stdin?: NodeJS.ReadableStream,
  signal?: AbortSignal,
  onBytes?: (bytes: number) => void,
): Promise<OpenedInput> {
  const live = input.path === null || !statSync(input.path).isFile();
  const opened = await openBytes(input, stdin, live ? signal : undefined, live, onBytes);
  const h = opened.head;
  const utf16 =
    h.length >= 2 && h[0] === 0xff && h[1] === 0xfe && !(h[2] === 0 && h[3] === 0)
      ? 'utf-16le'
      : h.length >= 2 && h[0] === 0xfe && h[1] === 0xff
        ? 'utf-16be'
        : undefined;
  const text = utf16 ? await transcoded(opened, utf16, live) : opened;
  return endsLinesWithCr(text.head) ? crToLf(text) : text;
}

const CR = 0x0d;

/**
 * Lines that end with CR alone: the first line end in the first bytes is a CR that no LF follows. A JSONL reader
 * that splits at LF would take the whole input for one line, one invalid record for all its events. (Neither JSON
 * nor CSV text holds a CR of its own but as a line's end or inside a quoted CSV field, where it is the same line
 * break; and crToLf leaves every CRLF as it is, so a CR at the very end of the first bytes may be taken for one.)
 */
function endsLinesWithCr(head: Buffer): boolean {
  const cr = head.indexOf(CR);
  if (cr < 0) return false;
  const lf = head.indexOf(LF);
  return (lf < 0 || cr < lf) && head[cr + 1] !== LF;
}

/** The bytes with each CR that no LF follows as LF (a CR that ends them too). */
function loneCrToLf(c: Buffer): Buffer {
  let at = c.indexOf(CR);
  if (at < 0) return c;
  const out = Buffer.from(c);
  for (; at >= 0; at = out.indexOf(CR, at + 1)) if (out[at + 1] !== LF) out[at] = LF;
  return out;
}

// The input with each CR that ends a line alone as LF, read as a stream (not at positions: `direct` would bypass
// the change). A CRLF further on stays as it is (the readers take it as one line end), and so does a quoted CSV
// field's: a CR that ends a chunk waits for the next chunk's first byte, or for the input to go quiet or end.
function crToLf(opened: OpenedInput): OpenedInput {
  async function* chunks(): AsyncGenerator<Buffer> {
    let held = false; // the previous chunk ended with a CR, not yet given on
    for await (const c of opened.chunks) {
      if (c.length === 0) {
        // The input is idle: a line it ended is given on whole (a CRLF cut here reads as a line and a blank one).
        if (held) yield Buffer.from([LF]);
        held = false;
        yield c;
        continue;
      }
      let b: Buffer = held ? Buffer.concat([Buffer.from([CR]), c]) : c;
      held = b[b.length - 1] === CR;
      if (held) b = b.subarray(0, b.length - 1);
      if (b.length > 0) yield loneCrToLf(b);
    }
    if (held) yield Buffer.from([LF]);
  }
  const it = chunks();
  const out: OpenedInput = {
    head: loneCrToLf(opened.head),
    complete: opened.complete,
    gzip: opened.gzip,
    chunks: it,
    close: async () => {
      await it.return(undefined).catch(() => {});
      await opened.close();
    },
    crLines: true,
  };
  if (opened.transcodedFrom) out.transcodedFrom = opened.transcodedFrom;
  if (opened.gzipEnd) out.gzipEnd = opened.gzipEnd;
  return out;
}

/**
 * The input, whose text is in `encoding` (normalized: windows-1252, latin1, ...), as UTF-8 bytes: for the JSON and
 * JSONL readers, which read UTF-8. Its head is the head's text; it is read as a stream (no `direct`).
 */
export function recodedInput(opened: OpenedInput, encoding: string): OpenedInput {
  async function* utf8(): AsyncGenerator<Buffer> {
    const d = createTextDecoding(encoding);
    for await (const c of opened.chunks) {
      if (c.length === 0) {
        yield c; // the input is idle: said on
        continue;
      }
      const t = d.write(c);
      if (t) yield Buffer.from(t, 'utf8');
    }
    const t = d.end();
    if (t) yield Buffer.from(t, 'utf8');
  }
  const it = utf8();
  const head = createTextDecoding(encoding);
  const out: OpenedInput = {
    head: Buffer.from(head.write(opened.head) + (opened.complete ? head.end() : ''), 'utf8'),
    complete: opened.complete,
    gzip: opened.gzip,
    chunks: it,
    close: async () => {
      await it.return(undefined).catch(() => {});
      await opened.close();
    },
  };
  if (opened.transcodedFrom) out.transcodedFrom = opened.transcodedFrom;
  if (opened.crLines) out.crLines = true;
  if (opened.gzipEnd) out.gzipEnd = opened.gzipEnd;
  return out;
}

// The input's text as UTF-8 bytes, its head taken again from them.
async function transcoded(opened: OpenedInput, from: 'utf-16le' | 'utf-16be', live: boolean): Promise<OpenedInput> {
  async function* utf8(): AsyncGenerator<Buffer> {
    const d = new TextDecoder(from); // drops the BOM
    for await (const c of opened.chunks) {
      if (c.length === 0) {
        yield c; // the input is idle: said on
        continue;
      }
      const t = d.decode(c, { stream: true });
      if (t) yield Buffer.from(t, 'utf8');
    }
    const t = d.decode();
    if (t) yield Buffer.from(t, 'utf8');
  }
  const it = utf8();
  const head = await takeAtLeast(it, HEAD_BYTES, live).catch(async (err: unknown) => {
    await opened.close();
    throw err;
  });
  return {
    head: Buffer.concat(head.chunks),
    complete: head.done,
    gzip: opened.gzip,
    chunks: resume(head.chunks, head.done, it),
    close: async () => {
      await it.return(undefined).catch(() => {});
      await opened.close();
    },
    transcodedFrom: from,
    ...(opened.gzipEnd ? { gzipEnd: opened.gzipEnd } : {}),
  };
}

async function openBytes(
  input: ResolvedInput,
  stdin: NodeJS.ReadableStream | undefined,
  signal: AbortSignal | undefined,
  live: boolean,
  onBytes?: (bytes: number) => void,
): Promise<OpenedInput> {
  const path = input.path;
  const file = path === null ? undefined : createReadStream(path, { highWaterMark: READ_CHUNK });
  const raw = file ?? stdin ?? process.stdin;
  const watch = <T extends Buffer | string>(it: AsyncIterator<T>, stream: { destroy?: () => void }) =>
    live ? watchStream(it, { signal, idle: true, abandon: () => stream.destroy?.() }) : it;
  const abandonRaw = () => {
    const opening = file?.pending === true;
    (raw as { destroy?: () => void }).destroy?.();
    if (opening && path !== null) releaseFifoOpen(path);
  };
  const rawIt = watch(counted((raw as AsyncIterable<Buffer | string>)[Symbol.asyncIterator](), onBytes), {
    destroy: abandonRaw,
  });
  const first = await takeAtLeast(rawIt, 2);
  const firstBytes = Buffer.concat(first.chunks);
  const gzip = firstBytes.length >= 2 && firstBytes[0] === 0x1f && firstBytes[1] === 0x8b;

  let it: AsyncIterator<Buffer>;
  if (gzip) {
    // Every member, as gzip -dc reads them; what follows the last one is told in gzipEnd once it is read.
    const gzipEnd: GzipEnd = {};
    const members = gunzipMembers(resume(first.chunks, first.done, rawIt), gzipEnd);
    it = watch(members, { destroy: () => void members.return(undefined) });
    const close = closer(it, rawIt);
    const head = await takeAtLeast(it, HEAD_BYTES, live).catch(async (err: unknown) => {
      await close();
      throw err;
    });
    return {
      head: Buffer.concat(head.chunks),
      complete: head.done,
      gzip,
      chunks: resume(head.chunks, head.done, it),
      close,
      gzipEnd,
    };
  }
  const head = first.done ? first : await takeMore(first, rawIt, HEAD_BYTES, live);
  const opened: OpenedInput = {
    head: Buffer.concat(head.chunks),
    complete: head.done,
    gzip,
    chunks: resume(head.chunks, head.done, rawIt),
    close: closer(rawIt),
  };
  // Only a regular file can be read at positions: a named pipe (bash's <(…)) is read as the stream it is.
  if (input.path !== null && !head.done && !live) {
    const path = input.path;
    let position = head.bytes;
    let file: FileHandle | undefined;
    opened.direct = async (into, offset, length) => {
      if (!file) {
        await rawIt.return?.().catch(() => {}); // the stream is not read on
        file = await open(path, 'r');
      }
      const { bytesRead } = await file.read(into, offset, length, position);
      position += bytesRead;
      onBytes?.(bytesRead);
      return bytesRead;
    };
    opened.close = async () => {
      await closer(rawIt)();
      await file?.close().catch(() => {});
      file = undefined;
    };
  }
  return opened;
}

// The raw chunks of an input, each told to onBytes as it is taken (progress: bytes read of the total on disk).
function counted<T extends Buffer | string>(
  it: AsyncIterator<T>,
  onBytes: ((bytes: number) => void) | undefined,
): AsyncIterator<T> {
  if (!onBytes) return it;
  return {
    next: async () => {
      const r = await it.next();
      if (!r.done) onBytes(typeof r.value === 'string' ? Buffer.byteLength(r.value) : r.value.length);
      return r;
    },
    ...(it.return ? { return: (v?: unknown) => it.return!(v) } : {}),
    ...(it.throw ? { throw: (e?: unknown) => it.throw!(e) } : {}),
  };
}

/**
 * A FIFO nobody writes blocks its reader's open() in the thread pool, where it cannot be cancelled, and a process
 * does not end, not even by process.exit, while a thread of that pool is blocked. Opening the FIFO for writing
 * without blocking (there is a reader: the blocked open) and closing it at once lets that open return, and the
 * stream abandoned meets the end of its input. No byte is written.
 */
function releaseFifoOpen(path: string): void {
  try {
    if (!statSync(path).isFIFO()) return;
    closeSync(openSync(path, constants.O_WRONLY | constants.O_NONBLOCK));
  } catch {
    // ENXIO: no reader is waiting on it, so no open is blocked.
  }
}

function closer(...its: AsyncIterator<unknown>[]): () => Promise<void> {
  return async () => {
    for (const it of its) await it.return?.().catch(() => {});
  };
}

interface Taken {
  chunks: Buffer[];
  bytes: number;
  done: boolean;
}

// The first `min` bytes (or all there are). With `untilIdle`, fewer once the input goes idle after a whole line: a
// quiet stdin is sniffed from what it sent, not waited on for 64 KiB that may not come.
async function takeAtLeast(it: AsyncIterator<Buffer | string>, min: number, untilIdle = false): Promise<Taken> {
  return takeMore({ chunks: [], bytes: 0, done: false }, it, min, untilIdle);
}

async function takeMore(
  taken: Taken,
  it: AsyncIterator<Buffer | string>,
  min: number,
  untilIdle = false,
): Promise<Taken> {
  const chunks = [...taken.chunks];
  let bytes = taken.bytes;
  while (bytes < min) {
    let r: IteratorResult<Buffer | string>;
    try {
      r = await it.next();
    } catch (err) {
      await it.return?.().catch(() => {});
      throw err;
    }
    if (r.done) return { chunks, bytes, done: true };
    const b = toBuffer(r.value);
    if (b.length === 0) {
      if (untilIdle && chunks.some((c) => c.includes(LF))) return { chunks, bytes, done: false };
      continue;
    }
    chunks.push(b);
    bytes += b.length;
  }
  return { chunks, bytes, done: false };
}

function toBuffer(v: Buffer | string): Buffer {
  // A stdin stream with setEncoding() yields strings; everything downstream works on bytes.
  return typeof v === 'string' ? Buffer.from(v, 'utf8') : v;
}

/** Yields the chunks already taken, then the rest of the iterator; closes the source if the consumer stops early. */
async function* resume(taken: Buffer[], done: boolean, it: AsyncIterator<Buffer | string>): AsyncGenerator<Buffer> {
  let finished = done;
  try {
    yield* taken;
    while (!finished) {
      const r = await it.next();
      if (r.done) {
        finished = true;
        break;
      }
      yield toBuffer(r.value);
    }
  } finally {
    if (!finished) await it.return?.().catch(() => {});
  }
}
