// Which way each input is read: as the source --preset names, as the source its first records (or header) show, or
// by field names alone. push's engine and replay --from choose the same way, so an event has one key whichever
// command reads it.
import { UsageError } from '../errors.js';
import { createMapper, mapItem, type MapOptions } from '../mapping/map-record.js';
import type { Mapped } from '../mapping/types.js';
import type { OpenedInput } from '../sources/open-input.js';
import { readFormat, readInputsWith } from '../sources/read-inputs.js';
import type { ReaderContext } from '../sources/reader-context.js';
import type { InputInfo, RawUnread, ReadOptions } from '../sources/types.js';
import { isUnreadable } from '../sources/unreadable.js';
import { sampleDates } from './date-sample.js';
import { csvHeader, recognizeHead } from './head.js';
import { Recognizer } from './recognize.js';
import type { SourceDef } from './types.js';

/**
 * The recognizer of one input, or undefined when it is read by field names (the generic path, which the engine may
 * run in parallel). A forced preset that reads another format than the input's is a usage error. JSON documents
 * always get one: each of their records is recognized on its own.
 */
export function recognizerFor(
  opened: Pick<OpenedInput, 'head' | 'complete'>,
  info: InputInfo,
  map: MapOptions,
  preset: SourceDef | 'generic' | undefined,
): Recognizer | undefined {
  if (preset === 'generic') return undefined;
  if (preset) {
    if ((preset.reads === 'csv') !== (info.format === 'csv'))
      throw new UsageError(
        `--preset ${preset.name} reads ${preset.reads === 'csv' ? 'CSV exports' : 'JSON records'}, and ${info.source} is ${info.format}: give --format, or another preset (leadledger presets)`,
      );
    const headers = info.format === 'csv' ? csvHeader(opened.head, info) : undefined;
    return new Recognizer({ map, format: info.format, forced: preset, headers });
  }
  // JSON documents and text logs are recognized record by record (a log's lines are containers of events).
  if (info.format === 'json' || info.format === 'log') return new Recognizer({ map, format: info.format });
  const head = recognizeHead(opened.head, opened.complete, info);
  return head && new Recognizer({ map, format: info.format, log: !!head.log, headers: head.headers });
}

/**
 * Reads and maps every input in this thread, each the way recognizerFor chooses: batches of mapped records, with
 * the parts that could not be read beside them, a record that could not be read (a broken JSON line, a CSV row with
 * broken quoting) among them as a part of one line (and an invalid record).
 */
export async function* mapInputs(
  inputs: string[],
  read: ReadOptions,
  map: MapOptions,
  preset: SourceDef | 'generic' | undefined,
): AsyncGenerator<Array<Mapped | RawUnread>> {
  for await (const batch of mapEvery(inputs, read, map, preset)) {
    const unreadable: Array<Mapped | RawUnread> = [];
    for (const m of batch)
      if (m.kind === 'invalid' && isUnreadable(m.reason))
        unreadable.push({ kind: 'unread', source: m.source, line: m.line, toLine: m.line, reason: m.reason });
    yield unreadable.length ? unreadable.concat(batch) : batch;
  }
}

async function* mapEvery(
  inputs: string[],
  read: ReadOptions,
  map: MapOptions,
  preset: SourceDef | 'generic' | undefined,
): AsyncGenerator<Array<Mapped | RawUnread>> {
  const generic = createMapper(map);
  async function* one(opened: OpenedInput, info: InputInfo, ctx: ReaderContext) {
    // How its dates read, from its first records, before any of them is mapped.
    const dates = await sampleDates(opened, info, map, read.select, (head, m) => recognizerFor(head, info, m, preset));
    if (dates) ctx.dates = dates.fields;
    generic.useDateColumns(dates?.columns);
    const recognizer = recognizerFor(opened, info, dates ? { ...map, dateColumns: dates.columns } : map, preset);
    if (recognizer) ctx.readAs = recognizer.readAs;
    for await (const batch of readFormat(opened, info, ctx)) {
      const out: Array<Mapped | RawUnread> = [];
      const mapped: Mapped[] = [];
      for (const item of batch) {
        if (item.kind === 'unread') out.push(item);
        else if (recognizer) recognizer.push(item, mapped);
        else mapped.push(mapItem(generic, item));
      }
      yield out.concat(mapped);
    }
  }
  yield* readInputsWith(inputs, read, one, (r) => [r.kind === 'unread' ? r : mapItem(generic, r)]);
}
