// CSV/TSV exports, parsed by csv-parse in streaming mode. Values stay strings exactly as written (no casting:
// leading zeros and the `+` of phone numbers matter). The first non-blank row is the header.
//
// Text is decoded before parsing (decode-text.ts: the encoding detected from the first bytes unless forced, a line
// that is not UTF-8 in a UTF-8 input read as Windows-1252), CRLF is turned into LF (csv-parse miscounts lines when
// a quoted field contains CRLF, and `line` must be exact; a quoted value's CRLF reaches the record as LF), and a
// stray quote's runaway field is given up by the guard (csv-guard.ts) before csv-parse folds the rows after it.

import { Readable, pipeline } from 'node:stream';
import { parse, type CsvError } from 'csv-parse';
import { CsvGuard, type StrayQuote } from './csv-guard.js';
import { readCsvEscaped } from './csv-escapes.js';
import { CsvRows } from './csv-rows.js';
import { createTextDecoding, decodeLines, type Recoded, type TextDecoding } from './decode-text.js';
import { BATCH_SIZE, type ReaderContext } from './reader-context.js';
import type { RawItem } from './types.js';

export { CsvRows };

/** How to read one CSV input, decided by read-inputs from options and sniffing. */
export interface CsvSettings {
  encoding: string;
  delimiter: string;
  /** Cells written with backslash escapes (\" for a quote, as JSON literals), not RFC 4180's: csv-escapes.ts. */
  escapes?: 'backslash';
}

/** Longest row csv-parse reads (a longer one is a reject): far beyond any lead, and bounded memory. */
const MAX_RECORD_SIZE = 8 << 20;

/** Reads a CSV input; yields batches of records keyed by header, plus rejects for bad rows and stray quotes. */
export async function* readCsv(
  chunks: AsyncIterable<Buffer>,
  ctx: ReaderContext,
  settings: CsvSettings,
): AsyncGenerator<RawItem[]> {
  if (settings.escapes === 'backslash') {
    yield* readCsvEscaped(chunks, ctx, settings);
    return;
  }
  const { source } = ctx;
  const offset = ctx.lineOffset ?? 0;
  const parser = parse({
    delimiter: settings.delimiter,
    relax_column_count: true, // a short or long row becomes a reject (checked below) instead of stopping the file
    relax_quotes: true, // a stray quote inside an unquoted field (`5" screen`) is kept as text
    skip_records_with_error: true, // an unclosed quote arrives as a 'skip' event, after the rows before it
    max_record_size: MAX_RECORD_SIZE,
    // No `info: true`: it builds an object per row and halves throughput. Lines are counted here instead:
    // blank lines are kept as rows, so every LF is either a row's end or inside one of its values.
  });
  // Errors skipped by the parser, in the order seen; turned into rejects when the rows around them are emitted.
  const skipped: CsvError[] = [];
  parser.on('skip', (err: CsvError) => skipped.push(err));
  const guard = new CsvGuard(settings.delimiter, offset);
  const decoding = createTextDecoding(settings.encoding);
  const failure: { error?: unknown } = {};
  pipeline(Readable.from(decodeText(chunks, decoding, guard, failure)), parser, () => {});

  const rows = new CsvRows(ctx);
  const batch = rows.batch;
  // Records given up for a stray quote: passed on as blank lines, reported at their first line.
  const flushStrays = (upTo: number): void => {
    while (guard.strays.length > 0 && guard.strays[0]!.line <= upTo) {
      const stray = guard.strays.shift() as StrayQuote;
      // A split block (read-csv-parallel.ts) must never need this: the block is read again as part of a stream.
      ctx.unclosedQuote = true;
      batch.push({ kind: 'reject', source, line: stray.line + offset, reason: stray.reason });
    }
  };
  const done = (): void => {
    if (decoding.recoded) ctx.recoded = shifted(decoding.recoded, offset);
  };

  const flushSkipped = (beforeLine: number): void => {
    while (skipped.length > 0 && errorLine(skipped[0]) < beforeLine) {
      const err = skipped.shift() as CsvError;
      if (err.code === 'CSV_QUOTE_NOT_CLOSED') ctx.unclosedQuote = true;
      batch.push(rejectFor(err, source, rows.lastLine, offset));
      // a row swallowed by a parse error consumed lines we did not see; resynchronize on the parser's count
      rows.lastLine = Math.max(rows.lastLine, errorLine(err));
    }
  };

  try {
    for await (const cells of parser as AsyncIterable<string[]>) {
      if (skipped.length > 0) flushSkipped(rows.lastLine + 1);
      if (guard.strays.length > 0) flushStrays(rows.lastLine + 1);
      rows.add(cells);
      if (batch.length >= BATCH_SIZE) yield batch.splice(0);
    }
  } catch (err) {
    // A read error (a truncated gzip): the rows parsed before it are still records, then the input fails. (They
    // were dropped with the unfinished batch: up to BATCH_SIZE - 1 rows before the damage went undecided.)
    flushSkipped(rows.lastLine + 1);
    flushStrays(rows.lastLine + 1);
    done();
    if (batch.length > 0) yield batch.splice(0);
    throw err;
  }
  if (failure.error !== undefined) {
    // As above: the rows before the damage are records, then the input fails.
    flushSkipped(rows.lastLine + 1);
    flushStrays(rows.lastLine + 1);
    done();
    if (batch.length > 0) yield batch.splice(0);
    throw failure.error instanceof Error ? failure.error : new Error(String(failure.error));
  }
  flushSkipped(Number.POSITIVE_INFINITY);
  flushStrays(Number.POSITIVE_INFINITY);
  done();
  if (batch.length > 0) yield batch;
}

