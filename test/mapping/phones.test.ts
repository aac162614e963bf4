import { test } from 'node:test';
import assert from 'node:assert/strict';
import { phoneWarning, readPhone, warningKind, type PhoneReading } from '../../src/mapping/phones.js';

const unreadable = (p: PhoneReading) => {
  assert.equal(p.kind, 'unreadable', JSON.stringify(p));
  return p as Extract<PhoneReading, { kind: 'unreadable' }>;
};

test("Excel's scientific notation is never read as a number: its digits are lost", () => {
  for (const s of ['5,5119E+12', '5.5119E+12', '5.51199E+12', '1E+10', ' 5,5119e+12 ', '5.5E12', "'5,5119E+12"]) {
    for (const country of [undefined, 'BR', 'US']) {
      const p = unreadable(readPhone(s, country));
      assert.equal(p.excel, true, s);
      assert.equal(p.national, false, 'not read as a national number either');
      const text = s.trim().replace(/^'/, '');
      assert.equal(
        p.reason,
        `'${text}' is Excel's scientific notation: its digits are lost (re-export the column as text)`,
      );
    }
  }
  // Digits around an E that are no number Excel writes are read as phones are.
  assert.equal(readPhone('+55 11 98765-4321', 'BR').kind, 'e164');
  assert.equal(unreadable(readPhone('5E', 'BR')).excel, false);
  assert.equal(unreadable(readPhone('E+12', 'BR')).excel, false);
});

test("a leading apostrophe (Excel's and Pipedrive's way to keep a number as text) is stripped, and the phone read as usual", () => {
  assert.deepEqual(readPhone("'+55 11 98765-4321"), { kind: 'e164', value: '+5511987654321', national: false });
  assert.deepEqual(readPhone(" ' +55 11 98765-4321"), { kind: 'e164', value: '+5511987654321', national: false });
  assert.deepEqual(readPhone("'(11) 98765-4321", 'BR'), { kind: 'e164', value: '+5511987654321', national: true });
  const bad = unreadable(readPhone("'12345"));
  assert.equal(bad.text, '12345', 'as written, the apostrophe is no part of the phone');
  assert.match(bad.reason, /^'12345' is not a valid phone number/);
  assert.deepEqual(readPhone("'"), { kind: 'none' }, 'an apostrophe alone is no phone');
});

test('a phone written without a calling code is national: the default country reads it', () => {
  assert.deepEqual(readPhone('(11) 98765-4321', 'BR'), { kind: 'e164', value: '+5511987654321', national: true });
  // Without a plus the default country's rules read it, its international prefix included (00 in Portugal, 011 in
  // the US). From Brazil, 00 is followed by a carrier code, so 0055... is no Brazilian way to write +55.
  assert.deepEqual(readPhone('0055 11 98765-4321', 'PT'), { kind: 'e164', value: '+5511987654321', national: true });
  assert.deepEqual(readPhone('011 55 11 98765-4321', 'US'), { kind: 'e164', value: '+5511987654321', national: true });
  assert.deepEqual(readPhone('+55 11 98765-4321', 'US'), { kind: 'e164', value: '+5511987654321', national: false });
  assert.equal(readPhone('(+55) 11 98765-4321', 'US').kind === 'e164', true);
  assert.equal((readPhone('(+55) 11 98765-4321') as { national: boolean }).national, false, 'a plus anywhere');
  const none = unreadable(readPhone('(11) 98765-4321'));
  assert.equal(none.national, true);
  assert.match(none.reason, /national number: set --default-country/);
  assert.equal(unreadable(readPhone('+55 11 9300', 'BR')).national, false);
});

test('the warning says what became of the phone; Excel notation is always left out', () => {
  const bad = unreadable(readPhone('12345', 'BR'));
  assert.equal(phoneWarning(bad, false), "phone: '12345' is not a valid phone number: left out");
  assert.equal(phoneWarning(bad, true), "phone: '12345' is not a valid phone number: sent as written");
  const excel = unreadable(readPhone('5,5119E+12', 'BR'));
  assert.equal(
    phoneWarning(excel, false),
    "phone: '5,5119E+12' is Excel's scientific notation: its digits are lost (re-export the column as text)",
  );
});

test('a warning is one line, whatever the phone holds', () => {
  const w = phoneWarning(unreadable(readPhone('(11) 98765\n4321\r', 'BR')), false);
  assert.equal(w, "phone: '(11) 98765\\n4321' is not a valid phone number: left out");
  assert.doesNotMatch(w, /[\n\r]/);
});

test('warnings are counted by kind: the phone they quote is taken out, other warnings stay as they are', () => {
  const kinds = new Set<string>();
  for (const [s, country, asWritten] of [
    ['12345', 'BR', false],
    ['999', 'BR', false],
    ["it's 12", 'BR', false],
    ['x'.repeat(500), 'BR', false],
    ['12345', undefined, false],
    ['98765-4321', undefined, false],
    ['12345', 'BR', true],
    ['1E+10', 'BR', false],
    ['5,5119E+12', undefined, true],
  ] as const) {
    const w = phoneWarning(unreadable(readPhone(s, country)), asWritten);
    const kind = warningKind(w);
    assert.ok(kind.startsWith("phone: '…' "), `${w} → ${kind}`);
    assert.ok(!kind.includes(s.slice(0, 20)) || (s === 'x'.repeat(500)) === false, kind);
    kinds.add(kind);
  }
  assert.deepEqual([...kinds].sort(), [
    "phone: '…' is Excel's scientific notation: its digits are lost (re-export the column as text)",
    "phone: '…' is not a valid phone number (national number: set --default-country, e.g. BR): left out",
    "phone: '…' is not a valid phone number: left out",
    "phone: '…' is not a valid phone number: sent as written",
  ]);
  const other = 'name: bytes that are not UTF-8 were replaced by U+FFFD';
  assert.equal(warningKind(other), other);
});
