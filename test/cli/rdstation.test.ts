// `leadledger push --sink rdstation` and `leadledger auth rdstation`, spawned as users run them, against the RD Station
// emulator on 127.0.0.1: one conversion per person across reruns, SIGKILLs and answers lost after RD recorded the
// conversion; credentials from `auth` refreshed and rotated unattended; the account's and a contact's limits; no
// secret anywhere a person or a file can see it.
import assert from 'node:assert/strict';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { startRdStationEmulator, type RdStationEmulator } from '../../src/sandbox/rdstation-emulator.js';
import { jsonReport, runCli } from '../helpers/cli.js';
import { jsonlEvents } from '../helpers/events.js';
import { killWhen, ledgerState, start } from '../helpers/kill.js';
import { tmpDir } from '../helpers/tmp.js';

const CLIENT_ID = 'cli-client-3b7d';
const CLIENT_SECRET = 'cli-secret-canary-8e1f0a2c';
const REFRESH = 'cli-refresh-canary-4d9c61b7';
const SECRETS = [CLIENT_SECRET, REFRESH];
const APP = { RDSTATION_CLIENT_ID: CLIENT_ID, RDSTATION_CLIENT_SECRET: CLIENT_SECRET };

const emus: RdStationEmulator[] = [];
after(async () => {
  for (const e of emus) await e.close();
});

/** An RD emulator whose per-minute window does not pace the run unless a test says so. */
async function rd(o: Parameters<typeof startRdStationEmulator>[0] = {}): Promise<RdStationEmulator> {
  const emu = await startRdStationEmulator({
    clientId: CLIENT_ID,
    clientSecret: CLIENT_SECRET,
    refreshTokens: [REFRESH],
    rateLimit: { max: 100_000, intervalMs: 60_000 },
    ...o,
  });
  emus.push(emu);
  return emu;
}

/** A working folder with n events of n people, a config at the emulator's limit, and the push arguments. */
function setup(emu: RdStationEmulator, n: number, requestsPerMinute = 60_000) {
  const dir = tmpDir();
  const events = join(dir, 'events.jsonl');
  writeFileSync(events, jsonlEvents(n));
  const config = join(dir, 'leadledger.config.json');
  writeFileSync(config, JSON.stringify({ sinks: { rdstation: { requestsPerMinute } } }));
  const ledger = join(dir, 'l.db');
  const credentials = join(dir, 'credentials.json');
  const push = [
    'push',
    events,
    '--sink',
    'rdstation',
    '--rdstation-url',
    emu.url,
    '--config',
    config,
    '--ledger',
    ledger,
    '--credentials',
    credentials,
    '--backoff',
    '20',
  ];
  return { dir, events, config, ledger, credentials, push };
}

/** Conversions the emulator recorded, per email. */
function conversionsPerPerson(emu: RdStationEmulator): Map<string, number> {
  const m = new Map<string, number>();
  for (const c of emu.api.conversions() as Array<{ email: string }>) m.set(c.email, (m.get(c.email) ?? 0) + 1);
  return m;
}

function assertNoSecret(where: string, text: string): void {
  for (const s of SECRETS) assert.ok(!text.includes(s), `a secret in ${where}`);
}

