// Reading records as the tools that made them wrote them: each record (or a CSV export's header) is recognized by
// its source's signature, its events are taken out one by one (a body with several leads, a log line that holds a
// webhook body), mapped with that source's paths and key, and those the source marks as not leads are filtered
// with the reason (where the source wrote a lead in a way that cannot be read, its invalid reason says what to do).
// A record no source claims is mapped by field names, as always.
import type { Config } from '../mapping/config.js';
import { getPath, normalizeHeader, parsePath, type FieldPath } from '../mapping/fields.js';
import { createMapper, mapItem, type MapOptions, type Mapper } from '../mapping/map-record.js';
import type { Mapped } from '../mapping/types.js';
import { formBody, formValues } from '../sources/select-path.js';
import type { RawItem, RawRecord, RawReject } from '../sources/types.js';
import { LOGS, SOURCES } from './catalog.js';
import type { CsvSignature, CsvSource, JsonSignature, JsonSource, LogDef, SourceDef } from './types.js';

/** The source a record is recognized as, where one is: checked in catalog order, the first that matches. */
export function recognizeJson(record: Record<string, unknown>): JsonSource | undefined {
  for (const s of SOURCES) if (s.reads === 'json' && matchesJson(record, s.signature)) return s;
  return undefined;
}

/** The logger whose line this is, where it is one. */
export function recognizeLog(record: Record<string, unknown>): LogDef | undefined {
  for (const l of LOGS) if (matchesJson(record, l.signature)) return l;
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
  { has: FieldPath[]; equals: Array<[FieldPath, Set<string>]>; lacks: FieldPath[] }
>();

function matchesJson(record: Record<string, unknown>, sig: JsonSignature): boolean {
  let c = compiled.get(sig);
  if (!c) {
    c = {
      has: sig.has.map(parsePath),
      equals: Object.entries(sig.equals ?? {}).map(([p, vs]) => [parsePath(p), new Set(vs.map(String))]),
      lacks: (sig.lacks ?? []).map(parsePath),
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
  return true;
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
  /** The input's format: a CSV input's header is recognized once, a JSON record each time. */
  format: 'csv' | 'json' | 'jsonl';
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
      const filtered = this.notARecord(item);
      out.push(filtered ?? mapItem(this.generic, item));
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

  private pushJson(rec: RawRecord, fields: Record<string, unknown>, out: Mapped[], log: LogDef | undefined): void {
    const forced = this.o.forced;
    if (forced?.reads === 'json') return this.pushSource(forced, rec, fields, out, log);
    if (!log) {
      const l = recognizeLog(fields);
      if (l) return this.pushLogLine(l, rec, fields, out);
    }
    const source = recognizeJson(fields);
    if (source) return this.pushSource(source, rec, fields, out, log);
    if (log) this.count(`events in a ${log.title}, read by field names`);
    this.o.onEvent?.(log ? { log, event: fields } : { event: fields });
    out.push(this.generic(fields === rec.fields ? rec : { ...rec, fields }));
  }

  // A log line: the webhook body its handler logged, recognized as any record; a line without one is not an event.
  private pushLogLine(log: LogDef, rec: RawRecord, line: Record<string, unknown>, out: Mapped[]): void {
    const { source } = rec;
    for (const at of log.bodies) {
      let body = getPath(line, parsePath(at));
      let replaced = rec.replaced === true;
      if (typeof body === 'string') {
        const text = body.trim();
        // A form the handler logged as it came (application/x-www-form-urlencoded), or a JSON body.
        const form = formBody(text);
        if (form) {
          body = form.value;
          replaced ||= form.replaced;
        } else if (!text.startsWith('{') && !text.startsWith('[')) continue;
        else
          try {
            body = JSON.parse(text);
          } catch (e) {
            out.push(
              this.at(rec, {
                kind: 'invalid',
                source,
                line: rec.line,
                field: at,
                reason: `${at}: the logged body is not whole JSON (${(e as Error).message})`,
              }),
            );
            return;
          }
      }
      const from: RawRecord = replaced && !rec.replaced ? { ...rec, replaced: true } : rec;
      // An empty body is none: Express's body-parser gives a GET `{}`, and a list with no events yields nothing.
      if (body === null || typeof body !== 'object' || Object.keys(body).length === 0) continue;
      if (Array.isArray(body)) {
        body.forEach((b, i) => {
          const one = { ...from, item: i + 1 };
          if (b !== null && typeof b === 'object' && !Array.isArray(b))
            this.pushJson(one, formValues(b as Record<string, unknown>), out, log);
          else
            out.push({
              kind: 'invalid',
              source,
              line: rec.line,
              item: i + 1,
              reason: `${at}: item ${i + 1} is not a JSON object`,
            });
        });
        return;
      }
      // A decoded form logged with each value in a list of one is read as the form it was.
      return this.pushJson(from, formValues(body as Record<string, unknown>), out, log);
    }
    this.count(`${log.title} lines that are not events`);
    out.push(
      this.at(rec, {
        kind: 'filtered',
        source,
        line: rec.line,
        reason: `not an event: a ${log.title} line with no webhook body (${log.bodies.join(', ')})`,
      }),
    );
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
      const item = several || rec.item !== undefined ? this.nextItem(source, line) : undefined;
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
      m = createMapper({ ...this.o.map, config: mergeMapping(def, this.o.map.config) }, { hashLater: true });
      this.mappers.set(def.name, m);
    }
    return m;
  }

  private at(rec: RawRecord, m: Mapped): Mapped {
    if (rec.item !== undefined && m.item === undefined) m.item = this.nextItem(rec.source, rec.line);
    return m;
  }

  // The events of one line are numbered across it (item), whatever record of the line they come from: a JSON
  // document on one line whose elements each hold a list of leads gives each lead a number of its own.
  private itemAt = { source: '', line: -1, next: 1 };

  private nextItem(source: string, line: number): number {
    const at = this.itemAt;
    if (at.source !== source || at.line !== line) this.itemAt = { source, line, next: 1 };
    return this.itemAt.next++;
  }

  private count(title: string): void {
    this.readAs.set(title, (this.readAs.get(title) ?? 0) + 1);
  }
}
