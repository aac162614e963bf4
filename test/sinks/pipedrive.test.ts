// The Pipedrive sink against the Pipedrive emulator over real HTTP on 127.0.0.1, every request and answer checked by
// Prism against Pipedrive's OpenAPI documents (pipedrive-contract.ts): a test fails on any violation. One virtual
// clock drives the sink's waits and the emulator's windows and budget, so nothing depends on real time.
import assert from 'node:assert/strict';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, afterEach, before, beforeEach, describe, it } from 'node:test';
import { CredentialsError, UsageError } from '../../src/errors.js';
import type { Lead } from '../../src/mapping/types.js';
import { startPipedriveEmulator, type PipedriveEmulator } from '../../src/sandbox/pipedrive-api.js';
import { HttpClient } from '../../src/sinks/transport/http.js';
import { DailyBudgetError, DAILY_BUDGET_EXIT_CODE } from '../../src/sinks/pipedrive/budget.js';
import { classifyPipedriveStatus, describePipedriveError } from '../../src/sinks/pipedrive/errors.js';
import { readPipedriveOptions, pipedriveBaseUrl } from '../../src/sinks/pipedrive/options.js';
import { leadTitle, pipedrivePerson } from '../../src/sinks/pipedrive/person.js';
import { PipedriveSink, type PipedriveSinkOptions } from '../../src/sinks/pipedrive/pipedrive.js';
import type { SendItem, SinkOutcome } from '../../src/sinks/types.js';
import { startContractProxy, type ContractProxy } from './pipedrive-contract.js';
import { CANARY, item } from './helpers.js';

// Noon UTC: a day's budget does not reset within any test.
const T0 = Date.UTC(2026, 11, 4, 12);
let offset = 0;
const now = (): number => T0 + offset;
const sleeps: number[] = [];
const sleep = async (ms: number): Promise<void> => {
  sleeps.push(ms);
  offset += ms;
};

const lead = (n: number, extra: Partial<Lead> = {}): Lead => ({
  email: `pessoa${n}@example.com.br`,
  name: `Pessoa ${n}`,
  phone: `+55119876500${String(n).padStart(2, '0')}`,
  source: 'facebook',
  ...extra,
});
const items = (from: number, to: number): SendItem[] => {
  const out: SendItem[] = [];
  for (let n = from; n <= to; n++) out.push(item(n, lead(n)));
  return out;
};

