// `leadledger push --sink salesforce` and `leadledger auth salesforce`, spawned as users run them, against the
// Salesforce emulator on 127.0.0.1: requests shaped as the official Postman collection shows them, Leads upserted by
// leadledger's key, people the org holds (by email, or by its duplicate rule) settled with their ids, per-record
// errors alone, the refresh-token and JWT bearer flows, a token expiring mid-run, the daily API allowance, and no
// secret anywhere a person or a file can see it.
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import {
  startSalesforceEmulator,
  type SalesforceEmulator,
  type SalesforceEmulatorOptions,
  type SalesforceLoggedRequest,
} from '../../src/sandbox/salesforce-api.js';
import { jsonReport, runCli } from '../helpers/cli.js';
import { jsonlEvents } from '../helpers/events.js';
import { tmpDir } from '../helpers/tmp.js';

const CLIENT_ID = 'sf-client-3b7d';
const CLIENT_SECRET = 'sf-secret-canary-8e1f0a2c';
const REFRESH = 'sf-refresh-canary-4d9c61b7';
const SECRETS = [CLIENT_SECRET, REFRESH];
const APP = { SALESFORCE_CLIENT_ID: CLIENT_ID, SALESFORCE_CLIENT_SECRET: CLIENT_SECRET };
const ENV = { ...APP, SALESFORCE_REFRESH_TOKEN: REFRESH };
const POSTMAN = new URL('../../fixtures/salesforce/postman/', import.meta.url);

const emus: SalesforceEmulator[] = [];
after(async () => {
  for (const e of emus) await e.close();
});

async function sf(o: SalesforceEmulatorOptions = {}): Promise<SalesforceEmulator> {
  const emu = await startSalesforceEmulator({
    clientId: CLIENT_ID,
    clientSecret: CLIENT_SECRET,
    refreshTokens: [REFRESH],
    logRequests: true,
    ...o,
  });
  emus.push(emu);
  return emu;
}

/** A folder with the events (n of n people, or the given lines), a config, and the push arguments. */
function setup(emu: SalesforceEmulator, n: number, o: { lines?: string; config?: object } = {}) {
  const dir = tmpDir();
  const events = join(dir, 'events.jsonl');
  writeFileSync(events, o.lines ?? jsonlEvents(n));
  const config = join(dir, 'leadledger.config.json');
  writeFileSync(config, JSON.stringify({ sinks: { salesforce: o.config ?? {} } }));
  const ledger = join(dir, 'l.db');
  const credentials = join(dir, 'credentials.json');
  const sink = ['--sink', 'salesforce', '--salesforce-url', emu.url, '--config', config, '--ledger', ledger];
  sink.push('--credentials', credentials, '--backoff', '20');
  return { dir, events, config, ledger, credentials, sink, push: ['push', events, ...sink] };
}

/** Leads per email in the emulator. */
function perEmail(emu: SalesforceEmulator): Map<string, number> {
  const m = new Map<string, number>();
  for (const l of emu.leads()) if (l.Email) m.set(l.Email.toLowerCase(), (m.get(l.Email.toLowerCase()) ?? 0) + 1);
  return m;
}

function assertNoSecret(where: string, text: string): void {
  for (const s of SECRETS) assert.ok(!text.includes(s), `a secret in ${where}`);
}

/** A Postman request file of the official collection: its method, URL and body or form keys. */
function postman(file: string): { method: string; path: string; keys: string[]; contentType?: string } {
  const d = JSON.parse(readFileSync(new URL(file, POSTMAN), 'utf8')) as {
    method: string;
    url: string;
    rawModeData?: string;
    data?: Array<{ key: string }>;
    headerData?: Array<{ key: string; value: string }>;
  };
  const path = d.url.replace(/^\{\{[^}]+\}\}(\{\{site\}\})?/, '').replace(/\?.*$/, '');
  const keys = d.rawModeData ? Object.keys(JSON.parse(d.rawModeData) as object) : (d.data ?? []).map((x) => x.key);
  const ct = d.headerData?.find((h) => h.key.toLowerCase() === 'content-type')?.value;
  return { method: d.method, path, keys, ...(ct ? { contentType: ct } : {}) };
}

