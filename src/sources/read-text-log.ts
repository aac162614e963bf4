// A log of text lines (format `log`): a web server's access log whose last field is the request body (nginx's
// `log_format ... "$request_body"`, Apache's mod_dumpio-style formats), syslog, an application's text log. Each
// line is one record: an access log line as the fields nginx names (`remote_addr`, `time_local`, `request`,
// `status`, `request_body`: the body unescaped as nginx and Apache escape it, `\x22` for a quote and bytes past
// ASCII one by one), a logfmt line as its pairs, a line that is JSON as JSON, any other line as its `message`. Which
// of them hold an event is the recognizer's to say (presets/logs.ts): a body JSON or a form, or none.
import { isUtf8 } from 'node:buffer';
import { decodeUtf8Line, mergeRecoded } from './decode-text.js';
import { lineEnd, lineItem, lineStart, MAX_LINE_BYTES, tooLongLine } from './read-jsonl.js';
import { BATCH_SIZE, type ReaderContext } from './reader-context.js';
import { formBody } from './select-path.js';
import type { RawItem } from './types.js';

const LF = 0x0a;

/** Reads a text log, one record a line (see the file's head); blank lines are none. */
export async function* readTextLog(chunks: AsyncIterable<Buffer>, ctx: ReaderContext): AsyncGenerator<RawItem[]> {
  const { source, progress } = ctx;
  let batch: RawItem[] = [];
  let line = 0;
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  let tooLong = false;
  const handle = (buf: Buffer, start: number, end: number): void => {
    line++;
    start = lineStart(buf, start, end, line === 1);
    end = lineEnd(buf, start, end);
    if (end < 0) return;
    const item = textLineItem(buf, start, end, line, ctx);
    if (Array.isArray(item)) for (const x of item) batch.push(x);
    else batch.push(item);
  };
  try {
    for await (const chunk of chunks) {
      if (chunk.length === 0) {
        progress.line = line;
        if (batch.length > 0) yield batch;
        batch = [];
        yield [];
        continue;
      }
      let start = 0;
      for (let nl = chunk.indexOf(LF); nl !== -1; nl = chunk.indexOf(LF, start)) {
        if (tooLong) {
          line++;
          batch.push(tooLongLine(source, line));
          tooLong = false;
        } else if (pending.length > 0) {
          pending.push(chunk.subarray(0, nl));
          const joined = Buffer.concat(pending);
          handle(joined, 0, joined.length);
        } else handle(chunk, start, nl);
        pending = [];
        pendingBytes = 0;
        start = nl + 1;
        if (batch.length >= BATCH_SIZE) {
          progress.line = line;
          yield batch;
          batch = [];
        }
      }
      if (start < chunk.length && !tooLong) {
        pendingBytes += chunk.length - start;
        if (pendingBytes > MAX_LINE_BYTES) {
          tooLong = true;
          pending = [];
        } else pending.push(Buffer.from(chunk.subarray(start)));
      }
      progress.line = line;
    }
  } catch (err) {
    progress.line = line;
    if (batch.length > 0) yield batch;
    throw err;
  }
  if (tooLong) batch.push(tooLongLine(source, ++line));
  else if (pending.length > 0) {
    const joined = Buffer.concat(pending);
    handle(joined, 0, joined.length);
  }
  progress.line = line;
  if (batch.length > 0) yield batch;
}

// One line's record: JSON where it is JSON, else the fields of an access log line, else its text as the message.
function textLineItem(buf: Buffer, start: number, end: number, line: number, ctx: ReaderContext): RawItem | RawItem[] {
  const { source, selector } = ctx;
  const b0 = buf[start];
  if (b0 === 0x7b /* { */ || b0 === 0x5b /* [ */) {
    const item = lineItem(buf, start, end, line, source, selector, (l) => {
      ctx.recoded = mergeRecoded(ctx.recoded, { lines: 1, first: l });
    });
    if (Array.isArray(item) || item.kind !== 'reject' || item.reason.startsWith('not a JSON object')) return item;
  }
  let text = buf.toString('utf8', start, end);
  if (text.includes('\ufffd') && !isUtf8(buf.subarray(start, end))) {
    text = decodeUtf8Line(buf.subarray(start, end)).text;
    ctx.recoded = mergeRecoded(ctx.recoded, { lines: 1, first: line });
  }
  const fields = accessLogFields(text) ?? (LOGFMT.test(text) ? logfmtFields(text) : undefined);
  return { kind: 'record', source, line, fields: fields ?? { message: text } };
}

