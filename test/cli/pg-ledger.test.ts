// The PostgreSQL ledger through the built CLI, as several hosts would use it: four pushes of one input at once on
// one ledger, SIGKILLed at many points, then reruns; every person must reach the CRM emulator exactly once, with the
// run lock (--wait: a killed holder is found dead when its lease runs out) and without it (--no-lock: claims alone).
// Also push, dry-run and replay end to end, and `ledger migrate` from SQLite. PostgreSQL is a real server
// (test/helpers/postgres.ts): a missing one fails this file, never skips it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import type { Emulator } from '../../src/sandbox/emulator.js';
import { jsonReport, runCli } from '../helpers/cli.js';
import { emulator } from '../helpers/emulator.js';
import { expectedPeople, generateEvents } from '../helpers/events.js';
import { exited, killWhen, start } from '../helpers/kill.js';
import { pgDatabase } from '../helpers/postgres.js';
import { tmpDir } from '../helpers/tmp.js';

const TOKEN = 'pat-pg-ledger-test-token';
const NO_LIMIT = { max: 1_000_000, intervalMs: 1000 };
const db = await pgDatabase('leadledger_pgl');
// A short lease: a killed run is found dead in about two seconds instead of thirty.
const env = { HUBSPOT_TOKEN: TOKEN, PGPASSWORD: db.cluster.password, LEADLEDGER_LEASE_MS: '2000' };
const ledgerUrl = () => `${db.url}?schema=l_${randomBytes(4).toString('hex')}`;

async function q<T>(ledger: string, sql: string): Promise<T[]> {
  const schema = new URL(ledger).searchParams.get('schema')!;
  return (await db.query(sql.replaceAll('{s}', schema))).rows as T[];
}

/** Every person in the CRM once, no create ever repeated (a repeat is a 409), every ledger row sent. */
async function assertExactlyOnce(emu: Emulator, ledger: string, want: Set<string>, what: string): Promise<void> {
  const emails = emu.contacts().map((c) => String(c.properties.email));
  assert.equal(emails.length, new Set(emails).size, `${what}: no person twice in the CRM`);
  assert.deepEqual(new Set(emails), want, `${what}: every person in the CRM`);
  assert.equal(emu.stats().byStatus['409'] ?? 0, 0, `${what}: no create of a person the CRM already had`);
  const notSent = await q<{ status: string; n: number }>(
    ledger,
    `SELECT status, count(*)::int AS n FROM {s}.events WHERE status <> 'sent' GROUP BY status`,
  );
  assert.deepEqual(notSent, [], `${what}: every ledger row settled as sent`);
  const running = await q<{ n: number }>(ledger, `SELECT count(*)::int AS n FROM {s}.runs WHERE status = 'running'`);
  assert.equal(running[0]!.n, 0, `${what}: no run left holding the ledger`);
}

