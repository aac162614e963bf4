// A cell holding several emails or phones of one person (Bitrix24 joins the values of one type in one column, its API
// labels them WORK, HOME, MOBILE): the person's one is taken, with a warning that says which; and a form's response
// that was never finished is no lead.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createMapper } from '../../src/mapping/map-record.js';
import { oneOfSeveral } from '../../src/mapping/several.js';
import type { Mapped } from '../../src/mapping/types.js';

const event = (m: Mapped) => {
  assert.equal(m.kind, 'event', JSON.stringify(m));
  return m as Extract<Mapped, { kind: 'event' }>;
};

test('the value of a cell of several: by label where they have one, else the first; a fax never', () => {
  assert.deepEqual(oneOfSeveral('+55 21 3333-1002, +55 21 3333-1003', 'phone'), { value: '+55 21 3333-1002', of: 2 });
  assert.deepEqual(oneOfSeveral('a@x.com; b@y.com', 'email'), { value: 'a@x.com', of: 2 });
  assert.deepEqual(oneOfSeveral('WORK: +55 21 3333-1002, MOBILE: +55 21 98888-1002', 'phone'), {
    value: '+55 21 98888-1002',
    of: 2,
    label: 'MOBILE',
  });
  assert.deepEqual(oneOfSeveral('HOME: b@y.com, WORK: a@x.com', 'email'), { value: 'a@x.com', of: 2, label: 'WORK' });
  assert.deepEqual(oneOfSeveral('FAX: +55 21 3333-1009 | +55 21 3333-1002', 'phone'), {
    value: '+55 21 3333-1002',
    of: 2,
  });
  assert.deepEqual(oneOfSeveral('WORK: a@x.com', 'email'), { value: 'a@x.com', of: 1, label: 'WORK' });
  assert.equal(oneOfSeveral('a@x.com', 'email'), undefined);
  assert.equal(oneOfSeveral('mailto:a@x.com', 'email'), undefined);
});

test("a lead whose email and phone cells hold several values is sent with the person's, and a warning", () => {
  const map = createMapper({ config: {} });
  const m = event(
    map({
      source: 'leads.csv',
      line: 3,
      fields: {
        ID: '1022',
        'E-mail comercial': '',
        'E-mail pessoal': 'patricia.nunes@example.com.br, pat@example.org',
        'Telefone comercial': '+55 21 3333-1002, +55 21 3333-1003',
      },
    }),
  );
  assert.equal(m.lead.email, 'patricia.nunes@example.com.br');
  assert.equal(m.lead.phone, '+552133331002');
  assert.deepEqual(m.warnings, [
    'E-mail pessoal: 2 values in one cell, the first taken',
    'Telefone comercial: 2 values in one cell, the first taken',
  ]);
  const labelled = event(
    map({
      source: 'leads.csv',
      line: 4,
      fields: { ID: '1023', EMAIL: 'HOME: b@example.org, WORK: a@example.com', PHONE: 'WORK: +55 21 3333-1002' },
    }),
  );
  assert.equal(labelled.lead.email, 'a@example.com');
  assert.equal(labelled.lead.phone, '+552133331002');
});

test("a partial or started response (a form's results download) is filtered; a completed one is a lead", () => {
  const map = createMapper({ config: {} });
  const row = (type: string): Mapped =>
    map({
      source: 'responses.csv',
      line: 2,
      fields: { '#': 'k2v7wq', 'Seu melhor e-mail': 'henrique@example.com.br', 'Response Type': type },
    });
  const partial = row('partial');
  assert.equal(partial.kind, 'filtered');
  assert.match((partial as { reason: string }).reason, /^a partial response \(Response Type: partial\)/);
  assert.equal(row('started').kind, 'filtered');
  assert.equal(row('completed').kind, 'event');
});

test("Excel's scientific notation with a decimal comma is one number whose digits are lost, not two phones", () => {
  assert.equal(oneOfSeveral('5,5119E+12', 'phone'), undefined);
  assert.equal(oneOfSeveral('5.5119e+12', 'phone'), undefined);
  assert.equal(oneOfSeveral('+55 21 3333-1002, +55 21 98888-1002', 'phone')?.of, 2);
});
