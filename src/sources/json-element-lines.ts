// JSON.parse gives no positions, but a record's `line` must point at where it starts in the file so that a
// person can find it. One linear pass over the (already valid) text finds where each top-level element begins.

/** Returns the 1-based line on which each element of the top-level array in `text` starts; `text` must be valid JSON. */
export function jsonArrayElementLines(text: string): number[] {
  const lines: number[] = [];
  let line = 1;
  let depth = 0;
  let inString = false;
  let expectElement = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x0a) {
      line++;
      continue;
    }
    if (inString) {
      if (c === 0x5c)
        i++; // skip the escaped character (never a newline in valid JSON)
      else if (c === 0x22) inString = false;
      continue;
    }
    if (c === 0x20 || c === 0x09 || c === 0x0d) continue;
    if (expectElement && c !== 0x5d /* ] of an empty array */) {
      lines.push(line);
      expectElement = false;
    }
    if (c === 0x22) inString = true;
    else if (c === 0x5b /* [ */ || c === 0x7b /* { */) {
      depth++;
      if (depth === 1 && c === 0x5b) expectElement = true;
    } else if (c === 0x5d || c === 0x7d) depth--;
    else if (c === 0x2c /* , */ && depth === 1) expectElement = true;
  }
  return lines;
}
