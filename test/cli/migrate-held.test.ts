// `ledger migrate` and the runs that hold a ledger: a copy taken while a push went on lacked what the push settled
// after it (the next push on the new ledger sent those leads again). A migrate is refused while a push holds the
// ledger (exit 5, naming the run), waits for it with --wait, and holds the ledger itself while it copies.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { BIN, inheritedEnv, ROOT, runCli } from '../helpers/cli.js';
import { jsonlEvents } from '../helpers/events.js';
import { heldReceiver } from '../helpers/held-receiver.js';
import { readLedger } from '../helpers/kill.js';
import { pgDatabase } from '../helpers/postgres.js';
import { tmpDir } from '../helpers/tmp.js';

/** Starts the CLI; its stderr collected, `said(re)` resolving once it has printed what re matches. */
function started(args: string[], env: Record<string, string> = {}) {
  const child: ChildProcess = spawn(process.execPath, [BIN, ...args], {
    cwd: ROOT,
    env: { ...inheritedEnv(), ...env } as NodeJS.ProcessEnv,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  const waiters: Array<{ re: RegExp; done: () => void }> = [];
  child.stdout!.resume();
  child.stderr!.setEncoding('utf8').on('data', (d: string) => {
    stderr += d;
    for (const w of waiters.splice(0))
      if (w.re.test(stderr)) w.done();
      else waiters.push(w);
  });
  // A CLI still running when its test is over is a failure, not a process left behind.
  const killer = setTimeout(() => child.kill('SIGKILL'), 170_000);
  const ended = new Promise<number | null>((r) =>
    child.on('close', (code) => {
      clearTimeout(killer);
      r(code);
    }),
  );
  // Fails, rather than waits on, a CLI that ended without saying it.
  const said = (re: RegExp) =>
    new Promise<void>((done, fail) => {
      if (re.test(stderr)) return done();
      waiters.push({ re, done });
      void ended.then((code) => fail(new Error(`exited ${code} without saying ${re}: ${stderr}`)));
    });
  return { child, ended, said, stderr: () => stderr };
}

const runsOf = (ledger: string) =>
  readLedger(
    ledger,
    (db) => db.prepare('SELECT id, command, status FROM runs ORDER BY id').all() as Array<Record<string, unknown>>,
  ) ?? [];

test('ledger migrate while a push holds the ledger: refused, exit 5, naming the run; with --wait it copies once the push is done, all of it', async () => {
  const dir = tmpDir();
  const ledger = join(dir, 'l.db');
  const input = join(dir, 'events.jsonl');
  writeFileSync(input, jsonlEvents(20));
  const receiver = await heldReceiver();
  // No request times out while the receiver holds it: the push waits as long as the test does.
  const push = started([
    'push',
    input,
    '--sink',
    'webhook',
    '--url',
    receiver.url,
    '--timeout',
    '600',
    '--ledger',
    ledger,
  ]);
  await receiver.arrived; // the push is sending: it holds the ledger, and claims are pending

  const to = join(dir, 'copy.db');
  const refused = await runCli(['ledger', 'migrate', '--ledger', ledger, '--to', to]);
  assert.equal(refused.code, 5, refused.stderr);
  assert.match(
    refused.stderr,
    new RegExp(
      `^leadledger: error: ledger .*l\\.db is in use by run 1 \\(pid ${push.child.pid} on [^)]+\\); wait for it, or pass --wait\\n$`,
    ),
  );
  assert.equal(existsSync(to), false, 'nothing was copied');

  const waiting = started(['ledger', 'migrate', '--ledger', ledger, '--to', to, '--wait']);
  await waiting.said(/in use by run 1 .*: waiting up to 600 s for it/);
  receiver.open();
  assert.equal(await push.ended, 0, push.stderr());
  assert.equal(await waiting.ended, 0, waiting.stderr());
  assert.match(waiting.stderr(), /copied .*l\.db to .*copy\.db: 20 events, 2 runs, /);
  // The copy holds the push whole: every event sent, its run done; and the migrate's run, done, in both.
  const sent = readLedger(to, (db) => db.prepare(`SELECT count(*) FROM events WHERE status = 'sent'`).pluck().get());
  assert.equal(sent, 20);
  const runs = [
    { id: 1, command: 'push', status: 'done' },
    { id: 2, command: 'ledger migrate', status: 'done' },
  ];
  assert.deepEqual(runsOf(to), runs);
  assert.deepEqual(runsOf(ledger), runs);
  // The copy pushes on: nothing of the input is new to it.
  const again = await runCli(['push', input, '--dry-run', '--json', '--ledger', to]);
  assert.equal(again.code, 0, again.stderr);
  assert.equal((JSON.parse(again.stdout) as { counts: { new: number } }).counts.new, 0);
});

test('a push started while ledger migrate copies is refused, naming the migrate; the copy then completes', async () => {
  const pgdb = await pgDatabase('leadledger_migrate');
  const env = { PGPASSWORD: pgdb.cluster.password };
  const dir = tmpDir();
  const ledger = join(dir, 'l.db');
  const input = join(dir, 'events.jsonl');
  writeFileSync(input, jsonlEvents(30));
  const out = join(dir, 'out.jsonl');
  const first = await runCli(['push', input, '--sink', 'jsonl', '--output', out, '--ledger', ledger]);
  assert.equal(first.code, 0, first.stderr);

  // The new ledger's schema is created under an advisory lock: held here, the copy waits for it, the old ledger
  // held by the migrate all the while.
  const schema = `l_${randomBytes(4).toString('hex')}`;
  const lock = new pg.Client({ connectionString: pgdb.urlWithPassword });
  lock.on('error', () => undefined); // the database is dropped with the file's end, this connection with it
  await lock.connect();
  await lock.query('SELECT pg_advisory_lock(hashtextextended($1, 0))', [`leadledger:schema:${schema}`]);
  const migrate = started(['ledger', 'migrate', '--ledger', ledger, '--to', `${pgdb.url}?schema=${schema}`], env);
  try {
    // Its run is recorded as running: from then on, nothing but the migrate writes the old ledger.
    while (!runsOf(ledger).some((r) => r.command === 'ledger migrate' && r.status === 'running')) {
      assert.equal(migrate.child.exitCode, null, migrate.stderr());
      await new Promise((r) => setTimeout(r, 20));
    }
    const more = join(dir, 'more.jsonl');
    writeFileSync(more, jsonlEvents(40));
    const refused = await runCli(['push', more, '--sink', 'jsonl', '--output', out, '--ledger', ledger]);
    assert.equal(refused.code, 5, refused.stderr);
    assert.match(refused.stderr, new RegExp(`is in use by run 2 \\(pid ${migrate.child.pid} on `));
  } finally {
    // Released whatever happened: a connection left holding it would keep the test process alive.
    await lock.end();
  }
  assert.equal(await migrate.ended, 0, migrate.stderr());
  assert.match(migrate.stderr(), /: 30 events, 2 runs, /);
  assert.deepEqual(
    runsOf(ledger).map((r) => [r.command, r.status]),
    [
      ['push', 'done'],
      ['ledger migrate', 'done'],
    ],
    'the refused push recorded no run',
  );
});

test('a ledger file this user may not write is still copied, said to be copied without holding it', async () => {
  const dir = tmpDir();
  const ro = join(dir, 'ro');
  mkdirSync(ro);
  const ledger = join(ro, 'l.db');
  const input = join(dir, 'events.jsonl');
  writeFileSync(input, jsonlEvents(5));
  const first = await runCli(['push', input, '--sink', 'jsonl', '--output', join(dir, 'o.jsonl'), '--ledger', ledger]);
  assert.equal(first.code, 0, first.stderr);
  chmodSync(ledger, 0o444);
  chmodSync(ro, 0o555);
  const r = await runCli(['ledger', 'migrate', '--ledger', ledger, '--to', join(dir, 'copy.db')], { fileModes: true });
  chmodSync(ro, 0o755);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stderr, /l\.db may not be written here, so it is copied without holding it/);
  assert.match(r.stderr, /: 5 events, 1 runs, /);
});
