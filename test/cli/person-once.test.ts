// A person reaches a sink once, retries included: an event whose send failed (a 5xx, an outage) and another event of
// the same person that got through since are one person, for a rerun of the push, for replay and for
// replay --permanent --from, whatever the order of the two events in the input. The built CLI, as cron runs it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { jsonReport, runCli } from '../helpers/cli.js';
import { emulator } from '../helpers/emulator.js';
import { tmpDir } from '../helpers/tmp.js';

const line = (id: string, email: string, name: string) =>
  JSON.stringify({ event_id: id, type: 'lead.created', data: { email, name } });

// Pushes with every retry off: a scripted 503 fails its event at once (retryable).
const quick = ['--max-retries', '0', '--json', '--quiet'];

async function setUp() {
  const emu = await emulator();
  const dir = tmpDir();
  const ledger = join(dir, 'l.db');
  const a = join(dir, 'a.jsonl');
  const b = join(dir, 'b.jsonl');
  writeFileSync(a, line('evt_A', 'ana@example.com', 'Ana Lima') + '\n');
  writeFileSync(b, line('evt_B', 'ana@example.com', 'Ana Lima') + '\n');
  const webhook = ['--sink', 'webhook', '--url', `${emu.url}/webhook`, '--ledger', ledger];
  // A fails with a 503; then B, the same person, gets through.
  emu.setFaults({ script: ['503'] });
  const first = await runCli(['push', a, ...webhook, ...quick]);
  assert.equal(first.code, 1, first.stderr);
  assert.equal(jsonReport(first).delivery.failed, 1);
  emu.setFaults({});
  const second = await runCli(['push', b, ...webhook, ...quick]);
  assert.equal(second.code, 0, second.stderr);
  assert.equal(emu.webhookReceived().deliveries.length, 1);
  return { emu, dir, ledger, a, b, webhook };
}

const people = (emu: { webhookReceived(): { deliveries: Array<{ body: unknown }> } }) =>
  emu.webhookReceived().deliveries.map((d) => (d.body as { lead: { email: string } }).lead.email);

test('a rerun of the failed push does not send the person again: the retry is a known lead', async () => {
  const { emu, a, webhook } = await setUp();
  // The dry-run reads the ledger through its index, the push through SQLite: both say so.
  const audit = await runCli(['push', a, ...webhook, ...quick, '--dry-run']);
  assert.equal(jsonReport(audit).counts.known_lead, 1, audit.stdout);
  const rerun = await runCli(['push', a, ...webhook, ...quick]);
  assert.equal(rerun.code, 0, rerun.stderr);
  const r = jsonReport(rerun);
  assert.equal(r.counts.known_lead, 1, JSON.stringify(r.counts));
  assert.equal(r.counts.new ?? 0, 0);
  assert.deepEqual(people(emu), ['ana@example.com'], 'the person reached the receiver once');
});

test('replay and replay --permanent --from leave the failed event of a delivered person unsent', async () => {
  const { emu, dir, a, webhook } = await setUp();
  const report = join(dir, 'replay.csv');
  const replay = await runCli(['replay', ...webhook, ...quick, '--report', report]);
  assert.equal(replay.code, 0, replay.stderr);
  assert.equal(jsonReport(replay).counts.known_lead, 1);
  assert.match(readFileSync(report, 'utf8'), /known_lead,.*earlier send failed, not retried: .*evt_B/);
  const from = await runCli(['replay', '--permanent', '--from', a, ...webhook, ...quick]);
  assert.equal(from.code, 0, from.stderr);
  assert.equal(jsonReport(from).counts.known_lead, 1);
  assert.deepEqual(people(emu), ['ana@example.com']);
});

test('in one input the failed event and the delivered one decide alike, in either order', async () => {
  const { emu, dir, webhook } = await setUp();
  for (const [i, order] of [
    ['evt_A', 'evt_B'],
    ['evt_B', 'evt_A'],
  ].entries()) {
    const both = join(dir, `both-${i}.jsonl`);
    writeFileSync(both, order.map((id) => line(id, 'ana@example.com', 'Ana Lima')).join('\n') + '\n');
    const r = await runCli(['push', both, ...webhook, ...quick]);
    assert.equal(r.code, 0, r.stderr);
    const c = jsonReport(r).counts;
    assert.equal(c.new ?? 0, 0, `order ${order.join(', ')}: nothing new (${JSON.stringify(c)})`);
  }
  assert.deepEqual(people(emu), ['ana@example.com']);
});

test('two failed events of one person, both retried: the person is sent once (in the push and in replay)', async () => {
  const emu = await emulator();
  const dir = tmpDir();
  const ledger = join(dir, 'l.db');
  const input = join(dir, 'in.jsonl');
  writeFileSync(
    input,
    [line('evt_1', 'bia@example.com', 'Bia'), line('evt_2', 'bia@example.com', 'Bia')].join('\n') + '\n',
  );
  const webhook = ['--sink', 'webhook', '--url', `${emu.url}/webhook`, '--ledger', ledger];
  // One 503 fails evt_1; evt_2 is then a known lead of this run (its person is being delivered): nothing else failed.
  emu.setFaults({ script: ['503'] });
  const first = await runCli(['push', input, ...webhook, ...quick]);
  assert.equal(first.code, 1, first.stderr);
  emu.setFaults({});
  const rerun = await runCli(['push', input, ...webhook, ...quick]);
  assert.equal(rerun.code, 0, rerun.stderr);
  assert.deepEqual(people(emu), ['bia@example.com']);
  const replay = await runCli(['replay', ...webhook, ...quick]);
  assert.equal(replay.code, 0, replay.stderr);
  assert.deepEqual(people(emu), ['bia@example.com'], 'the retried event delivered them: replay sends nobody');
});

test('replay --existing update sends the failed event of a delivered person as an update of that person', async () => {
  const { emu, webhook } = await setUp();
  const r = await runCli(['replay', ...webhook, ...quick, '--existing', 'update']);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(jsonReport(r).counts.known_lead, 1);
  assert.equal(
    jsonReport(r).delivery.sent + (jsonReport(r).delivery.updated ?? 0),
    1,
    JSON.stringify(jsonReport(r).delivery),
  );
  assert.equal(emu.webhookReceived().deliveries.length, 2, 'the update went out');
});
