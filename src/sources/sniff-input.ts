// Decides how one opened input is read (format, encoding, delimiter) from options, its name and its first
// bytes, and says so in words for logs and --verbose.

import iconv from 'iconv-lite';
import { detectEncoding } from './detect-encoding.js';
import { formatFromName, sniffFormat } from './detect-format.js';
import { type OpenedInput, openInput } from './open-input.js';
import type { ResolvedInput } from './resolve-inputs.js';
import { detectBackslashEscapes } from './csv-escapes.js';
import { sniffDelimiter } from './sniff-delimiter.js';
import type { InputInfo, ReadOptions } from './types.js';

/** Decides format, encoding and delimiter for an opened input; options win over the name, the name over the content. */
export function decideInputInfo(input: ResolvedInput, opened: OpenedInput, opts: ReadOptions): InputInfo {
  const hint = input.path === null ? {} : formatFromName(input.path);
  const format = opts.format ?? hint.format ?? sniffFormat(opened.head, opened.complete);
  const info: InputInfo = { source: input.source, path: input.path, format, gzip: opened.gzip };
  if (opened.transcodedFrom) info.transcodedFrom = opened.transcodedFrom;
  if (opened.crLines) info.crLines = true;
  const encoding = opened.transcodedFrom ? 'utf-8' : (opts.encoding ?? detectEncoding(opened.head, opened.complete));
  // JSON and JSONL inputs are detected as CSV exports are: UTF-8 (with or without a BOM), else Windows-1252, the
  // input given as UTF-8 to the readers (recodedInput). Said only when it is not UTF-8, the encoding JSON is sent in.
  if (format !== 'csv' && encoding !== 'utf-8') info.encoding = encoding;
  if (format === 'csv') {
    info.encoding = encoding;
    const head = decodeHead(opened.head, encoding);
    info.delimiter = opts.delimiter ?? hint.delimiter ?? sniffDelimiter(head, opened.complete);
    // A hand-rolled export's cells written as JSON literals (\" inside a quoted cell): read as they were written.
    if (detectBackslashEscapes(head, info.delimiter, opened.complete)) info.escapes = 'backslash';
  }
  return info;
}

/** Opens an input just to decide how it would be read, then closes it (for `leadledger inspect`-style output). */
export async function sniffInput(input: ResolvedInput, opts: ReadOptions = {}): Promise<InputInfo> {
  const opened = await openInput(input, opts.stdin);
  try {
    return decideInputInfo(input, opened, opts);
  } finally {
    await opened.close();
  }
}

/** One line describing how an input is read, e.g. `crm.csv: csv, windows-1252, ';'`. */
export function describeInput(info: InputInfo): string {
  const parts: string[] = [info.format];
  if (info.gzip) parts.push('gzip');
  if (info.transcodedFrom) parts.push(info.transcodedFrom);
  if (info.crLines) parts.push('lines ending in CR');
  if (info.encoding) parts.push(info.encoding);
  if (info.delimiter) parts.push(info.delimiter === '\t' ? 'tab-separated' : `'${info.delimiter}'-separated`);
  if (info.escapes) parts.push('backslash escapes');
  return `${info.source}: ${parts.join(', ')}`;
}

function decodeHead(head: Buffer, encoding: string): string {
  return iconv.decode(head, encoding);
}
