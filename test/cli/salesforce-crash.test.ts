// push --sink salesforce under SIGKILL in the middle of a batch (Salesforce has written the Leads, the ledger has not
// settled them), answers lost after Salesforce applied a create, and a refresh token rotated just before a crash;
// then a rerun and `replay --in-doubt`: each person exactly once in the emulator, none lost.
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import {
  startSalesforceEmulator,
  type SalesforceEmulator,
  type SalesforceEmulatorOptions,
} from '../../src/sandbox/salesforce-api.js';
import { runCli } from '../helpers/cli.js';
import { jsonlEvents } from '../helpers/events.js';
import { countByStatus, killWhen, ledgerState, start } from '../helpers/kill.js';
import { tmpDir } from '../helpers/tmp.js';

const CLIENT_ID = 'sf-crash-client';
const CLIENT_SECRET = 'sf-crash-secret-CANARY-71c2';
const REFRESH = 'sf-crash-refresh-CANARY-0d3e';
const ENV = {
  SALESFORCE_CLIENT_ID: CLIENT_ID,
  SALESFORCE_CLIENT_SECRET: CLIENT_SECRET,
  SALESFORCE_REFRESH_TOKEN: REFRESH,
};

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

function setup(emu: SalesforceEmulator, n: number) {
  const dir = tmpDir();
  const events = join(dir, 'events.jsonl');
  writeFileSync(events, jsonlEvents(n));
  const ledger = join(dir, 'l.db');
  const credentials = join(dir, 'credentials.json');
  const sink = ['--sink', 'salesforce', '--salesforce-url', emu.url, '--ledger', ledger];
  sink.push('--credentials', credentials, '--backoff', '20');
  return { dir, events, ledger, credentials, sink, push: ['push', events, ...sink] };
}

/** Asserts that the emulator holds exactly the n people, each as one Lead. */
function assertEachOnce(emu: SalesforceEmulator, n: number): void {
  const per = new Map<string, number>();
  for (const l of emu.leads()) per.set(l.Email!.toLowerCase(), (per.get(l.Email!.toLowerCase()) ?? 0) + 1);
  const want = Array.from({ length: n }, (_, i) => `a${i}@example.com`);
  assert.deepEqual(
    want.filter((e) => per.get(e) !== 1).map((e) => `${e}×${per.get(e) ?? 0}`),
    [],
    'each person exactly once',
  );
  assert.equal(emu.leads().length, n, 'no one else');
}

function allSent(ledger: string, n: number): void {
  const db = new Database(ledger, { readonly: true });
  const left = countByStatus(db);
  db.close();
  assert.deepEqual(left, { sent: n }, 'every event sent, none lost or in doubt');
}

describe('push --sink salesforce, killed and faulted (spawned CLI against the Salesforce emulator)', () => {
  it('SIGKILL mid-batch (Leads written, the ledger not settled), then a rerun and replay --in-doubt: each person once', async () => {
    const n = 1000;
    // A 200-record write takes 400 ms after Salesforce applied it: the window in which the run is killed.
    const emu = await sf({ perRecordMs: 2, faults: { error5xxRate: 0.05 }, seed: 5 });
    const s = setup(emu, n);
    const points = new Set<string>();
    for (let k = 0; k < 3; k++) {
      const before = emu.leads().length;
      const child = start([...s.push, '--quiet', '--concurrency', '2'], ENV);
      const st = await killWhen(
        child,
        () => {
          const l = ledgerState(s.ledger);
          return l ? { ...l, written: emu.leads().length } : undefined;
        },
        // This run's write is applied in Salesforce and not yet settled in the ledger.
        (x) => x.written > before && x.pending > 0 && x.written > x.sent,
        5,
      );
      if (st) points.add(`${st.sent}/${st.pending}/${st.written}`);
    }
    assert.ok(points.size >= 2, `kill points: ${[...points].join(' ')}`);
    emu.setFaults({});
    const rerun = await runCli([...s.push, '--quiet'], { env: ENV });
    assert.ok(rerun.code === 0 || rerun.code === 1, rerun.stderr);
    const replay = await runCli(['replay', '--in-doubt', ...s.sink], { env: ENV });
    assert.equal(replay.code, 0, replay.stderr);
    assertEachOnce(emu, n);
    allSent(s.ledger, n);
  });

  it('without the External ID field, creates whose answers were lost are looked up by email: none created again', async () => {
    const n = 30;
    const emu = await sf({ externalIdFields: [] });
    const s = setup(emu, n);
    // The first create's answer is lost after Salesforce applied it: a POST is not retried, so its leads are in doubt.
    emu.failNext('create', 'commit-then-drop');
    const push = await runCli(s.push, { env: ENV });
    assert.equal(push.code, 1, push.stderr);
    assert.equal(ledgerState(s.ledger)?.inDoubt, n, push.stderr);
    assert.equal(emu.leads().length, n, 'Salesforce applied the create');
    const replay = await runCli(['replay', '--in-doubt', ...s.sink], { env: ENV });
    assert.equal(replay.code, 0, replay.stderr);
    assertEachOnce(emu, n);
    allSent(s.ledger, n);
    const creates = emu.requests().filter((r) => r.method === 'POST' && r.path.endsWith('/composite/sobjects'));
    assert.equal(creates.length, 1, 'no create sent again');
  });

  it('a refresh token rotated just before a SIGKILL is in the credentials file: the next run goes on from it', async () => {
    const n = 2000;
    const emu = await sf({ rotateRefreshTokens: true, perRecordMs: 1 });
    const s = setup(emu, n);
    const auth = await runCli(['auth', 'salesforce', '--salesforce-url', emu.url, '--credentials', s.credentials], {
      env: ENV,
    });
    assert.equal(auth.code, 0, auth.stderr);
    // The run's first session dies after 4 requests: it refreshes mid-run, and Salesforce rotates the refresh token.
    emu.expireTokensAfter(4, 1);
    const stored = (): string =>
      (JSON.parse(readFileSync(s.credentials, 'utf8')) as { salesforce: { refresh_token: string } }).salesforce
        .refresh_token;
    const child = start([...s.push, '--quiet'], {});
    // Killed once the mid-run refresh (the third: auth, the run's start, mid-run) is written to the file.
    const st = await killWhen(
      child,
      () => (emu.stats().refreshes >= 3 ? stored() : undefined),
      (t) => emu.refreshTokens().includes(t),
      2,
    );
    assert.ok(st !== undefined, 'killed after a refresh made in the run');
    assert.equal(emu.stats().refreshes, 3);
    assert.ok(!emu.refreshTokens().includes(REFRESH), 'the original refresh token is refused now');
    const rerun = await runCli([...s.push, '--quiet'], { env: {} });
    assert.ok(rerun.code === 0 || rerun.code === 1, rerun.stderr);
    const replay = await runCli(['replay', '--in-doubt', ...s.sink], { env: {} });
    assert.equal(replay.code, 0, replay.stderr);
    assertEachOnce(emu, n);
    allSent(s.ledger, n);
  });
});
