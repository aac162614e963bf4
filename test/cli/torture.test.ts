// Torture: the built CLI is SIGKILLed at many points of replay, ledger import, forget and prune, and meets a full
// disk; after each kill `ledger verify` must pass, and a rerun must finish the job with nothing lost or doubled.
// Kill moments are picked by polling the ledger read-only (test/helpers/kill.ts), as crash.test.ts does.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  chmodSync,
  closeSync,
  copyFileSync,
  existsSync,
  openSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { once } from 'node:events';
import { join } from 'node:path';
import type Database from 'better-sqlite3';
import { ledgerVerify } from '../../src/commands/ledger/verify.js';
import { openLedger } from '../../src/ledger/ledger.js';
import { tombstoneHash } from '../../src/ledger/queries.js';
import type { Emulator } from '../../src/sandbox/emulator.js';
import { jsonReport, ROOT, runCli, type CliResult } from '../helpers/cli.js';
import { emulator } from '../helpers/emulator.js';
import { expectedPeople, generateEvents } from '../helpers/events.js';
import { countByStatus, exited, killAfter, killWhen, readLedger, start } from '../helpers/kill.js';
import { tmpDir } from '../helpers/tmp.js';
import { testCtx } from '../commands/ledger/seed.js';

const TOKEN = 'pat-torture-test-token';
const env = { HUBSPOT_TOKEN: TOKEN };
/** Lookups are one request per event: the emulator's HubSpot limit (190 per 10 s) would make them crawl. */
const NO_LIMIT = { max: 1_000_000, intervalMs: 1000 };
const FIXTURE = join(ROOT, 'fixtures', 'webhook-events.jsonl');

/**
 * `ledger verify` passes: the file is sound and the ledger keeps its own rules. After each kill it is the verify
 * command called in this process (the same check, without a process to start); after the last rerun of each test,
 * the built CLI's, as a user runs it.
 */
async function verifyOk(ledger: string, when: string, how: 'spawned' | 'in-process' = 'in-process'): Promise<void> {
  if (how === 'in-process') {
    const r = await ledgerVerify({ ledger }, testCtx(ROOT));
    assert.ok(r.ok, `ledger verify after ${when}: ${JSON.stringify(r.problems)}`);
    return;
  }
  const v = await runCli(['ledger', 'verify', '--ledger', ledger, '--json']);
  assert.equal(v.code, 0, `ledger verify after ${when}: ${v.stdout}${v.stderr}`);
}

/** Where a command was killed (its state then, or `after N ms`), or how it ended when it finished first. */
type Kill<S> = { at: S | string } | { exitCode: number | null; last: S | undefined };

/**
 * Starts the command and SIGKILLs it when `when` holds, polling probe(pid) every `everyMs`, or after `delayMs`.
 */
async function killedRun<S>(
  args: string[],
  probe: (pid: number) => S | undefined,
  when: ((s: S) => boolean) | { delayMs: number },
  opts: { env?: Record<string, string>; everyMs?: number } = {},
): Promise<Kill<S>> {
  const child = start(args, opts.env, ['ignore', 'ignore', 'ignore']);
  if ('delayMs' in when) {
    if (await killAfter(child, when.delayMs)) return { at: `after ${when.delayMs} ms` };
    return { exitCode: child.exitCode, last: undefined };
  }
  let last: S | undefined;
  const at = await killWhen(child, () => (last = probe(child.pid!)), when, opts.everyMs);
  return at === undefined ? { exitCode: await exited(child), last } : { at };
}

/**
 * How long the command takes from the moment `from` holds (read on the ledger, for the command's pid) to its exit,
 * on a copy of the ledger: the kill points of a step nothing outside can watch (a VACUUM, one large transaction)
 * are spread over that time, whatever the speed of the machine.
 */
async function runTime(
  args: string[],
  ledger: string,
  from: (db: Database.Database, pid: number) => boolean,
): Promise<number> {
  const copy = `${ledger}.timing.db`;
  // A poll can miss a short moment on a busy machine: a few tries.
  for (let attempt = 0; attempt < 3; attempt++) {
    for (const ext of ['', '-wal']) if (existsSync(ledger + ext)) copyFileSync(ledger + ext, copy + ext);
    const child = start(
      args.map((a) => (a === ledger ? copy : a)),
      {},
      ['ignore', 'ignore', 'ignore'],
    );
    let since: number | undefined;
    while (child.exitCode === null) {
      if (since === undefined && readLedger(copy, (db) => from(db, child.pid!))) since = Date.now();
      await new Promise((r) => setTimeout(r, 1));
    }
    const ended = Date.now();
    const code = await exited(child);
    for (const ext of ['', '-wal', '-shm']) rmSync(copy + ext, { force: true });
    // A poll that held the copy's WAL while it was emptied makes an erasure end 5: that run times nothing.
    if (since !== undefined && code === 0) return ended - since;
  }
  assert.fail(`${args.join(' ')} on a copy of the ledger was never timed from its moment to a clean end`);
}

/** Saves the ledger as it is (no process has it open: the file and its WAL are the whole of it); the function puts it back. */
function snapshot(ledger: string): () => void {
  const copy = `${ledger}.snapshot`;
  const hasWal = existsSync(ledger + '-wal');
  copyFileSync(ledger, copy);
  if (hasWal) copyFileSync(ledger + '-wal', copy + '-wal');
  return () => {
    for (const ext of ['-wal', '-shm']) rmSync(ledger + ext, { force: true });
    copyFileSync(copy, ledger);
    if (hasWal) copyFileSync(copy + '-wal', ledger + '-wal');
  };
}

/**
 * A kill condition that holds from `ms` after `cond` first held (whether or not it still does: a run that has just
 * closed its record still has its connection to close).
 */
function msAfter<S>(cond: (s: S) => boolean, ms: number): (s: S) => boolean {
  let since: number | undefined;
  return (s) => {
    if (since === undefined && cond(s)) since = Date.now();
    return since !== undefined && Date.now() - since >= ms;
  };
}

