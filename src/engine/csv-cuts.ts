// Finds where a CSV byte stream can be cut into blocks that parse on their own: line ends outside quoted fields.
// The scanner follows RFC 4180 quoting, which is how csv-parse reads well-formed CSV: a quote opens a quoted field
// only at the start of a field, "" inside one is a literal quote, and a quote followed by a delimiter or a line
// end closes it. Anything outside that grammar (a quote inside an unquoted field, text after a closing quote, a
// header that is not plainly a header) makes the input "irregular": csv-parse's relaxed rules then decide, so the
// caller stops cutting and lets one parser read the rest. Quotes, delimiters and LF are ASCII bytes that never occur
// inside a multi-byte UTF-8 sequence (nor mean anything else in Windows-1252), so scanning bytes is exact.

import { MAX_QUOTED_CHARS, MAX_QUOTED_LINES } from '../sources/csv-guard.js';

const QUOTE = 0x22;
const LF = 0x0a;
const CR = 0x0d;
const SPACE = 0x20;
const TAB = 0x09;

const enum State {
  FieldStart,
  Unquoted,
  Quoted,
  QuoteInQuoted,
}

/** Record boundaries of a CSV byte stream, fed chunk by chunk. */
export class CsvCuts {
  private state = State.FieldStart;
  /** Bytes fed so far. */
  private fed = 0;
  /** LF bytes fed so far (physical lines, as read-csv counts them). */
  private lfs = 0;
  /** The current record has a byte that makes it non-blank; hasAlnum: one that makes it certainly so. */
  private nonBlank = false;
  private hasAlnum = false;
  /** Where the header record ends (just after its LF), and the lines up to there; -1 until found. */
  headerEnd = -1;
  headerLines = 0;
  /** The last record boundary found: its byte offset in the stream and the LFs before it. */
  lastCut = 0;
  lastCutLines = 0;
  /** Set once the input leaves the grammar this scanner follows; no cut after that point is trusted. */
  irregular = false;
  /** The last byte of the previous chunk. */
  private prev = LF;
  /** Where the open quoted field started (a stream offset) and the LFs before it. */
  private quoteAt = 0;
  private quoteLfs = 0;

  constructor(private readonly delimiter: number) {}

  /** Scans the next chunk; updates lastCut, headerEnd and irregular. */
  feed(chunk: Uint8Array): void {
    if (this.irregular) return;
    const buf = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    const i = this.headerEnd < 0 ? this.slow(buf) : 0;
    if (i >= 0 && !this.irregular) this.fast(buf, i);
    if (buf.length > 0) this.prev = buf[buf.length - 1]!;
    this.fed += buf.length;
  }

  /**
   * Byte by byte until the header row ends (blank rows before it are told from it here); returns where the fast
   * scan takes over, or -1 when the chunk ended first.
   */
  private slow(chunk: Buffer): number {
    const d = this.delimiter;
    let state = this.state;
    let i = 0;
    // A UTF-8 BOM opens the input: the decoder drops it before csv-parse sees a byte.
    if (this.fed === 0 && chunk[0] === 0xef && chunk[1] === 0xbb && chunk[2] === 0xbf) i = 3;
    for (; i < chunk.length && this.headerEnd < 0; i++) {
      const b = chunk[i]!;
      if (state === State.Quoted) {
        if (b === QUOTE) state = State.QuoteInQuoted;
        else if (b === LF) this.lfs++;
        if (this.runaway(this.fed + i)) return -1;
        continue;
      }
      if (state === State.QuoteInQuoted) {
        if (b === QUOTE) {
          state = State.Quoted; // "" is a literal quote
          continue;
        }
        if (b !== d && b !== LF) {
          this.irregular = true; // text (or a lone CR) after a closing quote: csv-parse's relaxed rules decide
          return -1;
        }
        state = State.Unquoted; // the delimiter or LF is handled below
      }
      if (b === LF) {
        this.lfs++;
        this.endRecord(this.fed + i + 1);
        state = State.FieldStart;
      } else if (b === d) {
        state = State.FieldStart;
      } else if (b === QUOTE) {
        if (state !== State.FieldStart) {
          this.irregular = true; // a quote inside an unquoted field
          return -1;
        }
        state = State.Quoted;
        this.quoteAt = this.fed + i;
        this.quoteLfs = this.lfs;
        this.nonBlank = true;
      } else if (b === CR) {
        if (i + 1 < chunk.length && chunk[i + 1] !== LF) {
          this.irregular = true; // a lone CR: csv-parse may take it for the line end
          return -1;
        }
      } else {
        state = State.Unquoted;
        if (b !== SPACE && b !== TAB) {
          this.nonBlank = true;
          if ((b >= 0x30 && b <= 0x39) || ((b | 0x20) >= 0x61 && (b | 0x20) <= 0x7a)) this.hasAlnum = true;
        }
      }
    }
    this.state = state;
    return this.irregular ? -1 : i;
  }

