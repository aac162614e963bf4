import { test } from 'node:test';
import assert from 'node:assert/strict';
import { normalizeEmail, normalizeName, normalizePhone, splitName } from '../../src/mapping/normalize.js';
import { canonicalJson, differingFields, downstreamKey } from '../../src/mapping/keys.js';

test('emails are trimmed, lower-cased and validated', () => {
  assert.deepEqual(normalizeEmail('  Maria.Silva@Example.COM '), { ok: true, value: 'maria.silva@example.com' });
  assert.deepEqual(normalizeEmail('mailto:a@b.io'), { ok: true, value: 'a@b.io' });
  for (const bad of ['x@', '@b.com', 'a b@c.com', 'a@b', 'a@@b.com', ''])
    assert.equal(normalizeEmail(bad).ok, false, bad);
});

test('phones become E.164; national numbers need a country', () => {
  assert.deepEqual(normalizePhone('+55 11 98765-4321'), { ok: true, value: '+5511987654321' });
  assert.deepEqual(normalizePhone('(11) 98765-4321', 'BR'), { ok: true, value: '+5511987654321' });
  assert.deepEqual(normalizePhone('011 98765-4321', 'BR'), { ok: true, value: '+5511987654321' });
  assert.deepEqual(normalizePhone('+1 (415) 555-2671'), { ok: true, value: '+14155552671' });
  assert.equal(normalizePhone('12345').ok, false);
  assert.equal(normalizePhone('(11) 98765-4321').ok, false);
});

test('names collapse whitespace and split', () => {
  assert.equal(normalizeName('  Ana \t  Maria\n Lima '), 'Ana Maria Lima');
  assert.deepEqual(splitName('Ana Maria Lima'), { firstName: 'Ana', lastName: 'Maria Lima' });
  assert.deepEqual(splitName('Cher'), { firstName: 'Cher' });
});

test('canonical JSON sorts keys at every level', () => {
  assert.equal(
    canonicalJson({ b: 1, a: { d: [2, { f: 1, e: 0 }], c: null } }),
    '{"a":{"c":null,"d":[2,{"e":0,"f":1}]},"b":1}',
  );
});

test('differing fields name what changed, custom fields included', () => {
  assert.deepEqual(
    differingFields({ email: 'a@b.co', phone: '+1' }, { email: 'a@b.co', phone: '+2', custom: { x: '1' } }),
    ['phone', 'custom.x'],
  );
});

test('downstream keys are derived hashes, never the raw key', () => {
  const k = downstreamKey('leadledger', 'evt_1');
  assert.match(k, /^[0-9a-f]{64}$/);
  assert.notEqual(k, downstreamKey('other', 'evt_1'));
});