function shifted(r: Recoded, offset: number): Recoded {
  return { lines: r.lines, first: r.first + offset };
}

/**
 * Reads CSV already known to be well-formed (RFC 4180 quoting, LF or CRLF line ends, no stray quotes, every
 * quote closed: what csv-cuts.ts vouches for in the blocks it cuts before the last) without csv-parse, several
 * times faster: rows without a quote are split in one call. For such text it yields exactly what readCsv
 * yields; on anything else it throws NotWellFormed (possibly after yielding some rows).
 */
export async function* readCsvWellFormed(
  chunks: AsyncIterable<Buffer>,
  ctx: ReaderContext,
  settings: CsvSettings,
): AsyncGenerator<RawItem[]> {
  if (settings.escapes !== undefined) throw new NotWellFormed('cells written with backslash escapes');
  // The bytes are joined before decoding so the text is one flat string: text made of concatenated pieces would
  // be walked again by every indexOf below.
  const bytes: Buffer[] = [];
  for await (const b of chunks) bytes.push(b);
  // As decodeText reads one chunk: BOM stripped, CRLF to LF.
  const decoded = decodeLines(Buffer.concat(bytes), settings.encoding);
  if (decoded.recoded) ctx.recoded = shifted(decoded.recoded, ctx.lineOffset ?? 0);
  const text = decoded.text.replaceAll('\r\n', '\n');
  const rows = new CsvRows(ctx);
  const batchSize = ctx.batchSize ?? BATCH_SIZE;
  const cells: string[][] = [];
  // A batch of rows at a time, so rows die young.
  for (let i = 0; i < text.length;) {
    i = splitWellFormed(text, i, settings.delimiter, cells, batchSize);
    for (const c of cells) rows.add(c);
    cells.length = 0;
    if (rows.batch.length > 0) yield rows.batch.splice(0);
  }
}

/** The rows of well-formed CSV text (see readCsvWellFormed), as cells. */
export function wellFormedRows(text: string, delimiter: string): string[][] {
  const cells: string[][] = [];
  for (let i = 0; i < text.length;) i = splitWellFormed(text, i, delimiter, cells, Number.POSITIVE_INFINITY);
  return cells;
}

/** Decodes CSV bytes as readCsvWellFormed does: BOM stripped, CRLF to LF. */
export function decodeCsv(bytes: Buffer, encoding: string): string {
  return decodeLines(bytes, encoding).text.replaceAll('\r\n', '\n');
}

/** Thrown by readCsvWellFormed when the text is not what it reads. */
export class NotWellFormed extends Error {}

