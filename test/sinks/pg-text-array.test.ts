// The postgres sink builds its text[] parameters itself (textArray): the same literal the pg driver makes of the
// same array, and the same values back out of PostgreSQL's unnest. Against a real PostgreSQL 15
// (test/helpers/postgres.ts); never skipped.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { textArray } from '../../src/sinks/postgres/sink.js';
import { pgDatabase } from '../helpers/postgres.js';

// The driver's own conversion of a parameter (an array becomes its literal).
const { prepareValue } = createRequire(import.meta.url)('pg/lib/utils.js') as {
  prepareValue: (v: unknown) => unknown;
};

// Everything an array literal gives a meaning to, and values that only look like something.
const VALUES: Array<string | null> = [
  'plain',
  'with "quotes"',
  'back\\slash',
  '\\"both\\"',
  'a,b',
  '{braces}',
  ' spaced ',
  'NULL',
  null,
  'tab\tline\nbreak',
  'ação 😀',
  "it's",
  '\\',
  '"',
];

const rowsOf = (values: Array<string | null>) => values.map((v) => ({ values: ['x', v] }));

test('textArray writes the literal the driver writes', () => {
  assert.equal(textArray(rowsOf(VALUES), 1), prepareValue(VALUES));
  assert.equal(textArray(rowsOf(['a']), 1), prepareValue(['a']));
  assert.equal(textArray(rowsOf([null]), 1), prepareValue([null]));
});

test('textArray round-trips every value through PostgreSQL', async () => {
  const db = await pgDatabase('leadledger_text_array');
  const r = await db.query<{ v: string | null }>('SELECT unnest($1::text[]) AS v', [textArray(rowsOf(VALUES), 1)]);
  assert.deepEqual(
    r.rows.map((x) => x.v),
    VALUES,
  );
});
