// CSV/TSV exports, parsed by csv-parse in streaming mode. Values stay strings exactly as written (no casting:
// leading zeros and the `+` of phone numbers matter). The first non-blank row is the header.
//
// Text is decoded with iconv-lite before parsing (encoding detected from the first 64 KB unless forced), and
// CRLF is turned into LF first: csv-parse miscounts lines when a quoted field contains CRLF, and `line` must be
// exact. A quoted value's embedded CRLF therefore reaches the record as LF.

import { Readable, pipeline } from 'node:stream';
import { parse, type CsvError } from 'csv-parse';
import iconv from 'iconv-lite';
import { normalizeHeaders } from './csv-headers.js';
import { BATCH_SIZE, type ReaderContext } from './reader-context.js';
import type { RawItem } from './types.js';

/** How to read one CSV input, decided by read-inputs from options and sniffing. */
export interface CsvSettings {
  encoding: string;
  delimiter: string;
}

/** Reads a CSV input; yields batches of records keyed by header, plus rejects for bad rows; ends gracefully on an unterminated quote. */
export async function* readCsv(chunks: AsyncIterable<Buffer>, ctx: ReaderContext, settings: CsvSettings): AsyncGenerator<RawItem[]> {
  const { source, selector, progress } = ctx;
  const offset = ctx.lineOffset ?? 0;
  const parser = parse({
    delimiter: settings.delimiter,
    relax_column_count: true, // a short or long row becomes a reject (checked below) instead of stopping the file
    relax_quotes: true, // a stray quote inside an unquoted field (`5" screen`) is kept as text
    skip_records_with_error: true, // an unclosed quote arrives as a 'skip' event, after the rows before it
    // No `info: true`: it builds an object per row and halves throughput. Lines are counted here instead:
    // blank lines are kept as rows, so every LF is either a row's end or inside one of its values.
  });
  // Errors skipped by the parser, in the order seen; turned into rejects when the rows around them are emitted.
  const skipped: CsvError[] = [];
  parser.on('skip', (err: CsvError) => skipped.push(err));
  pipeline(Readable.from(decodeText(chunks, settings.encoding)), parser, () => {});

  let headers: string[] | null = null;
  let safeHeaders = true; // false when a header is "__proto__": then rows are built the slow, safe way
  let batch: RawItem[] = [];
  let lastLine = 0; // last line consumed by a row (blank rows included)

  const flushSkipped = (beforeLine: number): void => {
    while (skipped.length > 0 && errorLine(skipped[0]) < beforeLine) {
      const err = skipped.shift() as CsvError;
      if (err.code === 'CSV_QUOTE_NOT_CLOSED') ctx.unclosedQuote = true;
      batch.push(rejectFor(err, source, lastLine, offset));
      // a row swallowed by a parse error consumed lines we did not see; resynchronize on the parser's count
      lastLine = Math.max(lastLine, errorLine(err));
    }
  };

  for await (const cells of parser as AsyncIterable<string[]>) {
    if (skipped.length > 0) flushSkipped(lastLine + 1);
    const startLine = lastLine + 1;
    lastLine = startLine + countNewlines(cells);
    progress.line = lastLine + offset;
    if (isBlank(cells)) continue; // blank line, or a row of bare delimiters (Excel leaves these)
    if (headers === null) {
      headers = normalizeHeaders(cells);
      safeHeaders = !headers.includes('__proto__');
      continue;
    }
    const item = toItem(cells, headers, safeHeaders, startLine + offset, source);
    if (item.kind === 'record' && selector !== null) {
      const s = selector.apply(item.fields);
      batch.push(s.ok ? { ...item, fields: s.value } : { kind: 'reject', source, line: startLine + offset, reason: s.reason });
    } else batch.push(item);
    if (batch.length >= BATCH_SIZE) {
      yield batch;
      batch = [];
    }
  }
  flushSkipped(Number.POSITIVE_INFINITY);
  if (batch.length > 0) yield batch;
}

function toItem(cells: string[], headers: string[], safeHeaders: boolean, line: number, source: string): RawItem {
  let n = cells.length;
  // Trailing empty cells beyond the header (`a;b;c;;`) are what spreadsheets write, not a broken row.
  while (n > headers.length && cells[n - 1] === '') n--;
  if (n !== headers.length) {
    return { kind: 'reject', source, line, reason: `expected ${headers.length} columns, found ${cells.length}` };
  }
  let fields: Record<string, unknown>;
  if (safeHeaders) {
    fields = {};
    for (let i = 0; i < n; i++) fields[headers[i] as string] = cells[i];
  } else {
    // fromEntries defines own properties, so a header named "__proto__" cannot touch the prototype.
    fields = Object.fromEntries(headers.map((h, i) => [h, cells[i] ?? '']));
  }
  return { kind: 'record', source, line, fields };
}

function isBlank(cells: string[]): boolean {
  for (const c of cells) if (c !== '' && c.trim() !== '') return false;
  return true;
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

function countNewlines(cells: string[]): number {
  let n = 0;
  for (const c of cells) for (let i = c.indexOf('\n'); i !== -1; i = c.indexOf('\n', i + 1)) n++;
  return n;
}

/** Decodes bytes to text (stripping a BOM) and turns CRLF into LF, holding back a CR split from its LF. */
async function* decodeText(chunks: AsyncIterable<Buffer>, encoding: string): AsyncGenerator<string> {
  const decoder = iconv.getDecoder(encoding, { stripBOM: true });
  let carry = '';
  for await (const chunk of chunks) {
    let text = carry + decoder.write(chunk);
    carry = '';
    if (text.endsWith('\r')) {
      carry = '\r';
      text = text.slice(0, -1);
    }
    if (text !== '') yield text.replaceAll('\r\n', '\n');
  }
  const tail = carry + (decoder.end() ?? '');
  if (tail !== '') yield tail.replaceAll('\r\n', '\n');
}
