// The emulator's batch read and batch update (as HubSpot's contacts v3 OpenAPI document defines them) and its seeded portal: what the
// HubSpot sink meets on a CRM that already holds the people.
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { startEmulator, type Emulator } from '../../src/sandbox/emulator.js';

const TOKEN = 'emu-token-batch-read';
const auth = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' };

interface BatchBody {
  status: string;
  results: Array<{ id: string; properties: Record<string, string>; objectWriteTraceId?: string }>;
  numErrors?: number;
  errors?: Array<{ status: string; category: string; message: string; context: { ids: string[] } }>;
}

describe('emulator: batch read by email, batch update by id, a seeded portal', () => {
  let emu: Emulator;
  const post = (path: string, body: unknown) =>
    fetch(`${emu.url}${path}`, { method: 'POST', headers: auth, body: JSON.stringify(body) });
  const read = (ids: string[], extra: Record<string, unknown> = {}) =>
    post('/crm/v3/objects/contacts/batch/read', {
      inputs: ids.map((id) => ({ id })),
      idProperty: 'email',
      properties: ['email'],
      propertiesWithHistory: [],
      ...extra,
    });
  before(async () => {
    emu = await startEmulator({ token: TOKEN, rateLimit: '5/10s' });
  });
  after(() => emu.close());
  beforeEach(() => emu.reset());

  it('POST /__admin/contacts seeds people without using the rate limit', async () => {
    const r = await fetch(`${emu.url}/__admin/contacts`, {
      method: 'POST',
      body: JSON.stringify([{ properties: { email: 'Ana@X.io', firstname: 'Ana' } }, { email: 'bo@x.io' }]),
    });
    assert.equal(r.status, 200);
    assert.deepEqual(await r.json(), { ok: true, stored: 2 });
    assert.deepEqual(
      emu.contacts().map((c) => c.properties.email),
      ['ana@x.io', 'bo@x.io'],
    );
    assert.equal(emu.stats().requests, 0);
    assert.equal(
      emu.seed([{ email: 'ana@x.io' }, { email: 'cy@x.io' }]),
      1,
      'a person already held is not stored twice',
    );
  });

  it('batch read by email: 200 when every input is held, with the id and the properties asked for', async () => {
    emu.seed([{ email: 'ana@x.io', firstname: 'Ana' }, { email: 'bo@x.io' }]);
    const r = await read(['ANA@x.io', 'bo@x.io']);
    assert.equal(r.status, 200);
    const b = (await r.json()) as BatchBody;
    assert.equal(b.status, 'COMPLETE');
    const ids = new Map(emu.contacts().map((c) => [c.properties.email, c.id]));
    assert.deepEqual(
      b.results.map((x) => [x.id, x.properties.email]),
      [
        [ids.get('ana@x.io'), 'ana@x.io'],
        [ids.get('bo@x.io'), 'bo@x.io'],
      ],
    );
    assert.equal(b.results[0]!.properties.firstname, undefined, 'only the properties asked for');
    assert.equal(b.results[0]!.properties.hs_object_id, ids.get('ana@x.io'));
  });

  it('batch read: 207 MULTI_STATUS naming the emails not found in one OBJECT_NOT_FOUND error', async () => {
    emu.seed([{ email: 'ana@x.io' }]);
    const r = await read(['ana@x.io', 'nobody@x.io', 'none@x.io']);
    assert.equal(r.status, 207);
    const b = (await r.json()) as BatchBody;
    assert.equal(b.results.length, 1);
    assert.equal(b.numErrors, 1);
    assert.equal(b.errors![0]!.category, 'OBJECT_NOT_FOUND');
    assert.deepEqual(b.errors![0]!.context.ids, ['nobody@x.io', 'none@x.io']);
  });

  it('batch read validates the shape the spec requires, and counts against the rate limit like any request', async () => {
    const r = await post('/crm/v3/objects/contacts/batch/read', { inputs: [{ id: 'a@x.io' }], properties: [] });
    assert.equal(r.status, 400);
    assert.match(((await r.json()) as { message: string }).message, /not set \[propertiesWithHistory\]/);
    const big = await read(Array.from({ length: 101 }, (_, i) => `p${i}@x.io`));
    assert.equal(big.status, 400);
    const odd = await read(['a@x.io'], { idProperty: 'firstname' });
    assert.equal(odd.status, 400);
    const last = await read(['a@x.io']);
    assert.equal(last.headers.get('x-hubspot-ratelimit-remaining'), '1');
    assert.equal((await read(['a@x.io'])).status, 207);
    assert.equal((await read(['a@x.io'])).status, 429);
  });

  it('batch update by id: values overwritten, 207 for ids it does not hold, 400 for an unknown property', async () => {
    emu.seed([{ email: 'ana@x.io', firstname: 'A' }]);
    const id = emu.contacts()[0]!.id;
    const r = await post('/crm/v3/objects/contacts/batch/update', {
      inputs: [
        { id, properties: { firstname: 'Ana' }, objectWriteTraceId: 't1' },
        { id: '999999', properties: { firstname: 'X' } },
      ],
    });
    assert.equal(r.status, 207);
    const b = (await r.json()) as BatchBody;
    assert.deepEqual(
      b.results.map((x) => [x.id, x.properties.firstname, x.objectWriteTraceId]),
      [[id, 'Ana', 't1']],
    );
    assert.deepEqual(b.errors![0]!.context.ids, ['999999']);
    assert.equal(emu.contacts()[0]!.properties.firstname, 'Ana');
    const bad = await post('/crm/v3/objects/contacts/batch/update', {
      inputs: [{ id, properties: { nope: 'x' } }],
    });
    assert.equal(bad.status, 400);
  });
});
