// Event times as leadledger reads them: the same on every machine, whatever its TZ. A time with a zone (Z, +03:00,
// -0300, GMT) is that instant; one without is read in one zone, UTC unless --timezone (or the config's "timezone")
// names another. A date whose day and month could be either way round (03/04/2024) is read in the order its column's
// values show, else in the order given (--date-order, the config's "dateOrder"), else in the default. A date with a
// field out of range (2024-02-30, 13/13/2024, hour 25) is no date at all: JavaScript's Date would roll it over into
// another, and nothing here uses Date to read text.
import { UsageError } from '../errors.js';

/** The order of a date's day and month where its year comes last: day/month (25/12/2024) or month/day (12/25/2024). */
export type DateOrder = 'dmy' | 'mdy';

/** An order in words, for messages and the summary. */
export const ORDER_WORDS: Record<DateOrder, 'day/month' | 'month/day'> = { dmy: 'day/month', mdy: 'month/day' };

/** What a time's text is. */
export type TimeRead =
  /** An instant (ms since the epoch); `zoned`: the text gave its zone (or is an epoch). */
  | { kind: 'time'; ms: number; zoned: boolean }
  /** The text is written as a date, but one of its fields is out of range: no date (the reason says which). */
  | { kind: 'impossible'; reason: string }
  /** Not a date leadledger reads (text, a bare number, a time without a date). */
  | { kind: 'none' };

const DAYS = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
const MONTH_NAMES = [
  'January',
  'February',
  'March',
  'April',
  'May',
  'June',
  'July',
  'August',
  'September',
  'October',
  'November',
  'December',
];

const leap = (y: number): boolean => y % 4 === 0 && (y % 100 !== 0 || y % 400 === 0);

/** The days of a month (1-12) of a year. */
export function daysIn(y: number, m: number): number {
  return m === 2 && !leap(y) ? 28 : DAYS[m - 1]!;
}

// hh:mm[:ss[.fraction]] [AM|PM]
const TIME = String.raw`(\d{1,2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,9}))?)?(?:\s*([AaPp])\.?[Mm]\.?)?`;
// Z, UTC, GMT, +03:00, -0300, +3, GMT-0300: with or without a space before it.
const ZONE = String.raw`(?:\s*(Z|z|(?:UTC|GMT)?[+-]\d{1,2}(?::?\d{2})?|UTC|GMT))?`;
const MONTH = String.raw`(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?`;
const WEEKDAY = String.raw`(?:(?:mon|tue|wed|thu|fri|sat|sun)[a-z]*\.?,?\s+)?`;
const COMMENT = String.raw`(?:\s*\([^)]*\))?`;

// 2024-03-01, 2024-03-01T10:00:00.123-03:00, 2024-03-01 10:00:00, 2024/03/01 10:00
const YEAR_FIRST = new RegExp(String.raw`^(\d{4})([-/.])(\d{1,2})\2(\d{1,2})(?:(?:[Tt]|\s+)${TIME})?${ZONE}$`);
// 25/12/2024, 12/25/2024 10:00 AM, 25.12.2024 10:00, 25-12-2024: day and month in the column's order.
const YEAR_LAST = new RegExp(String.raw`^(\d{1,2})([/.-])(\d{1,2})\2(\d{4})(?:(?:[Tt]|,?\s+)${TIME})?${ZONE}$`);
// Fri, 01 Mar 2024 10:00:00 GMT (RFC 2822), 1 March 2024
const DAY_NAMED = new RegExp(
  String.raw`^${WEEKDAY}(\d{1,2})(?:st|nd|rd|th)?\s+${MONTH},?\s+(\d{4})(?:,?\s+${TIME})?${ZONE}${COMMENT}$`,
  'i',
);
// Tue Mar 05 2024 10:00:00 GMT-0300 (Brasilia Standard Time) (JavaScript's), March 1, 2024 10:00 AM
const NAMED_DAY = new RegExp(
  String.raw`^${WEEKDAY}${MONTH}\s+(\d{1,2})(?:st|nd|rd|th)?,?\s+(\d{4})(?:,?\s+${TIME})?${ZONE}${COMMENT}$`,
  'i',
);
const EPOCH = /^\d{9,13}$/;
const EPOCH_FRACTION = /^(\d{9,10})\.(\d{1,9})$/;

/** The day/month parts of a date written with its year last (25/12/2024: [25, 12]), where it is one. */
export function yearLastParts(raw: string): [number, number] | undefined {
  const m = YEAR_LAST.exec(raw);
  return m ? [Number(m[1]), Number(m[3])] : undefined;
}

/** How a day/month date's text is read: the order, and in words why that one (for messages). */
export interface OrderUsed {
  order: DateOrder;
  why: string;
}

/**
 * Reads a time's text (see the file's head): `order` is asked for the order of day and month only where the text
 * writes its year last; `zone` is where a time without a zone is (an IANA name; 'UTC' reads it as UTC).
 */
