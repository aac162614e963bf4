// The text of a log line, and the body a handler logged at its end: `lead received {"email": ...}` (JSON after the
// message's words), `{\"email\":...}` (JSON whose quotes a logger escaped), `webhook email=ana%40x.com&name=Ana`
// (a form as posted), `{'email': 'ana@x.com'}` (a Python dict as logging prints one). A message's text may be a
// string, or a list of byte values (the systemd journal writes a field that is not printable text so), and may hold
// a terminal's colour codes.
import { isUtf8 } from 'node:buffer';
import { decodeUtf8Line } from './decode-text.js';
import { formBody } from './select-path.js';

/**
 * Keys of a document's top-level object that hold a log's entries (`aws logs filter-log-events`: events; a
 * CloudWatch Logs subscription: logEvents; Cloud Logging's API: entries; Azure Monitor's and Firehose's: records; an
 * AWS event's: Records; a Workers trace's: logs): the object wraps them, and each of its objects is a record
 * (read-json.ts).
 */
export const LOG_LISTS: ReadonlySet<string> = new Set(['events', 'entries', 'logEvents', 'records', 'Records', 'logs']);

/** A body found in a line of text: the value, and how it was written there. */
export interface TextBody {
  body: Record<string, unknown> | unknown[];
  how: 'JSON' | 'escaped JSON' | 'form' | 'Python dict';
  /** Percent-encoded bytes of a form that are not UTF-8 were read as U+FFFD. */
  replaced?: boolean;
}

// Bodies are looked for at this many places of a line at most: a long line of braces costs a bounded amount.
const MAX_TRIES = 8;

/** A message's text: a string, or a list of byte values (read as UTF-8, else Windows-1252); undefined otherwise. */
export function messageText(v: unknown): string | undefined {
  if (typeof v === 'string') return v;
  if (!Array.isArray(v) || v.length === 0 || v.length > 1 << 20) return undefined;
  for (const b of v) if (typeof b !== 'number' || !Number.isInteger(b) || b < 0 || b > 255) return undefined;
  const bytes = Buffer.from(v as number[]);
  return isUtf8(bytes) ? bytes.toString('utf8') : decodeUtf8Line(bytes).text;
}

/**
 * JSON text that a web server escaped as it escapes any log field (nginx's `log_format` without `escape=json`, Apache):
 * each `\xHH` a byte, a quote written `\x22`, text past ASCII byte by byte. Those bytes (read as UTF-8, else
 * Windows-1252) are written back as JSON escapes; undefined when the text has none, and the JSON it gives is the
 * caller's to parse.
 */
export function jsonOfByteEscapes(text: string): string | undefined {
  if (!text.includes('\\x')) return undefined;
  let out = '';
  let found = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (c !== '\\') {
      out += c;
      continue;
    }
    if (text[i + 1] !== 'x' || !HEX2.test(text.slice(i + 2, i + 4))) {
      // Another escape (\\, \", \n): kept whole, so that the backslash of `\\x22` escapes nothing after it.
      out += c + (text[i + 1] ?? '');
      i++;
      continue;
    }
    const bytes: number[] = [];
    while (text[i] === '\\' && text[i + 1] === 'x' && HEX2.test(text.slice(i + 2, i + 4))) {
      bytes.push(parseInt(text.slice(i + 2, i + 4), 16));
      i += 4;
    }
    i--;
    const buf = Buffer.from(bytes);
    out += JSON.stringify(isUtf8(buf) ? buf.toString('utf8') : decodeUtf8Line(buf).text).slice(1, -1);
    found = true;
  }
  return found ? out : undefined;
}

const HEX2 = /^[0-9a-fA-F]{2}$/;

