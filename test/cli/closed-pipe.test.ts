// A reader that goes away (`leadledger ledger export --output - | head`): what is left to write has nowhere to go,
// and that is a normal end, not "unexpected error: write EPIPE ... please report it".
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { closeSync, openSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { openLedger } from '../../src/ledger/ledger.js';
import { BIN, inheritedEnv, ROOT } from '../helpers/cli.js';
import { jsonlEvents } from '../helpers/events.js';
import { tmpDir } from '../helpers/tmp.js';

interface Ended {
  code: number | null;
  signal: NodeJS.Signals | null;
  stderr: string;
  /** Bytes of stdout read before the pipe was closed. */
  read: number;
}

/**
 * Runs the CLI with its stdout a pipe whose reader closes it: at once, before the CLI writes anything (`| true`), or
 * after the first `afterBytes` bytes (`| head -c`). A CLI that does not end by itself is killed after two minutes.
 */
function closedStdout(args: string[], afterBytes = 0): Promise<Ended> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      cwd: ROOT,
      env: inheritedEnv() as NodeJS.ProcessEnv,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    let read = 0;
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    if (afterBytes === 0) child.stdout.destroy();
    else
      child.stdout.on('data', (b: Buffer) => {
        read += b.length;
        if (read >= afterBytes) child.stdout.destroy();
      });
    const killer = setTimeout(() => child.kill('SIGKILL'), 120_000);
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      clearTimeout(killer);
      resolve({ code, signal, stderr, read });
    });
  });
}

/** A ledger of n delivered events: its export is megabytes, far more than a pipe holds. */
function bigLedger(dir: string, n: number): string {
  const path = join(dir, 'l.db');
  const l = openLedger(path)!;
  const entries = [];
  for (let i = 0; i < n; i++)
    entries.push({ key: `evt_${String(i).padStart(7, '0')}`, naturalKey: `p${i}@example.com` });
  l.importDelivered(entries, 'crm-export.csv');
  for (let i = 0; i < 30; i++) l.finishRun(l.startRun('push', { i }, { exclusive: true }), 'done', { sent: i });
  l.close();
  return path;
}

function quietEnd(r: Ended, what: string, code = 0): void {
  assert.equal(r.signal, null, `${what}: ended by itself`);
  assert.equal(r.code, code, `${what}: ${r.stderr}`);
  assert.doesNotMatch(r.stderr, /EPIPE|unexpected error|please report|node:events|Unhandled/, what);
}

test('ledger export --output - | head: the export stops where its reader did, exit 0, nothing on stderr', async () => {
  const ledger = bigLedger(tmpDir(), 20_000);
  for (const format of ['jsonl', 'csv']) {
    const args = ['ledger', 'export', '--output', '-', '--format', format, '--ledger', ledger];
    const head = await closedStdout(args, 1000);
    quietEnd(head, `${format}, closed after its first line`);
    assert.equal(head.stderr, '', 'no "exported N events" either: the export did not end');
    quietEnd(await closedStdout(args), `${format}, closed before anything was written`);
  }
});

test('the listings, push --json and presets --json to a reader that has gone: their own exit code, no error', async () => {
  const dir = tmpDir();
  const ledger = bigLedger(dir, 20_000);
  for (const args of [
    ['ledger', 'list', '--limit', '0'],
    ['ledger', 'list', '--limit', '0', '--json'],
    ['ledger', 'runs'],
    ['ledger', 'runs', '--json'],
    ['ledger', 'show', 'evt_0000001'],
    ['ledger', 'stats', '--json'],
    ['ledger', 'verify', '--json'],
  ])
    for (const after of [0, 100]) quietEnd(await closedStdout([...args, '--ledger', ledger], after), args.join(' '));
  const input = join(dir, 'events.jsonl');
  writeFileSync(input, jsonlEvents(50));
  quietEnd(await closedStdout(['push', input, '--dry-run', '--json', '--ledger', ledger]), 'push --dry-run --json');
  quietEnd(await closedStdout(['presets', '--json']), 'presets --json');
  quietEnd(await closedStdout(['presets', '--json'], 100), 'presets --json, after a line');
  // The run's own code stands: what a push did is in the ledger, whoever read its report.
  const sent = await closedStdout([
    'push',
    input,
    '--sink',
    'jsonl',
    '--output',
    join(dir, 'out.jsonl'),
    '--json',
    '--ledger',
    join(dir, 'push.db'),
  ]);
  quietEnd(sent, 'push --json');
});

test('a stdout that cannot be written (a full disk behind > file) is said on one line, exit 1, no stack trace', async () => {
  const ledger = bigLedger(tmpDir(), 20_000);
  const full = openSync('/dev/full', 'w');
  try {
    for (const args of [
      ['ledger', 'list', '--limit', '0'],
      ['ledger', 'export', '--output', '-'],
    ]) {
      const r = await new Promise<{ code: number | null; stderr: string }>((resolve, reject) => {
        const child = spawn(process.execPath, [BIN, ...args, '--ledger', ledger], {
          cwd: ROOT,
          env: inheritedEnv() as NodeJS.ProcessEnv,
          stdio: ['ignore', full, 'pipe'],
        });
        let stderr = '';
        child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
        child.on('error', reject);
        child.on('close', (code) => resolve({ code, stderr }));
      });
      assert.equal(r.code, 1, `${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, /ENOSPC/, args.join(' '));
      assert.doesNotMatch(r.stderr, /node:events|Unhandled|\n {4}at /, args.join(' '));
    }
  } finally {
    closeSync(full);
  }
});
