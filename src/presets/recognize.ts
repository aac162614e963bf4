// Reading records as the tools that made them wrote them: each record (or a CSV export's header) is recognized by
// its source's signature, its events are taken out one by one (a body with several leads, a log line that holds a
// webhook body), mapped with that source's paths and key, and those the source marks as not leads are filtered
// with the reason (where the source wrote a lead in a way that cannot be read, its invalid reason says what to do).
// A record no source claims is mapped by field names, as always.
import type { Config } from '../mapping/config.js';
import { getPath, normalizeHeader, parsePath, type FieldPath } from '../mapping/fields.js';
import { createMapper, mapItem, type MapOptions, type Mapper } from '../mapping/map-record.js';
import type { Mapped } from '../mapping/types.js';
import { formValues } from '../sources/select-path.js';
import type { RawItem, RawRecord, RawReject } from '../sources/types.js';
import { SOURCES } from './catalog.js';
import { deliveryOf, entryOwner, LOG_LISTS, logBody, logOf, withoutOwn, type LogPlace } from './logs.js';
import type { CsvSignature, CsvSource, JsonSignature, JsonSource, LogDef, SourceDef } from './types.js';

/** The source a record is recognized as, where one is: checked in catalog order, the first that matches. */
export function recognizeJson(record: Record<string, unknown>): JsonSource | undefined {
  for (const s of SOURCES) if (s.reads === 'json' && matchesJson(record, s.signature)) return s;
  return undefined;
}

/**
 * The log whose line (or entry) this is, where it is one; `at` says where the record is (a line of a text log, an
 * entry of a document's list), which some logs need.
 */
export function recognizeLog(record: Record<string, unknown>, at: LogPlace = {}): LogDef | undefined {
  return logOf(record, at, matchesJson);
}

/**
 * The log whose entry a record is, where it holds the person itself and is read whole: that log's own fields (its
 * ids of the entry, such as the journal's MESSAGE_ID) are left out of it (see entryOwner).
 */
export function recognizeEntryOwner(record: Record<string, unknown>, at: LogPlace = {}): LogDef | undefined {
  return entryOwner(record, at, matchesJson);
}

/**
 * The entries of a log a record wraps, where it is one: a list under one of LOG_LISTS whose first object is an entry
 * of a log (a CloudWatch Logs subscription's `logEvents` on a line of its own).
 */
export function logList(record: Record<string, unknown>): { key: string; list: unknown[]; log: LogDef } | undefined {
  for (const key of Object.keys(record)) {
    if (!LOG_LISTS.has(key)) continue;
    const list = record[key];
    if (!Array.isArray(list)) continue;
    const first: unknown = list.find((x) => x !== null && typeof x === 'object' && !Array.isArray(x));
    const log = first === undefined ? undefined : recognizeLog(first as Record<string, unknown>, { within: key });
    if (log) return { key, list, log };
  }
  return undefined;
}

/** The export a CSV header is, where one is. */
export function recognizeCsv(headers: readonly string[]): CsvSource | undefined {
  const names = new Set(headers.map(normalizeHeader));
  let best: CsvSource | undefined;
  let score = 0;
  // The most specific export wins: the one whose signature names the most columns.
  for (const s of SOURCES) {
    if (s.reads !== 'csv' || !matchesCsv(names, s.signature)) continue;
    const n = s.signature.headers.length + (s.signature.anyOf ? 1 : 0);
    if (n > score) [best, score] = [s, n];
  }
  return best;
}

const compiled = new WeakMap<
  object,
  { has: FieldPath[]; equals: Array<[FieldPath, Set<string>]>; lacks: FieldPath[]; anyOf: FieldPath[] }
>();

