// The entry point of sources/: files and stdin in, batches of RawItem out, inputs read one after another in
// the order given. Every input is checked before the first record is read: one that cannot be read is a part not
// read, named, and the others are read all the same. A failure inside one input (a truncated gzip, a vanished file)
// becomes a reject naming the line reached, and the next input is read.

import { statSync } from 'node:fs';
import { LeadledgerError, UsageError } from '../errors.js';
import { headerCells, repeatedHeaderNote } from './csv-headers.js';
import { normalizeEncoding } from './detect-encoding.js';
import { describeGzipTail } from './gunzip-members.js';
import { openInput, recodedInput, type OpenedInput } from './open-input.js';
import { readCsv, type CsvSettings } from './read-csv.js';
import { readJson } from './read-json.js';
import { readJsonl } from './read-jsonl.js';
import { readTextLog } from './read-text-log.js';
import type { ReaderContext } from './reader-context.js';
import { resolveInputs, type ResolvedInput } from './resolve-inputs.js';
import { compileSelector } from './select-path.js';
import { decideInputInfo } from './sniff-input.js';
import type { InputFormat, InputInfo, InputRead, RawItem, RawReject, RawUnread, ReadOptions } from './types.js';

const FORMATS: readonly InputFormat[] = ['jsonl', 'json', 'csv', 'log'];

/** Reads every input in order and yields batches of records and rejects (up to ~1000 items each). */
export async function* readInputs(inputs: string[], opts: ReadOptions): AsyncGenerator<RawItem[]> {
  yield* readInputsWith(inputs, opts, readFormat, (reject) => [reject]);
}

/** How one opened input is turned into batches B (e.g. parsed and mapped in worker threads). */
export type FormatReader<B> = (opened: OpenedInput, info: InputInfo, ctx: ReaderContext) => AsyncGenerator<B>;

/**
 * readInputs with the per-input reader supplied by the caller: inputs are resolved, opened, sniffed and their
 * failures turned into unread parts exactly as readInputs does, whatever batches B the reader yields.
 */
export async function* readInputsWith<B>(
  inputs: string[],
  opts: ReadOptions,
  read: FormatReader<B>,
  fromReject: (r: RawReject | RawUnread) => B,
): AsyncGenerator<B> {
  const options = validateOptions(opts);
  const { inputs: resolved, noMatch } = await resolveInputs(inputs, { requireInput: opts.requireInput });
  for (const pattern of noMatch) opts.onNoMatch?.(pattern);
  if (opts.onTotalBytes) opts.onTotalBytes(totalBytes(resolved.filter((i) => i.unreadable === undefined)));
  for (const input of resolved) {
    if (opts.signal?.aborted) return;
    // An input that cannot be read is a part not read (exit 3), named with why; the others are read all the same.
    if (input.unreadable !== undefined)
      yield fromReject({ kind: 'unread', source: input.source, line: 1, reason: input.unreadable });
    else yield* readOne(input, options, read, fromReject);
  }
}

/** The size of every input together, as on disk; undefined when one is not a regular file (stdin, a FIFO). */
function totalBytes(inputs: ResolvedInput[]): number | undefined {
  let total = 0;
  for (const input of inputs) {
    if (input.path === null) return undefined;
    try {
      const st = statSync(input.path);
      if (!st.isFile()) return undefined;
      total += st.size;
    } catch {
      return undefined;
    }
  }
  return total;
}

/** Checks and normalizes the options (UsageError on a bad one), so that no input is read with a typo'd flag. */
export function validateOptions(opts: ReadOptions): ReadOptions {
  const out: ReadOptions = { ...opts };
  if (opts.format !== undefined && !FORMATS.includes(opts.format)) {
    throw new UsageError(`unknown format '${String(opts.format)}' (expected one of: ${FORMATS.join(', ')})`);
  }
  if (opts.encoding !== undefined) {
    const enc = normalizeEncoding(opts.encoding);
    if (enc === null) throw new UsageError(`unknown encoding '${opts.encoding}' (e.g. utf-8, windows-1252, latin1)`);
    out.encoding = enc;
  }
  if (opts.delimiter !== undefined) out.delimiter = normalizeDelimiter(opts.delimiter);
  if (opts.select !== undefined && opts.select.trim() === '')
    throw new UsageError('--select needs a field path, e.g. body or request.body');
  return out;
}

function normalizeDelimiter(d: string): string {
  // Shells make a literal tab awkward to type, so accept the usual spellings.
  if (d === 'tab' || d === '\\t' || d === 'TAB') return '\t';
  if (d.length !== 1 || d === '"' || d === '\n' || d === '\r') {
    throw new UsageError(`--delimiter must be one character other than a quote or newline (got '${d}')`);
  }
  return d;
}

