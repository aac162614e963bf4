// A JSON document: an array of event objects, one object, or several objects one after another. It is streamed:
// the bytes are scanned once for where each top-level element starts and ends (strings, escapes and nesting
// followed), and each element is parsed on its own, so memory holds one element at a time however large the
// document (a 600 MB array is read like JSONL). A malformed element is one reject at its line; the elements
// after it are still read. A structure that cannot be followed any further (a bracket that does not match, the
// input ending inside the array) leaves the rest of the input unread, and says so.
//
// A ".json" file that is really JSONL (one object per line, a common mislabel) is read as JSONL from its second
// object on, so a broken line is one reject there too.
//
// A top-level object that wraps a log's entries in a list of objects (LOG_LISTS: `{"events": [...]}`, as
// `aws logs filter-log-events` prints them) is read as that list: each object of it is a record at its own line,
// numbered as an array's elements are and marked with the list's key (RawRecord.within); the wrapper is no record.

import { isUtf8 } from 'node:buffer';
import { decodeUtf8Line, mergeRecoded } from './decode-text.js';
import { describeJsonError, lineAndColumn } from './json-error.js';
import { LOG_LISTS } from './log-text.js';
import { readJsonl } from './read-jsonl.js';
import { BATCH_SIZE, type ReaderContext } from './reader-context.js';
import { kindOf } from './select-path.js';
import type { RawItem, RawRecord } from './types.js';

// Where the scan is among a top-level object's keys (JsonScan.topElement).
const enum Key {
  None,
  /** After '{' or ',': a key comes next. */
  Expected,
  InKey,
  /** After a key: ':' comes next. */
  AfterKey,
  /** After ':': the key's value comes next. */
  BeforeValue,
  /** In or after a value. */
  InValue,
}

// What topElement returns where a list of entries opens.
const OPENS_LIST = -2;

/** An array element (or top-level object) larger than this is rejected unread: a lead is a few KB. */
export const MAX_ELEMENT_BYTES = 64 << 20;

const LF = 0x0a;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const COMMA = 0x2c;
const COLON = 0x3a;

/** Reads a JSON document and yields its object(s) as records, in batches. */
export async function* readJson(chunks: AsyncIterable<Buffer>, ctx: ReaderContext): AsyncGenerator<RawItem[]> {
  const scan = new JsonScan(ctx);
  const it = chunks[Symbol.asyncIterator]();
  try {
    for (;;) {
      const r = await it.next();
      if (r.done) break;
      const rest = scan.feed(r.value);
      if (scan.batch.length >= BATCH_SIZE) yield scan.batch.splice(0);
      if (rest) {
        // The document is JSON lines: from the line of its second object on, the JSONL reader reads it.
        if (scan.batch.length > 0) yield scan.batch.splice(0);
        yield* readJsonl(resume(rest.bytes, it), { ...ctx, midInput: true, lineOffset: rest.line - 1 });
        return;
      }
    }
  } catch (err) {
    // A read error (a truncated gzip): the elements read before it are still records, then the input fails.
    if (scan.batch.length > 0) yield scan.batch.splice(0);
    throw err;
  }
  scan.end();
  if (scan.batch.length > 0) yield scan.batch;
}

async function* resume(first: Buffer, it: AsyncIterator<Buffer>): AsyncGenerator<Buffer> {
  if (first.length > 0) yield first;
  for (;;) {
    const r = await it.next();
    if (r.done) return;
    yield r.value;
  }
}

const enum At {
  /** Before the document's first value (a BOM and whitespace may come first). */
  Start,
  /** In the top-level array, before an element (or its closing bracket). */
  BeforeElement,
  /** Inside an element (of the array, or a top-level object). */
  InElement,
  /** In the top-level array, after an element: a comma or the closing bracket comes next. */
  AfterElement,
  /** After a top-level value: whitespace, or another top-level value. */
  AfterValue,
  /** After the '[' of a list of log entries in a top-level object: an object comes first, or it is no such list. */
  ListStart,
  /** The structure could not be followed: nothing more is read. */
  Stopped,
}