describe('Pipedrive sink against the emulator, through a validating proxy of the OpenAPI documents', () => {
  let emu: PipedriveEmulator;
  let proxy: ContractProxy;
  const reasons: string[] = [];
  const opened: PipedriveSink[] = [];
  const sink = (extra: Partial<PipedriveSinkOptions> & { maxRetries?: number; timeoutMs?: number } = {}) => {
    const { maxRetries, timeoutMs, ...rest } = extra;
    const http = new HttpClient({
      now,
      sleep,
      random: () => 1,
      timeoutMs: timeoutMs ?? 5000,
      maxRetries: maxRetries ?? 3,
      baseDelayMs: 100,
    });
    const s = new PipedriveSink({ http, token: CANARY, baseUrl: proxy.url, now, sleep, ...rest });
    opened.push(s);
    return s;
  };
  const keep = (outs: SinkOutcome[]): SinkOutcome[] => {
    for (const o of outs) if ('reason' in o) reasons.push(o.reason);
    return outs;
  };
  const requests = (method: string, path: string) =>
    emu.requests().filter((r) => r.method === method && r.path === path).length;

  before(async () => {
    emu = await startPipedriveEmulator({ token: CANARY, now, logRequests: true, burst: 20, searchBurst: 10 });
    proxy = await startContractProxy(emu.url);
  });
  after(async () => {
    for (const s of opened) await s.close();
    await proxy?.close();
    await emu?.close();
    for (const r of reasons) assert.ok(!r.includes(CANARY), `token leaked in: ${r}`);
  });
  beforeEach(() => {
    emu.reset();
    proxy.clear();
  });
  afterEach(() => {
    assert.deepEqual(proxy.violations(), [], 'Prism found requests or answers that break the OpenAPI documents');
  });

  it('creates persons through API v2, each searched for first, with emails and phones as the spec shapes them', async () => {
    const s = sink();
    const outs = keep(await s.send(items(1, 3)));
    assert.deepEqual(
      outs.map((o) => o.kind),
      ['created', 'created', 'created'],
    );
    const persons = emu.persons();
    assert.equal(persons.length, 3);
    assert.deepEqual(
      outs.map((o) => (o as { crmId?: string }).crmId),
      persons.map((p) => String(p.id)),
    );
    assert.equal(persons[0]?.name, 'Pessoa 1');
    assert.deepEqual(persons[0]?.emails, [{ value: 'pessoa1@example.com.br', primary: true, label: 'work' }]);
    assert.deepEqual(persons[0]?.phones, [{ value: '+5511987650001', primary: true, label: 'mobile' }]);
    assert.equal(requests('GET', '/api/v2/persons/search'), 3);
    assert.equal(requests('POST', '/api/v2/persons'), 3);
    // The token travels in its header only.
    for (const r of emu.requests()) assert.ok(!r.query.includes(CANARY) && !r.query.includes('api_token'));
    assert.ok(proxy.routed().v2 >= 6);
  });

  it('a person Pipedrive already holds settles as exists with its id: a push into an account holding everyone creates nobody', async () => {
    const ids = emu.seed(
      Array.from({ length: 12 }, (_, i) => ({ name: `Pessoa ${i + 1}`, email: `PESSOA${i + 1}@example.com.br` })),
    );
    const s = sink();
    const outs = keep([...(await s.send(items(1, 10))), ...(await s.send(items(11, 12)))]);
    assert.deepEqual(
      outs.map((o) => o.kind),
      Array(12).fill('exists'),
    );
    assert.deepEqual(
      outs.map((o) => (o as { crmId?: string }).crmId),
      ids.map(String),
    );
    assert.equal(emu.persons().length, 12);
    assert.equal(requests('POST', '/api/v2/persons'), 0);
  });

  it('Pipedrive keeps duplicate emails: the oldest person with the email is the one found', async () => {
    const [first] = emu.seed([
      { name: 'Pessoa 1', email: 'pessoa1@example.com.br' },
      { name: 'Pessoa Um', email: 'pessoa1@example.com.br' },
    ]);
    const outs = keep(await sink().send([item(1, lead(1))]));
    assert.deepEqual(outs, [{ kind: 'exists', crmId: String(first) }]);
    assert.equal(emu.persons().length, 2);
  });

  it('two leads of one person in a run make one person, even while the search index lags behind the create', async () => {
    emu.setSearchLag(5000);
    const outs = keep(await sink().send([item(1, lead(1)), item('1b', lead(1, { name: 'Pessoa Um' }))]));
    assert.deepEqual(outs, [
      { kind: 'created', crmId: '1' },
      { kind: 'exists', crmId: '1' },
    ]);
    assert.equal(emu.persons().length, 1);
  });

  it('update mode, and ifExists update, patch the person found; its email list stays as Pipedrive has it', async () => {
    const [id1, id2] = emu.seed([
      { name: 'Old Name', email: ['pessoa1@example.com.br', 'other@example.com'] },
      { name: 'Old Two', email: 'pessoa2@example.com.br' },
    ]);
    const s = sink({ sourceField: 'a'.repeat(40) });
    const upd = item(1, lead(1, { name: 'Pessoa Nova' }), 'update');
    const ifEx: SendItem = { ...item(2, lead(2)), ifExists: 'update' };
    const fresh = item(3, lead(3), 'update');
    const outs = keep(await s.send([upd, ifEx, fresh]));
    assert.deepEqual(outs, [
      { kind: 'updated', crmId: String(id1) },
      { kind: 'updated', crmId: String(id2) },
      { kind: 'created', crmId: '3' },
    ]);
    const p1 = emu.persons().find((p) => p.id === id1);
    assert.equal(p1?.name, 'Pessoa Nova');
    assert.deepEqual(
      p1?.emails.map((e) => e.value),
      ['pessoa1@example.com.br', 'other@example.com'],
    );
    assert.deepEqual(p1?.phones, [{ value: '+5511987650001', primary: true, label: 'mobile' }]);
    assert.deepEqual(p1?.custom_fields, { ['a'.repeat(40)]: 'facebook' });
    assert.equal(requests('PATCH', `/api/v2/persons/${id1}`), 1);
  });

  it('a create whose answer was lost after Pipedrive applied it is found by a search, not sent again: exactly one person', async () => {
    emu.failNext('addPerson', 'commit-then-drop');
    const outs = keep(await sink().send([item(1, lead(1))]));
    assert.equal(outs[0]?.kind, 'created');
    assert.equal(emu.persons().length, 1);
    assert.equal((outs[0] as { crmId?: string }).crmId, String(emu.persons()[0]?.id));
    assert.equal(emu.stats().commitThenDrops, 1);
    assert.equal(requests('POST', '/api/v2/persons'), 1);
  });

  it('when the search after a lost answer cannot see the person yet, the lead is in doubt, and lookup settles it later', async () => {
    emu.setSearchLag(5000);
    emu.failNext('addPerson', 'commit-then-drop');
    const s = sink();
    const outs = keep(await s.send([item(1, lead(1))]));
    assert.equal(outs[0]?.kind, 'unknown');
    assert.match((outs[0] as { reason: string }).reason, /next run looks again/);
    assert.equal(emu.persons().length, 1);
    // The next run: the search index caught up.
    offset += 5000;
    const s2 = sink();
    assert.deepEqual(await s2.lookup('pessoa1@example.com.br'), {
      found: true,
      crmId: String(emu.persons()[0]?.id),
    });
    assert.deepEqual(await s2.lookup('nobody@example.com.br'), { found: false });
    assert.equal(requests('POST', '/api/v2/persons'), 1);
  });

  it('retries a 503 and a 429 (after its Retry-After), creating each person once', async () => {
    emu.failNext('addPerson', '503', { times: 2 });
    emu.failNext('searchPersons', '429', { skip: 1 });
    sleeps.length = 0;
    const outs = keep(await sink().send(items(1, 2)));
    assert.deepEqual(
      outs.map((o) => o.kind),
      ['created', 'created'],
    );
    assert.equal(emu.persons().length, 2);
    assert.equal(emu.stats().sent5xx, 2);
    assert.equal(emu.stats().sent429, 1);
    assert.ok(sleeps.includes(1000), `the 429's Retry-After (1 s) was waited: ${sleeps.join(', ')}`);
  });

  it('retries run out: a failure the next run retries, never a duplicate', async () => {
    emu.failNext('addPerson', '503', { times: 10 });
    const outs = keep(await sink({ maxRetries: 1 }).send([item(1, lead(1))]));
    assert.equal(outs[0]?.kind, 'failed');
    assert.deepEqual(
      { permanent: (outs[0] as { permanent: boolean }).permanent, status: (outs[0] as { status?: number }).status },
      { permanent: false, status: 503 },
    );
    assert.match((outs[0] as { reason: string }).reason, /Pipedrive answered 503: Service Unavailable/);
    assert.equal(emu.persons().length, 0);
  });

  it('keeps to the burst windows the headers tell: 30 leads, no 429', async () => {
    const s = sink({ burst: 40, searchBurst: 40 });
    const outs = keep([
      ...(await s.send(items(1, 10))),
      ...(await s.send(items(11, 20))),
      ...(await s.send(items(21, 30))),
    ]);
    assert.equal(outs.filter((o) => o.kind === 'created').length, 30);
    assert.equal(emu.stats().sent429, 0);
    // 30 searches at 10 per 2 s: at least two windows were waited out.
    assert.ok(sleeps.length > 0);
  });

  it('stops before the daily budget runs out: the rest released, no 429, the reserve left, a distinct error', async () => {
    emu.setBudgetLeft(400);
    const s = sink({ dailyReserve: 200 });
    const outs = keep(await s.send(items(1, 10)));
    const kinds = outs.map((o) => o.kind);
    // Each new person costs a search (20) and a create (5): 400 → 375 → 350 ... stopping above the 200 kept.
    const created = kinds.filter((k) => k === 'created').length;
    assert.ok(created >= 6 && created < 10, kinds.join(','));
    assert.deepEqual(kinds.slice(created), Array(10 - created).fill('released'));
    assert.match(
      (outs[9] as { reason: string }).reason,
      /Pipedrive's daily API budget is nearly spent: \d+ of its 30000 API tokens are left today, and 200 are kept/,
    );
    assert.ok(emu.budgetLeft() >= 200, `left ${emu.budgetLeft()}`);
    assert.equal(emu.stats().sent429, 0);
    assert.equal(emu.persons().length, created);
    assert.ok(s.stopped() instanceof DailyBudgetError);
    assert.equal(s.stopped().exitCode, DAILY_BUDGET_EXIT_CODE);
    // Later batches send nothing.
    const before = emu.stats().requests;
    assert.deepEqual(
      (await s.send(items(11, 12))).map((o) => o.kind),
      ['released', 'released'],
    );
    assert.equal(emu.stats().requests, before);
  });

  it('a budget spent by others under the run: the 429 that says so stops it, the lead released', async () => {
    const s = sink({ dailyReserve: 0, maxRetries: 0 });
    assert.equal((await s.send([item(1, lead(1))]))[0]?.kind, 'created');
    emu.setBudgetLeft(3);
    const outs = keep(await s.send(items(2, 3)));
    assert.deepEqual(
      outs.map((o) => o.kind),
      ['released', 'released'],
    );
    assert.ok(s.stopped() instanceof DailyBudgetError);
    assert.equal(emu.persons().length, 1);
  });

  it('creates a Pipedrive lead through API v1 with each person it creates, titled from the template', async () => {
    const label = '3f0c2b5e-9a4d-4c1e-8b7a-2d6e5f4a3b21';
    const s = sink({ lead: { labelIds: [label], ownerId: 7 } });
    emu.seed([{ name: 'Pessoa 2', email: 'pessoa2@example.com.br' }]);
    const outs = keep(await s.send([item(1, lead(1)), item(2, lead(2)), item(3, lead(3, { source: undefined }))]));
    assert.deepEqual(
      outs.map((o) => o.kind),
      ['created', 'exists', 'created'],
    );
    const leads = emu.leads();
    assert.deepEqual(
      leads.map((l) => [l.title, l.person_id, l.label_ids, l.owner_id]),
      [
        ['Pessoa 1 (facebook)', Number((outs[0] as { crmId: string }).crmId), [label], 7],
        ['Pessoa 3', Number((outs[2] as { crmId: string }).crmId), [label], 7],
      ],
    );
    assert.ok(proxy.routed().v1 >= 2);
  });

  it('a rejected token is a CredentialsError that does not quote it; describe() shows no secret', async () => {
    const s = sink({ token: 'wrong-token-9f8e7d6c5b4a', baseUrl: `${proxy.url}/?k=url-secret-123` });
    await assert.rejects(s.send([item(1, lead(1))]), (e: Error) => {
      assert.ok(e instanceof CredentialsError);
      assert.match(e.message, /Pipedrive answered 401: unauthorized access/);
      assert.ok(!e.message.includes('wrong-token-9f8e7d6c5b4a'));
      return true;
    });
    assert.equal(s.describe(), `Pipedrive at ${proxy.url}/?redacted`);
    assert.ok(!sink().describe().includes(CANARY));
  });

  it('a lead with neither email nor phone fails permanently, sending nothing; no outcome carries the token', async () => {
    const s = sink();
    const outs = keep(await s.send([item(1, { email: `${CANARY}@example.com` }), item(2, { name: 'No Contact' })]));
    assert.equal(outs[0]?.kind, 'created');
    assert.deepEqual(outs[1], {
      kind: 'failed',
      permanent: true,
      reason: 'a lead without email or phone cannot be searched for in Pipedrive, so it is not created',
    });
    assert.equal(emu.stats().requests, 2);
  });

  it('the contract check itself: a request that breaks the document is reported', async () => {
    const res = await fetch(`${proxy.url}/api/v2/persons`, {
      method: 'POST',
      headers: { 'x-api-token': CANARY, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 123 }),
    });
    assert.equal(res.status, 422);
    await res.text();
    assert.equal(proxy.violations().length, 1);
    assert.equal(emu.persons().length, 0);
    proxy.clear();
  });
});

