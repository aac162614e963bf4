// Turns a JSON.parse failure into a short reason and an offset. V8's messages sometimes give a position and
// sometimes quote a slice of the input instead: the slice may hold personal data (an email), so it is dropped
// and the offset is found by scanning the text ourselves.

/** A JSON syntax error: a reason without input excerpts, and the 0-based character offset where it was found. */
export interface JsonErrorInfo {
  message: string;
  offset: number;
}

/** Describes why `text` failed JSON.parse with `err`, without quoting the input. */
export function describeJsonError(err: unknown, text: string): JsonErrorInfo {
  const raw = err instanceof Error ? err.message : String(err);
  const pos = / in JSON at position (\d+)/.exec(raw);
  if (pos) return { message: raw.slice(0, pos.index), offset: Number(pos[1]) };
  if (raw.startsWith('Unexpected end of JSON input'))
    return { message: 'unexpected end of input', offset: text.length };
  let offset: number;
  try {
    offset = findJsonErrorOffset(text);
  } catch {
    offset = 0; // absurdly deep nesting overflowed the scanner: report the start rather than crash
  }
  const token = /^Unexpected token '(.)'/.exec(raw) ?? /^Unexpected token (.)/.exec(raw);
  const message = token ? `Unexpected token '${token[1]}'` : (raw.split(',')[0] ?? raw);
  return { message, offset };
}

/** Returns the 1-based line and column of a character offset in `text`. */
export function lineAndColumn(text: string, offset: number): { line: number; column: number } {
  let line = 1;
  let lineStart = 0;
  const end = Math.min(offset, text.length);
  for (let i = text.indexOf('\n'); i !== -1 && i < end; i = text.indexOf('\n', i + 1)) {
    line++;
    lineStart = i + 1;
  }
  return { line, column: end - lineStart + 1 };
}

/**
 * Finds the offset of the first syntax error in a JSON text that JSON.parse rejected; only called on
 * failure, so it favours being small over being fast. Iterative, so deeply nested input cannot overflow.
 */
export function findJsonErrorOffset(text: string): number {
  let i = 0;
  const n = text.length;
  const stack: ('{' | '[')[] = [];
  const ws = () => {
    while (i < n && (text[i] === ' ' || text[i] === '\t' || text[i] === '\n' || text[i] === '\r')) i++;
  };
  const str = (): boolean => {
    if (text[i] !== '"') return false;
    i++;
    while (i < n) {
      const c = text.charCodeAt(i);
      if (c === 0x22) {
        i++;
        return true;
      }
      if (c < 0x20) return false;
      if (c === 0x5c) {
        const e = text[i + 1];
        if (e === 'u') {
          if (!/^[0-9a-fA-F]{4}$/.test(text.slice(i + 2, i + 6))) return false;
          i += 6;
        } else if (e !== undefined && '"\\/bfnrt'.includes(e)) i += 2;
        else {
          i++;
          return false;
        }
      } else i++;
    }
    return false;
  };
  const scalar = (): boolean => {
    const m = /^(?:-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?|true|false|null)/.exec(text.slice(i, i + 400));
    if (!m || m[0].length === 0) return false;
    i += m[0].length;
    return true;
  };
  // Expect a value; containers push onto the stack and the loop below handles their members.
  const value = (): boolean => {
    ws();
    const c = text[i];
    if (c === '{' || c === '[') {
      stack.push(c);
      i++;
      ws();
      if (text[i] === (c === '{' ? '}' : ']')) {
        stack.pop();
        i++;
        return true;
      }
      if (c === '{') return member();
      return value();
    }
    if (c === '"') return str();
    return scalar();
  };
  const member = (): boolean => {
    ws();
    if (!str()) return false;
    ws();
    if (text[i] !== ':') return false;
    i++;
    return value();
  };
  if (!value()) return i;
  for (;;) {
    ws();
    const top = stack[stack.length - 1];
    if (top === undefined) return i < n ? i : n; // trailing garbage, or the text was valid after all
    const c = text[i];
    if (c === ',') {
      i++;
      if (!(top === '{' ? member() : value())) return i;
    } else if ((top === '{' && c === '}') || (top === '[' && c === ']')) {
      stack.pop();
      i++;
    } else return i;
  }
}
