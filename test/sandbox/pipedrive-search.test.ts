// The Pipedrive emulator's exact email search: an index look-up that must answer as the scan it replaces does,
// through a person's email change too (the sink searches by email before every create).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PipedriveApi } from '../../src/sandbox/pipedrive-api.js';

function ids(api: PipedriveApi, q: string): number[] {
  const r = api.searchPersons(new URLSearchParams(q));
  assert.equal(r.status, 200);
  return (r.body as { data: { items: Array<{ item: { id: number } }> } }).data.items.map((i) => i.item.id);
}

test('exact email search finds every holder, case-insensitively, in id order, and follows an email change', () => {
  const api = new PipedriveApi();
  const [a, b, c] = api.seed([
    { name: 'Ana', email: 'Ana@Example.com' },
    { name: 'Bia', email: ['bia@example.com', 'ana@example.com'] },
    { name: 'Caio', email: 'caio@example.com' },
  ]);
  assert.deepEqual(ids(api, 'term=ana@example.com&fields=email&exact_match=true'), [a, b]);
  assert.deepEqual(ids(api, 'term=ANA@EXAMPLE.COM&fields=email&exact_match=true'), [a, b]);
  assert.deepEqual(ids(api, 'term=ana@example.com&fields=email&exact_match=true&limit=1'), [a]);
  assert.equal(api.updatePerson(b!, { emails: [{ value: 'bia@example.org', primary: true }] }).status, 200);
  assert.deepEqual(ids(api, 'term=ana@example.com&fields=email&exact_match=true'), [a]);
  assert.deepEqual(ids(api, 'term=bia@example.org&fields=email&exact_match=true'), [b]);
  assert.deepEqual(ids(api, 'term=bia@example.com&fields=email&exact_match=true'), []);
  // Not exact, or other fields: still the scan.
  assert.deepEqual(ids(api, 'term=example.com&fields=email'), [a, c]);
  api.reset();
  assert.deepEqual(ids(api, 'term=caio@example.com&fields=email&exact_match=true'), []);
});

test('an exact email search in an account of 20,000 persons looks at the index, not every person', () => {
  const api = new PipedriveApi();
  api.seed(Array.from({ length: 20_000 }, (_, i) => ({ name: `P${i}`, email: `p${i}@example.com` })));
  // Count the persons a search reads: the scan reads all 20,000; the index one.
  const people = (api as unknown as { people: Map<number, unknown> }).people;
  let reads = 0;
  const values = people.values.bind(people);
  people.values = () => {
    reads++;
    return values();
  };
  assert.equal(ids(api, 'term=p19999@example.com&fields=email&exact_match=true').length, 1);
  assert.equal(reads, 0);
});
