// Decides an input's format: from its name when the extension says it, else from its first bytes.

import { looksLikeTextLog } from './read-text-log.js';
import type { InputFormat } from './types.js';

/** What a file name tells about its format; `delimiter` is set for .tsv. */
export interface NameHint {
  format?: InputFormat;
  delimiter?: string;
}

/** Reads the format from the extension, ignoring a trailing .gz (.jsonl/.ndjson, .json, .csv, .tsv). */
export function formatFromName(name: string): NameHint {
  let lower = name.toLowerCase();
  if (lower.endsWith('.gz')) lower = lower.slice(0, -3);
  const dot = lower.lastIndexOf('.');
  const ext = dot === -1 ? '' : lower.slice(dot + 1);
  switch (ext) {
    case 'jsonl':
    case 'ndjson':
      return { format: 'jsonl' };
    case 'json':
      return { format: 'json' };
    case 'csv':
      return { format: 'csv' };
    case 'tsv':
    case 'tab':
      return { format: 'csv', delimiter: '\t' };
    default:
      return {}; // .txt, .log, no extension: look at the content
  }
}

/**
 * Sniffs the format from the first bytes: lines of a text log (an access log, syslog, lines that start with their
 * time: read-text-log.ts) → log; `[` → json; `{` → jsonl, unless the first line is not a whole object and the
 * document is a single (pretty-printed) object; anything else → csv.
 */
export function sniffFormat(head: Buffer, complete: boolean): InputFormat {
  let i = head.length >= 3 && head[0] === 0xef && head[1] === 0xbb && head[2] === 0xbf ? 3 : 0;
  while (i < head.length && isSpace(head[i] as number)) i++;
  const c = head[i];
  if (
    c !== 0x7b /* { */ &&
    looksLikeTextLog(head.toString('latin1', i, i + SNIFF_BYTES), complete && head.length <= i + SNIFF_BYTES)
  )
    return 'log';
  if (c === 0x5b /* [ */) return 'json';
  if (c !== 0x7b /* { */) return 'csv';
  const nl = head.indexOf(0x0a, i);
  const firstLine = head.toString('utf8', i, nl === -1 ? head.length : nl);
  if (parsesAsObject(firstLine)) return 'jsonl';
  if (complete && parsesAsObject(head.toString('utf8', i))) return 'json';
  // A lone `{` (or `{ "key": ...` not closed) on the first line is how pretty-printed JSON starts.
  const trimmed = firstLine.trim();
  if (trimmed === '{' || (nl !== -1 && !trimmed.endsWith('}'))) return 'json';
  return 'jsonl';
}

// The bytes a text log is told by: its first lines.
const SNIFF_BYTES = 64 * 1024;

function parsesAsObject(text: string): boolean {
  try {
    const v: unknown = JSON.parse(text);
    return typeof v === 'object' && v !== null && !Array.isArray(v);
  } catch {
    return false;
  }
}

function isSpace(b: number): boolean {
  return b === 0x20 || b === 0x09 || b === 0x0a || b === 0x0d;
}
