// Exactly once under SIGKILL, overlapping runs and Ctrl-C: the CLI is killed at many points of a push and rerun.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { jsonReport, runCli } from '../helpers/cli.js';
import { emulator } from '../helpers/emulator.js';
import { exited, killAfter, killWhen, ledgerState, start, type LedgerState } from '../helpers/kill.js';
import { heldReceiver } from '../helpers/held-receiver.js';
import { until } from '../helpers/signals.js';
import { runs } from '../helpers/deep.js';
import { tmpDir } from '../helpers/tmp.js';
import { expectedPeople, generateEvents } from '../helpers/events.js';

const TOKEN = 'pat-crash-test-token';

/**
 * Kill points: before the ledger exists, right after the run starts, then `midSend` points at rising progress, every
 * other one with a batch claimed and not yet settled.
 */
function killPlan(total: number, midSend: number): Array<(s: LedgerState) => boolean> {
  const plan: Array<(s: LedgerState) => boolean> = [() => false, (s) => s.running > 0];
  for (let i = 1; i <= midSend; i++) {
    const at = Math.floor((total * i) / (midSend + 2));
    plan.push(i % 2 ? (s) => s.sent >= at && s.pending > 0 : (s) => s.sent >= at);
  }
  return plan;
}

// Mid-send kill points of the HTTP sinks' loops: 7 (9 points in all) by default, the full 11 (13) with
// LEADLEDGER_TEST_DEEP=1. Each point is a process started and killed; every kind of point is still among the 9.
const HTTP_MID_SEND = runs(11, 7);

async function crashLoop(
  args: string[],
  ledger: string,
  total: number,
  env: Record<string, string>,
  midSend: number,
): Promise<Set<string>> {
  const points = new Set<string>();
  for (const [i, when] of killPlan(total, midSend).entries()) {
    const child = start(args, env);
    let state: LedgerState | undefined;
    if (i === 0) {
      await killAfter(child, 40); // during start-up, before any ledger work
      state = ledgerState(ledger) ?? { sent: -1, pending: 0, inDoubt: 0, running: 0 };
    } else state = await killWhen(child, () => ledgerState(ledger), when);
    if (state) points.add(`${state.sent}/${state.pending}/${state.inDoubt}`);
  }
  return points;
}

test(`hubspot: SIGKILL at ${HTTP_MID_SEND + 2} points of a push, then reruns: every lead once, none lost, ledger = CRM`, async () => {
  const emu = await emulator({ token: TOKEN, faults: { latencyMs: 25 } });
  const dir = tmpDir();
  const events = generateEvents(dir, 2600, 21);
  const want = await expectedPeople(events, dir);
  const ledger = join(dir, 'l.db');
  const args = [
    'push',
    events,
    '--sink',
    'hubspot',
    '--hubspot-url',
    emu.url,
    '--ledger',
    ledger,
    '--concurrency',
    '1',
    '--quiet',
    '--backoff',
    '20',
  ];
  const points = await crashLoop(args, ledger, want.size, { HUBSPOT_TOKEN: TOKEN }, HTTP_MID_SEND);
  assert.ok(points.size >= HTTP_MID_SEND - 1, `distinct kill points: ${[...points].join(' ')}`);
  const final = await runCli(args, { env: { HUBSPOT_TOKEN: TOKEN } });
  assert.equal(final.code, 0, final.stderr);
  const emails = emu.contacts().map((c) => String(c.properties.email));
  assert.equal(emails.length, new Set(emails).size);
  assert.deepEqual(new Set(emails), want);
  const db = new Database(ledger, { readonly: true });
  const rows = db.prepare(`SELECT status, natural_key, crm_id FROM events`).all() as Array<{
    status: string;
    natural_key: string;
    crm_id: string;
  }>;
  db.close();
  assert.ok(
    rows.every((r) => r.status === 'sent'),
    'no event left pending or in doubt',
  );
  const ids = new Map(emu.contacts().map((c) => [String(c.properties.email), c.id]));
  assert.ok(
    rows.every((r) => ids.get(r.natural_key) === r.crm_id),
    'the ledger holds the CRM id of every person',
  );
});