// Kept as three small functions: V8 optimized one big loop well on its first call and badly after (measured).
/** Splits up to `max` rows from index i into out; returns the index after them. */
function splitWellFormed(text: string, i: number, delimiter: string, out: string[][], max: number): number {
  const n = text.length;
  while (i < n && out.length < max) {
    const q = text.indexOf('"', i);
    // Rows before the next quote have none: each is split in one call.
    const stop = q === -1 ? n : text.lastIndexOf('\n', q) + 1;
    if (stop > i) i = plainRows(text, i, stop, delimiter, out, max);
    else if (q !== -1) i = quotedRow(text, i, delimiter, out);
  }
  return i;
}

/** Rows from i to stop (a row start), none with a quote; returns stop (or the text's end). */
function plainRows(text: string, i: number, stop: number, delimiter: string, out: string[][], max: number): number {
  while (i < stop && out.length < max) {
    let e = text.indexOf('\n', i);
    if (e === -1) e = text.length;
    out.push(text.slice(i, e).split(delimiter));
    i = e + 1;
  }
  return i;
}

/** One row with quoted fields, field by field; returns the start of the next row. */
function quotedRow(text: string, i: number, delimiter: string, out: string[][]): number {
  const n = text.length;
  const cells: string[] = [];
  for (;;) {
    if (text.charCodeAt(i) === 0x22) {
      let value = '';
      let j = i + 1;
      for (;;) {
        const q = text.indexOf('"', j);
        if (q === -1) throw new NotWellFormed('unclosed quote');
        if (text.charCodeAt(q + 1) === 0x22) {
          value += text.slice(j, q + 1);
          j = q + 2;
          continue;
        }
        value += text.slice(j, q);
        i = q + 1;
        break;
      }
      cells.push(value);
      if (i >= n || text.charCodeAt(i) === 0x0a) break;
      if (!text.startsWith(delimiter, i)) throw new NotWellFormed('text after a closing quote');
      i += delimiter.length;
      continue;
    }
    const nl = text.indexOf('\n', i);
    const lineStop = nl === -1 ? n : nl;
    let end = text.indexOf(delimiter, i);
    if (end === -1 || end > lineStop) end = lineStop;
    const value = text.slice(i, end);
    if (value.includes('"')) throw new NotWellFormed('quote inside an unquoted field');
    cells.push(value);
    i = end;
    if (i >= n || text.charCodeAt(i) === 0x0a) break;
    i += delimiter.length;
  }
  out.push(cells);
  return i + 1;
}

function rejectFor(err: CsvError, source: string, lastLine: number, offset: number): RawItem {
  if (err.code === 'CSV_QUOTE_NOT_CLOSED') {
    // The quote opened on the row after the last complete one; everything after it was swallowed into that field.
    const line = lastLine + 1 + offset;
    return {
      kind: 'reject',
      source,
      line,
      reason: `unterminated quoted field starting at line ${line}: the rest of the file (to line ${errorLine(err) + offset}) could not be read`,
    };
  }
  return { kind: 'reject', source, line: errorLine(err) + offset, reason: `invalid CSV: ${err.message}` };
}

function errorLine(err: CsvError | undefined): number {
  const lines = err?.['lines'];
  return typeof lines === 'number' ? lines : 0;
}

/**
 * Decodes bytes to text (stripping a BOM), turns CRLF into LF (holding back a CR split from its LF), and lets the
 * stray-quote guard hold back a record whose quoted field may yet run away.
 */
async function* decodeText(
  chunks: AsyncIterable<Buffer>,
  decoder: TextDecoding,
  guard: CsvGuard,
  failure: { error?: unknown },
): AsyncGenerator<string> {
  let carry = '';
  try {
    for await (const chunk of chunks) {
      let text = carry + decoder.write(chunk);
      carry = '';
      if (text.endsWith('\r')) {
        carry = '\r';
        text = text.slice(0, -1);
      }
      const out = text === '' ? '' : guard.push(text.replaceAll('\r\n', '\n'));
      if (out !== '') yield out;
    }
  } catch (err) {
    // The input failed midway (a truncated gzip): the text ends here, at the last whole row, so that csv-parse ends
    // that row (it waits for a character past a line end), and the failure is the reader's to raise after it.
    failure.error = err;
    return;
  }
  const tail = carry + decoder.end();
  const out = (tail !== '' ? guard.push(tail.replaceAll('\r\n', '\n')) : '') + guard.end();
  if (out !== '') yield out;
}