describe('push --sink rdstation (spawned CLI against the RD Station emulator)', () => {
  it('every new lead is one conversion; a rerun sends nothing; no secret in output, report or ledger', async () => {
    const emu = await rd();
    const s = setup(emu, 30);
    const report = join(s.dir, 'report.jsonl');
    const env = { ...APP, RDSTATION_REFRESH_TOKEN: REFRESH };
    const first = await runCli([...s.push, '--json', '--report', report], { env });
    assert.equal(first.code, 0, first.stderr);
    assert.equal(jsonReport(first).delivery.sent, 30);
    const per = conversionsPerPerson(emu);
    assert.equal(per.size, 30);
    assert.ok([...per.values()].every((n) => n === 1));
    const again = await runCli(s.push, { env });
    assert.equal(again.code, 0, again.stderr);
    assert.equal(emu.api.conversions().length, 30, 'the rerun sent nothing');
    for (const [where, text] of [
      ['stdout', first.stdout + again.stdout],
      ['stderr', first.stderr + again.stderr],
      ['the report', readFileSync(report, 'utf8')],
      ['the ledger file', readFileSync(s.ledger).toString('latin1')],
    ] as const)
      assertNoSecret(where, text);
  });

  it('auth rdstation writes a 0600 credentials file from the environment; push runs from it alone', async () => {
    const emu = await rd();
    const s = setup(emu, 5);
    const auth = await runCli(['auth', 'rdstation', '--rdstation-url', emu.url, '--credentials', s.credentials], {
      env: { ...APP, RDSTATION_REFRESH_TOKEN: REFRESH },
    });
    assert.equal(auth.code, 0, auth.stderr);
    assert.match(auth.stdout, /credentials written to/);
    assert.equal(statSync(s.credentials).mode & 0o777, 0o600);
    assertNoSecret('auth output', auth.stdout + auth.stderr);
    // No RDSTATION_* variable: the file is all the run has.
    const r = await runCli(s.push, { env: {} });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(emu.api.conversions().length, 5);
  });

  it('auth rdstation without a refresh token runs the consent page with a 127.0.0.1 redirect', async () => {
    const emu = await rd();
    const s = setup(emu, 2);
    const child = start(['auth', 'rdstation', '--rdstation-url', emu.url, '--credentials', s.credentials], APP, [
      'ignore',
      'pipe',
      'pipe',
    ]);
    let stderr = '';
    let stdout = '';
    child.stdout!.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    const consent = await new Promise<string>((resolve, reject) => {
      child.stderr!.setEncoding('utf8').on('data', (d: string) => {
        stderr += d;
        const m = /(http:\/\/127\.0\.0\.1:\d+\/auth\/dialog\S+)/.exec(stderr);
        if (m?.[1]) resolve(m[1]);
      });
      child.on('exit', () => reject(new Error(`auth exited first: ${stderr}`)));
    });
    // The browser: RD's consent page redirects to leadledger's listener with the code.
    const page = await fetch(consent);
    assert.equal(page.status, 200);
    const code = await new Promise<number | null>((r) => child.on('close', r));
    assert.equal(code, 0, stderr);
    assert.match(stdout, /credentials written to/);
    assertNoSecret('auth output', stdout + stderr);
    const r = await runCli(s.push, { env: {} });
    assert.equal(r.code, 0, r.stderr);
  });

  it('an access token expiring mid-run is refreshed once, and the rotated refresh token is kept', async () => {
    const emu = await rd();
    const s = setup(emu, 20);
    const auth = await runCli(['auth', 'rdstation', '--rdstation-url', emu.url, '--credentials', s.credentials], {
      env: { ...APP, RDSTATION_REFRESH_TOKEN: REFRESH },
    });
    assert.equal(auth.code, 0, auth.stderr);
    const stored = (): string =>
      (JSON.parse(readFileSync(s.credentials, 'utf8')) as { rdstation: { refresh_token: string } }).rdstation
        .refresh_token;
    const before = stored();
    assert.equal(emu.stats().refreshes, 1);
    emu.api.expireTokensAfter(7);
    const r = await runCli(s.push, { env: {} });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(emu.api.conversions().length, 20);
    assert.equal(emu.stats().refreshes, 2, 'one refresh during the run');
    assert.notEqual(stored(), before, 'the rotated refresh token was written back');
    const again = await runCli([...s.push, '--rdstation-url', emu.url], { env: {} });
    assert.equal(again.code, 0, again.stderr);
  });

  it('a revoked grant stops the push with exit 4 naming leadledger auth rdstation', async () => {
    const emu = await rd();
    const s = setup(emu, 3);
    const env = { ...APP, RDSTATION_REFRESH_TOKEN: REFRESH };
    emu.api.revokeGrant();
    const r = await runCli(s.push, { env });
    assert.equal(r.code, 4, r.stderr);
    assert.match(r.stderr, /leadledger auth rdstation/);
    assertNoSecret('stderr', r.stderr);
    assert.equal(emu.api.conversions().length, 0);
  });

  it('SIGKILL at several points and answers lost after RD recorded the conversion: each person ONE conversion', async () => {
    const emu = await rd({ faults: { latencyMs: 5, commitThenDropRate: 0.15 }, seed: 7 });
    const n = 60;
    const s = setup(emu, n);
    const env = { ...APP, RDSTATION_REFRESH_TOKEN: REFRESH };
    const auth = await runCli(['auth', 'rdstation', '--rdstation-url', emu.url, '--credentials', s.credentials], {
      env,
    });
    assert.equal(auth.code, 0, auth.stderr);
    const points = new Set<string>();
    for (const at of [3, 12, 25, 40]) {
      const child = start([...s.push, '--quiet'], {});
      const st = await killWhen(
        child,
        () => ledgerState(s.ledger),
        (x) => x.sent >= at,
      );
      if (st) points.add(`${st.sent}/${st.pending}/${st.inDoubt}`);
    }
    assert.ok(points.size >= 3, `kill points: ${[...points].join(' ')}`);
    assert.ok(emu.stats().commitThenDrops > 0, 'some answers were lost after the conversion was recorded');
    // The CRM answers again: the rest are sent, the in-doubt ones are looked up, never blindly re-sent.
    emu.setFaults({});
    const rerun = await runCli([...s.push, '--quiet'], { env: {} });
    assert.ok(rerun.code === 0 || rerun.code === 3, rerun.stderr);
    const replay = await runCli(
      [
        'replay',
        '--in-doubt',
        '--sink',
        'rdstation',
        '--rdstation-url',
        emu.url,
        '--ledger',
        s.ledger,
        '--config',
        s.config,
        '--credentials',
        s.credentials,
      ],
      { env: {} },
    );
    assert.equal(replay.code, 0, replay.stderr);
    const per = conversionsPerPerson(emu);
    assert.equal(per.size, n, 'every person');
    const twice = [...per].filter(([, c]) => c !== 1);
    assert.deepEqual(twice, [], 'nobody converted twice');
    const db = new Database(s.ledger, { readonly: true });
    const rows = db.prepare(`SELECT status, outcome FROM events`).all() as Array<{ status: string; outcome: string }>;
    db.close();
    assert.ok(rows.every((r) => r.status === 'sent'));
    assert.ok(
      rows.some((r) => r.outcome === 'recovered'),
      'an in-doubt conversion was settled by the lookup',
    );
    assertNoSecret('the ledger file', readFileSync(s.ledger).toString('latin1'));
  });

  it("--concurrency 32: no MaxListenersExceededWarning (the waits share one listener on the run's stop signal)", async () => {
    const emu = await rd();
    const s = setup(emu, 80);
    const r = await runCli([...s.push, '--concurrency', '32', '--quiet'], {
      env: { ...APP, RDSTATION_REFRESH_TOKEN: REFRESH },
    });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(emu.api.conversions().length, 80);
    assert.doesNotMatch(r.stderr, /MaxListenersExceededWarning|memory leak/);
  });

  it("the account's 429s are waited out; a contact past 24 conversions a day fails alone, permanently", async () => {
    const emu = await rd({ rateLimit: { max: 4, intervalMs: 1000 }, postsPerContact: 2, accessTokens: ['form-token'] });
    // Two conversions of fabi from RD forms today: her budget (2 here, 24 in RD) is spent.
    for (let i = 0; i < 2; i++) {
      const res = await fetch(`${emu.url}/platform/events?event_type=conversion`, {
        method: 'POST',
        headers: { authorization: 'Bearer form-token', 'content-type': 'application/json' },
        body: JSON.stringify({
          event_type: 'CONVERSION',
          event_family: 'CDP',
          payload: { conversion_identifier: 'form', email: 'a3@example.com' },
        }),
      });
      assert.equal(res.status, 200, await res.text());
    }
    // Faster than the account allows: the emulator's window answers 429 with Retry-After.
    const s = setup(emu, 12, 60_000);
    const r = await runCli([...s.push, '--json'], { env: { ...APP, RDSTATION_REFRESH_TOKEN: REFRESH } });
    assert.equal(r.code, 1, r.stderr);
    const report = jsonReport(r);
    assert.equal(report.delivery.sent, 11);
    assert.ok(report.http.rateLimited > 0, 'the account limit was met and waited out');
    assert.equal(emu.stats().contactLimited, 1, 'the spent contact was asked once, not retried');
    assert.match(JSON.stringify(report.failures), /24 conversions per contact/);
  });
});

describe('leadledger auth', () => {
  it('a sink that takes a token says so: usage error, exit 2', async () => {
    const r = await runCli(['auth', 'hubspot']);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /hubspot needs no `leadledger auth`: it takes a token: set HUBSPOT_TOKEN/);
  });

  it('rdstation without the app in the environment is a usage error naming the variables', async () => {
    const r = await runCli(['auth', 'rdstation', '--rdstation-url', 'http://127.0.0.1:9'], {
      env: { RDSTATION_CLIENT_ID: undefined, RDSTATION_CLIENT_SECRET: undefined },
    });
    assert.equal(r.code, 2);
    assert.match(r.stderr, /RDSTATION_CLIENT_ID and RDSTATION_CLIENT_SECRET/);
  });
});
