// Times as leadledger reads them: every format the mapper accepts, read to the same instant whatever the machine's
// TZ; impossible dates refused with the field out of range; the zone of times without one, DST included.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { readTimeBound } from '../../src/mapping/map-record.js';
import {
  checkTimezone,
  readTime,
  resolveDateOrder,
  wallToUtc,
  yearLastParts,
  type DateOrder,
} from '../../src/mapping/times.js';

const order = (o: DateOrder) => () => ({ order: o, why: 'test' });
const iso = (raw: string, o: DateOrder = 'dmy', zone = 'UTC'): string => {
  const t = readTime(raw, order(o), zone);
  assert.equal(t.kind, 'time', `${raw}: ${JSON.stringify(t)}`);
  return new Date((t as { ms: number }).ms).toISOString();
};

test('every format read: ISO with and without a zone, slashes either way, 12-hour clocks, names, epochs', () => {
  const cases: Array<[string, string, DateOrder?]> = [
    ['2024-03-01T10:00:00Z', '2024-03-01T10:00:00.000Z'],
    ['2024-03-01T10:00:00.123456Z', '2024-03-01T10:00:00.123Z'],
    ['2024-03-01T10:00:00-03:00', '2024-03-01T13:00:00.000Z'],
    ['2025-03-10T12:12:44+0000', '2025-03-10T12:12:44.000Z'],
    ['2025-03-10 09:12:44 -0300', '2025-03-10T12:12:44.000Z'],
    ['2024-03-01 10:00:00 UTC', '2024-03-01T10:00:00.000Z'],
    ['2024-03-01T10:00:00', '2024-03-01T10:00:00.000Z'],
    ['2024-03-01 10:00:00', '2024-03-01T10:00:00.000Z'],
    ['2024-03-01 10:00', '2024-03-01T10:00:00.000Z'],
    ['2024-03-01', '2024-03-01T00:00:00.000Z'],
    ['2024-3-1', '2024-03-01T00:00:00.000Z'],
    ['2024/03/01 10:00', '2024-03-01T10:00:00.000Z'],
    ['25/12/2024 10:00', '2024-12-25T10:00:00.000Z', 'dmy'],
    ['12/25/2024 10:00', '2024-12-25T10:00:00.000Z', 'mdy'],
    ['03/04/2024', '2024-04-03T00:00:00.000Z', 'dmy'],
    ['03/04/2024', '2024-03-04T00:00:00.000Z', 'mdy'],
    ['25.12.2024 10:00:30', '2024-12-25T10:00:30.000Z', 'dmy'],
    ['25-12-2024', '2024-12-25T00:00:00.000Z', 'dmy'],
    ['12/25/2024 12:30 AM', '2024-12-25T00:30:00.000Z', 'mdy'],
    ['12/25/2024 12:30 PM', '2024-12-25T12:30:00.000Z', 'mdy'],
    ['12/25/2024 1:05 pm', '2024-12-25T13:05:00.000Z', 'mdy'],
    ['Fri, 01 Mar 2024 10:00:00 GMT', '2024-03-01T10:00:00.000Z'],
    ['Fri, 01 Mar 2024 10:00:00 +0100', '2024-03-01T09:00:00.000Z'],
    ['Tue Mar 05 2024 10:00:00 GMT-0300 (Brasilia Standard Time)', '2024-03-05T13:00:00.000Z'],
    ['March 1, 2024 10:00 PM', '2024-03-01T22:00:00.000Z'],
    ['1 March 2024', '2024-03-01T00:00:00.000Z'],
    ['1709287200', '2024-03-01T10:00:00.000Z'],
    ['1709287200123', '2024-03-01T10:00:00.123Z'],
    ['1709287200.5', '2024-03-01T10:00:00.500Z'],
    ['0001-01-01T00:00:00', '0001-01-01T00:00:00.000Z'],
  ];
  for (const [raw, want, o] of cases) assert.equal(iso(raw, o), want, raw);
});

