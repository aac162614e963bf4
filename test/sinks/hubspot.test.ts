import assert from 'node:assert/strict';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, beforeEach, describe, it } from 'node:test';
import { CredentialsError, UsageError } from '../../src/errors.js';
import { startEmulator, type Emulator } from '../../src/sandbox/emulator.js';
import { HubSpotSink, hubspotContact, leadToHubSpotProperties, nameParts } from '../../src/sinks/hubspot/sink.js';
import { describeHubSpotError, duplicateContactId } from '../../src/sinks/hubspot/errors.js';
import { CANARY, fastClient, item, openSinkFor } from './helpers.js';

describe('HubSpot sink against the emulator', () => {
  let emu: Emulator;
  const errors: string[] = [];
  const sink = (extra: { timeoutMs?: number; maxRetries?: number; token?: string } = {}): HubSpotSink => {
    const { client } = fastClient({
      ...(extra.timeoutMs ? { timeoutMs: extra.timeoutMs } : {}),
      ...(extra.maxRetries !== undefined ? { maxRetries: extra.maxRetries } : {}),
    });
    return new HubSpotSink({ http: client, token: extra.token ?? CANARY, baseUrl: emu.url });
  };
  const reasons = (outs: Array<{ kind: string; reason?: string }>): void => {
    for (const o of outs) if (o.reason) errors.push(o.reason);
  };
  before(async () => {
    emu = await startEmulator({ token: CANARY, customProperties: ['leadledger_source'] });
  });
  after(async () => {
    await emu.close();
    for (const e of errors) assert.ok(!e.includes(CANARY), `token leaked in: ${e}`);
  });
  beforeEach(() => emu.reset());

  it('maps leads to standard properties and splits a full name', () => {
    assert.deepEqual(
      leadToHubSpotProperties({ email: 'a@x.com', name: 'Ana Maria Souza', phone: '+5511987654321', source: 'fb' }),
      {
        email: 'a@x.com',
        firstname: 'Ana',
        lastname: 'Maria Souza',
        phone: '+5511987654321',
      },
    );
    assert.equal(
      leadToHubSpotProperties({ email: 'a@x.com', source: 'fb' }, 'leadledger_source').leadledger_source,
      'fb',
    );
  });

  it('first and last names: the lead’s own, else from the full name; a full name they do not spell is told', () => {
    const names = (lead: { name?: string; firstName?: string; lastName?: string }) => nameParts(lead);
    // An export's "Nome" beside its "Sobrenome": the full name is the first name.
    assert.deepEqual(names({ name: 'Ana', lastName: 'Souza' }), { first: 'Ana', last: 'Souza', nameHeld: true });
    assert.deepEqual(names({ name: 'Ana Souza', lastName: 'Souza' }), { first: 'Ana', last: 'Souza', nameHeld: true });
    assert.deepEqual(names({ name: 'ANA SOUZA', lastName: 'Souza' }), { first: 'ANA', last: 'Souza', nameHeld: true });
    assert.deepEqual(names({ name: 'Souza', lastName: 'Souza' }), { first: undefined, last: 'Souza', nameHeld: true });
    assert.deepEqual(names({ name: 'Ana Maria Souza', firstName: 'Ana' }), {
      first: 'Ana',
      last: 'Maria Souza',
      nameHeld: true,
    });
    assert.deepEqual(names({ name: 'Ana Maria', firstName: 'Ana', lastName: 'Souza' }), {
      first: 'Ana',
      last: 'Souza',
      nameHeld: false,
    });
    assert.deepEqual(names({ name: 'Souza', firstName: 'Ana' }), { first: 'Ana', last: undefined, nameHeld: false });
    assert.deepEqual(names({ firstName: 'Ana' }), { first: 'Ana', last: undefined, nameHeld: true });
    // A custom field never takes the place of a standard one; it is told instead.
    const c = hubspotContact({ email: 'a@x.com', custom: { email: 'b@x.com', firstname: 'Bia', plan: 'pro' } });
    assert.deepEqual(c.properties, { email: 'a@x.com', firstname: 'Bia', plan: 'pro' });
    assert.deepEqual(
      c.notHeld.map((f) => f.field),
      ['custom.email'],
    );
  });

  it('batch-creates contacts and returns their ids in order', async () => {
    const s = sink();
    const out = await s.send([
      item(1, { email: 'a@x.com', name: 'Ana Lee' }),
      item(2, { email: 'B@x.com' }),
      item(3, { email: 'c@x.com', company: 'Acme' }),
    ]);
    assert.deepEqual(
      out.map((o) => o.kind),
      ['created', 'created', 'created'],
    );
    const ids = emu.contacts().map((c) => c.id);
    assert.deepEqual(
      out.map((o) => ('crmId' in o ? o.crmId : undefined)),
      ids,
    );
    assert.equal(emu.contacts()[0]?.properties.lastname, 'Lee');
    await s.close();
  });

  it('throws CredentialsError on 401 without the token in the message', async () => {
    const s = sink({ token: `${CANARY}-wrong` });
    await assert.rejects(s.send([item(1, { email: 'a@x.com' })]), (err: unknown) => {
      assert.ok(err instanceof CredentialsError);
      assert.ok(!err.message.includes(CANARY), err.message);
      assert.match(err.message, /INVALID_AUTHENTICATION/);
      errors.push(err.message);
      return true;
    });
    await s.close();
  });

  it('commit-then-drop: the retry gets 409 and reports exists with the same id, no duplicate', async () => {
    emu.setFaults({ script: ['commit-then-drop'] });
    const s = sink();
    const out = await s.send([item(1, { email: 'a@x.com' })]);
    assert.equal(emu.contacts().length, 1);
    assert.deepEqual(out, [{ kind: 'exists', crmId: emu.contacts()[0]?.id }]);
    assert.equal(emu.stats().commitThenDrops, 1);
    await s.close();
  });

  it('batch 409: settles the named input as exists and resends the rest until done', async () => {
    const s = sink();
    const [first] = await s.send([item(1, { email: 'old1@x.com' })]);
    const [second] = await s.send([item(2, { email: 'old2@x.com' })]);
    const out = await s.send([
      item(3, { email: 'new1@x.com' }),
      item(4, { email: 'OLD2@x.com' }),
      item(5, { email: 'new2@x.com' }),
      item(6, { email: 'old1@x.com' }),
      item(7, { email: 'new3@x.com' }),
    ]);
    assert.deepEqual(
      out.map((o) => o.kind),
      ['created', 'exists', 'created', 'exists', 'created'],
    );
    assert.equal(out[1]?.kind === 'exists' && out[1].crmId, second?.kind === 'created' && second.crmId);
    assert.equal(out[3]?.kind === 'exists' && out[3].crmId, first?.kind === 'created' && first.crmId);
    assert.equal(emu.contacts().length, 5);
    await s.close();
  });

  it('two leads with one email in a batch: one created, the other exists', async () => {
    const s = sink();
    const out = await s.send([item(1, { email: 'a@x.com' }), item(2, { email: 'a@x.com', name: 'Again' })]);
    assert.deepEqual(
      out.map((o) => o.kind),
      ['created', 'exists'],
    );
    assert.equal(emu.contacts().length, 1);
    await s.close();
  });

  it('207 multi-status: an invalid email fails alone with a readable reason', async () => {
    const s = sink();
    const out = await s.send([item(1, { email: 'a@x.com' }), item(2, { email: 'x@' }), item(3, { email: 'c@x.com' })]);
    assert.deepEqual(
      out.map((o) => o.kind),
      ['created', 'failed', 'created'],
    );
    assert.deepEqual(out[1], { kind: 'failed', permanent: true, reason: 'INVALID_EMAIL: Email address x@ is invalid' });
    reasons(out);
    await s.close();
  });

  it('a whole-batch 400 is split so the good leads still go through', async (t) => {
    const strict = await startEmulator({ token: CANARY, multiStatus: false });
    t.after(() => strict.close());
    const { client } = fastClient();
    const s = new HubSpotSink({ http: client, token: CANARY, baseUrl: strict.url });
    const leads = Array.from({ length: 20 }, (_, i) =>
      item(i, {
        email: i === 13 ? 'bad@' : `p${i}@x.com`,
        ...(i === 5 ? { custom: { favourite_colour: 'red' } } : {}),
      }),
    );
    const out = await s.send(leads);
    assert.equal(out.filter((o) => o.kind === 'created').length, 18);
    assert.match(out[13]?.kind === 'failed' ? out[13].reason : '', /^INVALID_EMAIL: Email address bad@ is invalid$/);
    assert.match(
      out[5]?.kind === 'failed' ? out[5].reason : '',
      /^PROPERTY_DOESNT_EXIST: Property "favourite_colour" does not exist$/,
    );
    assert.equal(strict.contacts().length, 18);
    assert.ok(client.stats.requests < 20, `requests: ${client.stats.requests}`);
    reasons(out);
    await s.close();
  });

  it('multi-status conflicts are reported per input', async (t) => {
    const ms = await startEmulator({ token: CANARY, conflictMode: 'multi-status' });
    t.after(() => ms.close());
    const { client } = fastClient();
    const s = new HubSpotSink({ http: client, token: CANARY, baseUrl: ms.url });
    const [a] = await s.send([item(1, { email: 'a@x.com' })]);
    const out = await s.send([item(2, { email: 'a@x.com' }), item(3, { email: 'b@x.com' })]);
    assert.deepEqual(out[0], { kind: 'exists', crmId: a?.kind === 'created' ? a.crmId : 'none' });
    assert.equal(out[1]?.kind, 'created');
    await s.close();
  });

  it('a 409 that is not the duplicate answer fails that lead with the CRM message; the batch around it is created', async (t) => {
    const u = await startEmulator({ token: CANARY, uniqueProperties: ['member_id'] });
    t.after(() => u.close());
    const { client } = fastClient();
    const s = new HubSpotSink({ http: client, token: CANARY, baseUrl: u.url });
    const [seed] = await s.send([item(0, { email: 'a@x.com', custom: { member_id: 'M-1' } })]);
    assert.equal(seed?.kind, 'created');
    const reason = 'CONFLICT: Property member_id must have a unique value: "M-1" is already used by another contact';
    const out = await s.send([
      item(1, { email: 'b@x.com' }),
      item(2, { email: 'c@x.com', custom: { member_id: 'M-1' } }),
      item(3, { email: 'd@x.com' }),
    ]);
    assert.deepEqual(out, [
      { kind: 'created', crmId: u.contacts()[1]?.id },
      { kind: 'failed', permanent: true, reason, status: 409 },
      { kind: 'created', crmId: u.contacts()[2]?.id },
    ]);
    assert.deepEqual(await s.send([item(4, { email: 'e@x.com', custom: { member_id: 'M-1' } })]), [
      { kind: 'failed', permanent: true, reason, status: 409 },
    ]);
    assert.deepEqual(
      u.contacts().map((c) => c.properties.email),
      ['a@x.com', 'b@x.com', 'd@x.com'],
    );
    reasons(out);
    await s.close();
  });

  it('207: a CONFLICT error without the existing-id message fails that input, never exists', async (t) => {
    const u = await startEmulator({ token: CANARY, uniqueProperties: ['member_id'], conflictMode: 'multi-status' });
    t.after(() => u.close());
    const { client } = fastClient();
    const s = new HubSpotSink({ http: client, token: CANARY, baseUrl: u.url });
    await s.send([item(0, { email: 'a@x.com', custom: { member_id: 'M-1' } })]);
    const out = await s.send([
      item(1, { email: 'b@x.com', custom: { member_id: 'M-1' } }),
      item(2, { email: 'a@x.com' }),
    ]);
    assert.deepEqual(out, [
      {
        kind: 'failed',
        permanent: true,
        reason: 'CONFLICT: Property member_id must have a unique value: "M-1" is already used by another contact',
      },
      { kind: 'exists', crmId: u.contacts()[0]?.id },
    ]);
    assert.equal(u.contacts().length, 1);
    await s.close();
  });

  it("only HubSpot's duplicate answer names an existing contact", () => {
    const dup = (category: string | undefined, message: string) =>
      duplicateContactId({ ...(category ? { category } : {}), message });
    assert.equal(dup('CONFLICT', 'Contact already exists. Existing ID: 37765128953'), '37765128953');
    assert.equal(dup('CONFLICT', 'Contact already exists. Existing ID:'), undefined);
    assert.equal(dup('CONFLICT', 'Object already exists. Existing ID: 5'), undefined);
    assert.equal(dup('CONFLICT', 'Merge conflict with contact 5. Existing ID: 5 is locked'), undefined);
    assert.equal(dup('VALIDATION_ERROR', 'Contact already exists. Existing ID: 5'), undefined);
    assert.equal(dup(undefined, 'Contact already exists. Existing ID: 5'), undefined);
  });

  it('keeps the base URL query after the API path; an error body echoing its values is redacted', async () => {
    const { client } = fastClient();
    const secrets = ['SECRET123', 'SECRET456'];
    // The right paths: the query string follows the API path, and every request is answered by its route.
    const s = new HubSpotSink({ http: client, token: CANARY, baseUrl: `${emu.url}/?hapikey=${secrets[0]}` });
    assert.equal(s.describe(), `HubSpot at ${emu.url}/?redacted`);
    const [created] = await s.send([item(1, { email: 'a@x.com' })]);
    assert.equal(created?.kind, 'created');
    assert.deepEqual(await s.lookup('a@x.com'), { found: true, crmId: emu.contacts()[0]?.id });
    await s.close();
    // A wrong base path: the 404 quotes the request target, query string and all.
    const { client: c2 } = fastClient();
    const wrong = new HubSpotSink({
      http: c2,
      token: CANARY,
      baseUrl: `${emu.url}/crm/v2?hapikey=${secrets[0]}&portal=${secrets[1]}`,
    });
    const [o] = await wrong.send([item(2, { email: 'b@x.com' })]);
    assert.equal(o?.kind, 'failed');
    const reason = o?.kind === 'failed' ? o.reason : '';
    assert.match(reason, /^OBJECT_NOT_FOUND: no route POST \/crm\/v2\/crm\/v3\/objects\/contacts\/batch\/create\?/);
    for (const secret of secrets) assert.ok(!reason.includes(secret), reason);
    await assert.rejects(
      wrong.lookup('+15550001111'),
      (err: Error) =>
        /^HubSpot search failed: OBJECT_NOT_FOUND/.test(err.message) && secrets.every((x) => !err.message.includes(x)),
    );
    await wrong.close();
  });

  it('upserts by email under --existing update: updated or created', async () => {
    const s = sink();
    const [created] = await s.send([item(1, { email: 'a@x.com', company: 'Old' })]);
    const out = await s.send([
      item(2, { email: 'A@x.com', company: 'New' }, 'update'),
      item(3, { email: 'z@x.com', company: 'Z' }, 'update'),
      item(4, { phone: '+15550001111' }, 'update'),
    ]);
    assert.deepEqual(out[0], { kind: 'updated', crmId: created?.kind === 'created' ? created.crmId : 'none' });
    assert.equal(out[1]?.kind, 'created');
    assert.equal(out[2]?.kind === 'failed' && out[2].permanent, true);
    assert.equal(emu.contacts().find((c) => c.properties.email === 'a@x.com')?.properties.company, 'New');
    assert.equal(emu.contacts().length, 2);
    await s.close();
  });

  it('looks contacts up by email and by phone', async () => {
    const s = sink();
    const [c] = await s.send([item(1, { email: 'a@x.com', phone: '+15550001111' })]);
    const id = c?.kind === 'created' ? c.crmId : 'none';
    assert.deepEqual(await s.lookup('A@x.com'), { found: true, crmId: id });
    assert.deepEqual(await s.lookup('nobody@x.com'), { found: false });
    assert.deepEqual(await s.lookup('+15550001111'), { found: true, crmId: id });
    assert.deepEqual(await s.lookup('+15559999999'), { found: false });
    await s.close();
  });

  it('429s with the documented body are all retried', async () => {
    emu.setFaults({ burst429: 2 });
    const s = sink({ maxRetries: 4 });
    const out = await s.send([item(1, { email: 'a@x.com' })]);
    assert.equal(out[0]?.kind, 'created');
    assert.equal(emu.stats().sent429, 2);
    await s.close();
  });

  it('5xx until retries run out: failed retryable; hang: unknown', async () => {
    emu.setFaults({ outage: true });
    const s = sink({ maxRetries: 1 });
    const out = await s.send([item(1, { email: 'a@x.com' })]);
    assert.deepEqual(out[0], {
      kind: 'failed',
      permanent: false,
      reason: 'SERVICE_UNAVAILABLE: Service Unavailable (emulated)',
      status: 503,
    });
    emu.setFaults({ script: ['hang', 'hang'] });
    const s2 = sink({ maxRetries: 1, timeoutMs: 100 });
    const out2 = await s2.send([item(2, { email: 'b@x.com' })]);
    assert.equal(out2[0]?.kind, 'unknown');
    reasons([...out, ...out2]);
    await s.close();
    await s2.close();
  });

  it('reads the token from HUBSPOT_TOKEN or a token file, never silently missing', async () => {
    await assert.rejects(
      openSinkFor('hubspot', { hubspotUrl: emu.url }, { env: {} }),
      (err: unknown) => err instanceof UsageError && /HUBSPOT_TOKEN/.test(err.message),
    );
    const dir = await mkdtemp(join(tmpdir(), 'll-hs-'));
    const file = join(dir, 'token');
    await writeFile(file, `  ${CANARY}\n`);
    const s = await openSinkFor(
      'hubspot',
      { tokenFile: file, hubspotUrl: emu.url },
      { env: {}, transport: { maxRetries: 0 } },
    );
    assert.equal((await s.send([item(1, { email: 'a@x.com' })]))[0]?.kind, 'created');
    assert.ok(!s.describe().includes(CANARY));
    await s.close?.();
    const s2 = await openSinkFor('hubspot', { hubspotUrl: emu.url }, { env: { HUBSPOT_TOKEN: CANARY } });
    assert.equal(s2.capabilities.maxBatch, 100);
    await s2.close?.();
    await assert.rejects(
      openSinkFor('hubspot', { hubspotUrl: 'http://example.com' }, { env: { HUBSPOT_TOKEN: CANARY } }),
      UsageError,
    );
  });

  it('describes HubSpot errors readably', () => {
    assert.equal(
      describeHubSpotError({ category: 'CONFLICT', message: 'Contact already exists. Existing ID: 5' }),
      'CONFLICT: Contact already exists. Existing ID: 5',
    );
    assert.equal(describeHubSpotError({}, 502), 'HTTP 502');
  });
});