/**
 * A moment to kill a run at, as it is tried the n-th time (0 first): a state the run passes through, tried again as
 * it is, or a delay (from start-up, or from a state), halved at each try. A run that ends before the moment came
 * (a machine slower or quicker than the one the delays were measured on, a poll that came too late) is run again
 * from the same ledger, earlier, until a kill lands: the test never depends on a delay being right. An `optional`
 * moment is a window of a few statements that a poll may miss at any speed: tried, never required.
 */
interface Moment<S> {
  name: string;
  at: (n: number) => ((s: S) => boolean) | { delayMs: number };
  optional?: boolean;
}

/** A moment at a state the run passes through. */
const atState = <S>(name: string, cond: (s: S) => boolean, optional = false): Moment<S> => ({
  name,
  at: () => cond,
  optional,
});

/** A moment `ms` after start-up, or after `cond` first held: halved at each try. */
function afterMs<S>(name: string, ms: number, cond?: (s: S) => boolean): Moment<S> {
  return { name, at: (n) => (cond ? msAfter(cond, ms / 2 ** n) : { delayMs: Math.max(1, Math.round(ms / 2 ** n)) }) };
}

const TRIES = 8;
const OPTIONAL_TRIES = 3;

/**
 * Kills runs of `args`, each from `restore()`, until one is killed at the moment; undefined when an optional moment
 * was missed at every try. A required moment missed at every try fails the test.
 */
async function killAt<S>(
  args: string[],
  probe: (pid: number) => S | undefined,
  m: Moment<S>,
  restore: () => void | Promise<void>,
  opts: { env?: Record<string, string>; everyMs?: number } = {},
): Promise<{ at: S | string; tries: number } | undefined> {
  const tries = m.optional ? OPTIONAL_TRIES : TRIES;
  let last: Kill<S> | undefined;
  for (let n = 0; n < tries; n++) {
    await restore();
    last = await killedRun(args, probe, m.at(n), opts);
    if ('at' in last) return { at: last.at, tries: n + 1 };
  }
  if (m.optional) return undefined;
  assert.fail(
    `${args.join(' ')}: never killed at "${m.name}" in ${tries} tries; the last ended ${JSON.stringify(last)}`,
  );
}

const count = (db: Database.Database, sql: string, ...params: unknown[]) =>
  (db.prepare(sql).get(...params) as { n: number }).n;

/** Whether the process `pid` has a run of `command` recorded as running (a killed one stays so until the next run). */
const runningAs = (db: Database.Database, command: string, pid: number) =>
  count(db, `SELECT count(*) n FROM runs WHERE command = ? AND status = 'running' AND pid = ?`, command, pid) > 0;

/** How far the live run of one process got: its events settled (sent, failed, in doubt) and still pending. */
interface RunProgress {
  run: number | undefined;
  mineSettled: number;
  minePending: number;
}

function runProgress(ledger: string, pid: number): RunProgress | undefined {
  return readLedger(ledger, (db) => {
    const run = db
      .prepare(`SELECT id FROM runs WHERE pid = ? AND status = 'running' ORDER BY id DESC LIMIT 1`)
      .pluck()
      .get(pid) as number | undefined;
    const r = db
      .prepare(
        `SELECT coalesce(sum(status <> 'pending'), 0) settled, coalesce(sum(status = 'pending'), 0) pending FROM events WHERE run_id = ?`,
      )
      .get(run ?? -1) as { settled: number; pending: number };
    return { run, mineSettled: r.settled, minePending: r.pending };
  });
}

function statusCounts(ledger: string): Record<string, number> {
  return readLedger(ledger, countByStatus) ?? {};
}

/**
 * Kill points of one replay, relative to how much it has to do (`todo` rows when it starts): at start-up, once its
 * run is recorded, with its first claim in flight, then at rising progress, half of them with a send in flight.
 */
function replayKillPlan(): Array<{ delayMs: number } | ((s: RunProgress, todo: number) => boolean)> {
  return [
    { delayMs: 40 },
    (s) => s.run !== undefined,
    (s) => s.minePending > 0,
    (s, todo) => s.mineSettled >= todo * 0.15 && s.minePending > 0,
    (s, todo) => s.mineSettled >= todo * 0.3,
    (s, todo) => s.mineSettled >= todo * 0.5 && s.minePending > 0,
    (s, todo) => s.mineSettled >= todo * 0.7,
    (s, todo) => s.mineSettled >= todo * 0.8 && s.minePending > 0,
  ];
}

/** Every person in the CRM exactly once, every ledger row sent with the CRM id of its person. */
function assertCrmMatchesLedger(emu: Emulator, ledger: string, want: Set<string>) {
  const emails = emu.contacts().map((c) => String(c.properties.email));
  assert.equal(emails.length, new Set(emails).size, 'no person twice in the CRM');
  assert.deepEqual(new Set(emails), want, 'every person in the CRM');
  const rows = readLedger(
    ledger,
    (db) =>
      db.prepare(`SELECT key, status, natural_key, crm_id FROM events`).all() as Array<{
        key: string;
        status: string;
        natural_key: string;
        crm_id: string;
      }>,
  )!;
  const notSent = rows.filter((r) => r.status !== 'sent');
  assert.equal(notSent.length, 0, `every row settled as sent: ${JSON.stringify(statusCounts(ledger))}`);
  const ids = new Map(emu.contacts().map((c) => [String(c.properties.email), c.id]));
  assert.ok(
    rows.every((r) => ids.get(r.natural_key) === r.crm_id),
    'the ledger holds the CRM id of every person',
  );
}

