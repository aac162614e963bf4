// Ages on the command line (--older-than, --since, --until): units that cannot be misread.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readAge } from '../../src/mapping/age.js';
import { parseTimeFlag } from '../../src/commands/ledger/access.js';
import { UsageError } from '../../src/errors.js';

const NOW = Date.parse('2026-03-31T12:00:00.000Z');
const at = (text: string) => {
  const d = readAge(text, NOW);
  return d instanceof Date ? d.toISOString() : d;
};

test('an age counts back from now in min, h, d, w, and on the calendar in mo and y; long forms too', () => {
  assert.equal(at('30min'), '2026-03-31T11:30:00.000Z');
  assert.equal(at('6 minutes'), '2026-03-31T11:54:00.000Z');
  assert.equal(at('12h'), '2026-03-31T00:00:00.000Z');
  assert.equal(at('2hours'), '2026-03-31T10:00:00.000Z');
  assert.equal(at('90d'), '2025-12-31T12:00:00.000Z');
  assert.equal(at('3 days'), '2026-03-28T12:00:00.000Z');
  assert.equal(at('2w'), '2026-03-17T12:00:00.000Z');
  assert.equal(at('1 week'), '2026-03-24T12:00:00.000Z');
  assert.equal(at('6mo'), '2025-09-30T12:00:00.000Z', '31 March less 6 months: the last day of September');
  assert.equal(at('1month'), '2026-02-28T12:00:00.000Z');
  assert.equal(at('14mo'), '2025-01-31T12:00:00.000Z');
  assert.equal(at('1y'), '2025-03-31T12:00:00.000Z');
  assert.equal(at('2 years'), '2024-03-31T12:00:00.000Z');
  assert.equal(at('6D'), '2026-03-25T12:00:00.000Z');
});

test('a bare m is refused with a hint; an unknown unit is named; what is no age at all is left to the date reader', () => {
  assert.deepEqual(at('6m'), { error: 'm is ambiguous: write 6min for minutes or 6mo for months' });
  assert.match((at('3fortnights') as { error: string }).error, /fortnights is no unit of age \(min, h, d, w, mo, y/);
  assert.equal(at('2026-01-01'), undefined);
  assert.equal(at('d'), undefined);
});

test('a time flag refuses 6m with the hint, and takes 2w and 1y', () => {
  assert.throws(
    () => parseTimeFlag('--older-than', '6m', NOW),
    (e: Error) =>
      e instanceof UsageError && e.message === '--older-than: m is ambiguous: write 6min for minutes or 6mo for months',
  );
  assert.equal(parseTimeFlag('--older-than', '2w', NOW).toISOString(), '2026-03-17T12:00:00.000Z');
  assert.equal(parseTimeFlag('--older-than', '1y', NOW).toISOString(), '2025-03-31T12:00:00.000Z');
  assert.throws(() => parseTimeFlag('--since', 'last week', NOW), /--since takes an ISO date or time, or an age/);
});
