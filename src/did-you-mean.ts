// "Did you mean ...?": the known name nearest to a misspelt one, for messages about config keys, placeholders,
// sinks and presets.

/** The known name nearest to a misspelt one (case aside, or a few edits away), if one is near enough. */
export function closest(word: string, names: readonly string[]): string | undefined {
  const lower = word.toLowerCase();
  const same = names.find((n) => n.toLowerCase() === lower);
  if (same) return same;
  let best: string | undefined;
  let bestDistance = Math.max(1, Math.floor(word.length / 3)) + 1;
  for (const n of names) {
    const d = editDistance(lower, n.toLowerCase());
    if (d < bestDistance) [best, bestDistance] = [n, d];
  }
  return best;
}

/** " (did you mean 'x'?)" for a misspelt name when a known one is near, else '': appended to a refusal. */
export function didYouMean(word: string, names: readonly string[]): string {
  const near = closest(word, names);
  return near !== undefined && near !== word ? ` (did you mean '${near}'?)` : '';
}

// Edits (insert, delete, replace, swap of two neighbours) that turn a into b: optimal string alignment.
function editDistance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) => [i, ...new Array<number>(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) d[0]![j] = j;
  for (let i = 1; i <= a.length; i++)
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let v = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) v = Math.min(v, d[i - 2]![j - 2]! + 1);
      d[i]![j] = v;
    }
  return d[a.length]![b.length]!;
}