test('replay of retryable failures: SIGKILL at 8 points of successive replays, then reruns: every person in the CRM once, every row settled', async (t) => {
  // The CRM is down (503, no retry): every person ends as a retryable failure.
  const emu = await emulator({ token: TOKEN, rateLimit: NO_LIMIT, faults: { outage: true } });
  const dir = tmpDir();
  const events = generateEvents(dir, 1500, 41);
  const want = await expectedPeople(events, dir);
  const ledger = join(dir, 'l.db');
  const hub = ['--sink', 'hubspot', '--hubspot-url', emu.url, '--ledger', ledger, '--quiet', '--backoff', '5'];
  const push = await runCli(['push', events, ...hub, '--max-retries', '0', '--concurrency', '1'], { env });
  assert.equal(push.code, 1, push.stderr);
  const failed = statusCounts(ledger).failed ?? 0;
  assert.equal(failed, want.size, 'the outage failed every event');

  // The replays meet faults of their own: 503s again (the batch fails again, for the next replay) and answers lost
  // after the CRM committed the batch (in doubt).
  emu.setFaults({ latencyMs: 6, error5xxRate: 0.3, commitThenDropRate: 0.1 });
  // Every other replay also takes the in-doubt events, those the killed replays had claimed among them.
  const replay = ['replay', ...hub, '--concurrency', '1', '--max-retries', '0'];
  const points: string[] = [];
  for (const [i, when] of replayKillPlan().entries()) {
    const s0 = statusCounts(ledger);
    const both = i % 2 === 1;
    const todo = (s0.failed ?? 0) + (both ? (s0.in_doubt ?? 0) + (s0.pending ?? 0) : 0);
    const k = await killedRun(
      both ? [...replay, '--failed', '--in-doubt'] : replay,
      (pid) => runProgress(ledger, pid),
      typeof when === 'function' ? (p) => when(p, todo) : when,
      { env },
    );
    if (!('at' in k)) continue; // it finished first
    const s = k.at;
    points.push((both ? 'f+d ' : '') + (typeof s === 'string' ? s : `${s.mineSettled}+${s.minePending}/${todo}`));
    await verifyOk(ledger, `a replay killed at ${points.at(-1)}`);
  }
  t.diagnostic(`killed at (settled+pending/to do; f+d: --failed --in-doubt): ${points.join(' ')}`);
  assert.ok(points.length >= 6, `replays killed at: ${points.join(' ')}`);

  // Reruns until done: `replay` takes the failures left, `replay --in-doubt` what the killed runs had claimed.
  emu.setFaults({});
  const rest = await runCli(replay, { env });
  assert.ok(rest.code === 0 || rest.code === 1, rest.stderr);
  const doubt = await runCli([...replay, '--in-doubt', '--json'], { env });
  assert.equal(doubt.code, 0, doubt.stderr);
  assertCrmMatchesLedger(emu, ledger, want);
  await verifyOk(ledger, 'the reruns', 'spawned');
  const again = await runCli([...replay, '--failed', '--in-doubt', '--json'], { env });
  assert.equal(jsonReport(again).counts.read, 0, 'nothing left to replay');
});

test('replay --in-doubt: SIGKILL at 8 points of successive replays, through lookups and re-sends; one rerun after the last kill finishes: every person in the CRM once, every row settled', async (t) => {
  // Batches whose answer is lost, with no retry: in doubt, some committed in the CRM, some reset before it saw them.
  const emu = await emulator({
    token: TOKEN,
    rateLimit: NO_LIMIT,
    faults: { commitThenDropRate: 0.45, resetRate: 0.3 },
  });
  const dir = tmpDir();
  const events = generateEvents(dir, 1500, 42);
  const want = await expectedPeople(events, dir);
  const ledger = join(dir, 'l.db');
  const hub = ['--sink', 'hubspot', '--hubspot-url', emu.url, '--ledger', ledger, '--quiet', '--backoff', '5'];
  const push = await runCli(['push', events, ...hub, '--max-retries', '0', '--concurrency', '1'], { env });
  assert.equal(push.code, 1, push.stderr);
  const doubtful = readLedger(
    ledger,
    (db) => db.prepare(`SELECT natural_key FROM events WHERE status = 'in_doubt'`).pluck().all() as string[],
  )!;
  const inCrm = new Set(emu.contacts().map((c) => String(c.properties.email)));
  const found = doubtful.filter((e) => inCrm.has(e)).length;
  assert.ok(
    found >= 100 && doubtful.length - found >= 100,
    `in doubt: ${found} in the CRM, ${doubtful.length - found} not`,
  );

  // The replays lose connections of their own (no retry): a lookup or a re-send that fails stays in doubt.
  emu.setFaults({ latencyMs: 4, resetRate: 0.05 });
  const replay = ['replay', '--in-doubt', ...hub, '--concurrency', '4', '--max-retries', '0'];
  const points: string[] = [];
  for (const when of replayKillPlan()) {
    const s0 = statusCounts(ledger);
    const todo = (s0.in_doubt ?? 0) + (s0.pending ?? 0); // pending: claimed by the replay killed last
    const k = await killedRun(
      replay,
      (pid) => runProgress(ledger, pid),
      typeof when === 'function' ? (p) => when(p, todo) : when,
      { env },
    );
    if (!('at' in k)) {
      // It ran to the end before the kill point came, the events the last killed replay had claimed among what it
      // had to do: it ends 0 only with every event settled, 1 with what is left (lookups and re-sends cut off).
      const end = statusCounts(ledger);
      assert.equal(end.pending ?? 0, 0);
      assert.equal(
        k.exitCode,
        end.in_doubt || end.failed ? 1 : 0,
        `a replay --in-doubt ended ${k.exitCode} with ${JSON.stringify(end)}`,
      );
      continue;
    }
    const s = k.at;
    points.push(typeof s === 'string' ? s : `${s.mineSettled}+${s.minePending}/${todo}`);
    await verifyOk(ledger, `a replay --in-doubt killed at ${points.at(-1)}`);
  }
  const left = statusCounts(ledger);
  emu.setFaults({});
  const r = await runCli([...replay, '--json'], { env });
  assert.equal(r.code, 0, r.stderr);
  assertCrmMatchesLedger(emu, ledger, want);
  const d = jsonReport(r).delivery;
  assert.equal(
    d.sent + d.exists + d.recovered,
    (left.in_doubt ?? 0) + (left.pending ?? 0),
    `the rerun settled what the kills left: ${JSON.stringify(left)}`,
  );
  await verifyOk(ledger, 'the rerun', 'spawned');
  t.diagnostic(`killed at (settled+pending/to do): ${points.join(' ')}`);
  assert.ok(points.length >= 6, `replays killed at: ${points.join(' ')}`);
});

