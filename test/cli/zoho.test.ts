// push --sink zoho, spawned, against the Zoho CRM emulator through a Prism proxy of Zoho's OpenAPI document (v8
// records): every request must follow it (test/sinks/zoho-contract.ts says which gaps of the document are not counted
// against the answers). Each person exactly once in the emulator, whatever the run; secrets nowhere.
import { after, afterEach, before, beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startZohoEmulator, type ZohoEmulator } from '../../src/sandbox/zoho-api.js';
import { breaks, startZohoContractProxy, type ZohoContractProxy } from '../sinks/zoho-contract.js';
import { jsonReport, runCli } from '../helpers/cli.js';
import { expectedPeople, generateEvents, jsonlEvents } from '../helpers/events.js';
import { tmpDir } from '../helpers/tmp.js';

const SECRET = 'zoho-secret-CANARY-7d1f0b2e';
const REFRESH = 'zoho-refresh-CANARY-4a9c3e5d';
const CLIENT = 'leadledger-zoho-test-client';

describe('push --sink zoho (spawned), through the OpenAPI contract proxy', () => {
  let emu: ZohoEmulator;
  let proxy: ZohoContractProxy;

  before(async () => {
    emu = await startZohoEmulator({
      clientId: CLIENT,
      clientSecret: SECRET,
      refreshTokens: [REFRESH],
      logRequests: true,
    });
    proxy = await startZohoContractProxy(emu.url);
  });
  after(async () => {
    await proxy?.close();
    await emu?.close();
  });
  beforeEach(() => {
    emu.reset();
    proxy.clear();
  });
  afterEach(() => {
    assert.deepEqual(breaks(proxy.violations()), [], 'Prism found requests or answers that break the OpenAPI document');
  });

  /** The run's environment: the client and refresh token, and a credentials file of the test's own. */
  const envFor = (dir: string): Record<string, string> => ({
    ZOHO_CLIENT_ID: CLIENT,
    ZOHO_CLIENT_SECRET: SECRET,
    ZOHO_REFRESH_TOKEN: REFRESH,
    XDG_CONFIG_HOME: join(dir, 'config'),
  });
  const sinkArgs = (dir: string): string[] => [
    '--sink',
    'zoho',
    '--zoho-url',
    proxy.url,
    '--ledger',
    join(dir, 'l.db'),
  ];
  /** Each email the emulator holds, and how many leads hold it. */
  const holders = (): Map<string, number> => {
    const m = new Map<string, number>();
    for (const l of emu.leads()) {
      const e = typeof l.fields.Email === 'string' ? l.fields.Email.toLowerCase() : undefined;
      if (e) m.set(e, (m.get(e) ?? 0) + 1);
    }
    return m;
  };
  const assertOnce = (people: Iterable<string>): void => {
    const h = holders();
    const wrong = [...people].filter((e) => h.get(e) !== 1).map((e) => `${e}×${h.get(e) ?? 0}`);
    assert.deepEqual(wrong, [], 'each person exactly once');
  };
  const noSecret = (...texts: string[]): void => {
    for (const t of texts) {
      assert.ok(!t.includes(SECRET), 'the client secret appeared in output');
      assert.ok(!t.includes(REFRESH), 'the refresh token appeared in output');
    }
  };

  it('says the credits a push spends (dry-run and push), creates every new person once; a rerun sends nothing', async () => {
    const dir = tmpDir();
    const file = generateEvents(dir, 300, 7);
    const people = await expectedPeople(file, dir);
    const env = envFor(dir);
    const dry = await runCli(['push', file, ...sinkArgs(dir), '--dry-run'], { env });
    assert.equal(dry.code, 0, dry.stderr);
    const credits = /sending (\d+) leads spends about (\d+) API credits/.exec(dry.stdout);
    assert.ok(credits, dry.stdout);
    assert.equal(emu.stats().requests, 0, 'a dry-run sends nothing');
    const report = join(dir, 'r.jsonl');
    const first = await runCli(['push', file, ...sinkArgs(dir), '--json', '--report', report], { env });
    assert.ok([0, 6].includes(first.code ?? -1), first.stderr);
    // The same figure, said before the push sent anything.
    assert.match(first.stderr, new RegExp(`sending ${credits[1]} leads spends about ${credits[2]} API credits`));
    const sent = jsonReport(first).delivery.sent;
    assert.equal(sent, Number(credits[1]));
    assertOnce(people);
    // What was said is what a call of 100 costs; smaller calls (the last of a batch, leads without email apart)
    // round up by at most a credit each.
    const { creditsSpent, writeCalls } = emu.stats();
    assert.ok(creditsSpent >= Number(credits[2]) && creditsSpent - Number(credits[2]) <= writeCalls, `${creditsSpent}`);
    const second = await runCli(['push', file, ...sinkArgs(dir), '--json'], { env });
    assert.ok([0, 6].includes(second.code ?? -1), second.stderr);
    assert.equal(jsonReport(second).delivery.sent, 0);
    assertOnce(people);
    assert.ok(proxy.checked() > 0, 'the requests went through Prism');
    noSecret(
      dry.stdout,
      dry.stderr,
      first.stdout,
      first.stderr,
      second.stdout,
      second.stderr,
      readFileSync(report, 'utf8'),
    );
    noSecret(readFileSync(join(dir, 'l.db')).toString('latin1'));
  });

  it('an account already holding every person creates nobody: each settles as already there with its id', async () => {
    const dir = tmpDir();
    writeFileSync(join(dir, 'e.jsonl'), jsonlEvents(150));
    const ids = emu.seed(Array.from({ length: 150 }, (_, i) => ({ Last_Name: `P${i}`, Email: `a${i}@example.com` })));
    const r = await runCli(['push', join(dir, 'e.jsonl'), ...sinkArgs(dir), '--json'], { env: envFor(dir) });
    assert.equal(r.code, 0, r.stderr);
    const d = jsonReport(r).delivery;
    assert.equal(d.sent, 0);
    assert.equal(d.exists, 150);
    assert.equal(emu.leads().length, 150, 'nobody created');
    const show = await runCli(['ledger', 'show', 'e7', '--ledger', join(dir, 'l.db'), '--json']);
    assert.ok(show.stdout.includes(ids[7]!), show.stdout);
  });

  it('a batch Zoho answers per record (207): the refused lead fails alone, with its reason; the rest are created', async () => {
    const dir = tmpDir();
    const file = join(dir, 'e.jsonl');
    const long = 'x'.repeat(300);
    writeFileSync(
      file,
      [
        '{"event_id":"a","email":"ana@example.com","name":"Ana Souza","company":"Acme"}',
        `{"event_id":"b","email":"bia@example.com","name":"Bia ${long}"}`,
        '{"event_id":"c","email":"caio@example.com"}',
      ].join('\n') + '\n',
    );
    const r = await runCli(['push', file, ...sinkArgs(dir), '--json'], { env: envFor(dir) });
    assert.equal(r.code, 1, r.stderr);
    const rep = jsonReport(r);
    assert.equal(rep.delivery.sent, 2);
    assert.equal(rep.delivery.failed, 1);
    assert.match(Object.keys(rep.failures).join(' '), /INVALID_DATA.*Last_Name/);
    assert.equal(emu.stats().writeCalls, 1, 'one call for the three');
    assertOnce(['ana@example.com', 'caio@example.com']);
    // Zoho requires Last_Name and Company: a lead without them gets the default, not a refusal.
    const caio = emu.leads().find((l) => l.fields.Email === 'caio@example.com');
    assert.equal(caio?.fields.Last_Name, '[not provided]');
    assert.equal(caio?.fields.Company, '[not provided]');
  });

  it('with missingRequired fail, a lead without a last name fails alone and is not sent', async () => {
    const dir = tmpDir();
    const file = join(dir, 'e.jsonl');
    writeFileSync(
      file,
      '{"event_id":"a","email":"ana@example.com","name":"Ana Souza","company":"Acme"}\n{"event_id":"b","email":"bia@example.com"}\n',
    );
    const config = join(dir, 'leadledger.json');
    writeFileSync(config, JSON.stringify({ sinks: { zoho: { missingRequired: 'fail' } } }));
    const r = await runCli(['push', file, ...sinkArgs(dir), '--config', config, '--json'], { env: envFor(dir) });
    assert.equal(r.code, 1, r.stderr);
    assert.equal(jsonReport(r).delivery.failed, 1);
    assert.match(Object.keys(jsonReport(r).failures).join(' '), /requires Last_Name/);
    assertOnce(['ana@example.com']);
    assert.equal(emu.leads().length, 1);
  });

  it('--existing update upserts by email: the lead the account holds is updated, none created', async () => {
    const dir = tmpDir();
    const file = join(dir, 'e.jsonl');
    writeFileSync(file, '{"event_id":"u1","email":"ana@example.com","name":"Ana Souza","company":"Acme"}\n');
    emu.seed([{ Last_Name: 'Old', Email: 'ana@example.com' }]);
    const r = await runCli(['push', file, ...sinkArgs(dir), '--existing', 'update', '--json'], { env: envFor(dir) });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(jsonReport(r).delivery.updated, 1);
    assert.equal(emu.leads().length, 1);
    assert.equal(emu.leads()[0]?.fields.Last_Name, 'Souza');
    assert.ok(emu.requests().some((q) => q.path === '/crm/v8/Leads/upsert'));
  });

  it('an access token expiring mid-run is refreshed once and the run goes on: each person once', async () => {
    const dir = tmpDir();
    writeFileSync(join(dir, 'e.jsonl'), jsonlEvents(450));
    // Two write calls go through, then every token handed out so far expires.
    emu.expireTokensAfter(2);
    const r = await runCli(['push', join(dir, 'e.jsonl'), ...sinkArgs(dir), '--json', '--concurrency', '1'], {
      env: envFor(dir),
    });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(jsonReport(r).delivery.sent, 450);
    assert.equal(emu.stats().refreshes, 2, 'one refresh to start, one after the expiry');
    assert.equal(emu.stats().byStatus['401'], 1, 'the call refused is sent again once, with the new token');
    assertOnce(Array.from({ length: 450 }, (_, i) => `a${i}@example.com`));
    assert.equal(emu.leads().length, 450);
  });

  it('API credits that would run out end the run 7, saying so; once they are back the rest goes, each once', async () => {
    const dir = tmpDir();
    writeFileSync(join(dir, 'e.jsonl'), jsonlEvents(500));
    // 30 credits left of 100,000, and a reserve of 0: three calls of 100 (10 credits each), then a stop.
    const config = join(dir, 'leadledger.json');
    writeFileSync(config, JSON.stringify({ sinks: { zoho: { creditsReserve: 0 } } }));
    emu.setCreditsLeft(30);
    const args = ['push', join(dir, 'e.jsonl'), ...sinkArgs(dir), '--config', config, '--concurrency', '1'];
    const first = await runCli(args, { env: envFor(dir) });
    assert.equal(first.code, 7, first.stderr);
    assert.match(first.stderr, /Zoho CRM's API credits are nearly spent/);
    const made = emu.leads().length;
    assert.ok(made >= 200 && made < 500, `made ${made}`);
    emu.setCreditsLeft(100_000);
    const second = await runCli(args, { env: envFor(dir) });
    assert.equal(second.code, 0, second.stderr);
    assertOnce(Array.from({ length: 500 }, (_, i) => `a${i}@example.com`));
    assert.equal(emu.leads().length, 500);
  });

  it('leadledger auth zoho exchanges a Self Client grant code and writes the credentials file; a push then needs no ZOHO_* variable', async () => {
    const dir = tmpDir();
    writeFileSync(join(dir, 'e.jsonl'), jsonlEvents(5));
    const credentials = join(dir, 'credentials.json');
    const code = emu.grantCode();
    const auth = await runCli(['auth', 'zoho', '--zoho-url', proxy.url, '--credentials', credentials], {
      env: { ZOHO_CLIENT_ID: CLIENT, ZOHO_CLIENT_SECRET: SECRET, ZOHO_GRANT_CODE: code },
    });
    assert.equal(auth.code, 0, auth.stderr);
    assert.match(auth.stdout, /Zoho CRM credentials written to/);
    assert.equal(statSync(credentials).mode & 0o777, 0o600);
    const stored = (JSON.parse(readFileSync(credentials, 'utf8')) as { zoho: Record<string, string> }).zoho;
    assert.ok(stored.refresh_token && stored.client_secret === SECRET);
    const push = await runCli(
      ['push', join(dir, 'e.jsonl'), ...sinkArgs(dir), '--credentials', credentials, '--json'],
      {
        env: { ZOHO_CLIENT_ID: '', ZOHO_CLIENT_SECRET: '', ZOHO_REFRESH_TOKEN: '' },
      },
    );
    assert.equal(push.code, 0, push.stderr);
    assert.equal(jsonReport(push).delivery.sent, 5);
    // A grant code is good once: the same code again is refused, exit 4.
    const again = await runCli(['auth', 'zoho', '--zoho-url', proxy.url, '--credentials', join(dir, 'c2.json')], {
      env: { ZOHO_CLIENT_ID: CLIENT, ZOHO_CLIENT_SECRET: SECRET, ZOHO_GRANT_CODE: code },
    });
    assert.equal(again.code, 4, again.stderr);
    noSecret(auth.stdout, auth.stderr, push.stdout, push.stderr, again.stderr);
  });

  it('refused credentials end the run 4, naming `leadledger auth zoho`, and no secret', async () => {
    const dir = tmpDir();
    writeFileSync(join(dir, 'e.jsonl'), jsonlEvents(3));
    emu.revoke();
    const r = await runCli(['push', join(dir, 'e.jsonl'), ...sinkArgs(dir)], { env: envFor(dir) });
    assert.equal(r.code, 4, r.stderr);
    assert.match(r.stderr, /leadledger auth zoho/);
    noSecret(r.stdout, r.stderr);
  });
});