test('jsonl: SIGKILL at 13 points of a push, then reruns and the replay they name: each person one whole line; lines a killed run wrote are found, not written again', async () => {
  const dir = tmpDir();
  const events = generateEvents(dir, 60_000, 23);
  const want = await expectedPeople(events, dir);
  const ledger = join(dir, 'l.db');
  const out = join(dir, 'out.jsonl');
  const args = ['push', events, '--sink', 'jsonl', '--output', out, '--ledger', ledger, '--quiet'];
  // All 13 points in every tier: a kill between a batch's write and its settle (found in the file, below) needs them.
  const points = await crashLoop(args, ledger, want.size, {}, 11);
  assert.ok(points.size >= 8, `distinct kill points: ${[...points].join(' ')}`);
  // The rerun settles what the file holds; what it does not hold stays in doubt (the file might have been rotated
  // since), for the replay the summary names, which looks again, then writes the rest.
  const rerun = await runCli(args);
  assert.ok(rerun.code === 0 || rerun.code === 1, rerun.stderr);
  const replay = await runCli([
    'replay',
    '--in-doubt',
    '--resend',
    '--sink',
    'jsonl',
    '--output',
    out,
    '--ledger',
    ledger,
    '--yes',
    '--quiet',
  ]);
  assert.equal(replay.code, 0, replay.stderr);
  // A kill in the middle of a write leaves that line cut; its event was in doubt, and was written again whole.
  const lines = readFileSync(out, 'utf8').split('\n').slice(0, -1);
  const whole: Array<{ lead: { email: string } }> = [];
  for (const line of lines) {
    try {
      whole.push(JSON.parse(line) as { lead: { email: string } });
    } catch {
      // a cut line
    }
  }
  assert.ok(lines.length - whole.length <= points.size, `${lines.length - whole.length} cut lines`);
  const emails = whole.map((l) => l.lead.email);
  assert.equal(emails.length, new Set(emails).size, `${emails.length - new Set(emails).size} leads written twice`);
  assert.deepEqual(new Set(emails), want);
  const db = new Database(ledger, { readonly: true });
  const statuses = db.prepare('SELECT status, count(*) AS n FROM events GROUP BY status').all();
  const recovered = (db.prepare(`SELECT count(*) AS n FROM events WHERE outcome = 'recovered'`).get() as { n: number })
    .n;
  db.close();
  assert.deepEqual(statuses, [{ status: 'sent', n: want.size }], 'nothing left pending or in doubt');
  assert.ok(recovered > 0, 'some events of a killed run were found in the file instead of written again');
});

test(`webhook receiver that does not dedupe: SIGKILL at ${HTTP_MID_SEND + 2} points, reruns never send a lead twice; unsure sends stay in doubt, none lost`, async () => {
  const emu = await emulator({ faults: { latencyMs: 8 } });
  const dir = tmpDir();
  const events = generateEvents(dir, 500, 22);
  const want = await expectedPeople(events, dir);
  const ledger = join(dir, 'l.db');
  const args = [
    'push',
    events,
    '--sink',
    'webhook',
    '--url',
    `${emu.url}/webhook`,
    '--ledger',
    ledger,
    '--concurrency',
    '2',
    '--quiet',
    '--backoff',
    '20',
  ];
  const points = await crashLoop(args, ledger, want.size, {}, HTTP_MID_SEND);
  assert.ok(points.size >= HTTP_MID_SEND - 1, `distinct kill points: ${[...points].join(' ')}`);
  const final = await runCli(args);
  const emails = emu.webhookReceived().deliveries.map((d) => (d.body as { lead: { email: string } }).lead.email);
  assert.equal(emails.length, new Set(emails).size, 'no lead delivered twice');
  const db = new Database(ledger, { readonly: true });
  const doubt = db.prepare(`SELECT natural_key FROM events WHERE status = 'in_doubt'`).all() as Array<{
    natural_key: string;
  }>;
  const pending = (db.prepare(`SELECT count(*) n FROM events WHERE status = 'pending'`).get() as { n: number }).n;
  db.close();
  assert.equal(pending, 0);
  assert.equal(final.code, doubt.length ? 1 : 0, 'exit 1 while anything is in doubt');
  const accounted = new Set([...emails, ...doubt.map((d) => d.natural_key)]);
  assert.deepEqual(accounted, want, 'every lead is delivered or reported in doubt');
});

