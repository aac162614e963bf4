// RawRecord → LeadEvent | invalid | filtered: find the fields, normalize them, derive the keys, apply filters.
import type { RawItem, RawRecord } from '../sources/types.js';
import type { Config } from './config.js';
import {
  FIELD_NAMES,
  configuredPath,
  fieldPathOf,
  getPath,
  member,
  parsePath,
  pathText,
  plainPath,
  planFields,
  readField,
  scalarText,
  sameShape,
  shapeKeys,
  shapeOf,
  type FieldName,
  type FieldPath,
  type FieldPlan,
  type Shape,
  innerObjects,
  wrapperObjects,
} from './fields.js';
import { canonicalLeadJson, contentKey, payloadHashOfJson } from './keys.js';
import { discoverPerson, type Discovered, type Found } from './discover.js';
import { screenedKey, screenPair, screenType } from './screen.js';
import { normalizeEmail, normalizeName } from './normalize.js';
import { mayHoldSeveral, oneOfSeveral, type OneOfSeveral } from './several.js';
import { readAge } from './age.js';
import { phoneWarning, readPhone, type InvalidPhonePolicy } from './phones.js';
import {
  checkTimezone,
  readTime,
  resolveDateOrder,
  yearLastParts,
  type DateColumns,
  type DefaultOrder,
  type OrderUsed,
} from './times.js';
import type { Lead, MapReject, Mapped } from './types.js';

/** Options of the mapping stage, from flags and the config file. */
export interface MapOptions {
  config: Config;
  /**
   * The config is a source definition's mapping (a preset's, merged with the user's): the preset knows its source's
   * events, and the generic filters of records that say they are no lead (screen.ts) hold only where it names
   * neither the email nor the phone.
   */
  fromPreset?: boolean;
  /**
   * ISO 3166 code for national phone numbers: the command resolves it (flag, config, locale: default-country.ts);
   * without it the config's defaultCountry applies.
   */
  defaultCountry?: string;
  /** Accepted event types (flag wins over config). */
  types?: string[];
  /** Only events at or after this time. */
  since?: Date;
  /** Only events before this time. */
  until?: Date;
  /** The zone of times written without one (an IANA name, checked): --timezone; else the config's; else UTC. */
  timezone?: string;
  /**
   * The order of day and month where a date's column does not show it (resolveDateOrder: --date-order, the config,
   * the default country); without it, the config's dateOrder or defaultCountry decide, else day/month.
   */
  dateOrder?: DefaultOrder;
  /**
   * The order of each field path of the input being read whose dates showed it (date-sample.ts), decided before its
   * first record: a stream's records are decided one by one, and the first of them must not be read otherwise.
   */
  dateColumns?: DateColumns;
  /** Sees every time read that is not canonical UTC, with the path it was read from and its record's line. */
  onTime?: (path: string, raw: string, line: number) => void;
}

const LEAD_TEXT_FIELDS = ['company', 'source'] as const;

/**
 * Builds the function that maps raw records; field plans are cached per record shape. With `hashLater`, events
 * keyed by their own id carry an empty payloadHash: the block encoder's readers take it from leadJson only where
 * they need it (a key the ledger holds, an event being sent), which most records of an audit are not.
 */
