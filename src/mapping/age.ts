// Ages written on the command line (--older-than 90d, --since 12h): units that cannot be misread. A bare `m` could be
// minutes or months (`6m` in a retention flag has meant six minutes to one user and six months to the next), so it
// is refused with a hint; months and years count back on the calendar, the rest in fixed lengths.

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/** Each unit an age may be written in, by its spellings. */
const UNITS: Array<{ names: string[]; back: (now: Date, n: number) => Date }> = [
  { names: ['min', 'mins', 'minute', 'minutes'], back: (now, n) => new Date(now.getTime() - n * MINUTE) },
  { names: ['h', 'hr', 'hrs', 'hour', 'hours'], back: (now, n) => new Date(now.getTime() - n * HOUR) },
  { names: ['d', 'day', 'days'], back: (now, n) => new Date(now.getTime() - n * DAY) },
  { names: ['w', 'wk', 'wks', 'week', 'weeks'], back: (now, n) => new Date(now.getTime() - n * 7 * DAY) },
  { names: ['mo', 'mos', 'month', 'months'], back: (now, n) => calendarBack(now, 0, n) },
  { names: ['y', 'yr', 'yrs', 'year', 'years'], back: (now, n) => calendarBack(now, n, 0) },
];

const BY_NAME = new Map(UNITS.flatMap((u) => u.names.map((name) => [name, u] as const)));

/** The units an age may be written in, for messages: "min, h, d, w, mo, y". */
export const AGE_UNITS = UNITS.map((u) => u.names[0]).join(', ');

/**
 * Reads an age (a whole number and a unit: 90d, 12h, 30min, 2w, 6mo, 1y, 3 days) as the time that long before `now`;
 * { error } for a number with a unit that cannot be read (a bare `m`, with a hint); undefined when it is no age at all.
 */
export function readAge(text: string, now: number): Date | { error: string } | undefined {
  const m = /^(\d+)\s*([a-z]+)$/i.exec(text.trim());
  if (!m) return undefined;
  const n = Number(m[1]);
  const unit = m[2]!.toLowerCase();
  if (unit === 'm') return { error: `m is ambiguous: write ${n}min for minutes or ${n}mo for months` };
  const u = BY_NAME.get(unit);
  if (!u) return { error: `'${text.trim()}': ${m[2]} is no unit of age (${AGE_UNITS}, or days, weeks, ...)` };
  return u.back(new Date(now), n);
}

// Back on the calendar, in UTC; a day the target month lacks (31 March less one month) is its last day.
function calendarBack(now: Date, years: number, months: number): Date {
  const total = now.getUTCFullYear() * 12 + now.getUTCMonth() - years * 12 - months;
  const y = Math.floor(total / 12);
  const mo = total - y * 12;
  const last = new Date(Date.UTC(y, mo + 1, 0)).getUTCDate();
  return new Date(
    Date.UTC(
      y,
      mo,
      Math.min(now.getUTCDate(), last),
      now.getUTCHours(),
      now.getUTCMinutes(),
      now.getUTCSeconds(),
      now.getUTCMilliseconds(),
    ),
  );
}