// A line in logfmt (Go's slog and logrus text, Heroku's router): key=value pairs, starting with what a logger writes
// first.
const LOGFMT = /^(?:time|ts|t|level|lvl|at|msg)=\S/;
const PAIR = /\s*([A-Za-z_@][\w.\-/@]*)=("(?:[^"\\]|\\.)*"|[^\s"]*)/y;

/** The fields of a logfmt line (a quoted value unescaped, a key given twice keeps its first value); undefined if none. */
export function logfmtFields(line: string): Record<string, string> | undefined {
  const out: Record<string, string> = {};
  let n = 0;
  let i = 0;
  while (i < line.length) {
    PAIR.lastIndex = i;
    const m = PAIR.exec(line);
    if (!m) {
      if (line.slice(i).trim() === '') break;
      return undefined;
    }
    i = PAIR.lastIndex;
    const raw = m[2]!;
    let value = raw;
    if (raw.startsWith('"'))
      try {
        value = JSON.parse(raw) as string;
      } catch {
        value = raw.slice(1, -1);
      }
    if (!Object.hasOwn(out, m[1]!)) out[m[1]!] = value;
    n++;
  }
  return n >= 2 ? out : undefined;
}

interface Token {
  kind: 'quoted' | 'bracketed' | 'word';
  text: string;
}

// Tokens of a line: "quoted" (a backslash escapes the next character), [bracketed], and words between spaces.
function tokens(line: string): Token[] {
  const out: Token[] = [];
  const n = line.length;
  let i = 0;
  while (i < n) {
    const c = line[i]!;
    if (c === ' ' || c === '\t') {
      i++;
      continue;
    }
    if (c === '"') {
      let j = i + 1;
      while (j < n && line[j] !== '"') j += line[j] === '\\' ? 2 : 1;
      out.push({ kind: 'quoted', text: line.slice(i + 1, Math.min(j, n)) });
      i = j + 1;
    } else if (c === '[') {
      const j = line.indexOf(']', i);
      const to = j === -1 ? n : j;
      out.push({ kind: 'bracketed', text: line.slice(i + 1, to) });
      i = to + 1;
    } else {
      let j = i;
      while (j < n && line[j] !== ' ' && line[j] !== '\t') j++;
      out.push({ kind: 'word', text: line.slice(i, j) });
      i = j;
    }
  }
  return out;
}

const REQUEST = /^([A-Z]{3,10}) (\S+)(?: (HTTP\/\d(?:\.\d)?))?$/;
const STATUS = /^[1-5]\d\d$/;

/**
 * The fields of a web server's access log line (the common or combined log format, with more fields after them),
 * named as nginx's variables; the request body, where one of the quoted fields after the request is JSON or a form
 * (the last such), as `request_body`. Undefined when the line is no access log line (no [time], no quoted request
 * line followed by a status).
 */
export function accessLogFields(line: string): Record<string, string> | undefined {
  const t = tokens(line);
  const time = t.findIndex((x) => x.kind === 'bracketed');
  if (time === -1) return undefined;
  const req = t.findIndex((x, i) => i > time && x.kind === 'quoted' && REQUEST.test(x.text));
  if (req === -1) return undefined;
  const status = t[req + 1];
  if (status?.kind !== 'word' || !STATUS.test(status.text)) return undefined;
  const m = REQUEST.exec(unescapeField(t[req]!.text))!;
  const fields: Record<string, string> = {};
  if (time > 0 && t[0]!.kind === 'word') fields.remote_addr = t[0]!.text;
  fields.time_local = t[time]!.text;
  fields.request = m[0];
  fields.method = m[1]!;
  fields.path = m[2]!;
  fields.status = status.text;
  const after = t.slice(req + 2);
  const quoted = after.filter((x) => x.kind === 'quoted');
  // The combined format's two quoted fields, where the line has them before anything else quoted.
  if (after[0]?.kind === 'word' && quoted.length >= 2 && after[1] === quoted[0]) {
    fields.http_referer = unescapeField(quoted[0]!.text);
    fields.http_user_agent = unescapeField(quoted[1]!.text);
  }
  for (let i = quoted.length - 1; i >= 0; i--) {
    const text = unescapeField(quoted[i]!.text).trim();
    if (isDocument(text)) {
      fields.request_body = text;
      break;
    }
  }
  return fields;
}

