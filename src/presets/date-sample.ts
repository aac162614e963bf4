// How an input's dates are read, decided from its first records before any of them is mapped: a date such as
// 03/04/2024 reads either way round, and records are decided one by one as they stream in, so the order must be
// known before the first. Each field path's dates settle it when one of them has a first part over 12 (25/12/2024:
// day/month) or a second part over 12 (12/25/2024: month/day); the first that does decides. A later date of that
// field that is impossible in its order is an invalid record that says so (map-record.ts), never a rolled-over date.
import { statSync } from 'node:fs';
import { createMapper, mapItem, type MapOptions } from '../mapping/map-record.js';
import { ORDER_WORDS, readTime, yearLastParts, type DateColumns, type OrderUsed } from '../mapping/times.js';
import { openInput, recodedInput, type OpenedInput } from '../sources/open-input.js';
import { readFormat } from '../sources/read-inputs.js';
import type { ReaderContext } from '../sources/reader-context.js';
import { compileSelector } from '../sources/select-path.js';
import type { FieldDates, InputInfo } from '../sources/types.js';
import type { Recognizer } from './recognize.js';

/** Records looked at (as `leadledger init` samples). */
export const SAMPLE_RECORDS = 1000;

/** What the first records of an input showed about its dates. */
export interface InputDates {
  /** The order of each field path whose dates showed it (MapOptions.dateColumns). */
  columns: DateColumns;
  /** Per field path with dates to tell about, for the run's report. */
  fields: FieldDates[];
}

/**
 * Maps the first SAMPLE_RECORDS records of an input (a file read again from its start; stdin or a FIFO, which cannot
 * be, from the whole lines of its first bytes) the way they will be mapped (`recognizer`: the source its head is
 * read as, or none for field names) and says how its dates are read. Undefined when they hold no date to tell about.
 */
export async function sampleDates(
  opened: OpenedInput,
  info: InputInfo,
  map: MapOptions,
  select: string | undefined,
  recognizer: (head: Pick<OpenedInput, 'head' | 'complete'>, map: MapOptions) => Recognizer | undefined,
): Promise<InputDates | undefined> {
  if (noDatesToTell(opened)) return undefined;
  const seen = new Map<string, Seen>();
  const onTime = (path: string, raw: string, line: number): void => {
    let s = seen.get(path);
    if (!s) seen.set(path, (s = { yearLast: false, zoneless: false }));
    const parts = yearLastParts(raw);
    if (parts) {
      s.yearLast = true;
      const [a, b] = parts;
      if (!s.shown && a > 12 !== b > 12) s.shown = { order: a > 12 ? 'dmy' : 'mdy', raw, line };
    }
    if (!s.zoneless) {
      const t = readTime(raw, () => ({ order: parts && parts[1] > 12 ? 'mdy' : 'dmy', why: '' }), 'UTC');
      if (t.kind === 'time' && !t.zoned) s.zoneless = true;
    }
  };
  const sampling: MapOptions = { ...map, onTime };
  const rec = recognizer(opened, sampling);
  const mapper = rec ? undefined : createMapper(sampling);
  const ctx: ReaderContext = {
    source: info.source,
    selector: select === undefined ? null : compileSelector(select),
    progress: { line: 0 },
  };
  const input = await sampleInput(opened, info);
  let records = 0;
  try {
    sampling: for await (const batch of readFormat(input, info, ctx)) {
      for (const item of batch) {
        if (item.kind === 'unread') continue;
        if (item.kind === 'record' && ++records > SAMPLE_RECORDS) break sampling;
        if (rec) rec.push(item, []);
        else mapItem(mapper!, item);
      }
    }
  } catch {
    // A part that cannot be read (a damaged gzip) ends the sample; the input's reading says so.
  } finally {
    await input.close();
  }
  return decide(seen, map);
}