test('ledger import of 60,000 keys and emails (plain list and CSV): SIGKILL at 5 points, then a rerun holds exactly what a clean import holds', async (t) => {
  const dir = tmpDir();
  // A plain list: keys, emails as people type them (case, spaces), repeats; a CRM export with ids and emails. The
  // import writes 10,000 values a transaction (src/commands/ledger/import.ts): five of the list, two of the CSV,
  // so that the kills land between transactions of each file as well as in the first and the last.
  const list = join(dir, 'adopt.txt');
  const lines: string[] = [];
  for (let i = 0; i < 45_000; i++) {
    if (i % 5 === 4) lines.push(` Person.${i}@Example.ORG `);
    else lines.push(`evt_${String(i).padStart(7, '0')}`);
    if (i % 1000 === 7) lines.push(`evt_${String(i).padStart(7, '0')}`); // a repeat
  }
  writeFileSync(list, lines.join('\n') + '\n');
  const csv = join(dir, 'contacts.csv');
  const rows = ['id,email,firstname'];
  for (let i = 0; i < 15_000; i++) rows.push(`c${i},buyer${i}@example.net,Buyer ${i}`);
  writeFileSync(csv, rows.join('\n') + '\n');
  const total = 60_000;
  const repeats = 45;

  // The clean import runs beside the torture: the two ledgers must end up alike.
  const clean = join(dir, 'clean.db');
  const cleanRun = runCli(['ledger', 'import', list, csv, '--ledger', clean, '--json']);
  const ledger = join(dir, 'l.db');
  const imp = ['ledger', 'import', list, csv, '--ledger', ledger];
  const rowsIn = () => readLedger(ledger, (db) => count(db, 'SELECT count(*) n FROM events'));
  // Rows undefined: the file is there, but not a ledger yet (just created, or its schema being written).
  const progress = () => (existsSync(ledger) ? { rows: rowsIn() } : undefined);
  // count(*) reads the whole table: polled every 2 ms while the ledger is small, every 50 ms once it is not.
  const plan: Array<[{ delayMs: number } | ((s: { rows?: number }) => boolean), number]> = [
    [{ delayMs: 40 }, 0],
    [(s) => s.rows === undefined || s.rows === 0, 2], // created, not yet (or just) migrated, nothing imported
    [(s) => (s.rows ?? 0) > 0, 2],
    [(s) => (s.rows ?? 0) >= total * 0.5, 50],
    [(s) => (s.rows ?? 0) >= total * 0.95, 50], // the last batch going in, or all in and not yet closed
  ];
  const points: string[] = [];
  for (const [when, everyMs] of plan) {
    const k = await killedRun(imp, progress, when, { everyMs });
    if (!('at' in k)) continue;
    const s = k.at;
    points.push(typeof s === 'string' ? s : String(s.rows ?? 'not a ledger yet'));
    if (rowsIn() !== undefined) await verifyOk(ledger, `an import killed at ${points.at(-1)} rows`);
  }
  t.diagnostic(`killed at (rows): ${points.join(' ')}`);
  assert.ok(points.length >= 4, `imports killed at: ${points.join(' ')}`);
  const rerun = await runCli([...imp, '--json']);
  assert.equal(rerun.code, 0, rerun.stderr);
  const c = await cleanRun;
  assert.equal(c.code, 0, c.stderr);
  const r = JSON.parse(rerun.stdout) as { added: number; alreadyPresent: number };
  const want = JSON.parse(c.stdout) as { added: number; alreadyPresent: number; keys: number; emails: number };
  assert.equal(want.keys + want.emails, total + repeats, 'the clean import read every value');
  assert.equal(r.added + r.alreadyPresent, want.added + want.alreadyPresent, 'the rerun read every value');

  // Row for row, in SQLite: what one ledger holds and the other does not (timestamps aside).
  const cols = 'key, key_kind, natural_key, status, outcome, crm_id, source';
  const cmp = readLedger(ledger, (db) => {
    db.prepare('ATTACH DATABASE ? AS clean').run(clean);
    return {
      rows: count(db, 'SELECT count(*) n FROM events'),
      cleanRows: count(db, 'SELECT count(*) n FROM clean.events'),
      people: count(db, 'SELECT count(DISTINCT natural_key) n FROM events'),
      withPerson: count(db, 'SELECT count(natural_key) n FROM events'),
      extra: count(db, `SELECT count(*) n FROM (SELECT ${cols} FROM events EXCEPT SELECT ${cols} FROM clean.events)`),
      missing: count(db, `SELECT count(*) n FROM (SELECT ${cols} FROM clean.events EXCEPT SELECT ${cols} FROM events)`),
    };
  })!;
  assert.equal(cmp.rows, want.added, 'as many rows as the clean import added');
  assert.equal(cmp.rows, cmp.cleanRows);
  assert.equal(cmp.people, cmp.withPerson, 'no person twice');
  assert.deepEqual([cmp.extra, cmp.missing], [0, 0], 'the same rows as the clean import');
  await verifyOk(ledger, 'the rerun', 'spawned');
});

/** A ledger large enough that VACUUM takes a moment: n imported keys, each of its own person. */
function seedBulk(ledger: string, n: number): void {
  const l = openLedger(ledger)!;
  for (let i = 0; i < n; i += 50_000) {
    const batch = [];
    for (let j = i; j < Math.min(n, i + 50_000); j++)
      batch.push({ key: `bulk-${String(j).padStart(8, '0')}`, naturalKey: `customer${j}@example.org` });
    l.importDelivered(batch, 'crm-export.csv');
  }
  l.close();
}