// JSON (an object or a list) or a form: what a request body leadledger reads is.
function isDocument(text: string): boolean {
  const c = text[0];
  if (c === '{' || c === '[') {
    try {
      const v: unknown = JSON.parse(text);
      return v !== null && typeof v === 'object';
    } catch {
      return false;
    }
  }
  return /^[\w.\-[\]%+]+=/.test(text) && formBody(text) !== undefined;
}

const ESCAPES: Record<string, string> = { n: '\n', t: '\t', r: '\r', '"': '"', '\\': '\\' };

/**
 * A field of an access log as it was before the server escaped it: `\xHH` a byte (nginx writes a quote as \x22 and
 * every byte past ASCII so; Apache too), `\"`, `\\`, `\n`, `\t`; the bytes read as UTF-8, else Windows-1252.
 */
export function unescapeField(text: string): string {
  if (!text.includes('\\')) return text;
  const parts: Buffer[] = [];
  let plain = '';
  const flush = () => {
    if (plain) parts.push(Buffer.from(plain, 'utf8'));
    plain = '';
  };
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (c !== '\\' || i + 1 >= text.length) {
      plain += c;
      continue;
    }
    const e = text[i + 1]!;
    const hex = e === 'x' ? text.slice(i + 2, i + 4) : '';
    if (hex.length === 2 && /^[0-9a-fA-F]{2}$/.test(hex)) {
      flush();
      parts.push(Buffer.from([parseInt(hex, 16)]));
      i += 3;
    } else if (ESCAPES[e] !== undefined) {
      plain += ESCAPES[e];
      i++;
    } else plain += c;
  }
  flush();
  const bytes = Buffer.concat(parts);
  return isUtf8(bytes) ? bytes.toString('utf8') : decodeUtf8Line(bytes).text;
}

// A line of a log a server or a logger writes as text: an access log line; syslog's (`<134>1 2025-...`, with its
// length before it as a log drain sends it, `Mar 18 20:01:10 host tag[pid]:`); one starting with its date and time
// followed by a space (an ISO time, Python's `2025-03-18 20:01:10,123`, `[2025-03-18 20:01:10]`), or with its level;
// logfmt: never a CSV header, nor a CSV row, whose first cell is followed by its delimiter.
const SYSLOG = /^(?:\d{1,5} )?<\d{1,3}>|^[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \S/;
// A line that starts with its level (Python's `INFO:root:...`, winston's `info: ...`, `[ERROR] ...`).
const LEVELED = /^\[?(?:trace|debug|info|notice|warn|warning|error|fatal|critical)\]?[\s:]/i;
const STAMPED = /^\[?\d{4}-\d\d-\d\d[T ]\d\d:\d\d(?::\d\d(?:[.,]\d+)?)?(?:Z|[+-]\d\d:?\d\d| ?UTC)?\]? \S/;

/**
 * Whether the first lines of an input are those of a text log (see above): its first line, and most of up to 20
 * non-blank lines (lines of JSON count, a log may mix them).
 */
export function looksLikeTextLog(head: string, complete: boolean): boolean {
  const lines = head.split(/\r?\n|\r/);
  // The last line of a head cut short may be a part of one.
  if (!complete && lines.length > 1) lines.pop();
  lines.splice(21);
  for (let i = lines.length - 1; i >= 0; i--) if (lines[i]!.trim() === '') lines.splice(i, 1);
  if (lines.length === 0) return false;
  const first = lines[0]!.replace(/^\ufeff/, '');
  if (!isLogLine(first)) return false;
  const n = lines.filter((l) => isLogLine(l) || l.startsWith('{')).length;
  return n * 2 > lines.length;
}

function isLogLine(l: string): boolean {
  return (
    SYSLOG.test(l) ||
    STAMPED.test(l) ||
    LEVELED.test(l) ||
    (LOGFMT.test(l) && logfmtFields(l) !== undefined) ||
    accessLogFields(l) !== undefined
  );
}
