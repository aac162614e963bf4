// CSV written with backslash escapes instead of RFC 4180's doubled quotes: a hand-rolled export that writes each cell
// as a JSON literal (PHP's implode(',', array_map('json_encode', $row)): a quote inside a cell as \", "/" as \/,
// non-ASCII as \u00e1, NULL as a bare null) or as MySQL's SELECT ... INTO OUTFILE does (\" and \\, NULL as \N). A
// strict reader takes the \" inside a cell for its end and sees more columns than the header has. Such an input is
// told from its first rows (detectBackslashEscapes, when the delimiter is sniffed) and then read row by row here:
// none of these writers leaves a line break inside a cell (it is written \n), so a row is a line.
import { parse } from 'csv-parse/sync';
import { CsvRows } from './csv-rows.js';
import { createTextDecoding } from './decode-text.js';
import { BATCH_SIZE, type ReaderContext } from './reader-context.js';
import type { RawItem } from './types.js';

/** A row's cells read with backslash escapes, and whether one of its quoted cells held an escape. */
interface EscapedRow {
  cells: string[];
  escaped: boolean;
}

// What a backslash and the character after it stand for (JSON's escapes; any other character stands for itself).
const ESCAPES: Record<string, string> = { b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' };
// A bare cell that is the writer's NULL: JSON's null, MySQL's \N.
const NULLS = new Set(['null', 'NULL', '\\N']);

/**
 * The cells of one line read with backslash escapes (a quoted cell ends at a quote that no backslash escapes; a bare
 * null is empty); undefined when the line is not written so (a quote left open, text after a closing quote, a quote
 * inside a bare cell).
 */
export function splitEscapedRow(line: string, delimiter: string): EscapedRow | undefined {
  const cells: string[] = [];
  let escaped = false;
  const n = line.length;
  let i = 0;
  for (;;) {
    if (line.charCodeAt(i) === 0x22) {
      let value = '';
      let j = i + 1;
      for (;;) {
        if (j >= n) return undefined; // a quote left open
        const c = line[j]!;
        if (c === '"') break;
        if (c !== '\\') {
          value += c;
          j++;
          continue;
        }
        const e = line[j + 1];
        if (e === undefined) return undefined;
        escaped = true;
        if (e === 'u') {
          const hex = line.slice(j + 2, j + 6);
          if (!/^[0-9a-fA-F]{4}$/.test(hex)) return undefined;
          value += String.fromCharCode(parseInt(hex, 16));
          j += 6;
        } else {
          value += ESCAPES[e] ?? e;
          j += 2;
        }
      }
      cells.push(value);
      i = j + 1;
      if (i >= n) break;
      if (!line.startsWith(delimiter, i)) return undefined; // text after a closing quote
      i += delimiter.length;
      continue;
    }
    let end = line.indexOf(delimiter, i);
    if (end < 0) end = n;
    const bare = line.slice(i, end);
    if (bare.includes('"')) return undefined;
    cells.push(NULLS.has(bare.trim()) ? '' : bare);
    if (end >= n) break;
    i = end + delimiter.length;
  }
  return { cells, escaped };
}

const SAMPLE_ROWS = 200;

/**
 * Whether the start of a CSV text (`complete`: the whole input) is written with backslash escapes: some quoted cell
 * holds one (\" \\ \/ \uXXXX ...), and the header and nine rows in ten read that way have the header's columns (a
 * damaged row among them is that row's reject, not the input's reading). A text that has no escape reads alike either
 * way, and is left to the RFC 4180 reader.
 */
export function detectBackslashEscapes(text: string, delimiter: string, complete: boolean): boolean {
  if (!text.includes('\\')) return false;
  const lines = text.split('\n');
  if (!complete) lines.pop(); // the last line may be cut
  let columns = -1;
  let escaped = false;
  let good = 0;
  let bad = 0;
  for (const raw of lines.slice(0, SAMPLE_ROWS)) {
    const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    if (line.trim() === '') continue;
    const row = splitEscapedRow(line, delimiter);
    if (columns < 0) {
      if (!row) return false;
      columns = row.cells.length;
      continue;
    }
    let count = row ? row.cells.length : -1;
    // Trailing empty cells beyond the header are what spreadsheets write (as read-csv.ts allows).
    while (row && count > columns && row.cells[count - 1] === '') count--;
    if (count !== columns) bad++;
    else {
      good++;
      escaped ||= row!.escaped;
    }
  }
  return escaped && good > 0 && bad * 10 <= good + bad;
}

/**
 * Reads a CSV input written with backslash escapes (CsvSettings.escapes), a row a line, as readCsv yields an RFC 4180
 * one: records keyed by header, rejects for rows that are not so written (a row that reads whole by RFC 4180 is
 * taken as it reads), lines counted as the input has them.
 */
export async function* readCsvEscaped(
  chunks: AsyncIterable<Buffer>,
  ctx: ReaderContext,
  settings: { encoding: string; delimiter: string },
): AsyncGenerator<RawItem[]> {
  const decoding = createTextDecoding(settings.encoding);
  const rows = new CsvRows(ctx);
  const offset = ctx.lineOffset ?? 0;
  let carry = '';
  const take = (line: string): void => {
    if (line.endsWith('\r')) line = line.slice(0, -1);
    const row = splitEscapedRow(line, settings.delimiter);
    if (row) return rows.add(row.cells, 1);
    const cells = rfcCells(line, settings.delimiter);
    if (cells && rows.headers !== null && cells.length === rows.headers.length) return rows.add(cells, 1);
    const at = rows.lastLine + 1 + offset;
    rows.add([''], 1); // the line is counted
    rows.batch.push({
      kind: 'reject',
      source: ctx.source,
      line: at,
      reason: 'not a row of this input\'s cells written with backslash escapes (\\" for a quote), nor an RFC 4180 row',
    });
  };
  try {
    for await (const chunk of chunks) {
      const parts = (carry + decoding.write(chunk)).split('\n');
      carry = parts.pop()!; // a line not yet whole
      for (const line of parts) take(line);
      if (rows.batch.length >= BATCH_SIZE) yield rows.batch.splice(0);
    }
    const parts = (carry + decoding.end()).split('\n');
    if (parts[parts.length - 1] === '') parts.pop(); // the input's last line end
    for (const line of parts) take(line);
  } finally {
    if (decoding.recoded) ctx.recoded = { lines: decoding.recoded.lines, first: decoding.recoded.first + offset };
  }
  if (rows.batch.length > 0) yield rows.batch;
}

// A line's cells as RFC 4180 reads them, or undefined when it does not.
function rfcCells(line: string, delimiter: string): string[] | undefined {
  try {
    const rows: string[][] = parse(line, { delimiter, relax_column_count: true });
    return rows.length === 1 ? rows[0] : undefined;
  } catch {
    return undefined;
  }
}