test('forget --email: SIGKILL at 9 points of an erasure of a 100,000-row ledger (its delete, VACUUM, checkpoint) and once in its rerun: all or nothing each time, and a last rerun leaves no byte of the address', async (t) => {
  const dir = tmpDir();
  const ledger = join(dir, 'l.db');
  const address = 'ana.souza@example.com.br';
  // The person's event delivered for real (stored lead, attempts), three keys of theirs imported, one mention of
  // the address in another row's error text, and a large ledger around them.
  const push = await runCli([
    'push',
    FIXTURE,
    '--sink',
    'jsonl',
    '--output',
    join(dir, 'out.jsonl'),
    '--ledger',
    ledger,
    '--quiet',
  ]);
  assert.equal(push.code, 6, push.stderr); // all sent but the fixture's conflicting retry (evt_01JA0009)
  seedBulk(ledger, 100_000);
  const l = openLedger(ledger)!;
  l.importDelivered(
    [1, 2, 3].map((i) => ({ key: `legacy-ana-${i}`, naturalKey: address })),
    'old-crm.csv',
  );
  l.db
    .prepare(`UPDATE events SET last_error = ? WHERE key = 'bulk-00000007'`)
    .run(`HubSpot: a contact with email ${address} is already in another pipeline`);
  const keys = (l.db.prepare(`SELECT key FROM events WHERE natural_key = ?`).pluck().all(address) as string[]).sort();
  l.close();
  assert.equal(keys.length, 4);
  assert.ok(readFileSync(ledger).toString('latin1').includes(address), 'the address is in the file to begin with');

  // Polled every few ms while the erasure runs, so only cheap reads: the person's rows (an index), the WAL's size,
  // and whether this process's run is recorded. VACUUM is one transaction that nothing outside can watch, so the
  // kills during it are timed from the moment the person's rows are gone.
  const personSql = `SELECT count(*) n FROM events WHERE natural_key = ?`;
  const progress = (pid: number) =>
    readLedger(ledger, (db) => ({
      present: count(db, personSql, address),
      wal: existsSync(ledger + '-wal') ? statSync(ledger + '-wal').size : 0,
      running: runningAs(db, 'ledger forget', pid),
    }));
  const person = () =>
    readLedger(ledger, (db) => {
      const isTomb = db.prepare('SELECT count(*) n FROM tombstones WHERE key_hash = ?');
      return {
        present: count(db, `SELECT count(*) n FROM events WHERE natural_key = ?`, address),
        tombstones: keys.reduce((n, k) => n + (isTomb.get(tombstoneHash(k)) as { n: number }).n, 0),
        mentions: count(db, `SELECT count(*) n FROM events WHERE last_error LIKE ?`, `%${address}%`),
      };
    });
  type Progress = NonNullable<ReturnType<typeof progress>>;
  const erased = (s: Progress) => s.running && s.present === 0;
  const forget = ['ledger', 'forget', '--email', 'Ana.Souza@Example.com.br', '--yes', '--ledger', ledger];
  // From the erasure's commit to the end: VACUUM, then the checkpoint that copies the file back.
  const ms = await runTime(
    forget,
    ledger,
    (db, pid) => runningAs(db, 'ledger forget', pid) && count(db, personSql, address) === 0,
  );
  const restore = snapshot(ledger);
  // Each kill point meets the whole erasure, from the same ledger; a killed rerun and a last rerun follow.
  const plan: Array<Moment<Progress>> = [
    afterMs('start-up', 40),
    atState('its run recorded: the erasure about to start, or under way', (s) => s.running),
    atState('erased and committed, VACUUM starting', erased),
    // Between the WAL's truncation and the run's close: a few statements.
    atState('compacted and the WAL truncated, the run not yet closed', (s) => erased(s) && s.wal === 0, true),
    ...[0.1, 0.3, 0.5, 0.7, 0.9].map((f) => afterMs(`${f} of the compaction`, f * ms, erased)), // VACUUM, checkpoint
  ];
  const points: string[] = [];
  const check = async (k: { at: Progress | string; tries: number }) => {
    const s = k.at;
    points.push(`${typeof s === 'string' ? s : `present ${s.present}, wal ${s.wal}`} (try ${k.tries})`);
    await verifyOk(ledger, `forget --email killed at ${points.at(-1)}`);
    const now = person()!;
    assert.ok(
      (now.present === 4 && now.tombstones === 0 && now.mentions === 1) ||
        (now.present === 0 && now.tombstones === 4 && now.mentions === 0),
      `all of the person or none of them: ${JSON.stringify(now)}`,
    );
  };
  for (const m of plan) {
    const k = await killAt(forget, progress, m, restore);
    if (k) await check(k);
  }
  // Then a rerun, killed in its turn, from what a kill during the compaction left (made again when a rerun outran
  // its moment and finished the erasure).
  let first = true;
  const leftByAKill = async () => {
    if (first) return void (first = false);
    await killAt(forget, progress, afterMs('0.5 of the compaction', ms / 2, erased), restore);
  };
  await check(
    (await killAt(
      forget,
      progress,
      afterMs('a rerun', ms / 2, (s: Progress) => s.running),
      leftByAKill,
    ))!,
  );
  t.diagnostic(`compaction takes ${ms} ms; killed at: ${points.join(' | ')}`);
  assert.ok(points.length >= plan.length, `forgets killed at: ${points.join(' | ')}`);

  const rerun = await runCli([...forget, '--json']);
  assert.equal(rerun.code, 0, rerun.stderr);
  assert.deepEqual(person(), { present: 0, tombstones: 4, mentions: 0 });
  for (const file of [ledger, ledger + '-wal']) {
    if (!existsSync(file)) continue;
    const text = readFileSync(file).toString('latin1').toLowerCase();
    assert.ok(!text.includes(address), `${file} still holds the address`);
  }
  await verifyOk(ledger, 'the rerun', 'spawned');
  // The erased person's old event is still a duplicate: nothing of theirs is sent again.
  const dry = await runCli(['push', FIXTURE, '--dry-run', '--ledger', ledger, '--json']);
  assert.equal(jsonReport(dry).counts.new, 0);
});

/**
 * n sent events with stored leads, claimed and settled as a push would, each after a first try that failed (an
 * attempts row); the first `old` of them first seen, sent and last updated in 2020.
 */