describe('Pipedrive field mapping and options', () => {
  it('maps a lead to a person body, and tells what it cannot hold', () => {
    const { body, notHeld } = pipedrivePerson(
      { email: 'a@x.com', name: 'Ana', lastName: 'Souza', company: 'ACME', source: 'fb', custom: { plan: 'pro' } },
      { customFields: { plan: 'b'.repeat(40) } },
    );
    assert.deepEqual(body, {
      name: 'Ana Souza',
      emails: [{ value: 'a@x.com', primary: true, label: 'work' }],
      custom_fields: { ['b'.repeat(40)]: 'pro' },
    });
    assert.deepEqual(
      notHeld.map((f) => f.field),
      ['source', 'company'],
    );
    assert.deepEqual(
      pipedrivePerson({ email: 'a@x.com', source: 'fb' }, { leadTitle: '{name} ({source})' }).notHeld,
      [],
    );
    assert.equal(pipedrivePerson({ phone: '+5511987650001' }).body.name, '+5511987650001');
    assert.equal(leadTitle('{name} ({source})', { name: 'Ana', source: 'fb' }), 'Ana (fb)');
    assert.equal(leadTitle('{name} ({source})', { name: 'Ana' }), 'Ana');
    assert.equal(leadTitle('{company} - {name}', { email: 'a@x.com' }), '- a@x.com');
  });

  it('classifies Pipedrive answers: credentials, retryable, permanent, in words a user can act on', () => {
    const env401 =
      '{"success":false,"error":"unauthorized access","errorCode":401,"error_info":"Please check developers.pipedrive.com"}';
    assert.equal(classifyPipedriveStatus(401, env401), 'credentials');
    assert.equal(describePipedriveError(401, env401), 'Pipedrive answered 401: unauthorized access');
    assert.equal(classifyPipedriveStatus(403, '{"success":false,"error":"Scope missing"}'), 'credentials');
    // The CDN's block after many 429s: an HTML page, not the envelope; it lifts later.
    assert.equal(classifyPipedriveStatus(403, '<!DOCTYPE html><html>blocked</html>'), 'retryable');
    assert.match(describePipedriveError(403, '<!DOCTYPE html>'), /CDN blocks the token/);
    assert.equal(classifyPipedriveStatus(429, ''), 'retryable');
    assert.equal(classifyPipedriveStatus(502, ''), 'retryable');
    assert.equal(classifyPipedriveStatus(400, '{"success":false,"error":"Name must be given"}'), 'permanent');
    assert.equal(describePipedriveError(404, ''), 'Pipedrive answered 404 with no body');
  });

  it('reads the base URL from a URL, the environment, the domain or the config, and the token by reference', async () => {
    assert.equal(pipedriveBaseUrl('acme'), 'https://acme.pipedrive.com');
    assert.equal(pipedriveBaseUrl('https://ACME.pipedrive.com/'), 'https://acme.pipedrive.com');
    assert.throws(() => pipedriveBaseUrl('evil.com/x'), UsageError);
    const env = { PIPEDRIVE_TOKEN: 'tok-from-env-1234' };
    assert.equal((await readPipedriveOptions({ env, domain: 'acme' })).baseUrl, 'https://acme.pipedrive.com');
    assert.equal(
      (await readPipedriveOptions({ env: { ...env, LEADLEDGER_PIPEDRIVE_URL: 'http://127.0.0.1:9' }, domain: 'acme' }))
        .baseUrl,
      'http://127.0.0.1:9',
    );
    assert.equal(
      (await readPipedriveOptions({ env, url: 'http://127.0.0.1:8', config: { domain: 'acme' } })).baseUrl,
      'http://127.0.0.1:8',
    );
    const fromConfig = await readPipedriveOptions({
      env,
      config: { domain: 'acme', lead: { title: '{name}' }, ownerId: 3, dailyReserve: 10 },
    });
    assert.deepEqual(fromConfig, {
      token: 'tok-from-env-1234',
      baseUrl: 'https://acme.pipedrive.com',
      ownerId: 3,
      dailyReserve: 10,
      lead: { title: '{name}' },
    });
    await assert.rejects(readPipedriveOptions({ env }), /--pipedrive-domain/);
    await assert.rejects(readPipedriveOptions({ env, config: { domain: 'acme', domian: 'x' } }), UsageError);
    await assert.rejects(readPipedriveOptions({ env: {}, domain: 'acme' }), /PIPEDRIVE_TOKEN/);
    const dir = await mkdtemp(join(tmpdir(), 'll-pd-'));
    await writeFile(join(dir, 'token'), 'tok-from-file-5678\n');
    assert.equal(
      (await readPipedriveOptions({ env, domain: 'acme', tokenFile: join(dir, 'token') })).token,
      'tok-from-file-5678',
    );
  });
});