export function createMapper(opts: MapOptions, { hashLater = false } = {}): Mapper {
  const cfg = opts.config;
  const explicit: Partial<Record<FieldName, readonly string[]>> = {};
  for (const f of FIELD_NAMES) {
    const p = cfg.fields?.[f];
    if (p) explicit[f] = typeof p === 'string' ? [p] : p;
  }
  if (cfg.key && 'path' in cfg.key) explicit.id = [cfg.key.path];
  const keyFields = cfg.key && 'fields' in cfg.key ? cfg.key.fields : undefined;
  // A key made of several values (a source with no event id): each must be there.
  const keyPaths = cfg.key && 'paths' in cfg.key ? cfg.key.paths : undefined;
  // Where neither the config nor a source says where the id is, a log's wrapper may (RawRecord.wrapper): a delivery
  // id in the headers a receiver logged tells a retry (the same id) from a new event about the same order.
  const wrapperKeys = !keyFields && !keyPaths && !explicit.id;
  const custom = Object.entries(cfg.fields?.custom ?? {}).map(([name, p]) => [name, parsePath(p)] as const);
  const country = (opts.defaultCountry ?? cfg.defaultCountry)?.toUpperCase();
  const phonePolicy: InvalidPhonePolicy = cfg.phones?.invalid ?? 'omit';
  const types = opts.types ?? cfg.types;
  // A config (or a source's definition) that names where the email or the phone is: the person is looked for there.
  const discover = !explicit.email && !explicit.phone;
  // The filters of records that say they are no lead (screen.ts: a test flag, a refund, a ping) hold whether the
  // person is found by names, by a config's paths or by discovery: a config init writes decides as push without one.
  // A list of accepted event types (the config's, a source's, --type) replaces them: the user chose; so does a
  // preset that says where its source's person is.
  const screening = !types && (discover || !opts.fromPreset);
  const typeSet = types ? new Set(types) : undefined;
  const zone = opts.timezone ?? (cfg.timezone ? checkTimezone(cfg.timezone, 'the config\'s "timezone"') : 'UTC');
  const defaultOrder =
    opts.dateOrder ??
    resolveDateOrder({
      config: cfg.dateOrder,
      country: cfg.defaultCountry,
      countryFrom: "the config's defaultCountry",
    });
  const defaultUsed: OrderUsed = { order: defaultOrder.order, why: orderWhy(defaultOrder) };
  let columns = opts.dateColumns;
  const onTime = opts.onTime;
  const sinceMs = opts.since?.getTime();
  const untilMs = opts.until?.getTime();
  const timeFilter = sinceMs !== undefined || untilMs !== undefined;
  // Records of one export nearly always share one shape: the last one is checked key by key, without building
  // the shape's string (which profiles showed costing more than the mapping it saves).
  let last: { shape: Shape; plan: CompiledPlan; id: number } | undefined;
  let planIds = 0;
  const planFor = (fields: Record<string, unknown>): CompiledPlan => {
    if (last && sameShape(fields, last.shape)) return last.plan;
    const plan = planBy(fields);
    last = { shape: shapeKeys(fields), plan, id: ++planIds };
    return plan;
  };
  const plans = new Map<string, CompiledPlan>();
  const planBy = (fields: Record<string, unknown>): CompiledPlan => {
    const shape = shapeOf(fields);
    let plan = plans.get(shape);
    if (!plan) {
      const planned = planFields(fields, explicit);
      // Keys that may say a generic record is no lead (a test flag, a status): each record's values are looked at.
      if (screening && wrapperObjects(fields).some((o) => Object.keys(o).some(screenedKey))) planned.screened = true;
      if (!discover) delete planned.complement;
      plan = compilePlan(planned);
      // Shapes are few in real exports; a pathological input must not grow this without bound.
      if (plans.size > 1000) plans.clear();
      plans.set(shape, plan);
    }
    return plan;
  };

  const mapOne = (rec: RawRecord): Mapped => {
    const { source, line, fields } = rec;
    const { plan, read } = planFor(fields);

    let key: string | undefined;
    let idWarning: string | undefined;
    if (keyPaths) {
      // The first value is who or what the event is about and must be there; the others tell its events apart
      // and may be missing (an empty part).
      const parts: string[] = [];
      for (const text of keyPaths) {
        const raw = getPath(fields, configuredPath(fields, text));
        const v = scalarText(raw);
        if (v === undefined && parts.length === 0)
          return { kind: 'invalid', source, line, field: text, reason: `no event id: '${text}' is empty` };
        if (idWarning === undefined && inexactNumber(raw)) idWarning = `${text}: ${INEXACT_ID}`;
        parts.push(v ?? '');
      }
      // A part that JSON rounded could make two events one key (see inexactNumberPath): keyed by content instead.
      key = idWarning === undefined ? parts.join('|') : undefined;
    } else if (wrapperKeys && rec.wrapper?.id !== undefined) {
      key = rec.wrapper.id;
    } else if (!keyFields && plan.id.length > 0) {
      key = at(read.id, fields);
      if (!key) {
        const where = plan.id.map(pathText);
        return { kind: 'invalid', source, line, field: where[0], reason: `no event id in '${where.join("' or '")}'` };
      }
      const inexact = inexactNumberPath(fields, plan.id);
      if (inexact !== undefined) {
        // Two such ids can read as one number (9007199254740993 and ...992 both as ...992): as a key, the second
        // event would be taken for the first. Keyed by its content instead, as an export without ids is.
        key = undefined;
        idWarning = `${inexact}: ${INEXACT_ID}`;
      }
    }

    // The event type a delivery's headers named (x-shopify-topic) is the event's: a body's own `type` may be its
    // resource's (a product's "simple").
    const type = rec.wrapper?.type ?? at(read.type, fields);
    if (typeSet && (!type || !typeSet.has(type))) {
      return { kind: 'filtered', source, line, key, reason: type ? `type ${type} not accepted` : 'no event type' };
    }
    if (screening) {
      // A record that says it is no lead (a test, a refund, a product's event): filtered, with why.
      const why =
        (type !== undefined ? screenType(type) : undefined) ?? (plan.screened ? screenShallow(fields) : undefined);
      if (why !== undefined) return { kind: 'filtered', source, line, key, reason: why };
    }
    const timeRaw = at(read.time, fields);
    // Without --since/--until a canonical UTC time needs no reading at all (see isoTime).
    const canonicalTime =
      timeRaw !== undefined && !timeFilter && timeRaw.length === 24 && ISO_UTC.test(timeRaw) && inRange(timeRaw);
    let timeMs: number | undefined;
    let timeWarn: string | undefined;
    if (timeRaw !== undefined && !canonicalTime) {
      const path = fieldPathOf(fields, plan.time);
      onTime?.(path, timeRaw, line);
      const t = readTime(timeRaw, () => columns?.get(path) ?? defaultUsed, zone);
      if (t.kind === 'time') timeMs = t.ms;
      // A date with a field out of range is no date: never rolled over into another, never sent as one.
      else if (t.kind === 'impossible')
        return {
          kind: 'invalid',
          source,
          line,
          key,
          field: path,
          reason: `${path}: '${timeRaw}' is no date: ${t.reason}`,
        };
      // A warning is one line (a block keeps a record's warnings one a line): line breaks written as \n, as in JSON.
      else timeWarn = `${path}: '${timeRaw}' ${NOT_A_DATE}`.replace(LINE_BREAK, (c) => (c === '\n' ? '\\n' : '\\r'));
    }
    if (sinceMs !== undefined || untilMs !== undefined) {
      if (timeMs === undefined) {
        const why = timeRaw === undefined ? 'no event time' : `time '${timeRaw}' is not a date`;
        return { kind: 'filtered', source, line, key, reason: `${why} (--since/--until)` };
      }
      if (sinceMs !== undefined && timeMs < sinceMs)
        return { kind: 'filtered', source, line, key, reason: 'before --since' };
      if (untilMs !== undefined && timeMs >= untilMs)
        return { kind: 'filtered', source, line, key, reason: 'at or after --until' };
    }

    const lead: Lead = {};
    let emailRaw = at(read.email, fields);
    let phoneRaw = at(read.phone, fields);
    // Neither found by the plan's names: the person may still be anywhere in the record (discover.ts). It reads
    // values, so it runs for this record alone; where the config says where the person is, it does not guess.
    let found: Discovered | undefined;
    const wholeRecord = discover && emailRaw === undefined && phoneRaw === undefined;
    if (wholeRecord) {
      found = discoverPerson(fields, country);
      emailRaw = found.email?.value;
      phoneRaw = found.phone?.value;
    } else if (plan.complement && innerObjects(fields) && (phoneRaw === undefined || !hasName(read, fields))) {
      // The plan found the person but has no place for their phone or name: those may be deeper in the record, by
      // the same person's email (or with no email to tell them apart).
      const more = discoverPerson(fields, country);
      const same = emailRaw === undefined || (more.email !== undefined && sameEmail(more.email.value, emailRaw));
      if (same) {
        found = { others: more.others, ...(more.screen ? { screen: more.screen } : {}) };
        if (phoneRaw === undefined && more.phone) phoneRaw = (found.phone = more.phone).value;
        for (const f of ['name', 'firstName', 'lastName', 'company'] as const) if (more[f]) found[f] = more[f];
      } else if (more.screen) found = { others: [], screen: more.screen };
    }
    if (found?.screen !== undefined) return { kind: 'filtered', source, line, key, reason: found.screen };
    const emailPath = () => found?.email?.path ?? fieldPathOf(fields, plan.email);
    const phonePath = () => found?.phone?.path ?? fieldPathOf(fields, plan.phone);
    // A cell of several values (Bitrix24 joins a person's emails or phones of one type): one is the person's.
    const several: string[] = [];
    const takeOne = (raw: string, field: 'email' | 'phone'): string => {
      const one = oneOfSeveral(raw, field);
      if (!one) return raw;
      several.push(severalNote(field === 'email' ? emailPath() : phonePath(), one));
      return one.value;
    };
    if (emailRaw !== undefined && mayHoldSeveral(emailRaw) && !normalizeEmail(emailRaw).ok)
      emailRaw = takeOne(emailRaw, 'email');
    if (emailRaw !== undefined) {
      if (rec.replaced && emailRaw.includes(REPLACEMENT))
        return { kind: 'invalid', source, line, key, field: emailPath(), reason: ALTERED_EMAIL };
      const e = normalizeEmail(emailRaw);
      if (!e.ok)
        return {
          kind: 'invalid',
          source,
          line,
          key,
          field: emailPath(),
          reason: `email: ${e.reason}`,
        };
      lead.email = e.value;
    }
    let phoneWarn: string | undefined;
    let e164: string | undefined;
    let national = false;
    if (phoneRaw !== undefined) {
      if (rec.replaced && phoneRaw.includes(REPLACEMENT))
        return { kind: 'invalid', source, line, key, field: phonePath(), reason: ALTERED_PHONE };
      let p = readPhone(phoneRaw, country);
      if (p.kind === 'unreadable' && mayHoldSeveral(phoneRaw)) {
        const one = takeOne(phoneRaw, 'phone');
        if (one !== phoneRaw) p = readPhone(one, country);
      }
      if (p.kind === 'e164') {
        lead.phone = e164 = p.value;
        national = p.national;
      } else if (p.kind === 'unreadable') {
        national = p.national;
        // Without an email, the phone was all there was to tell who the person is.
        if (!lead.email) {
          const m: MapReject = {
            kind: 'invalid',
            source,
            line,
            key,
            field: phonePath(),
            reason: `phone: ${p.reason}, and there is no email: nothing identifies the person`,
          };
          if (national) m.nationalPhone = true;
          return m;
        }
        // The lead is kept: its phone left out, or sent as written where the config says so (never Excel's
        // scientific notation, whose digits are gone).
        const asWritten = phonePolicy === 'as-written' && !p.excel;
        if (asWritten) lead.phone = p.text;
        phoneWarn = phoneWarning(p, asWritten);
      }
    }
    if (!lead.email && !lead.phone) {
      if (found?.idsOnly)
        return {
          kind: 'filtered',
          source,
          line,
          key,
          reason: 'holds ids only (a ping, or a notification by reference): no person',
        };
      return { kind: 'invalid', source, line, key, reason: 'no email and no phone: nothing identifies the person' };
    }
    // Found by discovery, the person's name is the one beside their email; a plan's `name` there may be a form's.
    const near = <T>(planned: T | undefined, discovered: T | undefined) =>
      wholeRecord ? (discovered ?? planned) : (planned ?? discovered);
    const first = near(at(read.firstName, fields), found?.firstName?.value);
    const last = near(at(read.lastName, fields), found?.lastName?.value);
    if (first) lead.firstName = normalizeName(first);
    if (last) lead.lastName = normalizeName(last);
    // Found by discovery with first and last names only, the plan's `name` is no surer: the two make the name.
    const planned = wholeRecord && (found?.firstName || found?.lastName) ? undefined : at(read.name, fields);
    const name = near(personName(planned), found?.name?.value);
    if (name) lead.name = normalizeName(name);
    else if (lead.firstName || lead.lastName) lead.name = [lead.firstName, lead.lastName].filter(Boolean).join(' ');
    for (const f of LEAD_TEXT_FIELDS) {
      const v = f === 'company' ? near(at(read[f], fields), found?.company?.value) : at(read[f], fields);
      if (v) lead[f] = normalizeName(v);
    }
    if (custom.length) {
      const c: Record<string, string> = {};
      for (const [n, p] of custom) {
        const v = getPath(fields, p);
        if (v !== undefined && v !== null && v !== '') c[n] = typeof v === 'object' ? JSON.stringify(v) : String(v);
      }
      if (Object.keys(c).length) lead.custom = c;
    }

    const leadJson = canonicalLeadJson(lead);
    const hash = hashLater && key !== undefined ? '' : payloadHashOfJson(leadJson);
    let keyKind: 'id' | 'content' = 'id';
    if (key === undefined) {
      keyKind = 'content';
      if (keyFields) {
        const chosen: Record<string, unknown> = {};
        for (const f of keyFields) chosen[f] = f === 'type' ? type : lead[f];
        key = contentKey(chosen);
      } else {
        // No id: the whole normalized lead is the content, so a re-export of the same row is the same event.
        key = 'c:' + hash;
      }
    }
    const event: Mapped = { kind: 'event', source, line, key, keyKind, payloadHash: hash, lead, leadJson };
    // A phone identifies the person only as a valid E.164 number (one sent as written does not).
    const natural = lead.email ?? e164;
    if (natural) event.naturalKey = natural;
    if (national) event.nationalPhone = true;
    if (type) event.type = type;
    if (canonicalTime) event.occurredAt = timeRaw;
    else if (timeMs !== undefined) event.occurredAt = isoTime(timeRaw!, timeMs);
    if (rec.replaced) {
      const warnings = alteredFields(key, lead);
      if (warnings.length) event.warnings = warnings;
    }
    if (found) (event.warnings ??= []).push(discoveryNote(found));
    if (several.length) (event.warnings ??= []).push(...several);
    if (phoneWarn !== undefined) (event.warnings ??= []).push(phoneWarn);
    if (timeWarn !== undefined) (event.warnings ??= []).push(timeWarn);
    if (idWarning !== undefined) (event.warnings ??= []).push(idWarning);
    return event;
  };
  // A record the mapper cannot take (a custom field nested thousands deep) is one invalid record, never the end of
  // its input: the records after it are still mapped.
  const map = (rec: RawRecord): Mapped => {
    let m: Mapped;
    try {
      m = mapOne(rec);
    } catch (e) {
      const why = e instanceof RangeError ? 'a value is nested too deeply' : (e as Error).message;
      m = { kind: 'invalid', source: rec.source, line: rec.line, reason: `cannot be mapped: ${why}` };
    }
    if (rec.item !== undefined) m.item = rec.item;
    return m;
  };
  const current = () => (last ? { id: last.id, plan: last.plan.plan } : undefined);
  // The fast paths (engine/fast-jsonl.ts, fast-csv.ts) map lines themselves only where every option leaves the
  // lead to the plan.
  const plain = !keyFields && !keyPaths && !custom.length && !typeSet && !timeFilter;
  // The next input's date columns (a mapper that reads several inputs one after another).
  const useDateColumns = (c: DateColumns | undefined): void => {
    columns = c;
  };
  return Object.assign(map, { current, plain, hashLater, useDateColumns });
}

