// The fast path of CSV mapping, for the map workers: rows without a quote, in UTF-8, are split on the delimiter byte
// and their mapped columns written straight into the block (fast-emit.ts), without decoding the row, an object per
// record or the mapper. Every record of a CSV input has the same columns, so the mapper's plan for the first
// record holds for all: the fast path reads the columns that plan names, and only while the mapper still has it.
// Where the plan names several columns for a field (a localized export's work email, then its home one), the first
// whose cell is not empty gives it, as the mapper reads it.
// A row it declines (an odd value, a wrong column count, a blank row) is read the general way, one row at a time;
// from the first row with a quote on, the rest of the block goes to the general reader, which handles quoting.
import type { BlockEncoder } from './block.js';
import {
  CsvRows,
  decodeCsv,
  NotWellFormed,
  readCsv,
  readCsvWellFormed,
  wellFormedRows,
  type CsvSettings,
} from '../sources/read-csv.js';
import { isUtf8 } from 'node:buffer';
import { decodeUtf8Line, mergeRecoded } from '../sources/decode-text.js';
import type { ReaderContext } from '../sources/reader-context.js';
import type { RawItem } from '../sources/types.js';
import { FAST_FIELDS, fastPlan, LeadWriter } from './fast-emit.js';
import type { Mapper } from '../mapping/map-record.js';

const LF = 0x0a;
const CR = 0x0d;
const QUOTE = 0x22;
const UTF8 = /^utf-?8$/i;
// The most columns the fast path reads one field from (a plan with more leaves the shape to the general path).
const MAX_COLUMNS = 8;

/**
 * Maps a CSV block of whole records (`body`) read behind `header` (the input's bytes up to the end of its header
 * row) into the encoder, numbered from ctx.lineOffset, exactly as the in-thread reader and the mapper would: rows
 * without quotes by the fast path where it may, the rest by the well-formed reader (csv-parse for the input's last
 * block, which may end inside a quote, and for a block the well-formed reader refuses).
 */
export async function mapCsvBlock(
  header: Buffer,
  body: Buffer,
  last: boolean,
  settings: CsvSettings,
  ctx: ReaderContext,
  enc: BlockEncoder,
  toMapped: (item: RawItem) => ReturnType<Mapper>,
  fast: FastCsv | undefined,
): Promise<void> {
  const lineOffset = ctx.lineOffset ?? 0;
  if (fast && header.length > 0) {
    const done = fast.mapBlock(header, body, settings, ctx, enc, toMapped);
    body = body.subarray(done.at);
    ctx.lineOffset = lineOffset + done.lines;
  }
  if (body.length === 0) return;
  const fastRecords = enc.size;
  async function* chunks(): AsyncGenerator<Buffer> {
    if (header.length > 0) yield header;
    yield body;
  }
  try {
    const read = last ? readCsv : readCsvWellFormed;
    for await (const batch of read(chunks(), ctx, settings)) for (const item of batch) enc.add(toMapped(item));
  } catch (e) {
    if (!(e instanceof NotWellFormed)) throw e;
    enc.rewind(fastRecords);
    Object.assign(ctx, { progress: { line: 0 }, unclosedQuote: undefined, recoded: undefined });
    for await (const batch of readCsv(chunks(), ctx, settings)) for (const item of batch) enc.add(toMapped(item));
  }
}

/** Per-worker fast path for CSV blocks. */
export class FastCsv {
  private readonly writer: LeadWriter;
  private spans = new Int32Array(FAST_FIELDS.length * 2);
  // The place each column is read into (-1: none) under the plan with id planId, for these headers; undefined when the
  // plan reads something that is not a column, or one column as two fields. A place is a field of FAST_FIELDS (at
  // f), or where the plan has several columns for fields (multi), the rank-th of field f's (at f * MAX_COLUMNS + rank).
  private fieldOf: Int32Array | undefined;
  // The plan has several columns for some field: the first of them that holds text gives it, as the mapper reads it.
  private multi = false;
  private columns = new Int32Array(FAST_FIELDS.length);
  private candidates = new Int32Array(FAST_FIELDS.length * MAX_COLUMNS * 2);
  private planId = -1;
  private headers: string[] | null = null;
  /** Rows mapped by the fast path (tests read it). */
  hits = 0;

  constructor(private readonly mapper: Mapper) {
    this.writer = new LeadWriter(!mapper.hashLater);
  }

  /** Whether these options let the fast path map rows (the settings of each input are checked in mapBlock). */
  static allowed(mapper: Mapper, select: string | undefined): boolean {
    return mapper.plain && select === undefined;
  }