function matchesJson(record: Record<string, unknown>, sig: JsonSignature): boolean {
  let c = compiled.get(sig);
  if (!c) {
    c = {
      has: sig.has.map(parsePath),
      equals: Object.entries(sig.equals ?? {}).map(([p, vs]) => [parsePath(p), new Set(vs.map(String))]),
      lacks: (sig.lacks ?? []).map(parsePath),
      anyOf: (sig.anyOf ?? []).map(parsePath),
    };
    compiled.set(sig, c);
  }
  for (const p of c.has) {
    const v = getPath(record, p);
    if (v === undefined || v === null) return false;
  }
  for (const [p, want] of c.equals) {
    const v = getPath(record, p);
    if (!(typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') || !want.has(String(v)))
      return false;
  }
  for (const p of c.lacks) if (getPath(record, p) !== undefined) return false;
  if (c.anyOf.length > 0 && !c.anyOf.some((p) => !isNone(getPath(record, p)))) return false;
  return true;
}

function isNone(v: unknown): boolean {
  return v === undefined || v === null;
}

function matchesCsv(names: Set<string>, sig: CsvSignature): boolean {
  if (!sig.headers.every((h) => names.has(normalizeHeader(h)))) return false;
  return !sig.anyOf || sig.anyOf.some((h) => names.has(normalizeHeader(h)));
}

/** A source's mapping under the user's config: the config's fields win one by one, its key wins whole. */
export function mergeMapping(source: SourceDef, config: Config): Config {
  return {
    ...config,
    fields: { ...source.mapping.fields, ...config.fields },
    key: config.key ?? source.mapping.key,
  };
}

/**
 * The events a record holds at `path`: the list there, or, where a step is `[*]`, the lists under every element of
 * the list before it, one after another (Meta's `entry[*].changes`: the changes of every entry, in order). A
 * trailing `[*]` changes nothing. Undefined when a step finds no list where the path needs one.
 */
export function eventList(record: Record<string, unknown>, path: FieldPath): unknown[] | undefined {
  let level: unknown[] = [record];
  let from = 0;
  const listsAt = (to: number): unknown[] | undefined => {
    const out: unknown[] = [];
    for (const v of level) {
      const list = getPath(v, path.slice(from, to));
      if (!Array.isArray(list)) return undefined;
      for (const el of list) out.push(el);
    }
    return out;
  };
  for (let i = 0; i < path.length; i++) {
    const step = path[i]!;
    if (typeof step === 'string' || step.where) continue;
    const next = listsAt(i);
    if (!next) return undefined;
    level = next;
    from = i + 1;
  }
  return from === path.length ? level : listsAt(path.length);
}

/** What one input was read as: per source (its title), how many of its events. */
export type ReadAs = Map<string, number>;

/** How an input is to be recognized. */
export interface RecognizeOptions {
  map: MapOptions;
  /** The input's format: a CSV input's header is recognized once, a JSON record (or a text log's line) each time. */
  format: 'csv' | 'json' | 'jsonl' | 'log';
  /** --preset or the config's "preset": every record is read as this source. */
  forced?: SourceDef;
  /** The input's first lines were those of an application log: its lines that are not JSON are not events. */
  log?: boolean;
  /**
   * A CSV input's column names, read from its head: a row that is not a record (a report's footer) can be known as
   * such before any record came, in an export with none.
   */
  headers?: readonly string[];
  /** Sees every event before it is mapped, with the source it is read as (none: by field names): `init` uses it. */
  onEvent?: (e: SeenEvent) => void;
}

/** An event as the recognizer hands it to its mapper. */
export interface SeenEvent {
  /** The source it was read as; undefined when it is read by field names. */
  def?: SourceDef;
  /** The log it was found in, when it was. */
  log?: LogDef;
  event: Record<string, unknown>;
}

/**
 * Maps the items of one input as their sources wrote them (see the file's head). Feed it every item but unread
 * parts, in order; each gives one Mapped or more (a record with several events).
 */
export class Recognizer {
  /** What the input was read as, by source title, in the order first seen. */
  readonly readAs: ReadAs = new Map();
  private readonly generic: Mapper;
  private readonly mappers = new Map<string, Mapper>();
  private csv: CsvSource | null | undefined;

  constructor(private readonly o: RecognizeOptions) {
    this.generic = createMapper(o.map, { hashLater: true });
    if (o.forced?.reads === 'csv') this.csv = o.forced;
    if (o.headers) this.headers = [...o.headers];
  }

  /** The mapped events of one item, pushed onto out. */
  push(item: RawItem, out: Mapped[]): void {
    if (item.kind === 'record') {
      if (this.o.format === 'csv') this.pushCsv(item, out);
      else this.pushJson(item, item.fields, out, undefined);
      return;
    }
    if (item.kind === 'reject') {
      const m = this.notARecord(item) ?? mapItem(this.generic, item);
      if (item.item !== undefined) m.item = this.itemFor(item.source, item.line, item.item);
      out.push(m);
      return;
    }
    out.push(mapItem(this.generic, item));
  }

  private pushCsv(rec: RawRecord, out: Mapped[]): void {
    this.headers ??= Object.keys(rec.fields);
    if (this.csv === undefined) this.csv = recognizeCsv(this.headers) ?? null;
    if (this.csv) this.pushSource(this.csv, rec, rec.fields, out, undefined);
    else {
      this.o.onEvent?.({ event: rec.fields });
      out.push(this.generic(rec));
    }
  }

  private pushJson(
    rec: RawRecord,
    fields: Record<string, unknown>,
    out: Mapped[],
    log: LogDef | undefined,
    where?: string,
  ): void {
    const forced = this.o.forced;
    if (forced?.reads === 'json') return this.pushSource(forced, rec, fields, out, log);
    if (!log) {
      const place = { text: this.o.format === 'log', within: rec.within };
      const l = recognizeLog(fields, place);
      if (l) return this.pushLogLine(l, rec, fields, out);
      const entries = rec.within === undefined ? logList(fields) : undefined;
      if (entries) return this.pushEntries(rec, entries.key, entries.list, out);
      // An entry of a log that holds the person itself is their record; the ids the log gave the entry are not the
      // event's (the journal's MESSAGE_ID is the same on every line of a kind): read without them.
      const owner = recognizeEntryOwner(fields, place);
      if (owner) {
        const unit = owner.unit === 'entry' ? 'entries' : `${owner.unit ?? 'line'}s`;
        this.count(`${owner.title} ${unit} that hold the person, read whole without the log's own fields`);
        fields = withoutOwn(fields, owner);
      }
    }
    const source = recognizeJson(fields);
    if (source) return this.pushSource(source, rec, fields, out, log);
    if (log)
      this.count(
        `events in ${/^[AEIOU]/i.test(log.title) ? 'an' : 'a'} ${log.title}${where ? ` (${where})` : ''}, read by field names`,
      );
    this.o.onEvent?.(log ? { log, event: fields } : { event: fields });
    const m = this.generic(fields === rec.fields ? rec : { ...rec, fields });
    if (rec.item !== undefined) m.item = this.itemFor(rec.source, rec.line, rec.item);
    out.push(m);
  }

  // A record that wraps a log's entries (LOG_LISTS): each entry is read as its own record of the line.
  private pushEntries(rec: RawRecord, key: string, list: unknown[], out: Mapped[]): void {
    list.forEach((el, i) => {
      if (el === null || typeof el !== 'object' || Array.isArray(el)) {
        const item = this.itemFor(rec.source, rec.line, rec.item);
        out.push({
          kind: 'invalid',
          source: rec.source,
          line: rec.line,
          item,
          reason: `${key} item ${i + 1} is not a JSON object`,
        });
        return;
      }
      const fields = el as Record<string, unknown>;
      const item = this.peekItem(rec.source, rec.line, rec.item);
      this.pushJson({ ...rec, item, within: key, fields }, fields, out, undefined);
    });
  }

  // A log line: the webhook body its handler logged, recognized as any record; a line without one is not an event.
  private pushLogLine(log: LogDef, rec: RawRecord, line: Record<string, unknown>, out: Mapped[], depth = 0): void {
    const { source } = rec;
    const found = logBody(log, line);
    const unit = log.unit === 'entry' ? 'entries' : `${log.unit ?? 'line'}s`;
    if (found.kind === 'none') {
      this.count(`${log.title} ${unit} that are not events`);
      out.push(this.at(rec, { kind: 'filtered', source, line: rec.line, reason: found.reason }));
      return;
    }
    if (found.kind === 'broken') {
      out.push(this.at(rec, { kind: 'invalid', source, line: rec.line, field: found.at, reason: found.reason }));
      return;
    }
    const { body, at } = found;
    const where = rec.within !== undefined ? `${rec.within}[].${at}` : at;
    let from: RawRecord = found.replaced && !rec.replaced ? { ...rec, replaced: true } : rec;
    // What the receiver's log says of the delivery (its headers): the id of a retry, the event's type.
    const wrapper = deliveryOf(log, line);
    if (wrapper) from = { ...from, wrapper };
    if (Array.isArray(body)) {
      body.forEach((b, i) => {
        if (b !== null && typeof b === 'object' && !Array.isArray(b)) {
          const one = { ...from, item: this.peekItem(source, rec.line, rec.item) };
          this.pushJson(one, formValues(b as Record<string, unknown>), out, log, where);
        } else
          out.push({
            kind: 'invalid',
            source,
            line: rec.line,
            item: this.itemFor(source, rec.line, rec.item),
            reason: `${at}: item ${i + 1} is not a JSON object`,
          });
      });
      return;
    }
    // A line of another log inside this one (a container's log of an application's JSON lines) is unwrapped too.
    const inner = depth === 0 ? recognizeLog(body) : undefined;
    if (inner) return this.pushLogLine(inner, from, body, out, depth + 1);
    // A decoded form logged with each value in a list of one is read as the form it was.
    return this.pushJson(from, formValues(body), out, log, where);
  }

  private pushSource(
    def: SourceDef,
    rec: RawRecord,
    fields: Record<string, unknown>,
    out: Mapped[],
    log: LogDef | undefined,
  ): void {
    const title = log ? `${def.title} (in a ${log.title})` : def.title;
    const { source, line } = rec;
    let events: unknown[] = [fields];
    if (def.reads === 'json' && def.events) {
      const list = eventList(fields, parsePath(def.events));
      if (!list) {
        this.count(title);
        out.push(
          this.at(rec, {
            kind: 'invalid',
            source,
            line,
            field: def.events,
            reason: `a ${def.title} with no list of events in '${def.events}'`,
          }),
        );
        return;
      }
      if (list.length === 0) {
        this.count(title);
        out.push(
          this.at(rec, { kind: 'filtered', source, line, reason: `a ${def.title} with no events in '${def.events}'` }),
        );
        return;
      }
      events = list;
    }
    const mapper = this.mapperFor(def);
    const several = events.length > 1 || (def.reads === 'json' && !!def.events);
    events.forEach((ev, i) => {
      this.count(title);
      const item =
        several || rec.item !== undefined ? this.itemFor(source, line, i === 0 ? rec.item : undefined) : undefined;
      if (ev === null || typeof ev !== 'object' || Array.isArray(ev)) {
        const m: Mapped = {
          kind: 'invalid',
          source,
          line,
          reason: `${def.reads === 'json' ? def.events : 'event'} item ${i + 1} is not a JSON object`,
        };
        if (item !== undefined) m.item = item;
        out.push(m);
        return;
      }
      const event = def.prepare ? def.prepare(ev as Record<string, unknown>) : (ev as Record<string, unknown>);
      this.o.onEvent?.(log ? { def, log, event } : { def, event });
      const one: RawRecord = { kind: 'record', source, line, fields: event };
      if (item !== undefined) one.item = item;
      if (rec.replaced) one.replaced = true;
      const m = mapper(one);
      const skip = def.skip?.find((s) => s.when.test(event));
      if (!skip) {
        if (m.kind === 'invalid') {
          const why = def.explain?.find((s) => s.when.test(event));
          if (why) m.reason = `${why.reason} (${m.reason})`;
        }
        return out.push(m);
      }
      const f: Mapped = { kind: 'filtered', source, line, reason: skip.reason };
      if (item !== undefined) f.item = item;
      if (m.key !== undefined) f.key = m.key;
      if (m.kind === 'event' && m.naturalKey) f.naturalKey = m.naturalKey;
      out.push(f);
    });
  }

  // A reject that the input's source says is not a record at all: a report's footer line, a plain line of a log.
  private notARecord(r: RawReject): Mapped | undefined {
    if (r.notJson && this.o.log) {
      this.count('log lines that are not JSON');
      return { kind: 'filtered', source: r.source, line: r.line, reason: 'not an event: a log line that is not JSON' };
    }
    // The short row as the record it would be, its missing cells empty.
    const headers = this.headers;
    if (!r.cells || !headers) return undefined;
    if (this.csv === undefined) this.csv = recognizeCsv(headers) ?? null;
    const def = this.csv;
    if (!def?.skip) return undefined;
    const row: Record<string, unknown> = {};
    headers.forEach((h, i) => (row[h] = r.cells![i] ?? ''));
    const skip = def.skip.find((s) => s.when.test(row));
    if (!skip) return undefined;
    this.count(def.title);
    return { kind: 'filtered', source: r.source, line: r.line, reason: skip.reason };
  }

  private headers: string[] | undefined;

  private mapperFor(def: SourceDef): Mapper {
    let m = this.mappers.get(def.name);
    if (!m) {
      m = createMapper(
        { ...this.o.map, config: mergeMapping(def, this.o.map.config), fromPreset: true },
        { hashLater: true },
      );
      this.mappers.set(def.name, m);
    }
    return m;
  }

  private at(rec: RawRecord, m: Mapped): Mapped {
    if (rec.item !== undefined && m.item === undefined) m.item = this.itemFor(rec.source, rec.line, rec.item);
    return m;
  }

  // The events of one line are numbered across it (item), whatever record of the line they come from: a JSON
  // document on one line whose elements each hold a list of leads gives each lead a number of its own.
  private itemAt = { source: '', line: -1, next: 1 };

  // The item of the next event of a line: its record's own number (`floor`: its place in a JSON array, as the reader
  // numbered it), unless events before it on the line took that number already.
  private itemFor(source: string, line: number, floor?: number): number {
    const n = this.peekItem(source, line, floor);
    this.itemAt.next = n + 1;
    return n;
  }

  // The number itemFor would give, not taken: a record made here to be mapped (a log's entry, a body's element)
  // carries it, and its event takes it.
  private peekItem(source: string, line: number, floor?: number): number {
    const at = this.itemAt;
    if (at.source !== source || at.line !== line) this.itemAt = { source, line, next: 1 };
    return Math.max(this.itemAt.next, floor ?? 1);
  }

  private count(title: string): void {
    this.readAs.set(title, (this.readAs.get(title) ?? 0) + 1);
  }
}