/** Whether a logged request matches a Postman path template (v{{version}}, <PLACEHOLDERS>). */
function matches(r: SalesforceLoggedRequest, p: { method: string; path: string }): boolean {
  const re = new RegExp(
    `^${p.path
      .replace(/\/+$/, '')
      .replace(/[.*+?^$()|[\]\\]/g, '\\$&')
      .replace(/\{\{version\}\}/g, '\\d+\\.\\d')
      .replace(/<[A-Z_]+>/g, '[A-Za-z0-9_]+')}/?$`,
  );
  return r.method === p.method && re.test(r.path);
}

describe('push --sink salesforce (spawned CLI against the Salesforce emulator)', () => {
  it('upserts each new lead by its key, as the Postman collection shapes the requests; a rerun sends nothing; no secret shown', async () => {
    const emu = await sf();
    const s = setup(emu, 250);
    const report = join(s.dir, 'report.jsonl');
    const first = await runCli([...s.push, '--json', '--report', report], { env: ENV });
    assert.equal(first.code, 0, first.stderr);
    assert.equal(jsonReport(first).delivery.sent, 250);
    const per = perEmail(emu);
    assert.equal(per.size, 250);
    assert.ok([...per.values()].every((c) => c === 1));
    // Every Lead holds the key it was sent with, and the placeholders where the events had no name or company.
    assert.ok(emu.leads().every((l) => /^[0-9a-f]{64}$/.test(l.Leadledger_Key__c ?? '')));
    assert.ok(emu.leads().every((l) => l.LastName === '[not provided]' && l.Company === '[not provided]'));
    const reqs = emu.requests();
    // The token request: Postman's auth/refresh_token.json.
    const tokenShape = postman('auth/refresh_token.json');
    const tok = reqs.filter((r) => r.path === '/services/oauth2/token');
    assert.equal(tok.length, 1);
    assert.ok(matches(tok[0]!, tokenShape));
    assert.equal(tok[0]!.contentType, tokenShape.contentType);
    assert.deepEqual(Object.keys(tok[0]!.body as object).sort(), [...tokenShape.keys].sort());
    // describe before the first lead: rest/sobject_describe.json.
    const api = reqs.filter((r) => r.path !== '/services/oauth2/token');
    assert.ok(matches(api[0]!, postman('rest/sobject_describe.json')), JSON.stringify(api[0]));
    // The lookups: rest/query.json, a SOQL of Lead by Email.
    const queries = api.filter((r) => matches(r, postman('rest/query.json')));
    assert.equal(queries.length, 2, 'one query per batch of 200');
    assert.match(
      new URLSearchParams(queries[0]!.query).get('q') ?? '',
      /^SELECT Id, Email, Leadledger_Key__c FROM Lead WHERE Email IN \('/,
    );
    // The writes: the collection body of composite/sobject_collections_create.json ({allOrNone, records}), sent to
    // the upsert resource (API 46.0+; the collection has no request for it).
    const create = postman('composite/sobject_collections_create.json');
    const writes = api.filter((r) => r.method === 'PATCH');
    assert.equal(writes.length, 2);
    for (const w of writes) {
      assert.match(w.path, /^\/services\/data\/v\d+\.\d\/composite\/sobjects\/Lead\/Leadledger_Key__c$/);
      assert.equal(w.contentType, create.contentType);
      const body = w.body as { allOrNone: boolean; records: Array<Record<string, unknown>> };
      assert.deepEqual(Object.keys(body).sort(), [...create.keys].sort());
      assert.equal(body.allOrNone, false);
      assert.ok(body.records.length <= 200);
      assert.ok(body.records.every((r) => (r.attributes as { type: string }).type === 'Lead'));
    }
    assert.ok(api.every((r) => r.authorization?.startsWith('Bearer ')));
    const again = await runCli(s.push, { env: ENV });
    assert.equal(again.code, 0, again.stderr);
    assert.equal(emu.leads().length, 250, 'the rerun sent nothing');
    for (const [where, text] of [
      ['stdout', first.stdout + again.stdout],
      ['stderr', first.stderr + again.stderr],
      ['the report', readFileSync(report, 'utf8')],
      ['the ledger file', readFileSync(s.ledger).toString('latin1')],
    ] as const)
      assertNoSecret(where, text);
  });

  it('people the org holds settle with their ids; a missing LastName or Company fails alone by config', async () => {
    const emu = await sf();
    const [held] = emu.seed([{ Email: 'A1@example.com', LastName: 'Silva', Company: 'Acme' }]);
    const lines =
      [
        { event_id: 'e0', email: 'a0@example.com', name: 'Ana Lee', company: 'Acme' },
        { event_id: 'e1', email: 'a1@example.com', name: 'Bia Silva', company: 'Acme' },
        { event_id: 'e2', email: 'a2@example.com', name: 'Caio Souza' },
        { event_id: 'e3', email: 'a3@example.com', name: 'Dora Lima', company: 'Beta' },
      ]
        .map((e) => JSON.stringify(e))
        .join('\n') + '\n';
    const s = setup(emu, 0, { lines, config: { missingRequired: 'fail' } });
    const r = await runCli([...s.push, '--json'], { env: ENV });
    assert.equal(r.code, 1, r.stderr);
    const rep = jsonReport(r);
    assert.equal(rep.delivery.sent, 2);
    assert.equal(rep.delivery.exists, 1);
    assert.equal(rep.delivery.failed, 1);
    assert.match(JSON.stringify(rep.failures), /requires Company/);
    const db = new Database(s.ledger, { readonly: true });
    const row = db.prepare(`SELECT crm_id FROM events WHERE natural_key = 'a1@example.com'`).get() as {
      crm_id: string;
    };
    db.close();
    assert.equal(row.crm_id, held, "the held Lead's id");
    assert.deepEqual([...perEmail(emu).values()], [1, 1, 1]);
    assert.ok(!emu.leads().some((l) => l.Email === 'a2@example.com'));
  });

  it('a duplicate rule that refuses a create settles it as already in the CRM, with the matched id', async () => {
    // No External ID field: created after a lookup by email. The org holds the person under another email, with
    // the same phone: the lookup finds nobody, the standard duplicate rule matches on the phone.
    const emu = await sf({ externalIdFields: [] });
    const [held] = emu.seed([{ Email: 'old@example.com', Phone: '+5511987654321', LastName: 'Lee', Company: 'Acme' }]);
    const lines =
      JSON.stringify({ event_id: 'e0', email: 'new@example.com', phone: '+55 11 98765-4321', name: 'Ana Lee' }) +
      '\n' +
      JSON.stringify({ event_id: 'e1', email: 'b@example.com', name: 'Bo Lee' }) +
      '\n';
    const s = setup(emu, 0, { lines });
    const r = await runCli([...s.push, '--json'], { env: ENV });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /Lead has no field Leadledger_Key__c/);
    const rep = jsonReport(r);
    assert.equal(rep.delivery.sent, 1);
    assert.equal(rep.delivery.exists, 1);
    assert.equal(emu.stats().duplicatesRefused, 1);
    const db = new Database(s.ledger, { readonly: true });
    const row = db.prepare(`SELECT crm_id FROM events WHERE key = 'e0'`).get() as { crm_id: string } | undefined;
    db.close();
    assert.equal(row?.crm_id, held);
    assert.equal(emu.leads().length, 2);
    assert.ok(emu.requests().some((q) => q.method === 'POST' && /\/composite\/sobjects$/.test(q.path)));
  });

  it('auth salesforce writes the grant and the instance; an access token expiring mid-run is refreshed once', async () => {
    const emu = await sf();
    const s = setup(emu, 700);
    const auth = await runCli(['auth', 'salesforce', '--salesforce-url', emu.url, '--credentials', s.credentials], {
      env: ENV,
    });
    assert.equal(auth.code, 0, auth.stderr);
    assert.match(auth.stdout, /credentials written to/);
    assertNoSecret('auth output', auth.stdout + auth.stderr);
    const stored = JSON.parse(readFileSync(s.credentials, 'utf8')) as { salesforce: Record<string, string> };
    assert.equal(stored.salesforce.instance_url, emu.url);
    // Tokens handed out from now on last 4 API requests: the run's first one dies after its describe and a batch.
    emu.expireTokensAfter(4);
    const before = emu.stats().refreshes;
    const r = await runCli([...s.push, '--json'], { env: {} });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(jsonReport(r).delivery.sent, 700);
    assert.equal(emu.leads().length, 700);
    const refreshes = emu.stats().refreshes - before;
    assert.ok(refreshes >= 2, `refreshed at the start and when the session expired (${refreshes})`);
    assert.ok(emu.stats().expiredSessions >= 1);
  });

  it('the JWT bearer flow: an assertion signed with the key file; a key the app does not hold is exit 4', async () => {
    const pair = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const other = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const emu = await sf({
      jwtPublicKey: pair.publicKey.export({ type: 'spki', format: 'pem' }).toString(),
      jwtUsers: ['ops@acme.example'],
    });
    const s = setup(emu, 20);
    const key = join(s.dir, 'server.key');
    writeFileSync(key, pair.privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600 });
    const env = { SALESFORCE_CLIENT_ID: CLIENT_ID, SALESFORCE_USERNAME: 'ops@acme.example' };
    const r = await runCli([...s.push, '--salesforce-jwt-key', key], { env });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(emu.leads().length, 20);
    assert.equal(emu.stats().jwtGrants, 1);
    const tok = emu.requests().find((q) => q.path === '/services/oauth2/token')!;
    assert.deepEqual(
      Object.keys(tok.body as object).sort(),
      [...postman('auth/jwt_bearer_token_flow.json').keys].sort(),
    );
    const wrong = join(s.dir, 'other.key');
    writeFileSync(wrong, other.privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600 });
    const s2 = setup(emu, 3);
    const bad = await runCli([...s2.push, '--salesforce-jwt-key', wrong], { env });
    assert.equal(bad.code, 4, bad.stderr);
    assert.match(bad.stderr, /refused the signed assertion/);
  });

  it('stops before the daily API allowance runs out (exit 7), and a 403 REQUEST_LIMIT_EXCEEDED stops it too', async () => {
    const emu = await sf({ dailyLimit: 1000 });
    // 5% (50 requests) is kept for the org's other integrations: 60 left allow about 10 requests.
    emu.setApiUsed(940);
    const s = setup(emu, 3000);
    const r = await runCli(s.push, { env: ENV });
    assert.equal(r.code, 7, r.stderr);
    assert.match(r.stderr, /API allowance is nearly spent/);
    const db = new Database(s.ledger, { readonly: true });
    const byStatus = Object.fromEntries(
      (
        db.prepare(`SELECT status, count(*) n FROM events GROUP BY status`).all() as Array<{
          status: string;
          n: number;
        }>
      ).map((x) => [x.status, x.n]),
    ) as Record<string, number>;
    db.close();
    const sent = byStatus.sent ?? 0;
    assert.ok(sent > 0 && sent < 3000, JSON.stringify(byStatus));
    assert.deepEqual(
      Object.keys(byStatus),
      ['sent'],
      'nothing failed, in doubt or left claimed: the rest was released',
    );
    assert.equal(emu.stats().limitRefused, 0, 'never met the limit');
    assert.equal(emu.leads().length, sent);
    // Another integration spends the rest: Salesforce refuses the next run's requests with 403.
    emu.setApiUsed(1000);
    const r2 = await runCli(s.push, { env: ENV });
    assert.equal(r2.code, 7, r2.stderr);
    assert.ok(emu.stats().limitRefused >= 1);
    // The next day: the rest goes.
    emu.setApiUsed(0);
    const r3 = await runCli(s.push, { env: ENV });
    assert.equal(r3.code, 0, r3.stderr);
    assert.equal(emu.leads().length, 3000);
    assert.ok([...perEmail(emu).values()].every((c) => c === 1));
  });

  it('a revoked grant stops the push with exit 4 naming leadledger auth salesforce', async () => {
    const emu = await sf();
    const s = setup(emu, 3);
    emu.revokeGrant();
    const r = await runCli(s.push, { env: ENV });
    assert.equal(r.code, 4, r.stderr);
    assert.match(r.stderr, /leadledger auth salesforce/);
    assertNoSecret('stderr', r.stderr);
    assert.equal(emu.leads().length, 0);
  });
});