for (const mode of ['locked', 'no-lock'] as const) {
  test(
    `four pushes at once on one PostgreSQL ledger (${mode}), SIGKILLed at many points, then reruns: every person in the CRM exactly once`,
    // Eight runs and their reruns on a slow CRM: longer than the suite's 180 s default on a busy machine.
    { timeout: 600_000 },
    async () => {
      const emu = await emulator({ token: TOKEN, rateLimit: NO_LIMIT, faults: { latencyMs: 120 } });
      const dir = tmpDir();
      // One input in two parts, a part per round (new people each time), so that every round has sends to kill.
      const all = generateEvents(dir, 2400, mode === 'locked' ? 51 : 52);
      const want = await expectedPeople(all, dir);
      const lines = readFileSync(all, 'utf8').trimEnd().split('\n');
      const inputs = [0, 1].map((i) => {
        const part = join(dir, `part-${i}.jsonl`);
        writeFileSync(part, lines.slice(i * 1200, (i + 1) * 1200).join('\n') + '\n');
        return part;
      });
      const ledger = ledgerUrl();
      const argsFor = (files: string[]) => [
        'push',
        ...files,
        '--sink',
        'hubspot',
        '--hubspot-url',
        emu.url,
        '--ledger',
        ledger,
        '--quiet',
        // Slow sends (the emulator answers in 120 ms, two batches at a time): a run spends seconds mid-send.
        '--concurrency',
        '2',
        ...(mode === 'locked' ? ['--wait', '120'] : ['--no-lock']),
      ];
      // Kill points of the four processes of each round, read on the ledger for the process's own run: how many of
      // its claims it has settled, with claims still pending (mid-send) where asked; undefined: let it finish. Sends
      // go in batches of 100, and four processes share one round's thousand people. Each state a kill can leave is
      // here: a run that has claimed nothing yet or settled its batches and claimed no more (settled, none pending),
      // one mid-send in its first batch, and one mid-send after settling others; the second round has a run that
      // finishes among the killed ones.
      type Point = { settled: number; pending?: boolean } | undefined;
      const rounds: Point[][] = [
        [{ settled: 0 }, { settled: 0, pending: true }, { settled: 100, pending: true }, { settled: 200 }],
        [{ settled: 0, pending: true }, { settled: 100 }, undefined, { settled: 200, pending: true }],
      ];
      let killed = 0;
      // The kill points not reached, as round:index: what the assertion below names when it fails.
      const missed: string[] = [];
      const progress = async (pid: number) =>
        (
          await q<{ settled: number; pending: number }>(
            ledger,
            `SELECT count(*) FILTER (WHERE e.status <> 'pending')::int AS settled, count(*) FILTER (WHERE e.status = 'pending')::int AS pending
           FROM {s}.runs r LEFT JOIN {s}.events e ON e.run_id = r.id WHERE r.pid = ${pid} AND r.status = 'running' GROUP BY r.id`,
          ).catch(() => [])
        )[0];
      for (const [round, points] of rounds.entries()) {
        const push = () => start(argsFor([inputs[round]!]), env, ['ignore', 'ignore', 'pipe']);
        const kill = async (p: NonNullable<Point>) => {
          // A run starved of CPU on a loaded machine may miss its short lease's renewal and stop by itself (exit 5,
          // "lost its lease"): that is the fence working, not a point that cannot be reached, so the point is tried
          // again with a new run (what the run had claimed is recovered as a killed run's would be).
          for (let attempt = 1; ; attempt++) {
            const child = push();
            let stderr = '';
            child.stderr!.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-300)));
            const when = (s: { settled: number; pending: number }) =>
              s.settled >= p.settled && (!p.pending || s.pending > 0);
            const hit = await killWhen(child, () => progress(child.pid!), when, 5);
            await exited(child);
            if (hit) killed++;
            else if (attempt < 4 && child.exitCode === 5 && stderr.includes('lost its lease')) continue;
            else
              missed.push(`${round}:${points.indexOf(p)} ${JSON.stringify(p)} exit ${child.exitCode} ${stderr.trim()}`);
            return;
          }
        };
        const finish = async () => void (await exited(push()));
        if (mode === 'locked') {
          // One run at a time holds the lock, and a run that holds it takes the whole part. A finisher that won the
          // lock first would leave nothing for the round's kill points (how many were reached depended on the order
          // the waiting runs took the lock): the finisher waits for the round's killed runs, then for the lease of
          // the last of them to run out.
          await Promise.all(points.filter((p) => p !== undefined).map(kill));
          await Promise.all(points.filter((p) => p === undefined).map(finish));
        } else {
          await Promise.all(points.map((p) => (p ? kill(p) : finish())));
        }
      }
      // Every kill point is reachable: in a locked round the killed runs take their turns one after another, and the
      // first of them leaves the rest of the part's thousand people for the others. A point missed is a run that
      // ended on its own before it: the message names it, with its exit code and the end of its stderr (so the
      // schema check's race was found: a run of the first round stopped with exit 5, see pg-schema.test.ts).
      const points = rounds.flat().filter((p) => p !== undefined).length;
      assert.ok(
        killed >= (mode === 'locked' ? points : rounds.length + 2),
        `processes killed mid-run: ${killed}; kill points not reached: ${missed.join(', ')}`,
      );
      // Reruns, four at once again, until nothing is left: the lease of the last killed runs runs out first. As many
      // rounds as that takes on this machine (three were not always enough under load): the runner's timeout bounds
      // them.
      for (;;) {
        const done = await Promise.all([0, 1, 2, 3].map(() => runCli(argsFor(inputs), { env })));
        for (const r of done) assert.ok(r.code === 0 || r.code === 1 || r.code === 5, `rerun: ${r.code} ${r.stderr}`);
        const left = await q<{ n: number }>(ledger, `SELECT count(*)::int AS n FROM {s}.events WHERE status <> 'sent'`);
        // A run killed in the last round holds its lease for up to 2 s: reruns that found nothing left may all have
        // started before it ran out, and only a run starting after it marks the killed run crashed.
        const holding = await q<{ n: number }>(
          ledger,
          `SELECT count(*)::int AS n FROM {s}.runs WHERE status = 'running'`,
        );
        if (left[0]!.n === 0 && holding[0]!.n === 0 && done.every((r) => r.code === 0)) break;
        await new Promise((r) => setTimeout(r, 2500));
      }
      await assertExactlyOnce(emu, ledger, want, mode);
      // The kills hit runs mid-send: some claims were left unsettled (in doubt), then recovered by a later run.
      const outcomes = await q<{ outcome: string; n: number }>(
        ledger,
        `SELECT outcome, count(*)::int AS n FROM {s}.attempts GROUP BY outcome ORDER BY outcome`,
      );
      const runs = await q<{ status: string; n: number }>(
        ledger,
        `SELECT status, count(*)::int AS n FROM {s}.runs GROUP BY status ORDER BY status`,
      );
      console.log(
        `${mode}: ${killed} killed (not reached: ${missed.join(', ') || 'none'}); attempts ${JSON.stringify(outcomes)}; runs ${JSON.stringify(runs)}`,
      );
      // Whether a kill lands after the CRM took a batch and before its settle (then 'recovered': found in the CRM)
      // or before the request left (then re-sent) is timing; either way the claims it left were in doubt, and the
      // reruns settled them without a second create (assertExactlyOnce above).
      assert.ok(
        outcomes.some((o) => o.outcome === 'unknown'),
        'some claims of killed runs were left in doubt, and settled by the reruns',
      );
      const v = await runCli(['ledger', 'verify', '--ledger', ledger, '--json'], { env });
      assert.equal(v.code, 0, `ledger verify: ${v.stdout}${v.stderr}`);
    },
  );
}

