// JSONL / NDJSON: the hot path (a million-line replay). Lines are found with Buffer.indexOf on large chunks and
// decoded one by one: measured faster than decoding whole chunks to strings and slicing them, and far faster
// than readline. Memory stays bounded by the chunk size plus the longest line.

import { isUtf8 } from 'node:buffer';
import { decodeUtf8Line, mergeRecoded } from './decode-text.js';
import { describeJsonError } from './json-error.js';
import { jsonOfByteEscapes } from './log-text.js';
import { BATCH_SIZE, type ReaderContext } from './reader-context.js';
import { kindOf } from './select-path.js';
import type { RawItem, RawRecord } from './types.js';

const LF = 0x0a;
const CR = 0x0d;

/**
 * A line longer than this is not read (it is reported unread, and the lines after it are read): a lead event is a
 * few KB, and a map worker's heap (64 MB) must hold a line and what JSON.parse makes of it.
 */
export const MAX_LINE_BYTES = 8 << 20;

/**
 * Reads newline-delimited JSON objects; yields batches of records and per-line rejects, never throws on bad lines.
 * When the input goes idle (an empty chunk: a quiet stdin) the whole lines read so far are yielded, then an empty
 * batch that says so, so that a push sends them instead of waiting for a full batch.
 */
export async function* readJsonl(chunks: AsyncIterable<Buffer>, ctx: ReaderContext): AsyncGenerator<RawItem[]> {
  const { source, selector, progress } = ctx;
  const batchSize = ctx.batchSize ?? BATCH_SIZE;
  // Lines before these bytes (the rest of a .json file found to be JSON lines: read-json.ts).
  const base = ctx.lineOffset ?? 0;
  let batch: RawItem[] = [];
  let line = 0;
  // Bytes of a line that started in an earlier chunk; joined only once its end is found, so a long line
  // spread over many chunks is copied once, not once per chunk.
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  // The line being read is past MAX_LINE_BYTES: its bytes are dropped until its end.
  let tooLong = false;

  const skipLong = (): void => {
    line++;
    batch.push(tooLongLine(source, line + base));
    tooLong = false;
  };
  const recoded = (l: number): void => {
    ctx.recoded = mergeRecoded(ctx.recoded, { lines: 1, first: l });
  };
  const handle = (buf: Buffer, start: number, end: number): void => {
    line++;
    start = lineStart(buf, start, end, line === 1 && !ctx.midInput);
    end = lineEnd(buf, start, end);
    if (end < 0) return;
    const item = lineItem(buf, start, end, line + base, source, selector, recoded);
    if (Array.isArray(item)) for (const x of item) batch.push(x);
    else batch.push(item);
  };

  try {
    for await (const chunk of chunks) {
      if (chunk.length === 0) {
        progress.line = line + base;
        if (batch.length > 0) yield batch;
        batch = [];
        yield [];
        continue;
      }
      let start = 0;
      let nl = chunk.indexOf(LF, start);
      if (pending.length > 0 || tooLong) {
        if (nl === -1) {
          pendingBytes += chunk.length;
          if (pendingBytes > MAX_LINE_BYTES) {
            tooLong = true;
            pending = [];
          } else pending.push(chunk);
          continue;
        }
        if (tooLong || pendingBytes + nl > MAX_LINE_BYTES) {
          pending = [];
          skipLong();
        } else {
          pending.push(chunk.subarray(0, nl));
          const joined = Buffer.concat(pending);
          pending = [];
          handle(joined, 0, joined.length);
        }
        pendingBytes = 0;
        start = nl + 1;
        nl = chunk.indexOf(LF, start);
      }
      while (nl !== -1) {
        handle(chunk, start, nl);
        start = nl + 1;
        if (batch.length >= batchSize) {
          progress.line = line + base;
          yield batch;
          batch = [];
        }
        nl = chunk.indexOf(LF, start);
      }
      if (start < chunk.length) {
        pending.push(chunk.subarray(start));
        pendingBytes = chunk.length - start;
      }
      progress.line = line + base;
    }
  } catch (err) {
    // A read error (a truncated gzip): the lines read before it are still records, then the input fails.
    progress.line = line + base;
    if (batch.length > 0) yield batch;
    throw err;
  }
  if (tooLong) skipLong();
  else if (pending.length > 0) {
    const joined = Buffer.concat(pending);
    handle(joined, 0, joined.length); // last line without a trailing newline
  }
  progress.line = line + base;
  if (batch.length > 0) yield batch;
}

