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

test('emails are held to RFC 5321: 254 characters in all, 64 before the @; a huge value is quoted cut short', () => {
  const local64 = 'a'.repeat(64);
  assert.equal(normalizeEmail(`${local64}@example.com`).ok, true);
  const r65 = normalizeEmail(`${local64}b@example.com`);
  assert.equal(r65.ok, false);
  assert.match(!r65.ok ? r65.reason : '', /has more than 64 characters before the @ \(RFC 5321\)$/);
  const domain = (n: number) => 'd'.repeat(n - 4) + '.com';
  assert.equal(normalizeEmail(`a@${domain(252)}`).ok, true); // 254 in all
  const r255 = normalizeEmail(`a@${domain(253)}`);
  assert.equal(r255.ok, false);
  assert.match(!r255.ok ? r255.reason : '', /is longer than 254 characters \(RFC 5321\)$/);
  const huge = normalizeEmail('x'.repeat(1_000_000) + '@example.com');
  assert.equal(huge.ok, false);
  assert.ok(!huge.ok && huge.reason.length < 200, 'the reason quotes the value cut short');
  assert.match(!huge.ok ? huge.reason : '', /\(1000012 characters\)/);
});
