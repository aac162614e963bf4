import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  canonicalEmail,
  normalizeEmail,
  normalizeName,
  normalizePhone,
  splitName,
} from '../../src/mapping/normalize.js';
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
  // Three labels of 63 characters (RFC 1035's most), then one that makes up the length, then .com.
  const domain = (n: number) => ('d'.repeat(63) + '.').repeat(3) + 'd'.repeat(n - 4 - 192) + '.com';
  assert.equal(normalizeEmail(`a@${domain(252)}`).ok, true); // 254 in all
  const r255 = normalizeEmail(`a@${domain(253)}`);
  assert.equal(r255.ok, false);
  assert.match(!r255.ok ? r255.reason : '', /is longer than 254 characters \(RFC 5321\)$/);
  const huge = normalizeEmail('x'.repeat(1_000_000) + '@example.com');
  assert.equal(huge.ok, false);
  assert.ok(!huge.ok && huge.reason.length < 200, 'the reason quotes the value cut short');
  assert.match(!huge.ok ? huge.reason : '', /\(1000012 characters\)/);
});

test('one person, one address: NFC and NFD, a Unicode domain and its punycode, are one canonical form', () => {
  const nfc = normalizeEmail('jos\u00e9@x.com');
  const nfd = normalizeEmail('jose\u0301@x.com');
  assert.deepEqual(nfc, { ok: true, value: 'jos\u00e9@x.com' });
  assert.deepEqual(nfd, nfc);
  assert.deepEqual(normalizeEmail('JOSE\u0301@X.com'), nfc);
  assert.deepEqual(normalizeEmail('foo@bücher.example'), { ok: true, value: 'foo@xn--bcher-kva.example' });
  assert.deepEqual(normalizeEmail('Foo@BU\u0308CHER.example'), { ok: true, value: 'foo@xn--bcher-kva.example' });
  assert.deepEqual(normalizeEmail('foo@xn--bcher-kva.example'), { ok: true, value: 'foo@xn--bcher-kva.example' });
  assert.deepEqual(normalizeEmail('ana@xn--80ak6aa92e.xn--p1ai'), { ok: true, value: 'ana@xn--80ak6aa92e.xn--p1ai' });
  assert.deepEqual(normalizeEmail('ana@пример.рф'), { ok: true, value: 'ana@xn--e1afmkfd.xn--p1ai' });
  // An ASCII address is written as it always was: lower-cased, nothing else.
  assert.deepEqual(normalizeEmail("O'Brien+Tag@Sub.Example-1.COM"), {
    ok: true,
    value: "o'brien+tag@sub.example-1.com",
  });
});

test('emails are held to RFC 5321/5322: dot-atoms, LDH labels, a top-level domain of letters; the reason says why', () => {
  const why: Array<[string, string]> = [
    ['a..b@x.com', 'two dots in a row'],
    ['a@x..com', 'two dots in a row'],
    ['.a@x.com', 'it starts with a dot'],
    ['a.@x.com', 'a dot right before the @'],
    ['a@.x.com', 'a dot right after the @'],
    ['a@x.com.', 'it ends with a dot'],
    ['a@-x.com', "the domain's label '-x' starts with a hyphen"],
    ['a@x-.com', "the domain's label 'x-' ends with a hyphen"],
    ['a@x.123', "the top-level domain '123' is a number"],
    ['a@x.c', "the top-level domain 'c' is not two or more letters (or an xn-- label)"],
    ['a@b', "the domain 'b' has no dot (name.tld)"],
    ['a@@b.com', 'more than one @'],
    ['ab.com', 'no @'],
    ['x@', 'nothing after the @'],
    ['@b.com', 'nothing before the @'],
    ['a b@c.com', 'a space before the @'],
    ['a"b@c.com', `'"' before the @`],
    ['a\u00a0b@c.com', 'U+00A0 before the @'],
    ['a@x_y.com', "'_' after the @"],
    ['a@x%41.com', "'%' after the @"],
    ['a@xn--abc.com', 'the domain is not a valid internationalized domain name (IDNA)'],
    [`a@${'d'.repeat(64)}.com`, `the domain's label '${'d'.repeat(30)}…' is longer than 63 characters`],
  ];
  for (const [bad, reason] of why)
    assert.deepEqual(normalizeEmail(bad), { ok: false, reason: `'${bad}' is not a valid email address: ${reason}` });
});