export function readTime(raw: string, order: () => OrderUsed, zone: string): TimeRead {
  if (EPOCH.test(raw)) {
    const n = Number(raw);
    return { kind: 'time', ms: raw.length >= 12 ? n : n * 1000, zoned: true };
  }
  const frac = EPOCH_FRACTION.exec(raw);
  if (frac) return { kind: 'time', ms: Number(frac[1]) * 1000 + fractionMs(frac[2]!), zoned: true };
  let m = YEAR_FIRST.exec(raw);
  if (m) return fields(Number(m[1]), Number(m[3]), Number(m[4]), m.slice(5, 11), zone);
  m = YEAR_LAST.exec(raw);
  if (m) {
    const used = order();
    const [a, b] = [Number(m[1]), Number(m[3])];
    const [day, month] = used.order === 'dmy' ? [a, b] : [b, a];
    // A day or month out of range is said with the order it was read in: the order may be what is wrong.
    const bad = badDate(Number(m[4]), month, day);
    if (bad !== undefined) return impossible(`read ${ORDER_WORDS[used.order]} (${used.why}): ${bad}`);
    return fields(Number(m[4]), month, day, m.slice(5, 11), zone);
  }
  m = DAY_NAMED.exec(raw);
  if (m) return fields(Number(m[3]), monthOf(m[2]!), Number(m[1]), m.slice(4, 10), zone);
  m = NAMED_DAY.exec(raw);
  if (m) return fields(Number(m[3]), monthOf(m[1]!), Number(m[2]), m.slice(4, 10), zone);
  return { kind: 'none' };
}

function monthOf(name: string): number {
  const n = name.slice(0, 3).toLowerCase();
  return MONTH_NAMES.findIndex((x) => x.slice(0, 3).toLowerCase() === n) + 1;
}

// Milliseconds of a fraction of a second as written (digits past the third are dropped, as Date.parse drops them).
function fractionMs(digits: string): number {
  return Number((digits + '00').slice(0, 3));
}

// A date's fields, with its time's captures (hh, mm, ss, fraction, a or p, zone), checked and made an instant.
function fields(y: number, mo: number, d: number, t: Array<string | undefined>, zone: string): TimeRead {
  const [hs, ms, ss, fs, ampm, zs] = t;
  const bad = badDate(y, mo, d);
  if (bad !== undefined) return impossible(bad);
  let h = hs === undefined ? 0 : Number(hs);
  const mi = ms === undefined ? 0 : Number(ms);
  const s = ss === undefined ? 0 : Number(ss);
  if (ampm !== undefined) {
    if (h < 1 || h > 12) return impossible(`hour ${h} of a 12-hour clock (${ampm.toUpperCase()}M)`);
    h = (h % 12) + (ampm.toLowerCase() === 'p' ? 12 : 0);
  }
  if (h > 23) return impossible(`hour ${h} is past 23`);
  if (mi > 59) return impossible(`minute ${mi} is past 59`);
  if (s > 59) return impossible(`second ${s} is past 59`);
  const wall = utc(y, mo, d, h, mi, s, fs === undefined ? 0 : fractionMs(fs));
  if (zs === undefined) return { kind: 'time', ms: wallToUtc(wall, zone), zoned: false };
  const offset = offsetOf(zs);
  if (offset === undefined) return impossible(`the zone offset ${zs} is not one (at most ±14:00)`);
  return { kind: 'time', ms: wall - offset, zoned: true };
}

// Why a date is none (its month, or its day in that month, out of range); undefined when it is one.
function badDate(y: number, mo: number, d: number): string | undefined {
  const name = MONTH_NAMES[mo - 1];
  if (name === undefined) return `there is no month ${mo}`;
  if (d < 1 || d > daysIn(y, mo)) return `${name} ${y} has ${daysIn(y, mo)} days, not ${d}`;
  return undefined;
}

function impossible(reason: string): TimeRead {
  return { kind: 'impossible', reason };
}

// An offset's milliseconds east of UTC; undefined when it is out of range.
function offsetOf(z: string): number | undefined {
  const m = /([+-])(\d{1,2})(?::?(\d{2}))?$/.exec(z);
  if (!m) return 0; // Z, UTC, GMT
  const h = Number(m[2]);
  const mi = m[3] === undefined ? 0 : Number(m[3]);
  if (h > 14 || mi > 59) return undefined;
  return (m[1] === '-' ? -1 : 1) * (h * 60 + mi) * 60_000;
}

// The wall-clock time as if it were UTC (years below 100 are not taken for 19xx, as Date.UTC would take them).
function utc(y: number, mo: number, d: number, h: number, mi: number, s: number, ms: number): number {
  const t = new Date(Date.UTC(2000, mo - 1, d, h, mi, s, ms));
  t.setUTCFullYear(y);
  return t.getTime();
}