// ECMA-48 control sequences (colours: ESC [ 32 m) and other escapes a terminal reads.
// eslint-disable-next-line no-control-regex -- the escape character is exactly what it looks for
const ANSI = /\u001b(?:\[[0-9;?]*[ -/]*[@-~]|[@-Z\\-_])/g;

/** The text without a terminal's control sequences (colours), trimmed. */
export function plainText(text: string): string {
  return (text.includes('\u001b') ? text.replace(ANSI, '') : text).trim();
}

/** The body a line of text holds (see the file's head), or undefined when it holds none. */
export function bodyInText(raw: string): TextBody | undefined {
  const text = plainText(raw);
  if (text.length < 2) return undefined;
  let tries = 0;
  for (let at = firstOpen(text, 0); at !== -1 && tries < MAX_TRIES; at = firstOpen(text, at + 1), tries++) {
    const found = documentAt(text, at);
    if (found) return found;
  }
  // A form as it was posted: the whole text, or its last word (`webhook received email=a%40b.com&name=Ana`).
  const last = text.slice(text.search(/\S+$/));
  for (const t of last === text ? [text] : [text, last]) {
    const form = postedForm(t) ? formBody(t) : undefined;
    if (form && Object.keys(form.value).length > 0)
      return form.replaced
        ? { body: form.value, how: 'form' as const, replaced: true }
        : { body: form.value, how: 'form' };
  }
  return undefined;
}

// Words of a line that are a posted form, not a setting (`retry=3`) or a path with a query (`/leads?a=1&b=2`): pairs
// joined by &, or one pair that names a person's field, their names made of what form fields are named with.
const FORM_KEY = /^[\w.\-[\]%+]+$/;
const PERSON_KEY = /^(?:e-?mail|phone|tel|telefone|name|nome)\b/i;

function postedForm(t: string): boolean {
  const pairs = t.split('&').filter(Boolean);
  if (pairs.length === 0) return false;
  for (const p of pairs) {
    const eq = p.indexOf('=');
    if (eq <= 0 || !FORM_KEY.test(p.slice(0, eq))) return false;
  }
  return pairs.length > 1 || PERSON_KEY.test(pairs[0]!);
}

function firstOpen(text: string, from: number): number {
  const a = text.indexOf('{', from);
  const b = text.indexOf('[', from);
  return a === -1 ? b : b === -1 ? a : Math.min(a, b);
}

// A document starting at `at`: JSON up to its matching bracket (words may follow it: a logger's context, `[]`), the
// same with its quotes escaped, or a Python literal. An empty one, or a list of no object, is none.
function documentAt(text: string, at: number): TextBody | undefined {
  const end = matchingClose(text, at);
  if (end === -1) return undefined;
  const slice = text.slice(at, end + 1);
  const json = parse(slice);
  if (json !== undefined) return useful(json) ? { body: json, how: 'JSON' } : undefined;
  // Escaped once more than JSON needs: {\"email\":\"ana@x.com\"}.
  if (slice.includes('\\"')) {
    const unescaped = stringOf(`"${slice}"`);
    if (unescaped !== undefined) {
      const inner = parse(unescaped);
      if (inner !== undefined && useful(inner)) return { body: inner, how: 'escaped JSON' };
    }
  }
  if (slice.includes("'")) {
    const py = pythonLiteral(slice);
    if (py !== undefined && useful(py)) return { body: py, how: 'Python dict' };
  }
  return undefined;
}

function useful(v: object): boolean {
  if (Array.isArray(v)) return v.some((x) => x !== null && typeof x === 'object' && !Array.isArray(x));
  return Object.keys(v).length > 0;
}

function stringOf(t: string): string | undefined {
  try {
    const v: unknown = JSON.parse(t);
    return typeof v === 'string' ? v : undefined;
  } catch {
    return undefined;
  }
}

function parse(t: string): Record<string, unknown> | unknown[] | undefined {
  try {
    const v: unknown = JSON.parse(t);
    return v !== null && typeof v === 'object' ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

// Where the bracket opened at `at` closes, strings in double or single quotes followed; -1 when it does not.
function matchingClose(text: string, at: number): number {
  let depth = 0;
  let quote = '';
  for (let i = at; i < text.length; i++) {
    const c = text[i]!;
    if (quote) {
      if (c === '\\') i++;
      else if (c === quote) quote = '';
      continue;
    }
    // Outside a string, a backslash escapes a quote of JSON that was escaped once more (\").
    if (c === '\\') i++;
    else if (c === '"' || (c === "'" && /[\s{[:,]/.test(text[i - 1] ?? ' '))) quote = c;
    else if (c === '{' || c === '[') depth++;
    else if (c === '}' || c === ']') {
      depth--;
      if (depth === 0) return i;
      if (depth < 0) return -1;
    }
  }
  return -1;
}

/**
 * A Python literal of dicts, lists, tuples, strings, numbers, True, False and None (what `str(dict)` prints) as the
 * value JSON would give; undefined when the text is not one.
 */
export function pythonLiteral(text: string): Record<string, unknown> | unknown[] | undefined {
  let i = 0;
  const space = () => {
    while (i < text.length && /\s/.test(text[i]!)) i++;
  };
  const fail = (): never => {
    throw new SyntaxError('not a Python literal');
  };
  const str = (): string => {
    const q = text[i++]!;
    let out = '';
    while (i < text.length && text[i] !== q) {
      const c = text[i++]!;
      if (c !== '\\') {
        out += c;
        continue;
      }
      const e = text[i++];
      if (e === 'n') out += '\n';
      else if (e === 't') out += '\t';
      else if (e === 'r') out += '\r';
      else if (e === 'x' || e === 'u') {
        const n = e === 'x' ? 2 : 4;
        const hex = text.slice(i, i + n);
        if (!/^[0-9a-fA-F]+$/.test(hex) || hex.length !== n) fail();
        out += String.fromCharCode(parseInt(hex, 16));
        i += n;
      } else if (e === undefined) fail();
      else out += e;
    }
    if (text[i++] !== q) fail();
    return out;
  };
  const value = (depth: number): unknown => {
    if (depth > 64) fail();
    space();
    const c = text[i];
    if (c === "'" || c === '"') return str();
    if (c === '{' || c === '[' || c === '(') {
      const close = c === '{' ? '}' : c === '[' ? ']' : ')';
      i++;
      const obj: Record<string, unknown> = {};
      const list: unknown[] = [];
      space();
      while (text[i] !== close) {
        if (c === '{') {
          const k = value(depth + 1);
          if (typeof k !== 'string' && typeof k !== 'number') fail();
          space();
          if (text[i++] !== ':') fail();
          const v = value(depth + 1);
          if (!(String(k) in obj)) obj[String(k)] = v;
        } else list.push(value(depth + 1));
        space();
        if (text[i] === ',') {
          i++;
          space();
        } else if (text[i] !== close) fail();
      }
      i++;
      return c === '{' ? obj : list;
    }
    const word = /^(?:True|False|None|-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)/.exec(text.slice(i, i + 40))?.[0];
    if (!word) fail();
    i += word!.length;
    return word === 'True' ? true : word === 'False' ? false : word === 'None' ? null : Number(word);
  };
  try {
    const v = value(0);
    space();
    if (i !== text.length || v === null || typeof v !== 'object') return undefined;
    return v as Record<string, unknown> | unknown[];
  } catch {
    return undefined;
  }
}
