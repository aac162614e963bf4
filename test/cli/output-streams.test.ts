// Results on stdout, messages on stderr: the summary of a run is its result (`push x --dry-run > audit.txt` keeps
// it), unless stdout holds machine output (--json, --report -), which moves the summary to stderr.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { jsonReport, runCli, ROOT } from '../helpers/cli.js';
import { tmpDir } from '../helpers/tmp.js';

const EVENTS = join(ROOT, 'fixtures', 'webhook-events.jsonl');
const SUMMARY = /records read\s+25/;

test('push --dry-run: the summary on stdout, not on stderr; with --json, the JSON on stdout and the summary on stderr', async () => {
  const dir = tmpDir();
  const human = await runCli(['push', EVENTS, '--dry-run', '--ledger', join(dir, 'l.db')]);
  assert.equal(human.code, 6, human.stderr); // the fixture's conflicting retry
  assert.match(human.stdout, SUMMARY);
  assert.match(human.stdout, /new \(would send\)\s+15/);
  assert.doesNotMatch(human.stderr, SUMMARY);

  const json = await runCli(['push', EVENTS, '--dry-run', '--json', '--ledger', join(dir, 'l.db')]);
  assert.equal(json.code, 6, json.stderr);
  assert.equal(jsonReport(json).counts.read, 25, 'stdout is the JSON document alone');
  assert.match(json.stderr, SUMMARY);

  const quiet = await runCli(['push', EVENTS, '--dry-run', '--quiet', '--ledger', join(dir, 'l.db')]);
  assert.equal(quiet.stdout, '', '--quiet prints no summary');
  assert.doesNotMatch(quiet.stderr, SUMMARY);
  assert.match(quiet.stderr, /^leadledger: error: 1 conflict/);
});

test('push to the jsonl sink on stdout (--output -): the leads alone on stdout, the summary on stderr', async () => {
  const dir = tmpDir();
  const r = await runCli(['push', EVENTS, '--sink', 'jsonl', '--output', '-', '--ledger', join(dir, 'l.db')]);
  assert.equal(r.code, 6, r.stderr);
  const lines = r.stdout.trim().split('\n');
  assert.equal(lines.length, 15);
  for (const l of lines) assert.ok((JSON.parse(l) as { key?: string }).key, l);
  assert.match(r.stderr, SUMMARY);
});

test('--report - and --report /dev/stdout: the rows as JSONL on stdout, the summary on stderr; refused beside --json', async () => {
  const dir = tmpDir();
  for (const to of ['-', '/dev/stdout']) {
    const r = await runCli(['push', EVENTS, '--dry-run', '--report', to, '--ledger', join(dir, 'l.db')]);
    assert.equal(r.code, 6, `${to}: ${r.stderr}`);
    const rows = r.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { line: number; decision: string });
    assert.equal(rows.length, 25, to);
    assert.equal(rows.filter((x) => x.decision === 'new').length, 15, to);
    assert.match(r.stderr, SUMMARY, to);
  }
  const refused = await runCli(['push', EVENTS, '--dry-run', '--report', '-', '--json', '--ledger', join(dir, 'l.db')]);
  assert.equal(refused.code, 2, refused.stderr);
  assert.equal(refused.stdout, '');
  assert.match(refused.stderr, /^leadledger: error: --report - writes the report on stdout, which --json takes too/);
});
