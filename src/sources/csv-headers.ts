// Header cells of real exports: stray spaces, empty cells, and the same name twice ("Phone", "Phone").
// Names keep their text and case (mapping/ matches them case-insensitively); each must be unique so
// no value is silently overwritten in the row object.
import iconv from 'iconv-lite';
import { parse } from 'csv-parse/sync';
import type { InputInfo } from './types.js';

// The header is the first row: 64 KiB holds it (a header with quoted line breaks too), and parsing no more keeps
// the look at it off the time of a generic export.
const HEADER_BYTES = 64 * 1024;

/** A CSV input's first row, its cells as written, from the input's first bytes; undefined when it has none. */
export function headerCells(head: Buffer, info: InputInfo): string[] | undefined {
  let text = iconv.decode(head.subarray(0, HEADER_BYTES), info.encoding ?? 'utf-8');
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  try {
    const rows: unknown = parse(text, {
      delimiter: info.delimiter ?? ',',
      relax_quotes: true,
      relax_column_count: true,
      skip_empty_lines: true,
      to: 1,
    });
    return (rows as string[][])[0];
  } catch {
    return undefined;
  }
}

/** Trims header cells, names empty ones `column_N` (1-based position) and suffixes repeats `_2`, `_3`, ... */
export function normalizeHeaders(cells: string[]): string[] {
  const trimmed = cells.map((c, i) => {
    const t = c.trim();
    return t === '' ? `column_${i + 1}` : t;
  });
  const taken = new Set<string>();
  const out: string[] = [];
  for (const name of trimmed) {
    let candidate = name;
    // Case-insensitive, because mapping/ compares names that way and "Email"/"email" would collide there.
    for (let n = 2; taken.has(candidate.toLowerCase()); n++) candidate = `${name}_${n}`;
    taken.add(candidate.toLowerCase());
    out.push(candidate);
  }
  return out;
}

/**
 * What a person should know of a header that names a column twice (case aside): which column is read under the
 * name, and what the others are called. Undefined when every name is unique. Mapping reads the first; the others'
 * values reach nothing unless a config maps them by their new names.
 */
export function repeatedHeaderNote(cells: string[]): string | undefined {
  const names = normalizeHeaders(cells);
  const first = new Map<string, number>();
  const repeats = new Map<number, number[]>();
  cells.forEach((c, i) => {
    const key = c.trim().toLowerCase();
    if (key === '') return;
    const at = first.get(key);
    if (at === undefined) first.set(key, i);
    else repeats.set(at, [...(repeats.get(at) ?? []), i]);
  });
  if (repeats.size === 0) return undefined;
  const parts = [...repeats].map(
    ([at, others]) =>
      `'${names[at]}' names columns ${[at, ...others].map((i) => i + 1).join(', ')}: column ${at + 1} is read as ${names[at]}, ${others.map((i) => `column ${i + 1} as ${names[i]}`).join(', ')}`,
  );
  return `the header repeats a name: ${parts.join('; ')}`;
}