test('impossible dates are refused with the field out of range: never rolled over into another date', () => {
  const cases: Array<[string, string, DateOrder?]> = [
    ['2024-02-30', 'February 2024 has 29 days, not 30'],
    ['2023-02-29', 'February 2023 has 28 days, not 29'],
    ['2024-02-30T10:00:00Z', 'February 2024 has 29 days, not 30'],
    ['2026-13-01T00:00:00.000Z', 'there is no month 13'],
    ['2024-00-10', 'there is no month 0'],
    ['2024-03-00', 'March 2024 has 31 days, not 0'],
    ['13/13/2024', 'read day/month (test): there is no month 13', 'dmy'],
    ['31/04/2024', 'read day/month (test): April 2024 has 30 days, not 31', 'dmy'],
    ['25/12/2024', 'read month/day (test): there is no month 25', 'mdy'],
    ['2024-03-01T25:00:00', 'hour 25 is past 23'],
    ['2024-03-01T24:00:00', 'hour 24 is past 23'],
    ['2024-03-01 10:60', 'minute 60 is past 59'],
    ['2024-03-01 10:00:60', 'second 60 is past 59'],
    ['12/25/2024 13:00 PM', 'hour 13 of a 12-hour clock (PM)', 'mdy'],
    ['2024-03-01T10:00:00+15:00', 'the zone offset +15:00 is not one (at most ±14:00)'],
  ];
  for (const [raw, why, o] of cases)
    assert.deepEqual(readTime(raw, order(o ?? 'dmy'), 'UTC'), { kind: 'impossible', reason: why }, raw);
});

test('text that is not a date is none: no guess (Date.parse reads "foo 2024" as 2024-01-01, 45651 as year 45651)', () => {
  for (const raw of ['foo 2024', '45651', '2024', '20240301', '10:30', 'soon', '12/25/24', '2024-03-01T10'])
    assert.deepEqual(readTime(raw, order('dmy'), 'UTC'), { kind: 'none' }, raw);
});

test('a time without a zone is read in the zone given, the same whatever TZ the process has; one with a zone is not', () => {
  assert.equal(iso('2024-03-01 10:00:00', 'dmy', 'America/Sao_Paulo'), '2024-03-01T13:00:00.000Z');
  assert.equal(iso('2024-03-01T10:00:00', 'dmy', 'Asia/Tokyo'), '2024-03-01T01:00:00.000Z');
  assert.equal(iso('2024-03-01', 'dmy', 'America/Sao_Paulo'), '2024-03-01T03:00:00.000Z');
  assert.equal(iso('10/03/2025 09:12', 'dmy', 'America/Sao_Paulo'), '2025-03-10T12:12:00.000Z');
  assert.equal(iso('2024-03-01T10:00:00Z', 'dmy', 'Asia/Tokyo'), '2024-03-01T10:00:00.000Z');
  assert.equal(iso('1709287200', 'dmy', 'Asia/Tokyo'), '2024-03-01T10:00:00.000Z');
  assert.equal(readTime('2024-03-01T10:00:00', order('dmy'), 'UTC').kind, 'time');
  assert.equal((readTime('2024-03-01T10:00:00', order('dmy'), 'UTC') as { zoned: boolean }).zoned, false);
  // Clocks going forward (02:30 does not exist) and back (01:30 happens twice) in New York, 2024.
  assert.equal(iso('2024-03-10T02:30:00', 'dmy', 'America/New_York'), '2024-03-10T07:30:00.000Z');
  assert.equal(iso('2024-11-03T01:30:00', 'dmy', 'America/New_York'), '2024-11-03T05:30:00.000Z');
});

