// Bytes of a text input (CSV) to text, in the input's encoding, without ever making a U+FFFD of leadledger's own.
//
// An export detected as UTF-8 from its first bytes may still hold lines of Windows-1252 further on (a file joined
// from two exports, a row edited in Excel): such a line, and only it, is decoded as Windows-1252, and counted, so
// that `José Conceição` is sent as written instead of as `Jos� Concei��o`. Windows-1252 itself is decoded as the
// WHATWG table does (the five bytes it leaves undefined become C1 controls, not U+FFFD); other encodings go
// through iconv-lite.
import { isUtf8 } from 'node:buffer';
import iconv from 'iconv-lite';

const LF = 0x0a;

/** Lines of an input detected (or declared) as UTF-8 that were not, and were read as Windows-1252. */
export interface Recoded {
  /** How many lines. */
  lines: number;
  /** The first of them, counted from 1 at the decoder's first byte. */
  first: number;
}

/** A streaming decoder: bytes in, text out, a multi-byte character or a line split between chunks held back. */
export interface TextDecoding {
  write(chunk: Buffer): string;
  end(): string;
  /** Lines read as Windows-1252 in a UTF-8 input so far (undefined: none). */
  readonly recoded: Recoded | undefined;
}

/** A decoder for `encoding` (already normalized: utf-8, windows-1252, latin1, utf-16le, ...); a leading BOM is dropped. */
export function createTextDecoding(encoding: string): TextDecoding {
  if (encoding === 'utf-8') return new LenientUtf8();
  if (encoding === 'windows-1252') return whatwg('windows-1252');
  const d = iconv.getDecoder(encoding, { stripBOM: true });
  return { write: (c) => d.write(c), end: () => d.end() ?? '', recoded: undefined };
}

/** Decodes whole lines of bytes at once (a block of records), as a TextDecoding fed them would. */
export function decodeLines(bytes: Buffer, encoding: string): { text: string; recoded: Recoded | undefined } {
  const d = createTextDecoding(encoding);
  const text = d.write(bytes) + d.end();
  return { text, recoded: d.recoded };
}

function whatwg(label: string): TextDecoding {
  const d = new TextDecoder(label);
  let first = true;
  return {
    write(c) {
      const t = d.decode(c, { stream: true });
      if (!first || t === '') return t;
      first = false;
      return t.charCodeAt(0) === 0xfeff ? t.slice(1) : t;
    },
    end: () => d.decode(),
    recoded: undefined,
  };
}

const cp1252 = new TextDecoder('windows-1252');

/** One line of a UTF-8 input, as the lenient decoder reads it: as UTF-8, or (recoded) as Windows-1252. */
export function decodeUtf8Line(line: Uint8Array): { text: string; recoded: boolean } {
  return isUtf8(line)
    ? { text: Buffer.from(line.buffer, line.byteOffset, line.byteLength).toString('utf8'), recoded: false }
    : { text: cp1252.decode(line), recoded: true };
}

/** Lines read as Windows-1252 in two parts of one input, as one count from the first of them. */
export function mergeRecoded(a: Recoded | undefined, b: Recoded | undefined): Recoded | undefined {
  if (!a || !b) return a ?? b;
  return { lines: a.lines + b.lines, first: Math.min(a.first, b.first) };
}

/** UTF-8, line by line where a chunk is not valid UTF-8: such a line is read as Windows-1252 and counted. */
class LenientUtf8 implements TextDecoding {
  recoded: Recoded | undefined;
  // The bytes after the last LF of the chunks so far: a line (and maybe a character) not yet whole.
  private carry: Buffer | undefined;
  private line = 1;
  private started = false;

  write(chunk: Buffer): string {
    let buf = this.carry ? Buffer.concat([this.carry, chunk]) : chunk;
    this.carry = undefined;
    const last = buf.lastIndexOf(LF);
    if (last < buf.length - 1) {
      // Copied: the caller may reuse its chunk.
      this.carry = Buffer.from(buf.subarray(last + 1));
      buf = buf.subarray(0, last + 1);
    }
    return this.decode(buf);
  }

  end(): string {
    const rest = this.carry;
    this.carry = undefined;
    return rest ? this.decode(rest) : '';
  }

  private decode(buf: Buffer): string {
    if (buf.length === 0) return '';
    let text: string;
    if (isUtf8(buf)) {
      text = buf.toString('utf8');
      this.line += countLf(buf);
    } else {
      text = '';
      for (let start = 0; start < buf.length;) {
        const nl = buf.indexOf(LF, start);
        const end = nl < 0 ? buf.length : nl + 1;
        const line = buf.subarray(start, end);
        if (isUtf8(line)) text += line.toString('utf8');
        else {
          text += cp1252.decode(line);
          if (this.recoded) this.recoded.lines++;
          else this.recoded = { lines: 1, first: this.line };
        }
        if (nl >= 0) this.line++;
        start = end;
      }
    }
    if (!this.started) {
      this.started = true;
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    }
    return text;
  }
}

function countLf(buf: Buffer): number {
  let n = 0;
  for (let i = buf.indexOf(LF); i !== -1; i = buf.indexOf(LF, i + 1)) n++;
  return n;
}
