// Parsed CSV rows to records: the header, blank rows, column counts, line numbers and --select, for every CSV reader
// (read-csv.ts, csv-escapes.ts, the engine's fast path).
import { normalizeHeaders } from './csv-headers.js';
import type { ReaderContext } from './reader-context.js';
import type { RawItem } from './types.js';

/** Parsed rows to records and rejects: the header, blank rows, column counts, line numbers, --select. */
export class CsvRows {
  readonly batch: RawItem[] = [];
  /** Last line consumed by a row (blank rows included), as the parser counts it. */
  lastLine = 0;
  /** The header row's names, once it has been read. */
  headers: string[] | null = null;
  private safeHeaders = true; // false when a header is "__proto__": then rows are built the slow, safe way
  private readonly offset: number;

  constructor(private readonly ctx: ReaderContext) {
    this.offset = ctx.lineOffset ?? 0;
  }

  /**
   * One parsed row (its cells); a record or reject goes to `batch`. `lines`: the lines the row took, where its cells'
   * line breaks do not tell (an escaped \n in a row of backslash escapes is no line of the input).
   */
  add(cells: string[], lines?: number): void {
    const { source, selector } = this.ctx;
    const startLine = this.lastLine + 1;
    this.lastLine = startLine + (lines === undefined ? countNewlines(cells) : lines - 1);
    this.ctx.progress.line = this.lastLine + this.offset;
    if (isBlank(cells)) return; // blank line, or a row of bare delimiters (Excel leaves these)
    if (this.headers === null) {
      this.headers = normalizeHeaders(cells);
      this.safeHeaders = !this.headers.includes('__proto__');
      return;
    }
    const line = startLine + this.offset;
    const item = toItem(cells, this.headers, this.safeHeaders, line, source);
    if (item.kind === 'record' && selector !== null) {
      const s = selector.apply(item.fields);
      this.batch.push(
        !s.ok
          ? { kind: 'reject', source, line, reason: s.reason }
          : s.replaced
            ? { ...item, fields: s.value, replaced: true }
            : { ...item, fields: s.value },
      );
    } else this.batch.push(item);
  }
}

function toItem(cells: string[], headers: string[], safeHeaders: boolean, line: number, source: string): RawItem {
  let n = cells.length;
  // Trailing empty cells beyond the header (`a;b;c;;`) are what spreadsheets write, not a broken row.
  while (n > headers.length && cells[n - 1] === '') n--;
  if (n !== headers.length) {
    // The cells go with it: a source's definition may know such a row (a report's footer line) as not a record.
    const reject: RawItem = {
      kind: 'reject',
      source,
      line,
      reason: `expected ${headers.length} columns, found ${cells.length}`,
    };
    if (n < headers.length) reject.cells = cells;
    return reject;
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

function countNewlines(cells: string[]): number {
  let n = 0;
  for (const c of cells) for (let i = c.indexOf('\n'); i !== -1; i = c.indexOf('\n', i + 1)) n++;
  return n;
}