/** Whether a zone name reads times as UTC without asking the time zone database. */
function isUtc(zone: string): boolean {
  return zone === 'UTC' || zone === 'Etc/UTC' || zone === 'GMT' || zone === 'Etc/GMT';
}

/**
 * The zone as the time zone database names it (America/Sao_Paulo), or a UsageError naming `from` (the flag or the
 * config field) when it knows no such zone.
 */
export function checkTimezone(zone: string, from: string): string {
  const z = zone.trim();
  if (/^utc$/i.test(z)) return 'UTC';
  try {
    return new Intl.DateTimeFormat('en-US', { timeZone: z }).resolvedOptions().timeZone;
  } catch {
    throw new UsageError(
      `${from} '${zone}' is not a time zone: give an IANA name, e.g. America/Sao_Paulo, Europe/Lisbon, UTC`,
    );
  }
}

const formats = new Map<string, Intl.DateTimeFormat>();
// Per zone, its offset for each UTC hour that has one offset all through (null: it changes within that hour).
const hourOffsets = new Map<string, Map<number, number | null>>();
const HOUR = 3_600_000;

// The zone's offset (ms east of UTC) at an instant, from the time zone database.
function offsetAt(zone: string, t: number): number {
  let f = formats.get(zone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      hourCycle: 'h23',
      era: 'short',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    formats.set(zone, f);
  }
  const p: Record<string, string> = {};
  for (const part of f.formatToParts(new Date(t))) p[part.type] = part.value;
  const year = p.era === 'BC' || p.era === 'B' ? 1 - Number(p.year) : Number(p.year);
  const wall = utc(year, Number(p.month), Number(p.day), Number(p.hour), Number(p.minute), Number(p.second), 0);
  return wall - (t - (((t % 1000) + 1000) % 1000));
}

// offsetAt, remembered per UTC hour: an export's times fall in few hours compared with its records.
function cachedOffset(zone: string, t: number): number {
  let hours = hourOffsets.get(zone);
  if (!hours) hourOffsets.set(zone, (hours = new Map<number, number | null>()));
  const h = Math.floor(t / HOUR);
  let o = hours.get(h);
  if (o === undefined) {
    // The same offset at both ends of the hour: the whole hour has it (a zone changes offset at most once an hour).
    const a = offsetAt(zone, h * HOUR);
    o = a === offsetAt(zone, h * HOUR + HOUR - 1) ? a : null;
    if (hours.size >= 100_000) hours.clear();
    hours.set(h, o);
  }
  return o ?? offsetAt(zone, t);
}

/**
 * The instant at which the zone's clocks show `wall` (a wall-clock time taken as if UTC). A time the clocks show twice
 * (when they go back) is the earlier; one they skip (when they go forward) is read with the offset before the skip,
 * which lands as far after it: as Temporal's "compatible" disambiguation and most libraries do.
 */
export function wallToUtc(wall: number, zone: string): number {
  if (isUtc(zone)) return wall;
  const before = cachedOffset(zone, wall - 86_400_000);
  const after = cachedOffset(zone, wall + 86_400_000);
  let best: number | undefined;
  for (const off of before === after ? [before] : [before, after]) {
    const t = wall - off;
    if (cachedOffset(zone, t) === off && (best === undefined || t < best)) best = t;
  }
  return best ?? wall - before;
}

/** Month-first countries: where a date with its year last is written month/day (12/25/2024). */
const MONTH_FIRST = new Set(['US', 'PR', 'GU', 'VI', 'AS', 'MP', 'UM', 'FM', 'MH', 'PW', 'PH']);

/** The order dates are read in where their column's values leave it open, and where it came from in words. */
export interface DefaultOrder {
  order: DateOrder;
  from: string;
}

/**
 * The default order of day and month: --date-order, else the config's dateOrder, else that of the default country
 * when it was given (--default-country or the config: month/day for the US and the few that write dates as it
 * does), else day/month. Never the locale's: a date must read the same on every machine, cron's included.
 */
export function resolveDateOrder(s: {
  flag?: string;
  config?: DateOrder;
  country?: string;
  countryFrom?: string;
}): DefaultOrder {
  if (s.flag !== undefined) {
    if (s.flag !== 'dmy' && s.flag !== 'mdy')
      throw new UsageError(`--date-order takes dmy (25/12/2024) or mdy (12/25/2024), not '${s.flag}'`);
    return { order: s.flag, from: '--date-order' };
  }
  if (s.config) return { order: s.config, from: "the config's dateOrder" };
  const c = s.country?.toUpperCase();
  if (c && MONTH_FIRST.has(c)) return { order: 'mdy', from: `${s.countryFrom ?? 'the default country'} ${c}` };
  return { order: 'dmy', from: 'the default' };
}

/** The order each field path of one input is read in, where its dates showed it (see date-sample.ts). */
export type DateColumns = ReadonlyMap<string, OrderUsed>;