test('ledger migrate: SQLite → PostgreSQL → SQLite copies every table, checks the counts, leaves the events of each source untouched; the copy pushes on', async () => {
  const dir = tmpDir();
  const events = generateEvents(dir, 400, 71);
  const sqlite = join(dir, 'ledger.db');
  const out = join(dir, 'out.jsonl');
  const first = await runCli(['push', events, '--sink', 'jsonl', '--output', out, '--ledger', sqlite, '--json'], {
    env,
  });
  assert.equal(first.code, 0, first.stderr);
  // Sent at the first try, an event's attempt is its row; re-sent, the first becomes an attempts row.
  const again1 = await runCli(
    ['replay', '--force', '--yes', '--limit', '40', '--sink', 'jsonl', '--output', out, '--ledger', sqlite, '--json'],
    { env },
  );
  assert.equal(again1.code, 0, again1.stderr);
  const erase = await runCli(['ledger', 'forget', '--ledger', sqlite, '--email', 'ana.almeida.1@example.com', '--yes']);
  assert.equal(erase.code, 0, erase.stderr);
  // First seen in an order other than the keys' (one push puts its events in one batch, at one instant).
  const w = new Database(sqlite);
  w.exec(`UPDATE events SET first_seen_at = printf('2026-01-01T00:%02d:00.000Z', 59 - (rowid * 7) % 60)`);
  w.close();
  const exported = async (ledger: string) =>
    (await runCli(['ledger', 'export', '--ledger', ledger, '--output', '-'], { env })).stdout;
  const before = await exported(sqlite);

  const pgl = ledgerUrl();
  const m = await runCli(['ledger', 'migrate', '--ledger', sqlite, '--to', pgl, '--json'], { env });
  assert.equal(m.code, 0, m.stderr);
  const r = JSON.parse(m.stdout) as { tables: Record<string, { source: number; copied: number }> };
  for (const [t, c] of Object.entries(r.tables)) assert.equal(c.copied, c.source, t);
  // The three runs, and the migrate's own, which held the file while it copied.
  assert.ok(r.tables.events!.source > 300 && r.tables.runs!.source === 4 && r.tables.attempts!.source >= 38);
  assert.equal(await exported(sqlite), before, 'the events of the source are left as they were');
  const runs = new Database(sqlite, { readonly: true });
  const last = runs.prepare('SELECT id, command, status FROM runs ORDER BY id DESC LIMIT 1').get();
  runs.close();
  assert.deepEqual(last, { id: 4, command: 'ledger migrate', status: 'done' }, 'its one change: the record of its run');

  // The same answers from both ledgers.
  for (const cmd of [['stats'], ['list', '--limit', '0'], ['runs']]) {
    const a = await runCli(['ledger', ...cmd, '--ledger', sqlite, '--json'], { env });
    const b = await runCli(['ledger', ...cmd, '--ledger', pgl, '--json'], { env });
    assert.deepEqual(comparable(b.stdout), comparable(a.stdout), `ledger ${cmd[0]}`);
  }
  // A second copy into the same ledger is refused: it is not empty.
  const again = await runCli(['ledger', 'migrate', '--ledger', sqlite, '--to', pgl], { env });
  assert.equal(again.code, 5, again.stderr);
  assert.match(again.stderr, /must be a new, empty ledger/);

  // Back to a file: the export of the round trip is the export of the original.
  const back = join(dir, 'back.db');
  const m2 = await runCli(['ledger', 'migrate', '--ledger', pgl, '--to', back], { env });
  assert.equal(m2.code, 0, m2.stderr);
  const ea = await runCli(['ledger', 'export', '--ledger', sqlite, '--output', '-'], { env });
  const eb = await runCli(['ledger', 'export', '--ledger', back, '--output', '-'], { env });
  assert.equal(eb.stdout, ea.stdout);
  // The copy keeps its rows in the order they were first seen, as a SQLite ledger does.
  const r2 = new Database(back, { readonly: true });
  const seen = r2.prepare('SELECT first_seen_at FROM events ORDER BY rowid').pluck().all() as string[];
  r2.close();
  assert.deepEqual(seen, [...seen].sort());

  // The copy goes on where the file stopped: nothing of the input is new, and the next run id follows the copied ones
  // (and the migrate back to a file, run 5 of this ledger).
  const rerun = await runCli(['push', events, '--sink', 'jsonl', '--output', out, '--ledger', pgl, '--json'], { env });
  assert.equal(rerun.code, 0, rerun.stderr);
  const rep = jsonReport(rerun);
  assert.equal(rep.counts.new, 0);
  assert.equal(rep.runId, 6);
});