const LINE_BREAK = /[\n\r]/g;

/** The words of a time that is not a date leadledger reads, after the path and the value (see warningKind). */
export const NOT_A_DATE = 'is not a date leadledger reads: the event goes without a time';

// Why dates are read in the default order, in words (after "read day/month (").
function orderWhy(d: DefaultOrder): string {
  if (d.from === 'the default') return 'the default: no date of this field before showed its order';
  return `as ${d.from} says`;
}

// U+FFFD: what a byte that is not UTF-8 becomes when a form body's %XX are decoded (RawRecord.replaced).
const REPLACEMENT = '\ufffd';
const ALTERED_EMAIL = 'email: its bytes are not UTF-8 (the address would be altered by decoding): not sent';
const ALTERED_PHONE = 'phone: its bytes are not UTF-8 (the number would be altered by decoding): not sent';

// The warnings of a lead read from bytes that were not all UTF-8: the fields they altered.
function alteredFields(key: string, lead: Lead): string[] {
  const out: string[] = [];
  const note = (field: string) => out.push(`${field}: bytes that are not UTF-8 were replaced by U+FFFD`);
  if (key.includes(REPLACEMENT)) note('event id');
  for (const f of ['name', 'firstName', 'lastName', 'company', 'source'] as const)
    if (lead[f]?.includes(REPLACEMENT)) note(f);
  for (const [k, v] of Object.entries(lead.custom ?? {})) if (v.includes(REPLACEMENT)) note(`custom.${k}`);
  return out;
}

