// --report as a user meets it: a path that cannot be opened, a symbolic link, a disk that fills up mid-run.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, existsSync, lstatSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { jsonReport, ROOT, runCli, type CliResult } from '../helpers/cli.js';
import { jsonlEvents } from '../helpers/events.js';
import { tmpDir } from '../helpers/tmp.js';

const fixture = join(ROOT, 'fixtures', 'webhook-events.jsonl');

/** Rows of the ledger by status (empty when the run never created it). */
function statuses(path: string): Record<string, number> {
  if (!existsSync(path)) return {};
  const db = new Database(path, { readonly: true });
  try {
    const rows = db.prepare('SELECT status, count(*) AS n FROM events GROUP BY status').all() as Array<{
      status: string;
      n: number;
    }>;
    return Object.fromEntries(rows.map((r) => [r.status, r.n]));
  } finally {
    db.close();
  }
}

/** The command's error is one line (no stack trace) naming `path`, and it exits 2. */
function refusedNaming(r: CliResult, path: string): void {
  assert.equal(r.code, 2, r.stderr);
  assert.equal(r.stderr.trimEnd().split('\n').length, 1, `one line: ${r.stderr}`);
  assert.ok(r.stderr.startsWith('leadledger: error: '), r.stderr);
  assert.ok(r.stderr.includes(path), r.stderr);
}

test('--report in a folder that does not exist: one line naming it, exit 2, nothing claimed or sent', async () => {
  const dir = tmpDir();
  const report = join(dir, 'no', 'such', 'r.csv');
  const dry = await runCli(['push', fixture, '--dry-run', '--report', report, '--ledger', join(dir, 'dry.db')]);
  refusedNaming(dry, report);

  const ledger = join(dir, 'l.db');
  const out = join(dir, 'out.jsonl');
  const r = await runCli(['push', fixture, '--sink', 'jsonl', '--output', out, '--ledger', ledger, '--report', report]);
  refusedNaming(r, report);
  assert.deepEqual(statuses(ledger), {}, 'nothing claimed');
  assert.equal(existsSync(out), false, 'nothing sent');
});

test('--report as a dangling symlink is refused naming it, exit 2; the link target is not created', async () => {
  const dir = tmpDir();
  for (const target of [join(dir, 'elsewhere.csv'), join(dir, 'gone', 'elsewhere.csv')]) {
    const link = join(dir, `link-${target.length}.csv`);
    symlinkSync(target, link);
    const ledger = join(dir, `l-${target.length}.db`);
    const r = await runCli(
      ['push', fixture, '--sink', 'jsonl', '--output', join(dir, 'out.jsonl')].concat([
        '--ledger',
        ledger,
        '--report',
        link,
      ]),
    );
    refusedNaming(r, link);
    assert.match(r.stderr, /symbolic link/);
    assert.equal(existsSync(target), false, 'the target is not created');
    assert.ok(lstatSync(link).isSymbolicLink(), 'the link is left as it was');
    assert.deepEqual(statuses(ledger), {}, 'nothing claimed');
  }
});

test('--report through a symlink to a file is refused, exit 2: the target keeps its content and mode', async () => {
  const dir = tmpDir();
  const target = join(dir, 'precious.csv');
  writeFileSync(target, 'keep me\n');
  chmodSync(target, 0o644);
  const link = join(dir, 'r.csv');
  symlinkSync(target, link);
  const ledger = join(dir, 'l.db');
  for (const args of [['--dry-run'], ['--sink', 'jsonl', '--output', join(dir, 'out.jsonl')]]) {
    const r = await runCli(['push', fixture, ...args, '--ledger', ledger, '--report', link]);
    refusedNaming(r, link);
    assert.match(r.stderr, /symbolic link/);
    assert.equal(readFileSync(target, 'utf8'), 'keep me\n');
    assert.equal(statSync(target).mode & 0o777, 0o644);
  }
  assert.deepEqual(statuses(ledger), {}, 'nothing claimed');

  // The report's own path is created 0600: it holds emails.
  const own = join(dir, 'own.jsonl');
  const ok = await runCli(['push', fixture, '--dry-run', '--report', own, '--ledger', ledger]);
  assert.equal(ok.code, 6, ok.stderr); // the fixture's conflicting retry (evt_01JA0009)
  assert.equal(statSync(own).mode & 0o777, 0o600);
  assert.equal(readFileSync(own, 'utf8').trim().split('\n').length, 25);
});

test('--report /dev/full: the push goes on, every send is settled, --json is right, one-line error, exit 1', async () => {
  const dir = tmpDir();
  const input = join(dir, 'in.jsonl');
  // More rows than the report buffers: its writes fail while leads are still being sent.
  writeFileSync(input, jsonlEvents(5000));
  const ledger = join(dir, 'l.db');
  const out = join(dir, 'out.jsonl');
  const r = await runCli(
    ['push', input, '--sink', 'jsonl', '--output', out, '--ledger', ledger, '--report', '/dev/full', '--json'],
    { timeoutMs: 120_000 },
  );
  assert.equal(r.code, 1, r.stderr);
  const doc = jsonReport(r);
  assert.equal(doc.delivery.sent, 5000);
  assert.equal(doc.delivery.inDoubt, 0);
  assert.equal(doc.exitCode, 1);
  assert.match(doc.reportError ?? '', /\/dev\/full/);
  assert.deepEqual(statuses(ledger), { sent: 5000 }, 'no row left pending: every sent lead is settled');
  assert.equal(readFileSync(out, 'utf8').trim().split('\n').length, 5000);
  const last = r.stderr.trimEnd().split('\n').at(-1)!;
  assert.match(last, /^leadledger: error: the report \/dev\/full could not be written: ENOSPC/);
  assert.doesNotMatch(r.stderr, /node:events|Unhandled/);
});
