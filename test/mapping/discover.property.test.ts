// Property: a lead nested at random depth under random wrapper names, written as a list of answers, or inside a JSON
// string (escaped once or twice) or a form body, is found as the flat record's lead: the same decision, email, phone
// and name.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { createMapper } from '../../src/mapping/map-record.js';
import type { Mapped } from '../../src/mapping/types.js';

const map = createMapper({ config: {} });
const mapped = (fields: Record<string, unknown>): Mapped => map({ kind: 'record', source: 's', line: 1, fields });

// Names that say nothing of a person or a thing: letters and digits mixed, so no word of discover.ts matches them.
const wrapperName = fc.stringMatching(/^[a-z][0-9][a-z0-9]{1,6}$/);
const person = fc.record({
  email: fc.constantFrom(
    'ana.souza@example.com',
    'BIA@Example.org',
    'caio+news@example.com.br',
    'dani.o@example.co.uk',
  ),
  name: fc.option(fc.constantFrom('Ana Souza', 'Bia Lima', 'Caio Reis', 'Dani Ó'), { nil: undefined }),
  phone: fc.option(fc.constantFrom('+5511987654321', '+14155550123', '+442079460111'), { nil: undefined }),
});
type Person = { email: string; name?: string; phone?: string };

// The person's fields under the names a form or an export gives them.
function flat(p: Person): Record<string, string> {
  const o: Record<string, string> = { email: p.email };
  if (p.name) o.full_name = p.name;
  if (p.phone) o.phone = p.phone;
  return o;
}

/** The ways a payload may hold the person. */
const shapes = {
  nested: (p: Person, names: string[]) =>
    names.reduceRight<Record<string, unknown>>((inner, n) => ({ [n]: inner, [`${n}0`]: 1 }), flat(p)),
  answers: (p: Person, names: string[]) => ({
    [names[0]!]: Object.entries({ 'Your e-mail': p.email, 'Full name': p.name, 'Mobile phone': p.phone })
      .filter(([, v]) => v !== undefined)
      .map(([label, value], i) => ({ id: `q${i}`, label, value })),
  }),
  json: (p: Person, names: string[]) => ({ [names[0]!]: JSON.stringify(shapes.nested(p, names.slice(1))) }),
  twice: (p: Person, names: string[]) => ({ [names[0]!]: JSON.stringify(JSON.stringify(flat(p))) }),
  form: (p: Person, names: string[]) => ({ [names[0]!]: new URLSearchParams(flat(p)).toString() }),
};

test('a lead nested at any depth, as answers, or inside a string is found as the flat record', () => {
  fc.assert(
    fc.property(
      person,
      fc.array(wrapperName, { minLength: 1, maxLength: 6 }),
      fc.constantFrom(...(Object.keys(shapes) as Array<keyof typeof shapes>)),
      (p, names, how) => {
        const want = mapped({ id: 'e1', ...flat(p) });
        const got = mapped({ id: 'e1', ...shapes[how](p, names) });
        assert.equal(got.kind, want.kind, JSON.stringify(got));
        if (got.kind === 'event' && want.kind === 'event') {
          assert.equal(got.lead.email, want.lead.email);
          assert.equal(got.lead.phone, want.lead.phone);
          assert.equal(got.lead.name, want.lead.name);
          assert.equal(got.naturalKey, want.naturalKey);
        }
      },
    ),
    { numRuns: 400, seed: 34 },
  );
});