/**
 * The warning of a lead whose person was found by discovery: where each field was, and by what (a role word, the value
 * itself), and the other emails the record held. Records of one shape give one text, counted once in the summary.
 */
export function discoveryNote(d: Discovered): string {
  const part = (what: string, f: Found | undefined) =>
    f ? `${what} at ${f.path}${f.role ? ` (by role '${f.role}')` : f.by === 'value' ? ' (by its value)' : ''}` : '';
  const parts = [part('email', d.email), part('phone', d.phone), part('name', d.name ?? d.firstName)].filter(Boolean);
  const others = d.others.length ? `; other emails not taken: ${d.others.join(', ')}` : '';
  return `person found by looking through the record: ${parts.join(', ')}${others}`;
}

// The warning of a value taken from a cell of several: where, and which.
function severalNote(path: string, one: OneOfSeveral): string {
  const which = one.label !== undefined ? `the one labelled ${one.label}` : 'the first';
  return one.of > 1 ? `${path}: ${one.of} values in one cell, ${which} taken` : `${path}: ${which} taken`;
}

// Why a record's own keys, or those of its wrappers, say it is no lead (screen.ts), or undefined.
function screenShallow(fields: Record<string, unknown>): string | undefined {
  for (const o of wrapperObjects(fields))
    for (const k in o) {
      const why = screenPair(k, o[k]);
      if (why !== undefined) return why;
    }
  return undefined;
}