test('two pushes at once on one ledger, without the run lock: claims alone keep every lead to one send', async () => {
  const emu = await emulator({ faults: { latencyMs: 3 } });
  const dir = tmpDir();
  const events = generateEvents(dir, 600, 23);
  const want = await expectedPeople(events, dir);
  const ledger = join(dir, 'l.db');
  const args = [
    'push',
    events,
    '--sink',
    'webhook',
    '--url',
    `${emu.url}/webhook`,
    '--ledger',
    ledger,
    '--no-lock',
    '--json',
    '--quiet',
  ];
  const [a, b] = await Promise.all([runCli(args), runCli(args)]);
  assert.equal(a.code, 0, a.stderr);
  assert.equal(b.code, 0, b.stderr);
  const emails = emu.webhookReceived().deliveries.map((d) => (d.body as { lead: { email: string } }).lead.email);
  assert.equal(emails.length, new Set(emails).size, 'no lead twice');
  assert.deepEqual(new Set(emails), want);
  const sentA = jsonReport(a).delivery.sent;
  const sentB = jsonReport(b).delivery.sent;
  assert.equal(sentA + sentB, want.size);
});

test('with the run lock, a second push exits 5 at once, or waits with --wait and then finds nothing new', async () => {
  // The first push is held mid-run by its receiver until the test lets it finish.
  const receiver = await heldReceiver();
  const dir = tmpDir();
  const events = generateEvents(dir, 300, 24);
  const ledger = join(dir, 'l.db');
  const args = ['push', events, '--sink', 'webhook', '--url', receiver.url, '--ledger', ledger, '--json', '--quiet'];
  const first = runCli([...args, '--timeout', '600']);
  await receiver.arrived;
  const second = await runCli(args);
  assert.equal(second.code, 5, second.stderr);
  assert.match(second.stderr, /in use by run \d+ \(pid \d+/);
  const waiting = runCli([...args, '--wait', '600']);
  receiver.open();
  assert.equal((await first).code, 0);
  const w = await waiting;
  assert.equal(w.code, 0, w.stderr);
  assert.equal(jsonReport(w).delivery.sent, 0);
});

test('Ctrl-C: in-flight sends settle, the run is recorded as interrupted, exit 130; a rerun finishes the job', async () => {
  const emu = await emulator({ token: TOKEN, faults: { latencyMs: 150 } });
  const dir = tmpDir();
  const events = generateEvents(dir, 3000, 25);
  const want = await expectedPeople(events, dir);
  const ledger = join(dir, 'l.db');
  const args = [
    'push',
    events,
    '--sink',
    'hubspot',
    '--hubspot-url',
    emu.url,
    '--ledger',
    ledger,
    '--concurrency',
    '1',
    '--quiet',
  ];
  const child = start(args, { HUBSPOT_TOKEN: TOKEN });
  await until(
    () => (ledgerState(ledger)?.sent ?? 0) > 0,
    () => child.exitCode === null,
    'its first send settled',
  );
  child.kill('SIGINT');
  assert.equal(await exited(child), 130);
  const s = ledgerState(ledger)!;
  assert.equal(s.pending, 0, 'nothing left claimed but unsettled');
  assert.equal(s.inDoubt, 0);
  assert.ok(s.sent > 0 && s.sent < want.size, `sent ${s.sent}`);
  const db = new Database(ledger, { readonly: true });
  assert.equal(
    (db.prepare(`SELECT status FROM runs ORDER BY id DESC LIMIT 1`).get() as { status: string }).status,
    'interrupted',
  );
  db.close();
  const rerun = await runCli(args, { env: { HUBSPOT_TOKEN: TOKEN } });
  assert.equal(rerun.code, 0, rerun.stderr);
  assert.equal(emu.contacts().length, want.size);
});
