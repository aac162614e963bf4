import assert from 'node:assert/strict';
import { readFile, stat } from 'node:fs/promises';
import { after, beforeEach, describe, it } from 'node:test';
import { CredentialsError, ExitCode, UsageError } from '../../src/errors.js';
import { rdstationFields, rdstationOptions, type RdStationSink } from '../../src/sinks/rdstation/index.js';
import type { SinkOutcome } from '../../src/sinks/types.js';
import { item } from './helpers.js';
import { CLIENT_ID, CLIENT_SECRET, REFRESH, rdHarness, type Harness } from './rdstation-harness.js';

const SECRETS = [CLIENT_SECRET, REFRESH];
const config = {
  fields: { cargo: 'job_title', cidade: 'city', plano: 'cf_plano' },
  tags: ['importado'],
  legalBases: [{ category: 'communications', type: 'consent', status: 'granted' }],
};

describe('RD Station sink against the emulator', () => {
  let h: Harness;
  const seen: string[] = [];
  const keep = (outs: SinkOutcome[]): SinkOutcome[] => {
    for (const o of outs) if ('reason' in o) seen.push(o.reason);
    return outs;
  };
  beforeEach(async () => {
    await h?.close();
    h = await rdHarness({ customFields: ['cf_leadledger_key', 'cf_plano'] });
  });
  after(async () => {
    await h.close();
    for (const text of seen) for (const s of SECRETS) assert.ok(!text.includes(s), `secret leaked in: ${text}`);
  });

  it('records a conversion per new lead, with its fields, tags, legal bases, custom fields and leadledger key', async () => {
    const sink = await h.sink({ config });
    const out = keep(
      await sink.send([
        item(1, {
          email: 'ana@example.com',
          name: 'Ana Souza',
          phone: '+5511987654321',
          company: 'Acme',
          source: 'facebook',
          custom: { cargo: 'CTO', cidade: 'São Paulo', plano: 'pro', tags: 'vip, evento' },
        }),
      ]),
    );
    assert.equal(out[0]?.kind, 'created');
    const [conv] = h.emu.api.conversions();
    assert.equal(conv?.event_identifier, 'leadledger');
    assert.deepEqual(conv?.payload, {
      conversion_identifier: 'leadledger',
      email: 'ana@example.com',
      name: 'Ana Souza',
      mobile_phone: '+5511987654321',
      company_name: 'Acme',
      traffic_source: 'facebook',
      job_title: 'CTO',
      city: 'São Paulo',
      cf_plano: 'pro',
      tags: ['importado', 'vip', 'evento'],
      legal_bases: [{ category: 'communications', type: 'consent', status: 'granted' }],
      cf_leadledger_key: item(1, {}).downstreamKey,
    });
    assert.equal(out[0]?.kind === 'created' && out[0].crmId, conv?.event_uuid);
    await sink.close();
  });

  it('conversion identifier from --conversion, else the config, else leadledger', () => {
    const o = (flags: { conversion?: string }, cfg?: unknown) => rdstationOptions(flags, {}, cfg).conversionIdentifier;
    assert.equal(o({}), 'leadledger');
    assert.equal(o({}, { conversionIdentifier: 'import-csv' }), 'import-csv');
    assert.equal(o({ conversion: 'cli' }, { conversionIdentifier: 'import-csv' }), 'cli');
    assert.throws(() => rdstationOptions({}, {}, { conversionIdentifer: 'typo' }), UsageError);
    assert.throws(() => rdstationOptions({ rdstationUrl: 'http://rd.example.com' }, {}), UsageError);
    const opts = rdstationOptions({}, { RDSTATION_CLIENT_ID: 'id', XDG_CONFIG_HOME: '/cfg' });
    assert.equal(opts.baseUrl, 'https://api.rd.services');
    assert.equal(opts.tokenUrl, 'https://api.rd.services/auth/token');
    assert.equal(opts.credentialsPath, '/cfg/leadledger/credentials.json');
    assert.equal(opts.clientId, 'id');
    // 120 a minute, 5% kept free.
    assert.equal(opts.rate, (120 * 0.95) / 60);
  });

  it('what RD Station has no field for is told, not sent', () => {
    const f = rdstationFields({ email: 'a@x.com', company: 'Acme', custom: { shoe: '42' } }, {}, 'update');
    assert.deepEqual(
      f.notHeld.map((n) => n.field),
      ['company', 'custom.shoe'],
    );
    assert.deepEqual(f.values, {});
  });

  it('a conversion whose answer was lost after RD recorded it is found by lookup, never sent twice', async () => {
    const sink = await h.sink({ config });
    // The access token first: a refresh whose answer is lost is another story (the rotated token is lost with it).
    await sink.send([item(0, { email: 'warm@example.com' })]);
    h.emu.setFaults({ script: ['commit-then-drop'] });
    const it1 = item(1, { email: 'bia@example.com', name: 'Bia' });
    const out = keep(await sink.send([it1]));
    assert.equal(out[0]?.kind, 'unknown', JSON.stringify(out));
    assert.equal(h.emu.api.conversions().filter((c) => c.email === 'bia@example.com').length, 1, 'not retried');
    // Next run: the lookup recognizes this event's conversion by its key.
    const found = await sink.lookup('bia@example.com', undefined, it1.downstreamKey);
    assert.deepEqual(found, {
      found: true,
      crmId: h.emu.api.contactViews().find((c) => c.email === 'bia@example.com')?.uuid,
    });
    // As deliver calls it today (no key): a leadledger conversion of this person counts.
    assert.equal((await sink.lookup('bia@example.com')).found, true);
    // Another event's key is not this one: that event was not delivered.
    assert.equal((await sink.lookup('bia@example.com', undefined, 'dk-other')).found, false);
    assert.equal((await sink.lookup('nobody@example.com', undefined, it1.downstreamKey)).found, false);
    assert.equal(h.emu.api.conversions().length, 2);
  });

  it("finds an older conversion among the contact's events when a later one replaced the contact's key", async () => {
    const sink = await h.sink();
    const first = item(1, { email: 'caio@example.com' });
    await sink.send([first]);
    await sink.send([item(2, { email: 'caio@example.com' })]);
    assert.equal((await sink.lookup('caio@example.com', undefined, first.downstreamKey)).found, true);
  });

  it('without a key field, the conversion identifier alone settles the lookup', async () => {
    const sink = await h.sink({ config: { keyField: false } });
    h.emu.api.seed([{ email: 'dora@example.com', name: 'Dora' }]);
    // Known to RD from a form, no leadledger conversion: not delivered.
    assert.equal((await sink.lookup('dora@example.com', undefined, 'dk-1')).found, false);
    await sink.send([item(1, { email: 'dora@example.com' })]);
    assert.equal((await sink.lookup('dora@example.com', undefined, 'dk-1')).found, true);
    assert.ok(!('cf_leadledger_key' in (h.emu.api.conversions()[0]?.payload ?? {})));
  });

  it('retries 503 and 429 (after the Retry-After RD gives), then records the conversion once', async () => {
    const sink = await h.sink();
    h.emu.setFaults({ script: ['503', '429'], retryAfter: '7' });
    const out = keep(await sink.send([item(1, { email: 'edu@example.com' })]));
    assert.equal(out[0]?.kind, 'created');
    assert.equal(h.emu.api.conversions().length, 1);
    assert.ok(h.sleeps.includes(7000), `waited ${JSON.stringify(h.sleeps)}`);
  });

  it('the per-minute limit: a 429 of the account is waited out; at the options’ rate none is met', async () => {
    await h.close();
    h = await rdHarness({ rateLimit: '3/1m' });
    // No rate of our own: the emulator's 429s (with Retry-After) are waited out, none lost.
    const fast = await h.sink({ config: { requestsPerMinute: 3 } });
    for (let i = 1; i <= 5; i++)
      assert.equal((await fast.send([item(i, { email: `f${i}@example.com` })]))[0]?.kind, 'created');
    assert.ok(h.emu.stats().rateLimited > 0);
    assert.equal(h.emu.api.conversions().length, 5);
    await h.close();
    h = await rdHarness({ rateLimit: '3/1m' });
    // With the rate rdstationOptions() gives the HTTP client: never a 429.
    const paced = await h.sink({ config: { requestsPerMinute: 3 }, http: { rate: (3 * 0.95) / 60 } });
    for (let i = 1; i <= 5; i++)
      assert.equal((await paced.send([item(i, { email: `g${i}@example.com` })]))[0]?.kind, 'created');
    assert.equal(h.emu.stats().rateLimited, 0);
  });

  it('a person past 24 conversions in 24 hours fails alone, permanently, without a retry storm', async () => {
    await h.close();
    h = await rdHarness({ postsPerContact: 2 });
    const sink = await h.sink();
    const outs: SinkOutcome[] = [];
    for (let i = 1; i <= 3; i++) outs.push(...(await sink.send([item(i, { email: 'fabi@example.com' })])));
    const other = await sink.send([item(9, { email: 'gil@example.com' })]);
    keep(outs);
    assert.deepEqual(
      outs.map((o) => o.kind),
      ['created', 'created', 'failed'],
    );
    const failed = outs[2] as Extract<SinkOutcome, { kind: 'failed' }>;
    assert.equal(failed.permanent, true);
    assert.match(failed.reason, /24 conversions per contact in 24 hours/);
    assert.equal(h.emu.stats().contactLimited, 1, 'asked once, not retried');
    assert.equal(other[0]?.kind, 'created', 'the others go on');
    assert.equal(h.emu.api.conversions().length, 3);
  });

  it('--existing update patches the contact and records no conversion', async () => {
    const sink = await h.sink({ config });
    const out = await sink.send([
      item(1, { email: 'hugo@example.com', name: 'Hugo', custom: { cidade: 'Recife' } }, 'update'),
      { ...item(2, { email: 'ines@example.com', name: 'Inês' }), ifExists: 'update' },
    ]);
    assert.deepEqual(
      out.map((o) => o.kind),
      ['updated', 'updated'],
    );
    assert.equal(h.emu.api.conversions().length, 0);
    const hugo = h.emu.api.contactViews().find((c) => c.email === 'hugo@example.com');
    assert.equal(hugo?.city, 'Recife');
    assert.deepEqual(hugo?.legal_bases, [{ category: 'communications', type: 'consent', status: 'granted' }]);
  });

  it('an access token expiring mid-run is refreshed once and the request sent again', async () => {
    const sink = await h.sink();
    await sink.send([item(1, { email: 'j1@example.com' })]);
    assert.equal(h.emu.stats().refreshes, 1);
    h.emu.api.expireTokensAfter(1);
    for (let i = 2; i <= 5; i++)
      assert.equal((await sink.send([item(i, { email: `j${i}@example.com` })]))[0]?.kind, 'created');
    assert.equal(h.emu.stats().refreshes, 2, 'one refresh for the expiry');
    assert.equal(h.emu.api.conversions().length, 5, 'the refused request was not recorded, the retry was');
  });

  it('the rotated refresh token is kept in the credentials file (0600), and the next run uses it', async () => {
    const sink = await h.sink();
    await sink.send([item(1, { email: 'k@example.com' })]);
    const file = JSON.parse(await readFile(h.credentials, 'utf8'));
    assert.notEqual(file.rdstation.refresh_token, REFRESH, 'rotated');
    assert.equal(file.rdstation.client_id, CLIENT_ID);
    assert.equal(file.rdstation.client_secret, undefined, 'a secret from the environment stays there');
    assert.equal((await stat(h.credentials)).mode & 0o777, 0o600);
    // The next run: its environment still says the old refresh token, which RD revoked on rotation.
    h.emu.api.expireAccessTokens();
    const next = await h.sink();
    assert.equal((await next.send([item(2, { email: 'k2@example.com' })]))[0]?.kind, 'created');
  });

  it('a revoked grant is a CredentialsError (exit 4) naming leadledger auth rdstation, with no secret in it', async () => {
    h.emu.api.revokeGrant();
    const sink = await h.sink();
    const err = await sink.send([item(1, { email: 'l@example.com' })]).then(
      () => assert.fail('expected a CredentialsError'),
      (e: unknown) => e,
    );
    assert.ok(err instanceof CredentialsError, String(err));
    assert.equal(err.exitCode, ExitCode.credentials);
    assert.match(err.message, /leadledger auth rdstation/);
    for (const s of SECRETS) assert.ok(!err.message.includes(s), err.message);
    assert.equal(h.emu.api.conversions().length, 0);
  });

  it('no credentials at all: a usage error saying how to authorize', async () => {
    await assert.rejects(
      h.sink({ env: {} }),
      (e: unknown) => e instanceof UsageError && /leadledger auth rdstation/.test(e.message),
    );
  });

  it('a bare RDSTATION_ACCESS_TOKEN works until it expires, then says how to get a renewable grant', async () => {
    await h.close();
    h = await rdHarness({ accessTokens: ['access-canary-3e9d'] });
    const sink: RdStationSink = await h.sink({ env: { RDSTATION_ACCESS_TOKEN: 'access-canary-3e9d' } });
    assert.equal((await sink.send([item(1, { email: 'm@example.com' })]))[0]?.kind, 'created');
    h.emu.api.expireAccessTokens();
    await assert.rejects(
      sink.send([item(2, { email: 'm2@example.com' })]),
      (e: unknown) =>
        e instanceof CredentialsError &&
        /leadledger auth rdstation/.test(e.message) &&
        !e.message.includes('access-canary'),
    );
  });

  it('describe() and failure reasons hold no secret', async () => {
    const sink = await h.sink();
    assert.equal(sink.describe(), `RD Station Marketing at ${h.emu.url}`);
    h.emu.setFaults({ outage: true });
    const out = keep(await sink.send([item(1, { email: 'n@example.com' })]));
    assert.equal(out[0]?.kind, 'failed');
    for (const s of SECRETS) assert.ok(!sink.describe().includes(s));
  });
});