// Whether the plan reads a person's name in this record.
function hasName(read: CompiledPlan['read'], fields: Record<string, unknown>): boolean {
  return personName(at(read.name, fields)) !== undefined || at(read.firstName, fields) !== undefined;
}

/** A name as a person's: text with a letter in it ("#1041", an order's name, is none); else undefined. */
export function personName(v: string | undefined): string | undefined {
  return v !== undefined && LETTER.test(v) ? v : undefined;
}

const LETTER = /\p{L}/u;

// Two addresses of one person, as normalizeEmail writes them.
function sameEmail(a: string, b: string): boolean {
  const x = normalizeEmail(a);
  const y = normalizeEmail(b);
  return x.ok && y.ok && x.value === y.value;
}

/** A reader's item mapped: a record by `map`, a reject as an invalid record with the reader's reason. */
export function mapItem(map: (rec: RawRecord) => Mapped, item: RawItem): Mapped {
  if (item.kind === 'record') return map(item);
  // An unread part reaches a mapper only where a caller did not take it aside: never lost, it is at least invalid.
  const reason = item.kind === 'unread' ? `not read from here on: ${item.reason}` : item.reason;
  const m: Mapped = { kind: 'invalid', source: item.source, line: item.line, reason };
  if (item.kind === 'reject' && item.item !== undefined) m.item = item.item;
  return m;
}