function seedSent(ledger: string, n: number, old: number): void {
  const l = openLedger(ledger)!;
  const run = l.startRun('push', { seed: true }, { exclusive: true });
  for (let i = 0; i < n; i += 10_000) {
    const claims = [];
    for (let j = i; j < Math.min(n, i + 10_000); j++)
      claims.push({
        key: `k-${String(j).padStart(7, '0')}`,
        keyKind: 'id' as const,
        payloadHash: 'h' + j,
        naturalKey: `lead${j}@example.org`,
        downstreamKey: 'd' + j,
        leadJson: JSON.stringify({ email: `lead${j}@example.org`, name: `Lead Number ${j}`, company: 'Acme' }),
        source: 'events.jsonl',
        line: j + 1,
      });
    l.claimNew(claims, run, 'JSONL file out.jsonl');
    // A first try that failed, then the send: one attempts row per event (a send that went through the first time
    // is recorded by its events row alone), which forget and prune must remove with it.
    l.settle(
      claims.map((c) => ({ key: c.key, status: 'failed' as const, failure: 'retryable' as const, error: 'HTTP 503' })),
      run,
    );
    l.claimExisting(
      claims.map((c) => c.key),
      run,
      ['failed'],
      'JSONL file out.jsonl',
    );
    l.settle(
      claims.map((c, x) => ({
        key: c.key,
        status: 'sent' as const,
        outcome: 'created' as const,
        crmId: String(i + x),
      })),
      run,
    );
  }
  l.finishRun(run, 'done', {});
  const t = '2020-03-01T00:00:00.000Z';
  l.db
    .prepare(`UPDATE events SET first_seen_at = ?, updated_at = ?, sent_at = ? WHERE key < ?`)
    .run(t, t, t, `k-${String(old).padStart(7, '0')}`);
  l.close();
}

test('forget <keys>: SIGKILL at 5 points of forgetting 8,000 keys, each from the same ledger; the keys and their attempts go all at once, and a rerun finishes', async (t) => {
  const dir = tmpDir();
  const ledger = join(dir, 'l.db');
  seedSent(ledger, 25_000, 0);
  const n = 8_000;
  const keys = Array.from({ length: n }, (_, i) => `k-${String(i * 3).padStart(7, '0')}`);
  const state = () =>
    readLedger(ledger, (db) => {
      const has = db.prepare('SELECT count(*) n FROM events WHERE key = ?');
      const att = db.prepare('SELECT count(*) n FROM attempts WHERE key = ?');
      let present = 0;
      let attempts = 0;
      for (const k of keys) {
        present += (has.get(k) as { n: number }).n;
        attempts += (att.get(k) as { n: number }).n;
      }
      return { present, attempts };
    });
  // Polled often, so it looks at a sample: the first 200 of the keys.
  const sample = keys.slice(0, 200);
  const quick = (pid: number) =>
    readLedger(ledger, (db) => ({
      present: count(db, `SELECT count(*) n FROM events WHERE key IN (${sample.map(() => '?').join(',')})`, ...sample),
      running: runningAs(db, 'ledger forget', pid),
    }));
  const forget = ['ledger', 'forget', ...keys, '--yes', '--ledger', ledger];
  const restore = snapshot(ledger); // each kill point meets the whole forget, from the same ledger
  type Quick = { present: number; running: boolean };
  const plan: Array<Moment<Quick>> = [
    afterMs('start-up', 40),
    afterMs('planning: the keys looked up read-only', 150),
    // Between the delete's commit and the run's close: a statement or two.
    atState('deleted, the run not yet closed', (s) => s.running && s.present === 0, true),
    atState('its run recorded', (s) => s.running),
    afterMs('the delete under way', 15, (s) => s.running),
  ];
  const points: string[] = [];
  for (const m of plan) {
    const k = await killAt(forget, quick, m, restore);
    if (!k) continue;
    const s = k.at;
    points.push(`${typeof s === 'string' ? s : JSON.stringify(s)} (try ${k.tries})`);
    await verifyOk(ledger, `forget killed at ${points.at(-1)}`);
    const now = state()!;
    assert.ok(
      (now.present === n && now.attempts === n) || (now.present === 0 && now.attempts === 0),
      `all keys and attempts or none: ${JSON.stringify(now)}`,
    );
  }
  t.diagnostic(`killed at: ${points.join(' | ')}`);
  assert.ok(points.length >= plan.length - 1, `forgets killed at: ${points.join(' | ')}`);
  const rerun = await runCli(forget); // from what the last kill left
  assert.equal(rerun.code, 0, rerun.stderr);
  assert.deepEqual(state(), { present: 0, attempts: 0 });
  assert.equal(statusCounts(ledger).sent, 25_000 - n, 'the other events are untouched');
  await verifyOk(ledger, 'the rerun', 'spawned');
});

