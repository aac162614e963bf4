// Decompressing a gzip file as `gzip -dc` does: every member in turn (`cat a.gz b.gz` makes one file of two), each
// checked against its CRC-32 and length, and what follows the last member told apart: zero bytes that some
// exporters pad files with, or bytes that are not gzip at all. zlib's own gunzip stream fails on the latter, and
// drops with its error the text it had just decompressed, so a file with a few bytes after its end read as nothing.
import * as zlib from 'node:zlib';

/** What followed the last whole gzip member of an input, when something did (set once the input is read). */
export interface GzipTail {
  /** Its offset in the compressed file. */
  offset: number;
  /** How many bytes: all of them when they were zeros, else those read before the first one that is not. */
  bytes: number;
  /** Zero bytes only (padding, which gzip -dc ignores): nothing was lost. */
  zeros: boolean;
  /** It starts as a gzip member does, but ends before its header does. */
  cutHeader?: boolean;
}

/** Filled in by gunzipMembers as the input is read. */
export interface GzipEnd {
  tail?: GzipTail;
}

const CHUNK = 256 * 1024;
// A member header longer than this (its file name, its comment, its extra field) is taken for damage.
const MAX_HEADER = 64 * 1024;
const EMPTY = Buffer.alloc(0);

/** A zlib-style error, so that messages about damaged gzip data read alike from either decoder. */
function zlibError(message: string, code: 'Z_DATA_ERROR' | 'Z_BUF_ERROR'): Error {
  return Object.assign(new Error(message), { code });
}

const crc32: (data: Uint8Array, value: number) => number =
  (zlib as { crc32?: (data: Uint8Array, value?: number) => number }).crc32 ?? jsCrc32;

let table: Int32Array | undefined;

// CRC-32 (ISO-HDLC, as gzip takes it) where Node's zlib lacks crc32 (before 20.15).
function jsCrc32(data: Uint8Array, value: number): number {
  if (!table) {
    table = new Int32Array(256);
    for (let n = 0; n < 256; n++) {
      let c = n;
      for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
      table[n] = c;
    }
  }
  let c = ~value;
  for (let i = 0; i < data.length; i++) c = table[(c ^ data[i]!) & 0xff]! ^ (c >>> 8);
  return ~c >>> 0;
}

/**
 * The length of the member header at the start of b (RFC 1952); 0 when b ends before it does; -1 when b does not
 * start with one (not the magic bytes and deflate, or flags gzip reserves).
 */
export function memberHeaderLength(b: Buffer): number {
  if (b.length >= 1 && b[0] !== 0x1f) return -1;
  if (b.length >= 2 && b[1] !== 0x8b) return -1;
  if (b.length >= 3 && b[2] !== 8) return -1;
  if (b.length >= 4 && (b[3]! & 0xe0) !== 0) return -1;
  if (b.length < 10) return 0;
  const flags = b[3]!;
  let p = 10;
  if (flags & 4) {
    if (b.length < p + 2) return 0;
    p += 2 + b.readUInt16LE(p);
    if (b.length < p) return 0;
  }
  for (const flag of [8, 16]) {
    // A file name, a comment: each ends with a zero byte.
    if ((flags & flag) === 0) continue;
    const z = b.indexOf(0, p);
    if (z < 0) return 0;
    p = z + 1;
  }
  if (flags & 2) p += 2; // a CRC-16 of the header
  return b.length < p ? 0 : p;
}

/**
 * Decompresses the gzip members of `raw` one after another; what follows the last one is set in `end` (zero
 * padding, or bytes that are not gzip: not read). A member cut short, or whose CRC-32 or length does not match, is
 * an error after the text decompressed before it. An empty chunk of `raw` (a quiet stdin) flushes what the member
 * read so far holds, and is passed on.
 */
