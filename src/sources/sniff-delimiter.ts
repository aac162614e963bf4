// Guesses a CSV delimiter from the first lines: exports from Excel in Brazil or Germany use `;`, some tools use
// tab or `|`. The right delimiter appears the same number of times, outside quotes, on every line.

/** Delimiters tried, in order of preference when the evidence is equal. */
export const DELIMITER_CANDIDATES = [',', ';', '\t', '|'] as const;

const SAMPLE_LINES = 10;

/**
 * Picks the delimiter that occurs outside quotes consistently across the first lines (header + a few rows),
 * preferring the one with more columns; falls back to the most frequent one on the header line, then `,`.
 * `complete` says whether `text` is the whole input (else its last, possibly cut, line is ignored).
 */
export function sniffDelimiter(text: string, complete: boolean): string {
  const lines = firstLogicalLines(text, complete);
  if (lines.length === 0) return ',';
  let best: { delimiter: string; agree: number; columns: number } | null = null;
  for (const d of DELIMITER_CANDIDATES) {
    const counts = lines.map((l) => countOutsideQuotes(l, d));
    const header = counts[0] ?? 0;
    if (header === 0) continue;
    const agree = counts.filter((c) => c === header).length / counts.length;
    if (best === null || agree > best.agree || (agree === best.agree && header > best.columns)) {
      best = { delimiter: d, agree, columns: header };
    }
  }
  return best?.delimiter ?? ',';
}

/** Splits the start of a CSV text into records, keeping newlines inside quoted fields; skips blank lines. */
function firstLogicalLines(text: string, complete: boolean): string[] {
  const out: string[] = [];
  let inQuotes = false;
  let start = 0;
  for (let i = 0; i < text.length && out.length < SAMPLE_LINES; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22)
      inQuotes = !inQuotes; // a doubled quote toggles twice: still correct
    else if (c === 0x0a && !inQuotes) {
      pushLine(out, text.slice(start, i));
      start = i + 1;
    }
  }
  if (out.length < SAMPLE_LINES && start < text.length && (complete || out.length === 0))
    pushLine(out, text.slice(start));
  return out;
}

function pushLine(out: string[], line: string): void {
  if (line.trim() !== '') out.push(line);
}

function countOutsideQuotes(line: string, delimiter: string): number {
  let n = 0;
  let inQuotes = false;
  const d = delimiter.charCodeAt(0);
  for (let i = 0; i < line.length; i++) {
    const c = line.charCodeAt(i);
    if (c === 0x22) inQuotes = !inQuotes;
    else if (c === d && !inQuotes) n++;
  }
  return n;
}
