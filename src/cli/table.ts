// Plain-text tables for the ledger listings: left-aligned columns, long cells cut with an ellipsis so a row stays
// one line, no borders (easy to read, and to grep or cut).
import { printable } from '../report/printable.js';

/** A column: header, width cap, and right alignment for numbers. */
export interface Column {
  header: string;
  max?: number;
  right?: boolean;
}

/** Renders rows under headers, two spaces between columns; no trailing spaces. */
export function formatTable(columns: Column[], rows: string[][]): string {
  // Cells hold data (keys, emails, errors): control characters are shown escaped (report/printable.ts).
  const cut = (v: string, max?: number) => printable(v.replace(/\s+/g, ' '), max ?? Number.MAX_SAFE_INTEGER);
  const cells = rows.map((r) => columns.map((c, i) => cut(r[i] ?? '', c.max)));
  const widths = columns.map((c, i) => Math.max(c.header.length, ...cells.map((r) => r[i]!.length)));
  const line = (r: string[]) =>
    r
      .map((v, i) => (columns[i]!.right ? v.padStart(widths[i]!) : v.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [line(columns.map((c) => c.header)), ...cells.map(line)].join('\n');
}