export async function* gunzipMembers(raw: AsyncIterator<Buffer | string>, end: GzipEnd): AsyncGenerator<Buffer> {
  let pending: Buffer = EMPTY; // raw bytes read and not yet given to a member
  let offset = 0; // the file offset of pending's first byte
  let rawDone = false;
  let members = 0;
  // Reads the next raw chunk onto pending: 'idle' for an empty one, false at the end.
  const more = async (): Promise<boolean | 'idle'> => {
    if (rawDone) return false;
    const r = await raw.next();
    if (r.done) {
      rawDone = true;
      return false;
    }
    const b = typeof r.value === 'string' ? Buffer.from(r.value, 'utf8') : r.value;
    if (b.length === 0) return 'idle';
    pending = pending.length === 0 ? b : Buffer.concat([pending, b]);
    return true;
  };

  for (;;) {
    let header = memberHeaderLength(pending);
    while (header === 0 && pending.length <= MAX_HEADER) {
      const m = await more();
      if (m === 'idle') yield EMPTY;
      else if (!m) break;
      header = memberHeaderLength(pending);
    }
    if (pending.length === 0 && rawDone) return;
    if (header <= 0) {
      if (members === 0)
        throw zlibError(header < 0 ? 'incorrect header check' : 'unexpected end of file', 'Z_BUF_ERROR');
      yield* readTail(header === 0 && pending.length <= MAX_HEADER);
      return;
    }
    members++;
    pending = pending.subarray(header);
    offset += header;
    yield* member();
  }

  // What follows the last member: zeros to the end of the input, or not.
  async function* readTail(cutHeader: boolean): AsyncGenerator<Buffer> {
    const tail: GzipTail = { offset, bytes: 0, zeros: true };
    if (cutHeader) tail.cutHeader = true;
    end.tail = tail;
    for (;;) {
      const nonZero = pending.findIndex((b) => b !== 0);
      if (nonZero >= 0) {
        tail.zeros = false;
        tail.bytes += nonZero;
        return;
      }
      tail.bytes += pending.length;
      pending = EMPTY;
      const m = await more();
      if (m === 'idle') yield EMPTY;
      else if (!m) return;
    }
  }

  // One member's deflate data and trailer, pending starting at its data: its text is yielded as it is decompressed.
  async function* member(): AsyncGenerator<Buffer> {
    const inflate = zlib.createInflateRaw({ chunkSize: CHUNK });
    // The text decompressed and not yet yielded; past a few chunks the inflater is paused (and so its writes).
    const queue: Buffer[] = [];
    let queued = 0;
    let ended = false;
    let failure: Error | undefined;
    let wake: (() => void) | undefined;
    const signal = (): void => {
      const w = wake;
      wake = undefined;
      w?.();
    };
    inflate.on('data', (b: Buffer) => {
      queue.push(b);
      queued += b.length;
      if (queued >= 4 * CHUNK) inflate.pause();
      signal();
    });
    inflate.on('end', () => {
      ended = true;
      signal();
    });
    inflate.on('error', (e: Error) => {
      failure = e;
      signal();
    });
    // The raw bytes given to the inflater and not yet known to be consumed (inflate.bytesWritten), with the offset of
    // the first: the bytes after the deflate data's end are the trailer, then the next member.
    const fed: Buffer[] = [];
    let fedAt = offset;
    const start = offset;
    // A write or a flush the inflater has not called back yet.
    let busy = false;
    const done = (): void => {
      busy = false;
      signal();
    };
    const write = (b: Buffer): void => {
      while (fed.length > 0 && fedAt + fed[0]!.length <= start + inflate.bytesWritten) fedAt += fed.shift()!.length;
      fed.push(b);
      busy = true;
      inflate.write(b, done);
    };
    const flush = (): void => {
      busy = true;
      inflate.flush(zlib.constants.Z_SYNC_FLUSH, done);
    };
    let idleDue = false; // the sender paused: once the text so far is out, the pause is passed on
    let eof = false; // the input ended inside the member: once the text so far is out, that is the error
    let crc = 0;
    let size = 0;
    try {
      if (pending.length > 0) write(pending);
      pending = EMPTY;
      for (;;) {
        while (queue.length > 0) {
          const b = queue.shift()!;
          queued -= b.length;
          crc = crc32(b, crc);
          size += b.length;
          yield b;
        }
        if (inflate.isPaused()) inflate.resume();
        if (failure) throw failure;
        if (ended) break;
        if (!busy) {
          if (eof) throw zlibError('unexpected end of file', 'Z_BUF_ERROR');
          if (idleDue) {
            idleDue = false;
            yield EMPTY;
          }
          const m = await more();
          if (m === 'idle') {
            idleDue = true;
            flush();
          } else if (!m) {
            eof = true;
            flush();
          } else {
            write(pending);
            pending = EMPTY;
          }
          continue;
        }
        await new Promise<void>((resolve) => (wake = resolve));
      }
      // The deflate data ended: the bytes given after it are the trailer (CRC-32, length) and what follows.
      const consumed = start + inflate.bytesWritten;
      pending = Buffer.concat([...fed, pending]).subarray(consumed - fedAt);
      offset = consumed;
      while (pending.length < 8) {
        const m = await more();
        if (m === 'idle') yield EMPTY;
        else if (!m) throw zlibError('unexpected end of file', 'Z_BUF_ERROR');
      }
      if (pending.readUInt32LE(0) !== crc >>> 0) throw zlibError('incorrect data check', 'Z_DATA_ERROR');
      if (pending.readUInt32LE(4) !== size % 2 ** 32) throw zlibError('incorrect length check', 'Z_DATA_ERROR');
      pending = pending.subarray(8);
      offset += 8;
    } finally {
      inflate.destroy();
    }
  }
}

/** What an input's tail after its last gzip member is, in words (for a note, or for the part not read). */
export function describeGzipTail(t: GzipTail): string {
  if (t.zeros)
    return `${t.bytes} zero byte${t.bytes === 1 ? '' : 's'} after the last gzip member (from byte ${t.offset}) were ignored: padding, as gzip -dc ignores it`;
  const what = t.cutHeader ? 'the start of a gzip member cut short' : 'not gzip data';
  return `the bytes from byte ${t.offset} of the compressed file on, after its last whole gzip member, are ${what} (trailing garbage): not read`;
}
