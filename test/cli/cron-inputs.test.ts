// Inputs as cron meets them: a glob that matches nothing yet is nothing to do (exit 0, a note), unless
// --require-input; a missing file among several is named while the others are read and decided (exit 3).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { jsonReport, runCli } from '../helpers/cli.js';
import { jsonlEvents } from '../helpers/events.js';
import { tmpDir } from '../helpers/tmp.js';

test('push and replay --from: a glob that matches nothing is nothing to do, exit 0 with a note; --require-input makes it exit 3', async () => {
  const dir = tmpDir();
  const pattern = join(dir, 'exports', '*.csv');
  const ledger = join(dir, 'l.db');
  const push = await runCli(['push', pattern, '--dry-run', '--json', '--ledger', ledger]);
  assert.equal(push.code, 0, push.stderr);
  assert.match(push.stderr, new RegExp(`nothing to do for '${pattern.replace(/[*.]/g, '\\$&')}': no file matches it`));
  assert.deepEqual(jsonReport(push).noMatch, [pattern]);
  assert.equal(jsonReport(push).counts.read, 0);
  const quiet = await runCli(['push', pattern, '--dry-run', '--quiet', '--ledger', ledger]);
  assert.equal(quiet.code, 0, quiet.stderr);
  assert.equal(quiet.stderr, '', 'cron mails nothing');
  const required = await runCli(['push', pattern, '--dry-run', '--require-input', '--ledger', ledger]);
  assert.equal(required.code, 3, required.stderr);
  assert.match(required.stderr, /no files match/);

  const events = join(dir, 'e.jsonl');
  writeFileSync(events, jsonlEvents(3));
  const sink = ['--sink', 'jsonl', '--output', join(dir, 'out.jsonl')];
  assert.equal((await runCli(['push', events, ...sink, '--ledger', ledger, '--quiet'])).code, 0);
  const replay = await runCli(['replay', '--from', pattern, ...sink, '--ledger', ledger, '--json']);
  assert.equal(replay.code, 0, replay.stderr);
  assert.deepEqual(jsonReport(replay).noMatch, [pattern]);
  const replayRequired = await runCli(['replay', '--from', pattern, '--require-input', ...sink, '--ledger', ledger]);
  assert.equal(replayRequired.code, 3, replayRequired.stderr);
});

test('push: one missing input among several is named (no such file) while the others are read and sent; exit 3', async () => {
  const dir = tmpDir();
  const a = join(dir, 'a.jsonl');
  const c = join(dir, 'c.jsonl');
  writeFileSync(a, jsonlEvents(3));
  writeFileSync(c, jsonlEvents(5).split('\n').slice(3).join('\n'));
  const missing = join(dir, 'b.jsonl');
  const r = await runCli([
    'push',
    a,
    missing,
    c,
    '--sink',
    'jsonl',
    '--output',
    join(dir, 'out.jsonl'),
    '--ledger',
    join(dir, 'l.db'),
    '--json',
  ]);
  assert.equal(r.code, 3, r.stderr);
  const report = jsonReport(r);
  assert.equal(report.counts.read, 5);
  assert.equal(report.delivery.sent, 5);
  assert.deepEqual(
    report.unread.map((u) => [u.source, u.reason]),
    [[missing, 'no such file']],
  );
  assert.match(r.stderr, new RegExp(`${missing.replace(/\./g, '\\.')} .*no such file`));
});
