// Ctrl-C, SIGTERM and SIGHUP (a closed terminal, a dropped SSH session) while a push waits on an input that sends
// nothing (a FIFO nobody writes, an idle stdin), or has sent what it had. Each signal is sent once the CLI has taken
// it over: a signal that came before would kill it as Node's default does, which is nothing these tests are about.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { BIN, ROOT } from '../helpers/cli.js';
import { jsonlEvents } from '../helpers/events.js';
import { catchesStopSignals } from '../helpers/signals.js';
import { tmpDir } from '../helpers/tmp.js';

interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
  stderr: string;
  stdout: string;
}

/** Starts the CLI with a stdin the test holds open and never ends. */
function start(args: string[]): { child: ChildProcess; stderr: () => string; stdout: () => string } {
  const child = spawn(process.execPath, [BIN, ...args], {
    cwd: ROOT,
    env: { ...process.env, NO_COLOR: '1', CI: '1' },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  let stdout = '';
  child.stdout!.setEncoding('utf8').on('data', (d: string) => (stdout += d));
  return { child, stderr: () => stderr, stdout: () => stdout };
}

const tick = () => new Promise((r) => setTimeout(r, 10));

/**
 * Sends `signal` once `ready` holds (by default: once the CLI has taken the stop signals over) and resolves on the
 * exit. A CLI that never gets ready, or never ends after the signal, is SIGKILLed after a minute: a failure bound.
 */
async function signalWhenReady(
  run: { child: ChildProcess; stderr: () => string; stdout: () => string },
  signal: NodeJS.Signals,
  ready: () => boolean = () => catchesStopSignals(run.child.pid!),
): Promise<Exit> {
  const { child } = run;
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) =>
    child.on('exit', (code, sig) => r({ code, signal: sig })),
  );
  const killer = setTimeout(() => child.kill('SIGKILL'), 60_000);
  while (!ready() && child.exitCode === null && child.signalCode === null) await tick();
  child.kill(signal);
  const e = await exited;
  clearTimeout(killer);
  child.stdin!.destroy();
  return { ...e, stderr: run.stderr(), stdout: run.stdout() };
}

/** The CLI ended by itself with exit 130 after the signal, its summary printed. */
function interrupted(e: Exit): void {
  assert.equal(e.signal, null, `ended by itself, not killed: ${e.stderr}`);
  assert.equal(e.code, 130, e.stderr);
  assert.match(e.stdout, /interrupted/, 'the summary, on stdout');
}

function fifo(dir: string): string {
  const path = join(dir, 'events.jsonl');
  execFileSync('mkfifo', [path]);
  return path;
}

function ledgerState(path: string): { statuses: Record<string, number>; lastRun?: string } {
  if (!existsSync(path)) return { statuses: {} };
  const db = new Database(path, { readonly: true });
  try {
    const rows = db.prepare('SELECT status, count(*) AS n FROM events GROUP BY status').all() as Array<{
      status: string;
      n: number;
    }>;
    const run = db.prepare('SELECT status FROM runs ORDER BY id DESC LIMIT 1').get() as { status: string } | undefined;
    return { statuses: Object.fromEntries(rows.map((r) => [r.status, r.n])), lastRun: run?.status };
  } finally {
    db.close();
  }
}

/** Whether the ledger says `holds`; false while it is not created or not migrated yet. */
function ledgerSays(ledger: string, holds: (s: ReturnType<typeof ledgerState>) => boolean): () => boolean {
  return () => {
    try {
      return holds(ledgerState(ledger));
    } catch {
      return false;
    }
  };
}

/** The last run's status is `running`: the push has its signals, its run recorded, and reads its input. */
const running = (ledger: string) => ledgerSays(ledger, (s) => s.lastRun === 'running');

for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) {
  test(`${signal} while a dry-run waits on a FIFO nobody writes: exit 130`, async () => {
    const dir = tmpDir();
    const input = fifo(dir);
    interrupted(await signalWhenReady(start(['push', input, '--dry-run', '--ledger', join(dir, 'l.db')]), signal));
  });

  test(`${signal} while a dry-run waits on a stdin held open and never written: exit 130`, async () => {
    const dir = tmpDir();
    interrupted(await signalWhenReady(start(['push', '-', '--dry-run', '--ledger', join(dir, 'l.db')]), signal));
  });
}

for (const signal of ['SIGTERM', 'SIGHUP'] as const) {
  test(`${signal} while a push waits on a FIFO nobody writes: the run is recorded as interrupted, exit 130`, async () => {
    const dir = tmpDir();
    const input = fifo(dir);
    const ledger = join(dir, 'l.db');
    const run = start(['push', input, '--sink', 'jsonl', '--output', join(dir, 'out.jsonl'), '--ledger', ledger]);
    interrupted(await signalWhenReady(run, signal, running(ledger)));
    assert.deepEqual(ledgerState(ledger), { statuses: {}, lastRun: 'interrupted' });
  });

  test(`${signal} on a push whose stdin went quiet: the lines written are sent and settled, exit 130, none pending`, async () => {
    const dir = tmpDir();
    const ledger = join(dir, 'l.db');
    const out = join(dir, 'out.jsonl');
    const run = start(['push', '-', '--sink', 'jsonl', '--output', out, '--ledger', ledger]);
    run.child.stdin!.write(jsonlEvents(7));
    const e = await signalWhenReady(
      run,
      signal,
      ledgerSays(ledger, (s) => s.statuses.sent === 7),
    );
    interrupted(e);
    assert.deepEqual(ledgerState(ledger), { statuses: { sent: 7 }, lastRun: 'interrupted' });
    assert.equal(readFileSync(out, 'utf8').trim().split('\n').length, 7);
  });
}