// Letters of several scripts, combining marks, capitals whose lower case decomposes, IDNA's mappings (ẞ, ｃ, 。).
const LOCAL_PARTS = [
  'ana',
  'José',
  'jose\u0301',
  'ÅSA',
  'A\u030asa',
  'İ',
  'K',
  'ß',
  'müller',
  'o.brien',
  'a+b',
  'x-y_z',
];
const DOMAINS = ['x.com', 'X.COM', 'bücher.example', 'BU\u0308CHER.example', 'xn--bcher-kva.example', 'ẞ.de'];
const MORE_DOMAINS = ['пример.рф', 'xn--80ak6aa92e.xn--p1ai', 'ab--cd.com', 'a。b.com', 'x.ｃom', 'ドメイン.テスト'];

test('the canonical form is a fixed point, and the same for every Unicode normalization form of an address', () => {
  fc.assert(
    fc.property(fc.constantFrom(...LOCAL_PARTS), fc.constantFrom(...DOMAINS, ...MORE_DOMAINS), (l, d) => {
      const r = normalizeEmail(`${l}@${d}`);
      assert.ok(r.ok, `${l}@${d}`);
      assert.deepEqual(normalizeEmail(r.value), r, 'normalizing twice changes nothing');
      for (const form of ['NFC', 'NFD'] as const)
        assert.deepEqual(normalizeEmail(`${l}@${d}`.normalize(form)), r, form);
      assert.match(r.value.slice(r.value.indexOf('@')), /^@[a-z0-9.-]+$/, 'the domain is ASCII');
    }),
    { seed: 20261202, numRuns: 300 },
  );
});

// Addresses of the shapes the shortcuts decide at the edges: parts of atext, empty parts (a dot too many), hyphens
// and xn-- at either end of labels, capitals, a stray character that is refused, labels of 63 and 64 characters.
const PART = fc.constantFrom(
  'a',
  'Z9',
  "o'b+t",
  '',
  '-',
  'x-',
  '-y',
  'xn--',
  'xn--bcher-kva',
  'ab--c',
  '_',
  ' ',
  '%41',
  // Past ASCII: the full rule for the local part, the shortcut for a plain domain.
  'joão',
  'jose\u0301',
  'ÅSA',
);
const LABEL = fc.constantFrom(
  'x',
  'com',
  'CO',
  'c',
  '1',
  '123',
  '-a',
  'a-',
  'xn--p1ai',
  'xn--abc',
  'XN--BCHER-KVA',
  'a--b',
  'l'.repeat(63),
  'l'.repeat(64),
);
const EMAILISH = fc
  .tuple(
    fc.array(PART, { minLength: 1, maxLength: 3 }),
    fc.array(LABEL, { maxLength: 4 }),
    fc.constantFrom('@', '@@', ''),
  )
  .map(([local, domain, at]) => local.join('.') + at + domain.join('.'));

test('the shortcuts for plain addresses and plain domains answer as the full rule does', () => {
  let accepted = 0;
  fc.assert(
    fc.property(EMAILISH, (v) => {
      const r = normalizeEmail(v);
      const full = canonicalEmail(v.trim(), true);
      if (r.ok) {
        accepted++;
        assert.equal(full, r.value, v);
      } else if (!/longer than|more than 64/.test(r.reason)) assert.equal(typeof full, 'object', v);
    }),
    { seed: 20261203, numRuns: 5000 },
  );
  assert.ok(accepted > 100, `${accepted} valid addresses among those tried`);
});
