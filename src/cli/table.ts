// Plain-text tables for the ledger listings: left-aligned columns, long cells cut with an ellipsis so a row stays
// one line, no borders (easy to read, and to grep or cut).

/** A column: header, width cap, and right alignment for numbers. */
export interface Column {
  header: string;
  max?: number;
  right?: boolean;
}

/** Renders rows under headers, two spaces between columns; no trailing spaces. */
export function formatTable(columns: Column[], rows: string[][]): string {
  const cut = (v: string, max?: number) => {
    const one = v.replace(/\s+/g, ' ');
    return max && one.length > max ? one.slice(0, max - 1) + '…' : one;
  };
  const cells = rows.map((r) => columns.map((c, i) => cut(r[i] ?? '', c.max)));
  const widths = columns.map((c, i) => Math.max(c.header.length, ...cells.map((r) => r[i]!.length)));
  const line = (r: string[]) =>
    r
      .map((v, i) => (columns[i]!.right ? v.padStart(widths[i]!) : v.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [line(columns.map((c) => c.header)), ...cells.map(line)].join('\n');
}