  /**
   * Maps `header` (the input's bytes up to the end of its header row) and `body` (whole records after it) into the
   * encoder, as readCsvWellFormed and the mapper would; lines are those of ctx. Stops at the first row with a quote,
   * or a CR that does not end a line, and returns where: the caller reads the rest, `lines` lines further on.
   */
  mapBlock(
    header: Buffer,
    body: Buffer,
    settings: CsvSettings,
    ctx: ReaderContext,
    enc: BlockEncoder,
    toMapped: (item: RawItem) => ReturnType<Mapper>,
  ): { at: number; lines: number } {
    const delimiter = settings.delimiter;
    if (
      !UTF8.test(settings.encoding) ||
      delimiter.length !== 1 ||
      delimiter.charCodeAt(0) >= 0x80 ||
      delimiter === '"' ||
      settings.escapes !== undefined // cells with backslash escapes: csv-escapes.ts reads them
    )
      return { at: 0, lines: 0 };
    const rows = new CsvRows(ctx);
    for (const cells of wellFormedRows(decodeCsv(header, settings.encoding), delimiter)) rows.add(cells);
    const headerLines = rows.lastLine;
    const offset = ctx.lineOffset ?? 0;
    const d = delimiter.charCodeAt(0);
    const view = new DataView(body.buffer, body.byteOffset, body.byteLength);
    // The next quote and CR, found once (searching from every row would read the rest of the block each time).
    const after = (c: number, from: number): number => {
      const i = body.indexOf(c, from);
      return i < 0 ? body.length : i;
    };
    const quote = after(QUOTE, 0);
    let cr = after(CR, 0);
    // Rows are read as the lenient UTF-8 decoder reads them (decode-text.ts): a row that is not UTF-8 anywhere is
    // read as Windows-1252 by the general path, and is never the fast path's.
    const valid = isUtf8(body);
    let p = 0;
    for (; p < body.length;) {
      let end = body.indexOf(LF, p);
      const next = end < 0 ? body.length : end + 1;
      if (end < 0) end = body.length;
      if (quote < end) break;
      if (cr < end) {
        if (cr !== end - 1 || end === body.length) break; // a CR inside the row, or one that ends the input
        end--; // CRLF
        cr = after(CR, next);
      }
      const line = rows.lastLine + 1;
      const utf8 = valid || isUtf8(body.subarray(p, next));
      if (utf8 && rows.headers !== null && this.tryRow(body, view, p, end, d, rows.headers, line + offset, enc)) {
        rows.lastLine = line;
      } else {
        const row = utf8
          ? { text: body.toString('utf8', p, end), recoded: false }
          : decodeUtf8Line(body.subarray(p, end));
        if (row.recoded) ctx.recoded = mergeRecoded(ctx.recoded, { lines: 1, first: line + offset });
        rows.add(row.text.split(delimiter));
        for (const item of rows.batch.splice(0)) enc.add(toMapped(item));
        if (rows.headers !== null) this.learn(rows.headers);
      }
      p = next;
    }
    return { at: p, lines: rows.lastLine - headerLines };
  }

  // The row at b[start..end) into the encoder, if its columns are what the plan reads and its values need nothing
  // the general path does.
  private tryRow(
    b: Buffer,
    view: DataView,
    start: number,
    end: number,
    d: number,
    headers: string[],
    line: number,
    enc: BlockEncoder,
  ): boolean {
    const cur = this.mapper.current();
    const fieldOf = this.fieldOf;
    if (!fieldOf || !cur || cur.id !== this.planId || headers !== this.headers) return false;
    const spans = this.spans;
    const multi = this.multi;
    const into = multi ? this.candidates : spans;
    for (let i = 0; i < into.length; i++) into[i] = -1;
    let col = 0;
    let from = start;
    // Four bytes a step while none of them is the delimiter (a word XORed with it repeated has no zero byte).
    const dddd = d * 0x01010101;
    for (let i = start; ; i++) {
      for (; i + 4 <= end; i += 4) {
        const x = view.getInt32(i, true) ^ dddd;
        if (((x - 0x01010101) & ~x & 0x80808080) !== 0) break;
      }
      if (i === end || b[i] === d) {
        const f = col < fieldOf.length ? fieldOf[col]! : -1;
        if (f >= 0) {
          into[f * 2] = from;
          into[f * 2 + 1] = i;
        }
        col++;
        from = i + 1;
        if (i === end) break;
      }
    }
    if (col !== headers.length) return false;
    // Each field from the first of its columns whose cell is not empty (one of spaces only is taken, and declined
    // by the writer: the mapper would have trimmed it away and read on).
    if (multi)
      for (let f = 0; f < FAST_FIELDS.length; f++) {
        spans[f * 2] = spans[f * 2 + 1] = -1;
        for (let r = 0, k = f * MAX_COLUMNS * 2; r < this.columns[f]!; r++, k += 2) {
          if (into[k + 1]! > into[k]!) {
            spans[f * 2] = into[k]!;
            spans[f * 2 + 1] = into[k + 1]!;
            break;
          }
        }
      }
    if (!this.writer.write(b, view, spans, line, enc)) return false;
    this.hits++;
    return true;
  }

  // After the general path mapped a row: the columns of the mapper's plan, if the fast path can serve it.
  private learn(headers: string[]): void {
    const cur = this.mapper.current();
    if (!cur || (cur.id === this.planId && headers === this.headers)) return;
    this.planId = cur.id;
    this.headers = headers;
    this.fieldOf = undefined;
    if (!fastPlan(cur.plan)) return;
    const fieldOf = new Int32Array(headers.length).fill(-1);
    // Every value of a CSV row is a string: the plan's places for a field are columns, tried in order.
    const multi = FAST_FIELDS.some((f) => cur.plan[f].length > 1);
    for (let f = 0; f < FAST_FIELDS.length; f++) {
      const paths = cur.plan[FAST_FIELDS[f]!];
      if (paths.length > MAX_COLUMNS) return;
      for (let r = 0; r < paths.length; r++) {
        const path = paths[r]!;
        const c = path.length === 1 && typeof path[0] === 'string' ? headers.lastIndexOf(path[0]) : -1;
        if (c < 0 || fieldOf[c] !== -1) return; // the plan reads something that is not a column, or a column twice
        fieldOf[c] = multi ? f * MAX_COLUMNS + r : f;
      }
      this.columns[f] = paths.length;
    }
    this.multi = multi;
    this.fieldOf = fieldOf;
  }
}
