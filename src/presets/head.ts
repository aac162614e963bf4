// Whether an input is one of the sources leadledger knows, from its first bytes: a JSON lines input by its first
// records (a log by its logger's fields), a CSV export by its header. An input recognized here is read and mapped
// record by record as its source wrote it (recognize.ts); any other keeps the generic, parallel path.
import { headerCells, normalizeHeaders } from '../sources/csv-headers.js';
import { parseLine } from '../sources/read-jsonl.js';
import type { InputInfo } from '../sources/types.js';
import { logList, recognizeCsv, recognizeEntryOwner, recognizeJson, recognizeLog } from './recognize.js';
import type { LogDef, SourceDef } from './types.js';

/** What an input's first bytes were recognized as. */
export interface HeadRecognition {
  source?: SourceDef;
  log?: LogDef;
  /** A CSV export's column names, as the reader names them. */
  headers?: string[];
}

// The first lines looked at: a log may open with lines of start-up before its first webhook body.
const HEAD_LINES = 200;

/** What the input's head is, or undefined when no source claims it. */
export function recognizeHead(head: Buffer, complete: boolean, info: InputInfo): HeadRecognition | undefined {
  if (info.format === 'csv') return recognizeCsvHead(head, info);
  if (info.format !== 'jsonl') return undefined;
  const lines = head.toString('utf8').split('\n');
  if (!complete) lines.pop(); // cut at HEAD_BYTES
  let n = 0;
  for (const raw of lines) {
    const text = raw.trim();
    if (text === '' || (text[0] !== '{' && text[0] !== '[')) continue;
    if (++n > HEAD_LINES) break;
    let value: unknown;
    try {
      value = parseLine(text);
    } catch {
      continue;
    }
    for (const rec of Array.isArray(value) ? value : [value]) {
      if (rec === null || typeof rec !== 'object' || Array.isArray(rec)) continue;
      const r = rec as Record<string, unknown>;
      const log = recognizeLog(r) ?? logList(r)?.log ?? recognizeEntryOwner(r);
      if (log) return { log };
      const source = recognizeJson(r);
      if (source) return { source };
    }
  }
  return undefined;
}

function recognizeCsvHead(head: Buffer, info: InputInfo): HeadRecognition | undefined {
  const headers = csvHeader(head, info);
  const source = headers && recognizeCsv(headers);
  return source ? { source, headers } : undefined;
}

/** A CSV input's column names from its first bytes (its first row, named as the reader names them), if it has one. */
export function csvHeader(head: Buffer, info: InputInfo): string[] | undefined {
  const cells = headerCells(head, info);
  return cells && normalizeHeaders(cells);
}