async function* readOne<B>(
  input: ResolvedInput,
  opts: ReadOptions,
  read: FormatReader<B>,
  fromReject: (r: RawReject | RawUnread) => B,
): AsyncGenerator<B> {
  const ctx: ReaderContext = {
    source: input.source,
    selector: opts.select === undefined ? null : compileSelector(opts.select),
    progress: { line: 0 },
  };
  let opened: OpenedInput | null = null;
  let info: InputInfo | undefined;
  try {
    opened = await openInput(input, opts.stdin, opts.signal, opts.onBytesRead);
    info = decideInputInfo(input, opened, opts);
    // JSON and JSONL readers read UTF-8 (a line that is not is read as Windows-1252 on its own): an input in another
    // encoding is given to them as UTF-8.
    if (info.format !== 'csv' && info.encoding !== undefined) opened = recodedInput(opened, info.encoding);
    if (info.format === 'csv') {
      const cells = headerCells(opened.head, info);
      const note = cells && repeatedHeaderNote(cells);
      if (note) (ctx.notes ??= []).push(note);
      if (info.escapes) (ctx.notes ??= []).push(ESCAPES_NOTE);
    }
    opts.onInput?.(info);
    yield* read(opened, info, ctx);
    // After the last gzip member: zero padding is said in a note; other bytes are a part not read (exit 3), named
    // by their offset in the file (the lines read were all decided).
    const tail = opened.gzipEnd?.tail;
    if (tail?.zeros) (ctx.notes ??= []).push(describeGzipTail(tail));
    else if (tail)
      yield fromReject({
        kind: 'unread',
        source: input.source,
        line: ctx.progress.line + 1,
        reason: describeGzipTail(tail),
      });
  } catch (err) {
    // Errors that carry their own exit code end the run with it: an unreadable input (3), a bad option (2), and
    // what a reader met outside the input, such as a damaged ledger read in the same loop (5).
    if (err instanceof LeadledgerError) throw err;
    // Stopped (Ctrl-C / SIGTERM) while this input was read or waited on: the rest of it is abandoned, not unread.
    if (opts.signal?.aborted) return;
    // What was read before the failure has been yielded: the rest of this input is unread, and the next is read.
    yield fromReject({
      kind: 'unread',
      source: input.source,
      line: Math.max(1, ctx.progress.line + 1),
      reason: describeReadError(err),
    });
  } finally {
    await opened?.close();
    if (info) {
      const read: InputRead = { ...info, notes: notesOf(ctx) };
      if (ctx.dates?.length) read.dates = ctx.dates;
      if (ctx.readAs?.size) read.readAs = [...ctx.readAs].map(([as, events]) => ({ as, events }));
      opts.onInputRead?.(read);
    }
  }
}

const ESCAPES_NOTE =
  'its cells are written with backslash escapes, not as RFC 4180 has them (\\" for a quote, \\u00e1 for á, a bare null for none, as JSON literals): they were read so, a row a line';

// What a person should know about how an input was read.
function notesOf(ctx: ReaderContext): string[] {
  const notes: string[] = [...(ctx.notes ?? [])];
  const r = ctx.recoded;
  if (r) {
    notes.push(
      `${r.lines === 1 ? `line ${r.first} was` : `${r.lines} lines (the first at line ${r.first}) were`} not UTF-8 and ${r.lines === 1 ? 'was' : 'were'} read as Windows-1252`,
    );
  }
  return notes;
}

/** The in-thread reader of each format. */
export function readFormat(opened: OpenedInput, info: InputInfo, ctx: ReaderContext): AsyncGenerator<RawItem[]> {
  switch (info.format) {
    case 'jsonl':
      return readJsonl(opened.chunks, ctx);
    case 'json':
      return readJson(opened.chunks, ctx);
    case 'csv':
      return readCsv(opened.chunks, ctx, csvSettings(info));
    case 'log':
      return readTextLog(opened.chunks, ctx);
  }
}

/** How a CSV input is read, from how it was decided to be (InputInfo). */
export function csvSettings(info: InputInfo): CsvSettings {
  const settings: CsvSettings = { encoding: info.encoding ?? 'utf-8', delimiter: info.delimiter ?? ',' };
  if (info.escapes) settings.escapes = info.escapes;
  return settings;
}

/** Words for a failure inside an input; zlib's terse messages get context. */
function describeReadError(err: unknown): string {
  const e = err as NodeJS.ErrnoException;
  const msg = e?.message ?? String(err);
  if (
    e?.code === 'Z_BUF_ERROR' ||
    e?.code === 'Z_DATA_ERROR' ||
    e?.errno === -5 ||
    /unexpected end of file|incorrect header check|invalid (block|distance|stored)/.test(msg)
  ) {
    return `corrupt or truncated gzip data (${msg})`;
  }
  if (e?.code === 'ENOENT') return 'the file disappeared while being read';
  return msg;
}
