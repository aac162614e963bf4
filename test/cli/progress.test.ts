// Progress off a terminal (cron logs): a plain line every few seconds with the share of the input read, the counts
// and an ETA for the whole input; for stdin, the counts without a share. Spawned CLI against the emulator.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { emulator } from '../helpers/emulator.js';
import { jsonlEvents } from '../helpers/events.js';
import { start } from '../helpers/kill.js';
import { tmpDir } from '../helpers/tmp.js';

const TOKEN = 'pat-na1-progress-token';
const LINE = /^\[\d{4}-\d\d-\d\dT[\d:.]+Z\] (.*)$/gm;

/**
 * Runs a push until a progress line is out (one that `wanted` accepts), then stops it with Ctrl-C; returns the
 * progress lines, the one wanted last.
 */
async function firstProgress(args: string[], input?: string, wanted: (line: string) => boolean = () => true) {
  const child = start(args, { HUBSPOT_TOKEN: TOKEN }, ['pipe', 'ignore', 'pipe']);
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  if (input !== undefined) child.stdin!.write(input);
  const closed = new Promise((r) => child.on('close', r));
  const lines = () => [...stderr.matchAll(LINE)].map((m) => m[1]!);
  // The first line comes three seconds in at the earliest; on a loaded machine, later.
  while (!lines().some(wanted) && child.exitCode === null) await new Promise((r) => setTimeout(r, 50));
  child.kill('SIGINT');
  child.stdin!.end();
  await closed;
  const seen = lines();
  const i = seen.findIndex(wanted);
  assert.ok(i >= 0, `the progress line wanted before the push ended: ${stderr}`);
  return seen.slice(0, i + 1);
}

test('off a terminal, a push of files prints the share of the input read and an ETA for all of it', async () => {
  const emu = await emulator({ token: TOKEN, rateLimit: '4/1s' });
  const dir = tmpDir();
  const a = join(dir, 'a.jsonl');
  const b = join(dir, 'b.jsonl');
  const all = jsonlEvents(120_000).split('\n');
  writeFileSync(a, all.slice(0, 60_000).join('\n') + '\n');
  writeFileSync(b, all.slice(60_000).join('\n'));
  // The ETA needs a send settled: on a loaded machine the first line may come before one is.
  const full = /^(\d+)% of ([\d.]+) MB · read (\d+) · \d+ read\/s · sent (\d+)\/(\d+) · [\d.]+ sent\/s · ETA (.+)$/;
  const lines = await firstProgress(
    ['push', a, b, '--sink', 'hubspot', '--hubspot-url', emu.url, '--ledger', join(dir, 'l.db')],
    undefined,
    (l) => full.test(l),
  );
  for (const l of lines)
    assert.match(l, /^\d+% of [\d.]+ MB · read \d+ · \d+ read\/s · sent \d+\/\d+ · [\d.]+ sent\/s/);
  const m = full.exec(lines.at(-1)!);
  assert.ok(m, lines.at(-1));
  const pct = Number(m[1]);
  assert.ok(pct < 50, `a share of both files, and only the part read ahead of the sends: ${lines.at(-1)}`);
  assert.equal(m[2], ((statSync(a).size + statSync(b).size) / 1e6).toFixed(1), 'the total is both files');
  // 120,000 people at 4 requests of 100 a second: the ETA is for all of them (minutes), not for what is queued.
  assert.match(m[6]!, /min/, lines.at(-1));
});

test('off a terminal, a push from stdin prints counts without a share or an ETA', async () => {
  const emu = await emulator({ token: TOKEN, rateLimit: '4/1s' });
  const dir = tmpDir();
  const lines = await firstProgress(
    ['push', '-', '--sink', 'hubspot', '--hubspot-url', emu.url, '--ledger', join(dir, 'l.db')],
    jsonlEvents(5000),
    // On a loaded machine the first line may come before anything is read: the one wanted has sends.
    (l) => l.includes(' sent '),
  );
  for (const l of lines) assert.match(l, /^read \d+ · \d+ read\/s( · sent \d+\/\d+ · [\d.]+ sent\/s)?$/);
  assert.match(lines.at(-1)!, /^read \d+ · \d+ read\/s · sent \d+\/\d+ · [\d.]+ sent\/s$/);
});
