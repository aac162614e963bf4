// Header cells of real exports: stray spaces, empty cells, and the same name twice ("Phone", "Phone").
// Names keep their text and case (mapping/ matches them case-insensitively); each must be unique so
// no value is silently overwritten in the row object.

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
