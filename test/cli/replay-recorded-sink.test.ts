// replay without --sink: every event records where it was sent, and its run the sink's settings; the replay sends
// there again, and refuses, naming them, when the events it selects were sent to different destinations.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { jsonReport, runCli } from '../helpers/cli.js';
import { emulator } from '../helpers/emulator.js';
import { tmpDir } from '../helpers/tmp.js';

const lines = (prefix: string, n: number) =>
  Array.from({ length: n }, (_, i) => JSON.stringify({ id: `${prefix}${i}`, email: `${prefix}${i}@example.com` }))
    .join('\n')
    .concat('\n');

// A push to a webhook receiver that is down: every event fails (retryable).
async function failedPush(dir: string, file: string, url: string, ledger: string): Promise<number> {
  const r = await runCli(
    ['push', file, '--sink', 'webhook', '--url', url, '--ledger', ledger, '--max-retries', '0', '--json', '--quiet'],
    { cwd: dir },
  );
  assert.equal(r.code, 1, r.stderr);
  return jsonReport(r).delivery.failed;
}

test('replay without --sink sends the failed events to the sink and URL they were sent to', async () => {
  const emu = await emulator();
  const dir = tmpDir();
  const ledger = join(dir, 'l.db');
  writeFileSync(join(dir, 'a.jsonl'), lines('a', 5));
  emu.setFaults({ outage: true });
  assert.equal(await failedPush(dir, 'a.jsonl', `${emu.url}/webhook`, ledger), 5);
  emu.setFaults({});
  // A dry-run says where they would go, and sends nothing.
  const dry = await runCli(['replay', '--dry-run', '--ledger', ledger, '--json'], { cwd: dir });
  assert.equal(dry.code, 0, dry.stderr);
  assert.equal(jsonReport(dry).options.sink, 'webhook');
  assert.equal(emu.webhookReceived().deliveries.length, 0);
  const r = await runCli(['replay', '--ledger', ledger, '--json'], { cwd: dir });
  assert.equal(r.code, 0, r.stderr);
  assert.equal(jsonReport(r).delivery.sent, 5);
  assert.match(jsonReport(r).sink ?? '', /^webhook at http:\/\/127\.0\.0\.1:\d+\/webhook$/);
  assert.equal(emu.webhookReceived().deliveries.length, 5);
});

test('replay without --sink refuses events sent to different destinations, naming them; --run picks one', async () => {
  const one = await emulator();
  const two = await emulator();
  const dir = tmpDir();
  const ledger = join(dir, 'l.db');
  writeFileSync(join(dir, 'a.jsonl'), lines('a', 3));
  writeFileSync(join(dir, 'b.jsonl'), lines('b', 2));
  one.setFaults({ outage: true });
  two.setFaults({ outage: true });
  await failedPush(dir, 'a.jsonl', `${one.url}/webhook`, ledger);
  await failedPush(dir, 'b.jsonl', `${two.url}/webhook`, ledger);
  one.setFaults({});
  two.setFaults({});
  const r = await runCli(['replay', '--ledger', ledger], { cwd: dir });
  assert.equal(r.code, 2, r.stderr);
  assert.match(r.stderr, /sent to 2 different destinations/);
  assert.ok(r.stderr.includes(`webhook at ${one.url}/webhook: 3 events (last run 1)`), r.stderr);
  assert.ok(r.stderr.includes(`webhook at ${two.url}/webhook: 2 events (last run 2)`), r.stderr);
  assert.match(r.stderr, /--run <id>/);
  assert.equal(one.webhookReceived().requests + two.webhookReceived().requests, 0, 'nothing sent');
  // Each group to its own destination.
  const first = await runCli(['replay', '--ledger', ledger, '--run', '1'], { cwd: dir });
  assert.equal(first.code, 0, first.stderr);
  const second = await runCli(['replay', '--ledger', ledger, '--run', '2'], { cwd: dir });
  assert.equal(second.code, 0, second.stderr);
  assert.equal(one.webhookReceived().deliveries.length, 3);
  assert.equal(two.webhookReceived().deliveries.length, 2);
});

test('a --sink given, or its flag, wins over what the events recorded', async () => {
  const emu = await emulator();
  const other = await emulator();
  const dir = tmpDir();
  const ledger = join(dir, 'l.db');
  writeFileSync(join(dir, 'a.jsonl'), lines('a', 2));
  emu.setFaults({ outage: true });
  await failedPush(dir, 'a.jsonl', `${emu.url}/webhook`, ledger);
  const r = await runCli(['replay', '--ledger', ledger, '--url', `${other.url}/webhook`], { cwd: dir });
  assert.equal(r.code, 0, r.stderr);
  assert.equal(other.webhookReceived().deliveries.length, 2);
  const out = join(dir, 'out.jsonl');
  writeFileSync(join(dir, 'b.jsonl'), lines('b', 1));
  await failedPush(dir, 'b.jsonl', `${emu.url}/webhook`, ledger);
  const toFile = await runCli(['replay', '--ledger', ledger, '--sink', 'jsonl', '--output', out], { cwd: dir });
  assert.equal(toFile.code, 0, toFile.stderr);
  assert.match(toFile.stdout, /JSONL file/);
});