/** Maps raw records; also tells which plan it used last (see engine/fast-jsonl.ts). */
export interface Mapper {
  (rec: RawRecord): Mapped;
  /** The plan of the shape the last record had, with an id that changes whenever that shape changes. */
  current(): { id: number; plan: FieldPlan } | undefined;
  /** No option makes a lead depend on more than the plan: no content key fields, custom fields or filters. */
  readonly plain: boolean;
  /** Events keyed by their own id carry an empty payloadHash (createMapper's hashLater). */
  readonly hashLater: boolean;
  /** The date columns of the input mapped from now on (MapOptions.dateColumns): a new input's, or none. */
  useDateColumns(columns: DateColumns | undefined): void;
}

/** A field plan with a reader per field: the path walked by a function made for its length, once per shape. */
interface CompiledPlan {
  plan: FieldPlan;
  read: Record<FieldName, Reader | null>;
}

/** The trimmed text of a scalar field of a record; undefined when absent, empty or not a scalar. */
type Reader = (fields: Record<string, unknown>) => string | undefined;

function compilePlan(plan: FieldPlan): CompiledPlan {
  const read = {} as Record<FieldName, Reader | null>;
  for (const f of FIELD_NAMES) read[f] = readerOf(plan[f]);
  return { plan, read };
}

