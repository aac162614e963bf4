import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { after, before, beforeEach, describe, it } from 'node:test';
import { startEmulator, type Emulator } from '../../src/sandbox/emulator.js';
import { runSandbox } from '../../src/sandbox/run-emulator.js';
import { parseRateLimit } from '../../src/sandbox/rolling-window.js';

const TOKEN = 'emu-token-123456';
const auth = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' };

describe('emulator', () => {
  let emu: Emulator;
  // The rate limit's clock: real time, except where a test holds it still.
  let clock: () => number = Date.now;
  const post = (path: string, body: unknown, headers: Record<string, string> = auth) =>
    fetch(`${emu.url}${path}`, {
      method: 'POST',
      headers,
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });
  const create = (emails: string[], trace = true) =>
    post('/crm/v3/objects/contacts/batch/create', {
      inputs: emails.map((email, i) => ({
        properties: { email },
        associations: [],
        ...(trace ? { objectWriteTraceId: `t${i}` } : {}),
      })),
    });
  before(async () => {
    emu = await startEmulator({
      token: TOKEN,
      rateLimit: '20/300ms',
      webhook: { secret: 's3cret-value' },
      now: () => clock(),
    });
  });
  after(() => emu.close());
  beforeEach(() => emu.reset());

  it('401 with the documented body for a wrong token', async () => {
    const r = await post(
      '/crm/v3/objects/contacts',
      { properties: {}, associations: [] },
      { authorization: 'Bearer nope' },
    );
    assert.equal(r.status, 401);
    const body = (await r.json()) as Record<string, unknown>;
    assert.equal(body.category, 'INVALID_AUTHENTICATION');
    assert.equal(body.status, 'error');
    assert.equal(typeof body.correlationId, 'string');
  });

  it('validates request shapes per the spec (associations required) and the 100-input maximum', async () => {
    const r = await post('/crm/v3/objects/contacts/batch/create', { inputs: [{ properties: { email: 'a@x.com' } }] });
    assert.equal(r.status, 400);
    assert.match(((await r.json()) as { message: string }).message, /required attributes are not set \[associations\]/);
    const big = await create(Array.from({ length: 101 }, (_, i) => `p${i}@x.com`));
    assert.equal(big.status, 400);
    const s = await post('/crm/v3/objects/contacts/search', { filterGroups: [] });
    assert.equal(s.status, 400);
  });

  it('sends rate-limit headers and the documented 429 body', async () => {
    let last: Response | undefined;
    // The 21 requests land in one 300 ms window however slowly a loaded machine sends them: the clock stands still,
    // past every earlier test's requests.
    const still = Date.now() + 3_600_000;
    clock = () => still;
    try {
      for (let i = 0; i < 21; i++)
        last = await post('/crm/v3/objects/contacts/search', {
          filterGroups: [],
          properties: [],
          limit: 1,
          after: '0',
          sorts: [],
        });
    } finally {
      clock = Date.now;
    }
    assert.equal(last?.status, 429);
    assert.equal(last?.headers.get('x-hubspot-ratelimit-max'), '20');
    assert.equal(last?.headers.get('x-hubspot-ratelimit-remaining'), '0');
    assert.equal(last?.headers.get('x-hubspot-ratelimit-interval-milliseconds'), '300');
    const body = (await last?.json()) as Record<string, unknown>;
    assert.equal(body.policyName, 'TEN_SECONDLY_ROLLING');
    assert.equal(body.errorType, 'RATE_LIMIT');
    assert.equal(emu.stats().rateLimited, 1);
  });

  it('409 CONFLICT with the existing id; a batch names only the first conflict and stores nothing', async () => {
    await create(['a@x.com', 'b@x.com']);
    const [a, b] = emu.contacts();
    const one = await post('/crm/v3/objects/contacts', { properties: { email: 'A@X.com' }, associations: [] });
    assert.equal(one.status, 409);
    assert.equal(((await one.json()) as { message: string }).message, `Contact already exists. Existing ID: ${a?.id}`);
    const batch = await create(['new@x.com', 'b@x.com', 'a@x.com']);
    assert.equal(batch.status, 409);
    const body = (await batch.json()) as { message: string; category: string };
    assert.equal(body.category, 'CONFLICT');
    assert.equal(body.message, `Contact already exists. Existing ID: ${b?.id}`);
    assert.equal(emu.contacts().length, 2);
  });

  it('a taken value of a unique property: 409 CONFLICT that names no existing id; per input in multi-status', async (t) => {
    for (const conflictMode of ['batch-409', 'multi-status'] as const) {
      const u = await startEmulator({ token: TOKEN, uniqueProperties: ['member_id'], conflictMode });
      t.after(() => u.close());
      const send = (path: string, body: unknown) =>
        fetch(`${u.url}${path}`, { method: 'POST', headers: auth, body: JSON.stringify(body) });
      const input = (email: string, member: string, i: number) => ({
        properties: { email, member_id: member },
        associations: [],
        objectWriteTraceId: `t${i}`,
      });
      const first = await send('/crm/v3/objects/contacts', input('a@x.com', 'M-1', 0));
      assert.equal(first.status, 201);
      const one = await send('/crm/v3/objects/contacts', input('b@x.com', 'M-1', 0));
      assert.equal(one.status, 409);
      const body = (await one.json()) as { category: string; message: string };
      assert.equal(body.category, 'CONFLICT');
      assert.equal(
        body.message,
        'Property member_id must have a unique value: "M-1" is already used by another contact',
      );
      const batch = await send('/crm/v3/objects/contacts/batch/create', {
        inputs: [input('c@x.com', 'M-2', 0), input('d@x.com', 'M-1', 1), input('e@x.com', 'M-2', 2)],
      });
      if (conflictMode === 'batch-409') {
        assert.equal(batch.status, 409);
        assert.doesNotMatch(((await batch.json()) as { message: string }).message, /Existing ID/);
        assert.equal(u.contacts().length, 1, 'a whole-batch 409 stores nothing');
      } else {
        assert.equal(batch.status, 207);
        const b = (await batch.json()) as {
          results: unknown[];
          errors: Array<{ category: string; message: string; context: { objectWriteTraceId: string[] } }>;
        };
        assert.equal(b.results.length, 1);
        assert.deepEqual(
          b.errors.map((e) => [e.category, e.context.objectWriteTraceId[0], /Existing ID/.test(e.message)]),
          [
            ['CONFLICT', 't1', false],
            ['CONFLICT', 't2', false],
          ],
          'taken by a contact, and by an earlier input of the same batch',
        );
        assert.equal(u.contacts().length, 2);
      }
    }
  });

  it('invalid email: 207 with trace ids, whole-batch 400 without', async () => {
    const ms = await create(['ok@x.com', 'x@']);
    assert.equal(ms.status, 207);
    const body = (await ms.json()) as {
      numErrors: number;
      errors: Array<{ message: string; context: { objectWriteTraceId: string[] } }>;
    };
    assert.equal(body.numErrors, 1);
    assert.deepEqual(body.errors[0]?.context.objectWriteTraceId, ['t1']);
    assert.match(
      body.errors[0]?.message ?? '',
      /^Property values were not valid: \[\{"isValid":false,"message":"Email address x@ is invalid","error":"INVALID_EMAIL","name":"email"\}\]$/,
    );
    const whole = await create(['ok2@x.com', 'x@'], false);
    assert.equal(whole.status, 400);
    assert.equal(((await whole.json()) as { category: string }).category, 'VALIDATION_ERROR');
    const unknown = await post('/crm/v3/objects/contacts', {
      properties: { email: 'p@x.com', shoe_size: '42' },
      associations: [],
    });
    assert.match(((await unknown.json()) as { message: string }).message, /PROPERTY_DOESNT_EXIST/);
    assert.equal(emu.contacts().length, 1);
  });

  it('upsert by email, get by id and by email, search EQ email', async () => {
    await create(['a@x.com']);
    const id = emu.contacts()[0]?.id ?? '';
    const up = await post('/crm/v3/objects/contacts/batch/upsert', {
      inputs: [
        { id: 'a@x.com', idProperty: 'email', properties: { company: 'Acme' } },
        { id: 'b@x.com', idProperty: 'email', properties: {} },
      ],
    });
    const res = ((await up.json()) as { results: Array<{ id: string; new: boolean }> }).results;
    assert.deepEqual(
      res.map((r) => r.new),
      [false, true],
    );
    assert.equal(res[0]?.id, id);
    const byEmail = await fetch(`${emu.url}/crm/v3/objects/contacts/A%40x.com?idProperty=email`, { headers: auth });
    assert.equal(((await byEmail.json()) as { id: string }).id, id);
    assert.equal((await fetch(`${emu.url}/crm/v3/objects/contacts/${id}`, { headers: auth })).status, 200);
    assert.equal((await fetch(`${emu.url}/crm/v3/objects/contacts/999`, { headers: auth })).status, 404);
    const s = await post('/crm/v3/objects/contacts/search', {
      filterGroups: [{ filters: [{ propertyName: 'email', operator: 'EQ', value: 'B@x.com' }] }],
      properties: ['email'],
      limit: 1,
      after: '0',
      sorts: [],
    });
    const found = (await s.json()) as { total: number; results: Array<{ properties: { company?: string } }> };
    assert.equal(found.total, 1);
  });

  it('webhook receiver: HMAC checked, Idempotency-Key honoured when configured', async () => {
    const raw = JSON.stringify({ a: 1 });
    const sig = `sha256=${createHmac('sha256', 's3cret-value').update(raw).digest('hex')}`;
    assert.equal((await post('/webhook', raw, { 'x-leadledger-signature': 'sha256=00' })).status, 401);
    const ok = await post('/hooks/a', raw, { 'x-leadledger-signature': sig, 'idempotency-key': 'k1' });
    assert.deepEqual(await ok.json(), { id: 'wh_1' });
    await post('/hooks/a', raw, { 'x-leadledger-signature': sig, 'idempotency-key': 'k1' });
    assert.equal(emu.webhookReceived().deliveries.length, 2);
    emu.configureWebhook({ honourIdempotencyKey: true });
    const r1 = await post('/webhook', raw, { 'x-leadledger-signature': sig, 'idempotency-key': 'k2' });
    const r2 = await post('/webhook', raw, { 'x-leadledger-signature': sig, 'idempotency-key': 'k2' });
    assert.deepEqual(await r2.json(), await r1.json());
    assert.equal(r2.headers.get('idempotent-replayed'), 'true');
    assert.equal(emu.webhookReceived().deliveries.length, 3);
    assert.equal(emu.webhookReceived().requests, 5);
  });

  it('admin endpoints drive faults, stats, contacts and reset from another process', async () => {
    await post('/__admin/faults', { script: ['503'], retryAfter: '1' }, {});
    const r = await create(['a@x.com']);
    assert.equal(r.status, 503);
    assert.equal(r.headers.get('retry-after'), '1');
    await create(['a@x.com']);
    const contacts = (await (await fetch(`${emu.url}/__admin/contacts`)).json()) as unknown[];
    assert.equal(contacts.length, 1);
    const stats = (await (await fetch(`${emu.url}/__admin/stats`)).json()) as { sent5xx: number; requests: number };
    assert.equal(stats.sent5xx, 1);
    assert.equal(stats.requests, 2);
    assert.deepEqual(await (await fetch(`${emu.url}/__admin/webhooks`)).json(), { deliveries: [], requests: 0 });
    await post('/__admin/reset', {}, {});
    assert.equal(emu.contacts().length, 0);
  });

  it('logs requests when asked; a request with no route is answered 404 quoting its target', async (t) => {
    const e = await startEmulator({ token: TOKEN, logRequests: true });
    t.after(() => e.close());
    const ok = await fetch(`${e.url}/crm/v3/objects/contacts/batch/create?hapikey=k-1`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({ inputs: [{ properties: { email: 'a@x.com' }, associations: [] }] }),
    });
    assert.equal(ok.status, 201, 'a query string does not change the route');
    const miss = await fetch(`${e.url}/crm/v2/contacts?hapikey=k-1`, { headers: auth });
    assert.equal(miss.status, 404);
    assert.equal(((await miss.json()) as { message: string }).message, 'no route GET /crm/v2/contacts?hapikey=k-1');
    await fetch(`${e.url}/__admin/stats`);
    assert.deepEqual(e.requests(), [
      { method: 'POST', path: '/crm/v3/objects/contacts/batch/create', query: '?hapikey=k-1' },
      { method: 'GET', path: '/crm/v2/contacts', query: '?hapikey=k-1' },
    ]);
    e.reset();
    assert.deepEqual(e.requests(), []);
    await fetch(`${emu.url}/crm/v3/objects/contacts/1`, { headers: auth });
    assert.deepEqual(emu.requests(), [], 'nothing is logged unless asked');
  });

  it('seeded random faults are reproducible', async () => {
    const run = async (): Promise<number[]> => {
      const e = await startEmulator({ seed: 42, faults: { error5xxRate: 0.5 } });
      const statuses: number[] = [];
      for (let i = 0; i < 10; i++)
        statuses.push((await fetch(`${e.url}/webhook`, { method: 'POST', body: '{}' })).status);
      await e.close();
      return statuses;
    };
    const a = await run();
    assert.deepEqual(a, await run());
    assert.ok(a.includes(503) && a.includes(201));
  });

  it('search index lag hides fresh contacts', async () => {
    const lag = await startEmulator({ searchLagMs: 10_000 });
    const h = { authorization: 'Bearer any', 'content-type': 'application/json' };
    await fetch(`${lag.url}/crm/v3/objects/contacts`, {
      method: 'POST',
      headers: h,
      body: JSON.stringify({ properties: { email: 'a@x.com' }, associations: [] }),
    });
    const s = await fetch(`${lag.url}/crm/v3/objects/contacts/search`, {
      method: 'POST',
      headers: h,
      body: JSON.stringify({ filterGroups: [], properties: [], limit: 10, after: '0', sorts: [] }),
    });
    assert.equal(((await s.json()) as { total: number }).total, 0);
    await lag.close();
  });
});