test('every hour of a year in zones with and without DST reads back as the wall clock it was', () => {
  for (const zone of ['America/Sao_Paulo', 'Europe/Lisbon', 'Asia/Kolkata', 'Australia/Lord_Howe']) {
    const f = new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
    });
    for (let t = Date.UTC(2018, 0, 1); t < Date.UTC(2019, 0, 1); t += 3_600_000 + 17 * 60_000) {
      // The wall clock of an instant, read back to the instant: the earlier one where the clock shows it twice.
      const p = Object.fromEntries(f.formatToParts(new Date(t)).map((x) => [x.type, x.value]));
      const wall = Date.UTC(Number(p.year), Number(p.month) - 1, Number(p.day), Number(p.hour), Number(p.minute));
      const back = wallToUtc(wall, zone);
      assert.ok(back === t || (back < t && t - back <= 3_600_000), `${zone}: ${new Date(t).toISOString()}`);
      assert.deepEqual(
        Object.fromEntries(f.formatToParts(new Date(back)).map((x) => [x.type, x.value])),
        p,
        `${zone}: ${new Date(t).toISOString()}`,
      );
    }
  }
});

test('the default order comes from what was said, never from the locale; a time zone must be one', () => {
  assert.deepEqual(resolveDateOrder({}), { order: 'dmy', from: 'the default' });
  assert.deepEqual(resolveDateOrder({ flag: 'mdy', config: 'dmy', country: 'BR' }), {
    order: 'mdy',
    from: '--date-order',
  });
  assert.deepEqual(resolveDateOrder({ config: 'mdy' }), { order: 'mdy', from: "the config's dateOrder" });
  assert.deepEqual(resolveDateOrder({ country: 'us', countryFrom: '--default-country' }), {
    order: 'mdy',
    from: '--default-country US',
  });
  assert.deepEqual(resolveDateOrder({ country: 'BR', countryFrom: '--default-country' }), {
    order: 'dmy',
    from: 'the default',
  });
  assert.throws(() => resolveDateOrder({ flag: 'ymd' }), /--date-order takes dmy \(25\/12\/2024\) or mdy/);
  assert.equal(checkTimezone('utc', '--timezone'), 'UTC');
  assert.equal(checkTimezone('America/Sao_Paulo', '--timezone'), 'America/Sao_Paulo');
  assert.throws(() => checkTimezone('Mars/Olympus', '--timezone'), /--timezone 'Mars\/Olympus' is not a time zone/);
  assert.deepEqual(yearLastParts('25/12/2024 10:00'), [25, 12]);
  assert.equal(yearLastParts('2024-12-25'), undefined);
});

test('--since/--until: ages, dates and times as records are read; an ambiguous day and month needs an order', () => {
  const now = Date.UTC(2026, 9, 10);
  const at = (raw: string, o = {}) => {
    const d = readTimeBound(raw, now, o);
    return d instanceof Date ? d.toISOString() : d.error;
  };
  assert.equal(at('7d'), '2026-10-03T00:00:00.000Z');
  assert.equal(at('2026-10-01'), '2026-10-01T00:00:00.000Z');
  assert.equal(at('2026-10-01T10:00'), '2026-10-01T10:00:00.000Z');
  assert.equal(at('2026-10-01T10:00', { timezone: 'America/Sao_Paulo' }), '2026-10-01T13:00:00.000Z');
  assert.equal(at('2026-10-01T10:00Z', { timezone: 'America/Sao_Paulo' }), '2026-10-01T10:00:00.000Z');
  assert.equal(at('25/12/2025'), '2025-12-25T00:00:00.000Z');
  assert.equal(at('05/05/2025'), '2025-05-05T00:00:00.000Z');
  assert.match(at('03/04/2025'), /could be read day\/month or month\/day/);
  assert.equal(at('03/04/2025', { dateOrder: { order: 'mdy', from: '--date-order' } }), '2025-03-04T00:00:00.000Z');
  assert.equal(at('2025-02-30'), "'2025-02-30' is no date: February 2025 has 28 days, not 30");
  assert.match(at('last week'), /is not a date, time or age/);
});
