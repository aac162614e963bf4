// A source's `explain` rules: an event that comes out invalid in a way its source explains (a LinkedIn response
// without its form's questions) says what to do before the mapper's reason; events that map are left alone, and a
// `skip` rule still wins.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { is, missing } from '../../src/presets/conditions.js';
import { Recognizer } from '../../src/presets/recognize.js';
import type { JsonSource } from '../../src/presets/types.js';
import type { Mapped } from '../../src/mapping/types.js';

const def: JsonSource = {
  name: 'test-source',
  title: 'test source',
  docs: [],
  reads: 'json',
  signature: { has: ['items'] },
  events: 'items',
  mapping: { fields: { email: ['contact.email', 'email'] }, key: { path: 'id' } },
  skip: [{ when: is('test', true), reason: 'a test event' }],
  explain: [{ when: missing('contact'), reason: 'no contact: ask for it' }],
};

function decide(items: unknown[]): Mapped[] {
  const r = new Recognizer({ map: { config: {} }, format: 'jsonl', forced: def });
  const out: Mapped[] = [];
  r.push({ kind: 'record', source: 'in.jsonl', line: 1, fields: { items } }, out);
  return out;
}

test("an invalid event an explain rule matches says the rule's reason first, its key and item kept", () => {
  const [a, b] = decide([{ id: 'e1', contact: { email: 'jane.miller@example.com' } }, { id: 'e2' }]);
  assert.equal(a!.kind, 'event');
  assert.deepEqual(b, {
    kind: 'invalid',
    source: 'in.jsonl',
    line: 1,
    item: 2,
    key: 'e2',
    reason: 'no contact: ask for it (no email and no phone: nothing identifies the person)',
  });
});

test('an explain rule never makes an event that maps invalid', () => {
  const [a] = decide([{ id: 'e3', email: 'jane.miller@example.com' }]);
  assert.equal(a!.kind, 'event');
});

test('skip rules win: a test event with no contact is filtered', () => {
  const [a] = decide([{ id: 'e4', test: true }]);
  assert.equal(a!.kind, 'filtered');
  assert.equal(a!.reason, 'a test event');
});