/** The scan of one document, fed its bytes chunk by chunk. */
class JsonScan {
  readonly batch: RawItem[] = [];
  private at = At.Start;
  private line = 1;
  private first = true;
  // The element being read: its bytes so far, where it started, its nesting and string state.
  private parts: Buffer[] = [];
  private bytes = 0;
  private tooLarge = false;
  private startLine = 0;
  // The element's first byte's column (1-based, in bytes) on its line, and the bytes after the last LF read so far.
  private startColumn = 1;
  private tailColumn = 0;
  private depth = 0;
  private inString = false;
  private escaped = false;
  // The element is the top-level value itself (an object), not an array element.
  private topLevel = false;
  private elements = 0;
  private objects = 0;
  private sawLineBetween = false;
  private firstOnOneLine = true;
  // In a top-level object: where its keys are (Key), the key read last, and the list of entries being read.
  private key = Key.None;
  private keyText = '';
  private within: string | undefined;
  // The top-level object being read wrapped a list of entries: it is no record itself.
  private wrapped = false;

  constructor(private readonly ctx: ReaderContext) {}

  /**
   * Scans the next chunk; returns the rest of the input from the start of a line, when the document turned out to
   * be JSON lines (then the scan is over).
   */
  feed(chunk: Buffer): { bytes: Buffer; line: number } | undefined {
    let i = 0;
    if (this.first) {
      this.first = false;
      if (chunk[0] === 0xef && chunk[1] === 0xbb && chunk[2] === 0xbf) i = 3;
    }
    const n = chunk.length;
    let from = -1; // where the element's bytes in this chunk start
    while (i < n) {
      const b = chunk[i]!;
      switch (this.at) {
        case At.Start:
        case At.AfterValue:
          if (b === LF) {
            this.line++;
            if (this.at === At.AfterValue) this.sawLineBetween = true;
          } else if (isSpace(b)) {
            // nothing
          } else if (b === OPEN_ARRAY) {
            this.at = At.BeforeElement;
          } else if (b === OPEN_OBJECT) {
            if (
              this.at === At.AfterValue &&
              this.objects === 1 &&
              this.elements === 0 &&
              this.sawLineBetween &&
              this.firstOnOneLine
            ) {
              // A second object on a line of its own after a first one on one line: JSON lines. (Objects that span
              // lines, as `journalctl -o json-pretty` prints them, are read one after another as documents.)
              return { bytes: chunk.subarray(lineStartOf(chunk, i)), line: this.line };
            }
            this.topLevel = true;
            this.begin(chunk, i);
            from = i;
            this.depth = 1;
            this.key = Key.Expected;
            this.wrapped = false;
            this.at = At.InElement;
          } else {
            this.stop(
              `invalid JSON: unexpected ${describeByte(b)} where a document ${this.at === At.Start ? 'starts' : 'has ended'}`,
            );
            return undefined;
          }
          i++;
          break;
        case At.BeforeElement:
        case At.AfterElement:
          if (b === LF) this.line++;
          else if (isSpace(b)) {
            // nothing
          } else if (b === CLOSE_ARRAY) {
            if (this.within !== undefined) {
              // The end of a list of entries: the rest of the object that wrapped it is read, and not kept.
              this.within = undefined;
              this.topLevel = true;
              this.depth = 1;
              this.key = Key.InValue;
              this.at = At.InElement;
              from = i + 1;
            } else {
              this.at = At.AfterValue;
              this.sawLineBetween = false;
            }
          } else if (b === COMMA) {
            if (this.at === At.BeforeElement) this.emptyElement();
            this.at = At.BeforeElement;
          } else if (this.at === At.AfterElement) {
            this.stop(`invalid JSON: ${describeByte(b)} where a comma or ']' was expected`);
            return undefined;
          } else {
            this.topLevel = false;
            this.begin(chunk, i);
            from = i;
            this.at = At.InElement;
            continue; // the element's first byte is read as part of it
          }
          i++;
          break;
        case At.InElement: {
          const end = this.topLevel ? this.topElement(chunk, i) : this.element(chunk, i);
          if (end === OPENS_LIST) {
            // A list under one of LOG_LISTS: what follows its '[' tells whether it is one of entries.
            this.take(chunk, from < 0 ? 0 : from, this.listAt);
            from = -1;
            this.at = At.ListStart;
            i = this.listAt + 1;
            break;
          }
          if (end < 0) {
            i = n;
            break;
          }
          this.take(chunk, from < 0 ? 0 : from, end);
          from = -1;
          this.finish();
          this.at = this.topLevel ? At.AfterValue : At.AfterElement;
          this.sawLineBetween = false;
          i = end;
          break;
        }
        case At.ListStart:
          if (b === LF) this.line++;
          else if (!isSpace(b)) {
            if (b === OPEN_OBJECT) {
              // Its entries are the records: the object that wraps them is not kept.
              this.within = this.keyText;
              this.wrapped = true;
              this.parts = [];
              this.bytes = 0;
              this.elements = 0;
              this.topLevel = false;
              this.at = At.BeforeElement;
            } else {
              // Another list: a part of the object like any other.
              this.parts.push(Buffer.from('['));
              this.bytes++;
              this.depth = 2;
              this.key = Key.InValue;
              this.at = At.InElement;
              from = i;
            }
            continue;
          }
          i++;
          break;
        case At.Stopped:
          return undefined;
      }
    }
    if (this.at === At.InElement) this.take(chunk, from < 0 ? 0 : from, n);
    const nl = chunk.lastIndexOf(LF);
    this.tailColumn = nl >= 0 ? n - nl - 1 : this.tailColumn + n;
    this.ctx.progress.line = this.line;
    return undefined;
  }