// The input as its sample reads it, in slices small enough that a reader parses little past the records it takes:
// the first bytes it keeps, then, for a regular file whose first bytes hold fewer records than the sample takes,
// the rest of it read again (from the same place: the file is opened and made text as it was); for stdin or a FIFO,
// which cannot be read twice, the whole lines of those first bytes.
async function sampleInput(opened: OpenedInput, info: InputInfo): Promise<OpenedInput> {
  const path = opened.complete || info.path === null || !isFile(info.path) ? undefined : info.path;
  let again: OpenedInput | undefined;
  async function* chunks(): AsyncGenerator<Buffer> {
    yield* slices(path === undefined && !opened.complete ? wholeLines(opened.head) : opened.head);
    if (path === undefined) return;
    again = await openInput({ source: info.source, path });
    const text = info.format !== 'csv' && info.encoding !== undefined ? recodedInput(again, info.encoding) : again;
    let skip = opened.head.length;
    for await (const c of text.chunks) {
      const rest = skip >= c.length ? undefined : c.subarray(skip);
      skip = Math.max(0, skip - c.length);
      if (rest) yield* slices(rest);
    }
  }
  const it = chunks();
  return {
    head: opened.head,
    complete: true,
    gzip: false,
    chunks: it,
    close: async () => {
      await it.return(undefined);
      await again?.close();
    },
  };
}

const SLICE = 16 * 1024;

function* slices(b: Buffer): Generator<Buffer> {
  for (let i = 0; i < b.length; i += SLICE) yield b.subarray(i, i + SLICE);
}

// A date with its year last (25/12/2024), or a date (and time) year first with nothing after it that is a zone: the
// text of a time the sample has something to tell about. The lookahead takes the longest date and time there is (a
// lookahead is not backtracked into), so that 2026-10-01T10:00:00.000Z is not taken for 2026-10-01 and a 'T'.
const YEAR_LAST_TEXT = /\d[/.-]\d{1,2}[/.-]\d{4}/;
const ZONELESS_TEXT =
  /(?=(\d{4}-\d{1,2}-\d{1,2}(?:[Tt ]\d{1,2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?)?))\1(?![\d.,:]|\s*(?:[Zz+-]|UTC|GMT))/;

/**
 * Whether the sample would find nothing to tell, known from the first bytes alone without mapping a record (a webhook
 * log whose times are all canonical UTC, the usual input): they hold no such text, and they hold the whole sample
 * (the whole input, or four lines for each record the sample takes: a CSV record may span several).
 */
function noDatesToTell(opened: OpenedInput): boolean {
  const head = opened.head;
  // The lines the sample's records are in, whole: a time cut short at their end (2026-10-01T00:) is no time.
  const end = lineEndAfter(head, 4 * SAMPLE_RECORDS);
  if (end < 0 && !opened.complete) return false;
  const text = head.toString('latin1', 0, end < 0 ? head.length : end);
  return !YEAR_LAST_TEXT.test(text) && !ZONELESS_TEXT.test(text);
}

// Where the n-th line of b ends (after its LF); -1 when b holds fewer.
function lineEndAfter(b: Buffer, n: number): number {
  let at = -1;
  for (let i = 0; i < n; i++) {
    at = b.indexOf(0x0a, at + 1);
    if (at < 0) return -1;
  }
  return at + 1;
}

interface Seen {
  yearLast: boolean;
  zoneless: boolean;
  /** The first date of the field that showed the order of day and month. */
  shown?: { order: 'dmy' | 'mdy'; raw: string; line: number };
}

function decide(seen: Map<string, Seen>, map: MapOptions): InputDates | undefined {
  const columns = new Map<string, OrderUsed>();
  const fields: FieldDates[] = [];
  for (const [field, s] of seen) {
    if (!s.yearLast && !s.zoneless) continue;
    const f: FieldDates = { field };
    if (s.shown) {
      const why = `as its dates show: '${s.shown.raw}' at line ${s.shown.line}`;
      columns.set(field, { order: s.shown.order, why });
      f.order = ORDER_WORDS[s.shown.order];
      f.orderFrom = why;
    } else if (s.yearLast) {
      const d = map.dateOrder ?? { order: 'dmy' as const, from: 'the default' };
      f.order = ORDER_WORDS[d.order];
      f.orderFrom = `no date of its first ${SAMPLE_RECORDS.toLocaleString('en-US')} records showed it: ${d.from}`;
    }
    if (s.zoneless) f.zoneless = true;
    fields.push(f);
  }
  return fields.length ? { columns, fields } : undefined;
}

function isFile(path: string): boolean {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

function wholeLines(b: Buffer): Buffer {
  const lf = b.lastIndexOf(0x0a);
  return lf < 0 ? b : b.subarray(0, lf + 1);
}
