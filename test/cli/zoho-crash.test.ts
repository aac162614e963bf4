// push --sink zoho under SIGKILL, answers lost after Zoho wrote the records, 5xx and 429; then a rerun and
// `replay --in-doubt`: each person exactly once in the emulator, none lost. Zoho's duplicate check on Email makes a
// lost batch safe to settle (looked up, or sent again and answered DUPLICATE_DATA). And a refresh token that Zoho
// rotated just before the crash: the next run finds it in the credentials file and goes on. These run straight
// against the emulator, not through the Prism proxy of zoho.test.ts (the same requests, checked there): Prism's CPU
// per request would make the kill loop slow on a shared machine.
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { startZohoEmulator, type ZohoEmulator, type ZohoEmulatorOptions } from '../../src/sandbox/zoho-api.js';
import { runCli } from '../helpers/cli.js';
import { jsonlEvents } from '../helpers/events.js';
import { countByStatus, killWhen, ledgerState, start } from '../helpers/kill.js';
import { tmpDir } from '../helpers/tmp.js';

const CLIENT = 'zoho-crash-client';
const SECRET = 'zoho-crash-secret-CANARY';
const REFRESH = 'zoho-crash-refresh-CANARY';

const emus: ZohoEmulator[] = [];
after(async () => {
  for (const e of emus) await e.close();
});

async function zoho(o: ZohoEmulatorOptions = {}): Promise<ZohoEmulator> {
  const emu = await startZohoEmulator({
    clientId: CLIENT,
    clientSecret: SECRET,
    refreshTokens: [REFRESH],
    logRequests: true,
    ...o,
  });
  emus.push(emu);
  return emu;
}

/** A folder with n events of n people (a0…a(n-1)@example.com), its env and the arguments of a push. */
function setup(emu: ZohoEmulator, n: number) {
  const dir = tmpDir();
  const events = join(dir, 'events.jsonl');
  writeFileSync(events, jsonlEvents(n));
  const ledger = join(dir, 'l.db');
  const credentials = join(dir, 'credentials.json');
  const sink = [
    '--sink',
    'zoho',
    '--zoho-url',
    emu.url,
    '--ledger',
    ledger,
    '--credentials',
    credentials,
    '--backoff',
    '20',
  ];
  const env = { ZOHO_CLIENT_ID: CLIENT, ZOHO_CLIENT_SECRET: SECRET, ZOHO_REFRESH_TOKEN: REFRESH };
  return { dir, events, ledger, credentials, sink, env, push: ['push', events, ...sink] };
}

function assertEachOnce(emu: ZohoEmulator, n: number): void {
  const per = new Map<string, number>();
  for (const l of emu.leads()) {
    const e = String(l.fields.Email).toLowerCase();
    per.set(e, (per.get(e) ?? 0) + 1);
  }
  const want = Array.from({ length: n }, (_, i) => `a${i}@example.com`);
  assert.deepEqual(
    want.filter((e) => per.get(e) !== 1).map((e) => `${e}×${per.get(e) ?? 0}`),
    [],
    'each person exactly once',
  );
  assert.equal(emu.leads().length, n, 'no one else');
}

function settledAll(ledger: string, n: number): void {
  const db = new Database(ledger, { readonly: true });
  const left = countByStatus(db);
  db.close();
  assert.deepEqual(left, { sent: n }, 'every event sent, none lost or in doubt');
}

describe('push --sink zoho, killed and faulted (spawned CLI against the Zoho emulator)', () => {
  it('SIGKILL mid-batch at several points, answers lost after the write, 5xx and 429, then a rerun and replay --in-doubt: each person once', async () => {
    const n = 1500;
    const emu = await zoho({
      faults: { latencyMs: 20, commitThenDropRate: 0.1, error5xxRate: 0.05, burst429: 2, retryAfter: '0' },
      seed: 5,
    });
    const s = setup(emu, n);
    const points = new Set<string>();
    for (const at of [100, 500, 900]) {
      const child = start([...s.push, '--quiet'], s.env);
      // Killed with claims unsettled (a batch on the wire): the next run finds them in doubt.
      const st = await killWhen(
        child,
        () => ledgerState(s.ledger),
        (x) => x.sent >= at && x.pending > 0,
      );
      if (st) points.add(`${st.sent}/${st.pending}/${st.inDoubt}`);
    }
    assert.ok(points.size >= 2, `kill points: ${[...points].join(' ')}`);
    const stats = emu.stats();
    assert.ok(stats.commitThenDrops > 0, 'some answers were lost after the records were written');
    assert.ok(stats.sent5xx > 0 && stats.sent429 > 0, JSON.stringify(stats));
    emu.setFaults({});
    const rerun = await runCli([...s.push, '--quiet'], { env: s.env });
    assert.ok(rerun.code === 0 || rerun.code === 1, rerun.stderr);
    const replay = await runCli(['replay', '--in-doubt', ...s.sink], { env: s.env });
    assert.equal(replay.code, 0, replay.stderr);
    assertEachOnce(emu, n);
    settledAll(s.ledger, n);
  });

  it('a refresh token Zoho rotated just before the run was killed is read back from the credentials file: the rerun goes on', async () => {
    const n = 1200;
    const emu = await zoho({ rotateRefreshTokens: true, faults: { latencyMs: 20 } });
    const s = setup(emu, n);
    const child = start([...s.push, '--quiet'], s.env);
    const st = await killWhen(
      child,
      () => ledgerState(s.ledger),
      (x) => x.sent >= 200 && x.pending > 0,
    );
    assert.ok(st, 'killed mid-run');
    assert.equal(emu.stats().refreshes, 1);
    const stored = (JSON.parse(readFileSync(s.credentials, 'utf8')) as { zoho: { refresh_token: string } }).zoho;
    assert.notEqual(stored.refresh_token, REFRESH, 'the rotated refresh token was kept');
    // The access token the dead run held expires: the rerun must refresh, and only the rotated token is good.
    emu.expireAccessTokens();
    const rerun = await runCli([...s.push, '--quiet'], { env: s.env });
    assert.ok(rerun.code === 0 || rerun.code === 1, rerun.stderr);
    assert.ok(emu.stats().refreshes >= 2);
    assert.equal(emu.stats().refusedGrants, 0, 'the revoked token from the environment was not tried first');
    const replay = await runCli(['replay', '--in-doubt', ...s.sink], { env: s.env });
    assert.equal(replay.code, 0, replay.stderr);
    assertEachOnce(emu, n);
    settledAll(s.ledger, n);
    for (const t of [rerun.stderr, replay.stderr, replay.stdout])
      assert.ok(!t.includes(SECRET) && !t.includes(REFRESH));
  });
});