// A reader for a plan's paths: the first that holds a value gives it. The usual single path of one or two steps is
// walked by a function made for it.
function readerOf(paths: readonly FieldPath[]): Reader | null {
  if (paths.length === 0) return null;
  if (paths.length > 1) return (fields) => readField(fields, paths);
  const p = paths[0]!;
  if (!plainPath(p)) return (fields) => scalarText(getPath(fields, p));
  // Names are matched as getPath matches them: a key differing in case only stands for the path's (see keyOf).
  if (p.length === 1) {
    const a = p[0]!;
    return (fields) => scalarText(member(fields, a));
  }
  if (p.length === 2) {
    const a = p[0]!;
    const b = p[1]!;
    return (fields) => {
      const o = member(fields, a);
      return o !== null && typeof o === 'object' ? scalarText(member(o as Record<string, unknown>, b)) : undefined;
    };
  }
  return (fields) => scalarText(getPath(fields, p));
}

/** The warning of an id that JSON gave as a number too large to be exact (after the id field's path). */
export const INEXACT_ID =
  'a number past 2^53, which JSON rounds: the event is keyed by its content instead (an id written as text is kept whole)';

/**
 * The path of the id, when the first of `paths` that holds a value holds a number that cannot be the id as written:
 * an integer past Number.MAX_SAFE_INTEGER (JSON.parse rounds its last digits), or past the doubles (Infinity).
 */
function inexactNumberPath(fields: Record<string, unknown>, paths: readonly FieldPath[]): string | undefined {
  for (const p of paths) {
    const v = getPath(fields, p);
    if (scalarText(v) === undefined) continue;
    return inexactNumber(v) ? pathText(p) : undefined;
  }
  return undefined;
}