  /**
   * After the header: only quotes, LFs and CRs matter, found with indexOf. A quote outside a quoted field must
   * open one, so the byte before it must end a field; inside, the byte after a quote decides.
   */
  private fast(chunk: Buffer, from: number): void {
    const d = this.delimiter;
    const n = chunk.length;
    // Every CR must end a CRLF: a lone one may be taken for the line end by csv-parse.
    for (let cr = chunk.indexOf(CR, from); cr !== -1; cr = chunk.indexOf(CR, cr + 1)) {
      if (cr + 1 < n && chunk[cr + 1] !== LF) {
        this.irregular = true;
        return;
      }
    }
    let i = from;
    while (i < n) {
      if (this.state === State.QuoteInQuoted) {
        const b = chunk[i]!;
        if (b === QUOTE) {
          this.state = State.Quoted;
          i++;
          continue;
        }
        if (b === CR && (i + 1 >= n || chunk[i + 1] === LF)) {
          i++;
          continue;
        }
        if (b !== d && b !== LF) {
          this.irregular = true;
          return;
        }
        this.state = State.Unquoted;
        continue; // the delimiter or LF, read below
      }
      const q = chunk.indexOf(QUOTE, i);
      const end = q === -1 ? n : q;
      if (this.state === State.Quoted) {
        for (let nl = chunk.indexOf(LF, i); nl !== -1 && nl < end; nl = chunk.indexOf(LF, nl + 1)) this.lfs++;
        if (this.runaway(this.fed + end)) return;
        if (q === -1) return;
        this.state = State.QuoteInQuoted;
        i = q + 1;
        continue;
      }
      for (let nl = chunk.indexOf(LF, i); nl !== -1 && nl < end; nl = chunk.indexOf(LF, nl + 1)) {
        this.lfs++;
        this.lastCut = this.fed + nl + 1;
        this.lastCutLines = this.lfs;
      }
      if (q === -1) {
        this.state = State.Unquoted;
        return;
      }
      const before = q > 0 ? chunk[q - 1]! : this.fed > 0 ? this.prev : LF;
      if (before !== d && before !== LF) {
        this.irregular = true;
        return;
      }
      this.state = State.Quoted;
      this.quoteAt = this.fed + q;
      this.quoteLfs = this.lfs;
      i = q + 1;
    }
  }

  // A quoted field past the stray-quote guard's limits (csv-guard.ts) is for the guard to judge, on the rest of the
  // input read as one stream: no cut is trusted from its start on. Bytes are at least the characters it counts.
  private runaway(at: number): boolean {
    if (this.lfs - this.quoteLfs <= MAX_QUOTED_LINES && at - this.quoteAt <= MAX_QUOTED_CHARS) return false;
    this.irregular = true;
    return true;
  }

  private endRecord(at: number): void {
    if (this.headerEnd < 0) {
      if (this.hasAlnum) {
        this.headerEnd = at;
        this.headerLines = this.lfs;
      } else if (this.nonBlank) {
        // Not plainly blank, not plainly a header ("---", a quoted empty cell): read-csv's own test decides.
        this.irregular = true;
        return;
      }
    }
    this.nonBlank = false;
    this.hasAlnum = false;
    this.lastCut = at;
    this.lastCutLines = this.lfs;
  }
}