/** Where a line's text starts: after a UTF-8 BOM when it is the input's first line. */
export function lineStart(buf: Uint8Array, start: number, end: number, first: boolean): number {
  // A BOM can only be at the very start; checked per line so a tiny first stdin chunk cannot split it.
  if (first && end - start >= 3 && buf[start] === 0xef && buf[start + 1] === 0xbb && buf[start + 2] === 0xbf)
    return start + 3;
  return start;
}

/** Where a line's text ends (before a CR), or -1 for a blank line (empty or only spaces and tabs): not a record. */
export function lineEnd(buf: Uint8Array, start: number, end: number): number {
  if (end > start && buf[end - 1] === CR) end--;
  if (end === start) return -1;
  const b0 = buf[start] as number;
  if (b0 === 0x20 || b0 === 0x09) {
    let k = start;
    while (k < end && (buf[k] === 0x20 || buf[k] === 0x09)) k++;
    if (k === end) return -1;
  }
  return end;
}

/** A line past MAX_LINE_BYTES: not read, and reported so. */
export function tooLongLine(source: string, line: number): RawItem {
  return {
    kind: 'unread',
    source,
    line,
    toLine: line,
    reason: `a line longer than ${MAX_LINE_BYTES >> 20} MB is not read`,
  };
}

/**
 * The record (or the reason it is not one) of a non-blank line's text; a line that is a JSON array of events (a
 * HubSpot webhook delivery) gives one record per element, each with its item number.
 */
export function lineItem(
  buf: Buffer,
  start: number,
  end: number,
  line: number,
  source: string,
  selector: ReaderContext['selector'],
  recoded?: (line: number) => void,
): RawItem | RawItem[] {
  let text = buf.toString('utf8', start, end);
  // A line that is not UTF-8 is read as Windows-1252, as a CSV export's is (decode-text.ts): a Latin-1 export's
  // `José` is sent as written, not as `Jos\ufffd`. (A U+FFFD the line itself spells, \ufffd, is no sign of one.)
  if (text.includes('\ufffd') && !isUtf8(buf.subarray(start, end))) {
    text = decodeUtf8Line(buf.subarray(start, end)).text;
    recoded?.(line);
  }
  let value: unknown;
  try {
    value = parseLine(text);
  } catch (err) {
    const e = describeJsonError(err, text);
    const reject: RawItem = {
      kind: 'reject',
      source,
      line,
      reason: `invalid JSON: ${e.message} at column ${e.offset + 1}`,
    };
    if (!/^\s*[{[]/.test(text)) reject.notJson = true;
    return reject;
  }
  if (Array.isArray(value)) {
    if (value.length === 0) return { kind: 'reject', source, line, reason: 'an empty JSON array: no event in it' };
    return value.map((v, i) => recordOf(v, line, source, selector, i + 1));
  }
  return recordOf(value, line, source, selector);
}

/**
 * A line's JSON value; a line a web server wrote with its own escapes (`\x22` for a quote: nginx's JSON log_format
 * without escape=json) is read as the JSON it escaped. Throws the line's own JSON error where neither reads.
 */
export function parseLine(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    const unescaped = jsonOfByteEscapes(text);
    if (unescaped === undefined) throw err;
    try {
      return JSON.parse(unescaped);
    } catch {
      throw err;
    }
  }
}

function recordOf(
  value: unknown,
  line: number,
  source: string,
  selector: ReaderContext['selector'],
  item?: number,
): RawItem {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    const what = item === undefined ? 'found' : `item ${item} is`;
    const reject: RawItem = { kind: 'reject', source, line, reason: `not a JSON object (${what} ${kindOf(value)})` };
    if (item !== undefined) reject.item = item;
    return reject;
  }
  const fields =
    selector === null
      ? { ok: true as const, value: value as Record<string, unknown> }
      : selector.apply(value as Record<string, unknown>);
  if (!fields.ok) {
    const reject: RawItem = { kind: 'reject', source, line, reason: fields.reason };
    if (item !== undefined) reject.item = item;
    return reject;
  }
  const rec: RawRecord = { kind: 'record', source, line, fields: fields.value };
  if (item !== undefined) rec.item = item;
  // A form body whose percent-encoded bytes were not UTF-8 (select-path.ts): the mapper must know, so that no email
  // or phone they altered is sent and altered names are pointed out.
  if ((fields as { replaced?: true }).replaced) rec.replaced = true;
  return rec;
}