test('prune --older-than, payloads then --rows: SIGKILL at 5 points of each, each from the same ledger; all or nothing each time, and a rerun finishes', async (t) => {
  const dir = tmpDir();
  const ledger = join(dir, 'l.db');
  const total = 30_000;
  const old = 20_000;
  seedSent(ledger, total, old);
  const first = 'k-0000000'; // an old event: a prune is one transaction, so it tells how far a prune got
  const state = () =>
    readLedger(ledger, (db) => ({
      oldRows: count(db, `SELECT count(*) n FROM events WHERE updated_at < '2021-01-01'`),
      oldPayloads: count(db, `SELECT count(*) n FROM events WHERE updated_at < '2021-01-01' AND lead_json IS NOT NULL`),
      newPayloads: count(
        db,
        `SELECT count(*) n FROM events WHERE updated_at >= '2021-01-01' AND lead_json IS NOT NULL`,
      ),
      attempts: count(db, `SELECT count(*) n FROM attempts`),
    }));
  const quick = (pid: number) =>
    readLedger(ledger, (db) => ({
      payload: count(db, `SELECT count(*) n FROM events WHERE key = ? AND lead_json IS NOT NULL`, first) > 0,
      row: count(db, `SELECT count(*) n FROM events WHERE key = ?`, first) > 0,
      running: runningAs(db, 'ledger prune', pid),
    }));
  for (const mode of ['payloads', 'rows'] as const) {
    const prune = [
      'ledger',
      'prune',
      '--older-than',
      '365d',
      '--yes',
      '--ledger',
      ledger,
      ...(mode === 'rows' ? ['--rows'] : []),
    ];
    const before = state()!;
    // From the run's start: the one transaction, then closing the run and the checkpoint.
    const ms = await runTime(prune, ledger, (db, pid) => runningAs(db, 'ledger prune', pid));
    const restore = snapshot(ledger); // each kill point meets the whole prune, from the same ledger
    type Quick = NonNullable<ReturnType<typeof quick>>;
    const plan: Array<Moment<Quick>> = [
      afterMs('start-up', 40),
      // Between the one transaction's commit and the run's close: a statement or two.
      atState('applied, the run not yet closed', (s) => s.running && !(mode === 'rows' ? s.row : s.payload), true),
      atState('its run recorded', (s) => s.running),
      ...[0.3, 0.6].map((f) => afterMs(`${f} of the prune`, f * ms, (s: Quick) => s.running)), // under way
    ];
    const points: string[] = [];
    for (const m of plan) {
      const k = await killAt(prune, quick, m, restore);
      if (!k) continue;
      const s = k.at;
      points.push(`${typeof s === 'string' ? s : JSON.stringify(s)} (try ${k.tries})`);
      await verifyOk(ledger, `prune (${mode}) killed at ${points.at(-1)}`);
      const now = state()!;
      assert.equal(now.newPayloads, total - old, 'recent events are never touched');
      if (mode === 'payloads')
        assert.ok(now.oldPayloads === before.oldPayloads || now.oldPayloads === 0, JSON.stringify(now));
      else
        assert.ok(
          (now.oldRows === old && now.attempts === before.attempts) ||
            (now.oldRows === 0 && now.attempts === before.attempts - old),
          `old rows and their attempts all there or all gone: ${JSON.stringify(now)}`,
        );
    }
    t.diagnostic(`${mode}: ${ms} ms from its run's start to its end; killed at ${points.join(' | ')}`);
    assert.ok(points.length >= plan.length - 1, `prunes (${mode}) killed at: ${points.join(' ')}`);
    const rerun = await runCli(prune); // from what the last kill left
    assert.equal(rerun.code, 0, rerun.stderr);
    const end = state()!;
    if (mode === 'payloads') assert.deepEqual([end.oldRows, end.oldPayloads], [old, 0]);
    else assert.deepEqual([end.oldRows, end.attempts], [0, total - old]);
    assert.equal(end.newPayloads, total - old);
    await verifyOk(ledger, `the ${mode} rerun`);
  }
});

test('full disk and an unwritable output: no crash; a full disk ends 1 with every event in doubt and the reason, an unwritable file is refused before any claim; a replay to a writable file delivers each lead once', async () => {
  const dir = tmpDir();
  const events = generateEvents(dir, 1000, 47);
  const want = await expectedPeople(events, dir);
  const ledger = join(dir, 'l.db');
  const lost = (r: CliResult, n: number, error: RegExp) => {
    const d = jsonReport(r);
    assert.equal(d.delivery.sent, 0);
    assert.equal(d.delivery.inDoubt + d.delivery.failed, n, 'every event in doubt or failed');
    const reasons = { ...d.inDoubtReasons, ...d.failures };
    assert.ok(Object.keys(reasons).length > 0);
    for (const reason of Object.keys(reasons)) assert.match(reason, error);
  };

  // /dev/full: every write fails with ENOSPC; both batches of 500 go out at once.
  const full = await runCli(['push', events, '--sink', 'jsonl', '--output', '/dev/full', '--ledger', ledger, '--json']);
  assert.equal(full.code, 1, full.stderr);
  assert.doesNotMatch(full.stderr, /Unhandled|node:internal|\n\s+at /, 'no crash');
  lost(full, want.size, /ENOSPC/);

  // A file nobody may write (as root too: the CLI runs held to file modes).
  const more = join(dir, 'more.jsonl');
  writeFileSync(
    more,
    Array.from({ length: 300 }, (_, i) => `{"event_id":"m${i}","email":"m${i}@example.org"}`).join('\n') + '\n',
  );
  const ro = join(dir, 'read-only.jsonl');
  writeFileSync(ro, '');
  chmodSync(ro, 0o444);
  // Known before anything is claimed: a usage error naming the file, and none of the 300 is in the ledger.
  const denied = await runCli(['push', more, '--sink', 'jsonl', '--output', ro, '--ledger', ledger, '--json'], {
    fileModes: true,
  });
  assert.equal(denied.code, 2, denied.stderr);
  assert.match(
    denied.stderr,
    new RegExp(`--output ${ro.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} cannot be written: EACCES`),
  );
  assert.equal(statSync(ro).size, 0);
  const s = statusCounts(ledger);
  assert.equal(s.pending ?? 0, 0, 'nothing left pending');
  assert.equal((s.in_doubt ?? 0) + (s.failed ?? 0), want.size);
  assert.equal(s.sent ?? 0, 0);
  assert.equal(
    readLedger(ledger, (db) => count(db, `SELECT count(*) n FROM runs WHERE status <> 'done'`)),
    0,
    'every run closed',
  );
  await verifyOk(ledger, 'the failed writes');

  // A plain rerun to a writable file: the events are in the ledger (in doubt), so nothing is sent blind.
  const good = join(dir, 'good.jsonl');
  const rerun = await runCli(['push', events, more, '--sink', 'jsonl', '--output', good, '--ledger', ledger, '--json']);
  assert.equal(jsonReport(rerun).delivery.sent, 300, 'only the 300 never claimed');
  // What the report says to do: a file can neither be asked nor drops a repeat, so in-doubt events are re-sent on
  // the person's word. Nothing reached the full disk, so each lead lands once.
  const replay = await runCli([
    'replay',
    '--in-doubt',
    '--resend',
    '--sink',
    'jsonl',
    '--output',
    good,
    '--ledger',
    ledger,
    '--json',
  ]);
  assert.equal(replay.code, 0, replay.stderr);
  const written = readFileSync(good, 'utf8')
    .trim()
    .split('\n')
    .map((line) => (JSON.parse(line) as { lead: { email: string } }).lead.email);
  assert.equal(written.length, new Set(written).size, 'no lead twice');
  const all = new Set([...want, ...Array.from({ length: 300 }, (_, i) => `m${i}@example.org`)]);
  assert.deepEqual(new Set(written), all);
  assert.deepEqual(statusCounts(ledger), { sent: all.size });
  await verifyOk(ledger, 'the replay');
});