/** A JSON number that does not hold the digits it was written with. */
function inexactNumber(v: unknown): boolean {
  return typeof v === 'number' && (!Number.isFinite(v) || (Number.isInteger(v) && !Number.isSafeInteger(v)));
}

function at(r: Reader | null, fields: Record<string, unknown>): string | undefined {
  return r === null ? undefined : r(fields);
}

const ISO_UTC = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

/**
 * The time as ISO 8601 UTC with milliseconds. A time already written that way, with fields in range, is its own
 * answer (what toISOString would return); others go through a Date.
 */
export function isoTime(raw: string, ms: number): string {
  if (raw.length === 24 && ISO_UTC.test(raw) && inRange(raw)) return raw;
  return new Date(ms).toISOString();
}

const DAYS = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

const num = (s: string, at: number, len: number): number => {
  let n = 0;
  for (let i = at; i < at + len; i++) n = n * 10 + s.charCodeAt(i) - 48;
  return n;
};

// V8's Date.parse rolls "02-30" over into March: the raw text is only kept when every field is in range.
function inRange(iso: string): boolean {
  return timeInRange(num(iso, 0, 4), num(iso, 5, 2), num(iso, 8, 2), num(iso, 11, 2), num(iso, 14, 2), num(iso, 17, 2));
}

/** Whether these fields of a UTC time are all in range (a canonical time that is kept as it is; see isoTime). */
export function timeInRange(y: number, m: number, d: number, hh: number, mm: number, ss: number): boolean {
  if (m < 1 || m > 12 || d < 1 || hh > 23 || mm > 59 || ss > 59) return false;
  const leap = y % 4 === 0 && (y % 100 !== 0 || y % 400 === 0);
  return d <= (m === 2 && !leap ? 28 : DAYS[m - 1]!);
}

/** Options of reading a --since/--until value. */
export interface TimeBoundOptions {
  /** The zone of a time without one (default UTC). */
  timezone?: string;
  /** The order of day and month of a date written with its year last, when one was given; else such a date must not be ambiguous. */
  dateOrder?: DefaultOrder;
}

/**
 * Reads a --since/--until value: an age (7d, 12h, 30min, 2w, 6mo, 1y: age.ts) back from now, or a date or time as records' times are read
 * (a time without a zone in `timezone`, UTC by default); why not, in words, when it is neither. A date whose day and
 * month could be either way round (03/04/2024) takes an order given; without one it is refused, not guessed.
 */
export function readTimeBound(raw: string, now = Date.now(), o: TimeBoundOptions = {}): Date | { error: string } {
  const text = raw.trim();
  const age = readAge(text, now);
  if (age) return age;
  const parts = yearLastParts(text);
  if (parts && parts[0] <= 12 && parts[1] <= 12 && parts[0] !== parts[1] && !o.dateOrder)
    return {
      error: `'${raw}' could be read day/month or month/day: write it year first (e.g. 2026-10-01), or give --date-order`,
    };
  const order = o.dateOrder ?? { order: 'dmy', from: 'the default' };
  const t = readTime(text, () => ({ order: order.order, why: orderWhy(order) }), o.timezone ?? 'UTC');
  if (t.kind === 'time') return new Date(t.ms);
  if (t.kind === 'impossible') return { error: `'${raw}' is no date: ${t.reason}` };
  return { error: `'${raw}' is not a date, time or age (e.g. 2026-10-01, 2026-10-01T12:00:00Z, 7d, 6mo)` };
}

/** Parses a --since/--until value (see readTimeBound; times without a zone are UTC); undefined when it is not one. */
export function parseTimeBound(raw: string, now = Date.now(), o: TimeBoundOptions = {}): Date | undefined {
  const t = readTimeBound(raw, now, o);
  return t instanceof Date ? t : undefined;
}