  /** The input ended: inside an element or an array that is not closed, it was cut short. */
  end(): void {
    if (this.at === At.ListStart) this.unread(this.line, `the JSON document ends inside its '${this.keyText}' list`);
    else if (this.at === At.InElement) {
      const what = this.topLevel ? 'an object' : `array element ${this.elements + 1}`;
      this.unread(this.startLine, `the JSON document ends inside ${what} (truncated?)`);
    } else if (this.at === At.BeforeElement || this.at === At.AfterElement) {
      this.unread(this.line, `the JSON array is never closed (truncated?)`);
    }
  }

  // Scans element bytes from i; returns the index just past its end, or -1 when it goes on past this chunk.
  private element(b: Buffer, i: number): number {
    const n = b.length;
    for (; i < n; i++) {
      const c = b[i]!;
      if (this.inString) {
        if (c === LF) this.line++; // not valid JSON, but the line is counted; the parser says what is wrong
        if (this.escaped) this.escaped = false;
        else if (c === BACKSLASH) this.escaped = true;
        else if (c === QUOTE) this.inString = false;
        continue;
      }
      if (c === QUOTE) this.inString = true;
      else if (c === OPEN_OBJECT || c === OPEN_ARRAY) this.depth++;
      else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) {
        if (this.depth === 0) return i; // the array's own bracket ends a scalar element
        this.depth--;
        if (this.depth === 0) return i + 1;
      } else if (this.depth === 0 && (c === COMMA || isSpace(c) || c === LF))
        return i; // a scalar element ends
      else if (c === LF) this.line++;
    }
    return -1;
  }

  // Scans a top-level object's bytes from i as element() does, following its keys: returns the index past its end,
  // -1 when it goes on past this chunk, or OPENS_LIST where the value of a key of LOG_LISTS opens a list (at listAt).
  private topElement(b: Buffer, i: number): number {
    const n = b.length;
    for (; i < n; i++) {
      const c = b[i]!;
      if (this.inString) {
        if (c === LF) this.line++;
        if (this.escaped) {
          this.escaped = false;
          if (this.key === Key.InKey) this.keyText += '\\';
        } else if (c === BACKSLASH) this.escaped = true;
        else if (c === QUOTE) {
          this.inString = false;
          if (this.key === Key.InKey) this.key = Key.AfterKey;
        } else if (this.key === Key.InKey && this.keyText.length <= 16) this.keyText += String.fromCharCode(c);
        continue;
      }
      if (c === QUOTE) {
        this.inString = true;
        if (this.depth === 1 && this.key === Key.Expected) {
          this.key = Key.InKey;
          this.keyText = '';
        }
      } else if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
        if (this.depth === 1 && this.key === Key.BeforeValue && c === OPEN_ARRAY && LOG_LISTS.has(this.keyText)) {
          this.listAt = i;
          return OPENS_LIST;
        }
        this.depth++;
        if (this.depth === 2) this.key = Key.InValue;
      } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) {
        this.depth--;
        if (this.depth === 0) return i + 1;
      } else if (c === LF) this.line++;
      else if (this.depth === 1) {
        if (c === COLON && this.key === Key.AfterKey) this.key = Key.BeforeValue;
        else if (c === COMMA) this.key = Key.Expected;
        else if (this.key === Key.BeforeValue && !isSpace(c)) this.key = Key.InValue;
      }
    }
    return -1;
  }

  private listAt = 0;

  private begin(chunk: Buffer, at: number): void {
    const nl = chunk.lastIndexOf(LF, at);
    this.startColumn = nl >= 0 ? at - nl : this.tailColumn + at + 1;
    this.parts = [];
    this.bytes = 0;
    this.tooLarge = false;
    this.startLine = this.line;
    this.depth = 0;
    this.inString = false;
    this.escaped = false;
  }

  private take(chunk: Buffer, from: number, to: number): void {
    if (to <= from || this.tooLarge || (this.wrapped && this.topLevel)) return;
    this.bytes += to - from;
    if (this.bytes > MAX_ELEMENT_BYTES) {
      // Read on to its end without keeping it: one reject, and the document goes on.
      this.tooLarge = true;
      this.parts = [];
      return;
    }
    // Copied: the reader may reuse its chunk.
    this.parts.push(Buffer.from(chunk.subarray(from, to)));
  }

  private finish(): void {
    const what = this.topLevel
      ? 'document'
      : `${this.within ? `'${this.within}' item` : 'array element'} ${++this.elements}`;
    if (this.topLevel && ++this.objects === 1) this.firstOnOneLine = this.line === this.startLine;
    if (this.topLevel && this.wrapped) {
      // The object wrapped a list of entries, read as records: it is none itself.
      this.parts = [];
      this.wrapped = false;
      return;
    }
    const line = this.startLine;
    const { source, selector } = this.ctx;
    // An element of an array is also told by its place in it, as the events of a JSONL line that is an array are:
    // a document on one line would give all of them the same line.
    const item = this.topLevel ? undefined : this.elements;
    const push = (x: RawItem): void => {
      if (item !== undefined && x.kind !== 'unread') x.item = item;
      this.batch.push(x);
    };
    if (this.tooLarge) {
      // Read to its end but not kept: a part of the input not read, and the document goes on.
      this.batch.push({
        kind: 'unread',
        source,
        line,
        toLine: this.line,
        reason: `${what} is larger than ${MAX_ELEMENT_BYTES >> 20} MB: not read`,
      });
      return;
    }

    const bytes = this.parts.length === 1 ? this.parts[0]! : Buffer.concat(this.parts);
    this.parts = [];
    // An element that is not UTF-8 is read as Windows-1252, as a CSV export's line is (decode-text.ts), and its
    // lines counted so.
    const utf8 = isUtf8(bytes);
    const text = utf8 ? bytes.toString('utf8') : decodeUtf8Line(bytes).text;
    if (!utf8) this.ctx.recoded = mergeRecoded(this.ctx.recoded, { lines: countLines(bytes), first: line });
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (err) {
      const e = describeJsonError(err, text);
      const at = lineAndColumn(text, e.offset);
      const column = at.line === 1 ? at.column + this.startColumn - 1 : at.column;
      const where = line + at.line - 1;
      push({
        kind: 'reject',
        source,
        line: where,
        reason: `invalid JSON: ${e.message} at line ${where}, column ${column}`,
      });
      return;
    }
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      push({ kind: 'reject', source, line, reason: `not a JSON object (${what} is ${kindOf(value)})` });
      return;
    }
    const fields = value as Record<string, unknown>;
    const within = this.within;
    if (selector === null) {
      push(
        within === undefined
          ? { kind: 'record', source, line, fields }
          : { kind: 'record', source, line, fields, within },
      );
      return;
    }
    const s = selector.apply(fields);
    if (!s.ok) push({ kind: 'reject', source, line, reason: s.reason });
    else {
      const rec: RawRecord = { kind: 'record', source, line, fields: s.value };
      if (s.replaced) rec.replaced = true;
      if (within !== undefined) rec.within = within;
      push(rec);
    }
  }

  private emptyElement(): void {
    this.elements++;
    this.batch.push({
      kind: 'reject',
      source: this.ctx.source,
      line: this.line,
      item: this.elements,
      reason: `invalid JSON: array element ${this.elements} is empty (two commas, or a comma after '[')`,
    });
  }

  private stop(reason: string): void {
    this.unread(this.line, reason);
    this.at = At.Stopped;
  }

  private unread(line: number, reason: string): void {
    this.batch.push({ kind: 'unread', source: this.ctx.source, line, reason });
  }
}

function isSpace(b: number): boolean {
  return b === 0x20 || b === 0x09 || b === 0x0d;
}

function describeByte(b: number): string {
  return b >= 0x21 && b < 0x7f ? `'${String.fromCharCode(b)}'` : `byte 0x${b.toString(16).padStart(2, '0')}`;
}

// Where the line holding byte i starts (the document's second object may follow spaces on its line).
function lineStartOf(chunk: Buffer, i: number): number {
  const nl = chunk.lastIndexOf(LF, i);
  return nl < 0 ? 0 : nl + 1;
}

// The lines bytes span: one more than the line ends in them.
function countLines(bytes: Buffer): number {
  let n = 1;
  for (let i = bytes.indexOf(LF); i !== -1; i = bytes.indexOf(LF, i + 1)) n++;
  return n;
}