test('jsonl to stdout on a full disk, or into a pipe closed early: no crash, exit 1, nothing left pending, the reason in the summary', async () => {
  const dir = tmpDir();
  const events = generateEvents(dir, 1000, 48);
  const want = await expectedPeople(events, dir);
  for (const how of ['full', 'closed'] as const) {
    const ledger = join(dir, `${how}.db`);
    // `leadledger push ... --output - > file` on a full disk; `leadledger push ... --output - | head -1`.
    const full = how === 'full' ? openSync('/dev/full', 'w') : undefined;
    const child = start(['push', events, '--sink', 'jsonl', '--output', '-', '--ledger', ledger], {}, [
      'ignore',
      full ?? 'pipe',
      'pipe',
    ]);
    const closed = once(child, 'close') as Promise<[number | null]>;
    if (full !== undefined) closeSync(full);
    else child.stdout!.destroy();
    let stderr = '';
    child.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const [code] = await closed;
    assert.doesNotMatch(stderr, /Unhandled|node:internal|\n\s+at /, `${how}: no crash: ${stderr}`);
    assert.equal(code, 1, `${how}: ${stderr}`);
    const s = statusCounts(ledger);
    assert.equal(s.pending ?? 0, 0, `${how}: nothing left pending: ${JSON.stringify(s)}`);
    assert.equal((s.sent ?? 0) + (s.in_doubt ?? 0), want.size);
    assert.ok((s.in_doubt ?? 0) > 0);
    assert.match(stderr, /in doubt ×\d+: cannot write JSONL on stdout: /);
    assert.equal(
      readLedger(ledger, (db) => count(db, `SELECT count(*) n FROM runs WHERE status <> 'done'`)),
      0,
      `${how}: the run is closed`,
    );
    await verifyOk(ledger, `a push to a ${how} stdout`);
  }
});

test('a replay of failures killed mid-send, then the same replay rerun: it finishes what the killed one had claimed, or does not end 0 while those are in doubt', async () => {
  const emu = await emulator({ token: TOKEN, rateLimit: NO_LIMIT, faults: { outage: true } });
  const dir = tmpDir();
  const events = generateEvents(dir, 600, 43);
  const ledger = join(dir, 'l.db');
  const hub = ['--sink', 'hubspot', '--hubspot-url', emu.url, '--ledger', ledger, '--quiet', '--backoff', '5'];
  const push = await runCli(['push', events, ...hub, '--max-retries', '0'], { env });
  assert.equal(push.code, 1, push.stderr);
  emu.setFaults({ latencyMs: 15 });
  const replay = ['replay', ...hub, '--concurrency', '1'];
  const k = await killedRun(
    replay,
    (pid) => runProgress(ledger, pid),
    (p) => p.mineSettled >= 100 && p.minePending > 0,
    {
      env,
    },
  );
  assert.ok('at' in k, 'killed mid-send');
  const rerun = await runCli([...replay, '--json'], { env });
  const s = statusCounts(ledger);
  const unsettled = (s.in_doubt ?? 0) + (s.pending ?? 0);
  assert.ok(
    unsettled === 0 || rerun.code !== 0,
    `the rerun ended ${rerun.code} with ${unsettled} events in doubt: ${JSON.stringify(s)}; its report: ${JSON.stringify(jsonReport(rerun).delivery)}`,
  );
});

test('in-doubt JSONL events after a full disk, beside events written before: what the report says to run (replay --in-doubt --resend) writes each lead once', async () => {
  const dir = tmpDir();
  const ledger = join(dir, 'l.db');
  const good = join(dir, 'good.jsonl');
  const jsonl = (output: string) => ['--sink', 'jsonl', '--output', output, '--ledger', ledger, '--json'];
  const first = await runCli(['push', FIXTURE, ...jsonl(good)]);
  assert.equal(first.code, 6, first.stderr); // all sent but the fixture's conflicting retry (evt_01JA0009)
  const more = join(dir, 'more.jsonl');
  writeFileSync(
    more,
    Array.from({ length: 100 }, (_, i) => `{"event_id":"m${i}","email":"m${i}@example.org"}`).join('\n'),
  );
  const full = await runCli(['push', more, ...jsonl('/dev/full')]);
  assert.equal(full.code, 1, full.stderr);
  // replay --in-doubt alone looks for them in good.jsonl, does not find them (a lead not found settles nothing),
  // sends nothing blind, and says what will.
  const asked = await runCli(['replay', '--in-doubt', ...jsonl(good)]);
  assert.match(asked.stdout, /not in JSONL file .*good\.jsonl .*: leadledger replay --in-doubt --resend re-sends it/);
  assert.equal(jsonReport(asked).delivery.sent, 0);
  assert.equal(asked.code, 1, 'events it leaves in doubt do not end the run 0');
  const r = await runCli(['replay', '--in-doubt', '--resend', ...jsonl(good)]);
  assert.equal(r.code, 0, r.stderr);
  const emails = readFileSync(good, 'utf8')
    .trim()
    .split('\n')
    .map((line) => (JSON.parse(line) as { lead: { email: string } }).lead.email);
  assert.equal(emails.length, new Set(emails).size, `${emails.length - new Set(emails).size} leads written twice`);
});