// A command's JSON without what names the ledger or measures its storage.
function comparable(stdout: string): unknown {
  return JSON.parse(stdout, (k, v: unknown) =>
    k === 'ledger' || k === 'size' || k === 'ledgerSchemaVersion' ? '*' : v,
  );
}

test('push, dry-run and replay on a PostgreSQL ledger: failures replayed, a dry-run reads in a read-only transaction and writes nothing', async () => {
  const emu = await emulator({ token: TOKEN, rateLimit: NO_LIMIT, faults: { outage: true } });
  const dir = tmpDir();
  const events = generateEvents(dir, 300, 81);
  const want = await expectedPeople(events, dir);
  const ledger = ledgerUrl();
  const hub = ['--sink', 'hubspot', '--hubspot-url', emu.url, '--ledger', ledger, '--json', '--backoff', '5'];
  const down = await runCli(['push', events, ...hub, '--max-retries', '0'], { env });
  assert.equal(down.code, 1, down.stderr);
  assert.equal(jsonReport(down).delivery.failed, want.size);

  // A dry-run sees the failures as retries, in one read-only transaction: not a row or run is written.
  const rows = async () =>
    (
      await q<{ n: number }>(
        ledger,
        `SELECT (SELECT count(*) FROM {s}.runs) + (SELECT count(*) FROM {s}.attempts) AS n`,
      )
    )[0]!.n;
  const was = await rows();
  const dry = await runCli(['push', events, '--dry-run', '--ledger', ledger, '--json'], { env });
  assert.equal(dry.code, 0, dry.stderr);
  assert.equal(jsonReport(dry).counts.new, want.size, 'retries count as new');
  assert.equal(await rows(), was, 'the dry-run wrote nothing');

  emu.setFaults({});
  const rep = await runCli(['replay', ...hub], { env });
  assert.equal(rep.code, 0, rep.stderr);
  assert.equal(jsonReport(rep).delivery.sent, want.size);
  await assertExactlyOnce(emu, ledger, want, 'replay');
  const dry2 = await runCli(['push', events, '--dry-run', '--ledger', ledger, '--json'], { env });
  assert.equal(jsonReport(dry2).counts.new, 0);
});

test('a PostgreSQL ledger that cannot be used ends the run with exit 5, naming it without its password; a schema of something else is left untouched', async () => {
  const dir = tmpDir();
  const events = generateEvents(dir, 20, 91);
  const out = join(dir, 'out.jsonl');
  // The URL with its password comes from the environment (on the command line it is refused: pg-url.test.ts).
  const down = await runCli(['push', events, '--sink', 'jsonl', '--output', out], {
    env: { ...env, LEADLEDGER_LEDGER: 'postgres://someone:s3cret@127.0.0.1:1/nowhere' },
  });
  assert.equal(down.code, 5, down.stderr);
  assert.match(down.stderr, /cannot open ledger postgres:\/\/someone:\*\*\*@127\.0\.0\.1:1\/nowhere/);
  assert.ok(!down.stderr.includes('s3cret'), 'the password is never shown');

  await db.query('CREATE SCHEMA theirs; CREATE TABLE theirs.orders (id int)');
  const theirs = `${db.url}?schema=theirs`;
  const refused = await runCli(['push', events, '--sink', 'jsonl', '--output', out, '--ledger', theirs], { env });
  assert.equal(refused.code, 5, refused.stderr);
  assert.match(refused.stderr, /not a leadledger ledger; it was left untouched/);
  const tables = await db.query(`SELECT table_name FROM information_schema.tables WHERE table_schema = 'theirs'`);
  assert.deepEqual(
    tables.rows.map((r) => r.table_name as string),
    ['orders'],
  );
});
