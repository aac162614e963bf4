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

// The input read again for its sample: a regular file from its start; else (stdin, a FIFO) the whole lines of its
// first bytes, all there is to read twice.
async function sampleInput(opened: OpenedInput, info: InputInfo): Promise<OpenedInput> {
  if (opened.complete) return bytesOf(opened.head);
  if (info.path === null || !isFile(info.path)) return bytesOf(wholeLines(opened.head));
  const again = await openInput({ source: info.source, path: info.path });
  return info.format !== 'csv' && info.encoding !== undefined ? recodedInput(again, info.encoding) : again;
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

// The sample as an opened input for readFormat.
function bytesOf(sample: Buffer): OpenedInput {
  async function* chunks(): AsyncGenerator<Buffer> {
    yield sample;
  }
  return { head: sample, complete: true, gzip: false, chunks: chunks(), close: async () => {} };
}