describe('sandbox command', () => {
  it('parses rate limits', () => {
    assert.deepEqual(parseRateLimit('100/10s'), { max: 100, intervalMs: 10_000 });
    assert.deepEqual(parseRateLimit('5/250ms'), { max: 5, intervalMs: 250 });
    assert.throws(() => parseRateLimit('fast'));
  });

  it('prints the URL and admin endpoints and stops on abort', async () => {
    const lines: string[] = [];
    const ac = new AbortController();
    const done = runSandbox({
      port: 0,
      tokenEnv: 'SANDBOX_TOKEN',
      env: { SANDBOX_TOKEN: 'tok-abcdef' },
      rateLimit: '100/10s',
      latency: 1,
      log: (l) => lines.push(l),
      signal: ac.signal,
    });
    while (!lines.some((l) => l.includes('listening'))) await new Promise((r) => setTimeout(r, 10));
    const url = /listening on (\S+)/.exec(lines[0] ?? '')?.[1] ?? '';
    const r = await fetch(`${url}/crm/v3/objects/contacts/1`, { headers: { authorization: 'Bearer tok-abcdef' } });
    assert.equal(r.status, 404);
    assert.equal(r.headers.get('x-hubspot-ratelimit-max'), '100');
    assert.ok(lines.some((l) => l.includes('/__admin/stats')));
    assert.ok(!lines.join('\n').includes('tok-abcdef'));
    ac.abort();
    await done;
    assert.ok(lines.at(-1)?.includes('stopped'));
  });
});
