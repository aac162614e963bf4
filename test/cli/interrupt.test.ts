// Ctrl-C during a push to HubSpot (the emulator on 127.0.0.1): the summary says how many in-flight sends were
// settled, how many were cut after the grace period (in doubt) and how many never left (released), and those
// counts are the ledger's.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import type { Emulator, EmulatorOptions } from '../../src/sandbox/emulator.js';
import { jsonReport, runCli, type JsonReport } from '../helpers/cli.js';
import { emulator } from '../helpers/emulator.js';
import { jsonlEvents } from '../helpers/events.js';
import { ledgerState, start } from '../helpers/kill.js';
import { writeFileSync } from 'node:fs';
import { catchesStopSignals, until } from '../helpers/signals.js';
import { tmpDir } from '../helpers/tmp.js';

const TOKEN = 'pat-na1-interrupt-token';
const env = { HUBSPOT_TOKEN: TOKEN };

interface Stopped {
  settled: number;
  cut: number;
  released: number;
}
interface Run {
  code: number | null;
  signal: NodeJS.Signals | null;
  stderr: string;
  report: JsonReport;
}

const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Starts a push, waits until `ready`, sends SIGINT (or `signal`; with `twice`, again once the push has said it is
 * stopping), resolves on exit. The grace period for sends in flight is ten minutes (LEADLEDGER_GRACE_MS): a push
 * that waited it out instead of stopping at once is SIGKILLed after two minutes, and fails, without its exit being
 * timed.
 */
async function pushAndInterrupt(
  args: string[],
  ready: () => boolean,
  opts: { twice?: boolean; signal?: NodeJS.Signals } = {},
): Promise<Run> {
  const child = start(args, { ...env, LEADLEDGER_GRACE_MS: '600000' }, ['ignore', 'pipe', 'pipe']);
  let stdout = '';
  let stderr = '';
  child.stdout!.setEncoding('utf8').on('data', (d: string) => (stdout += d));
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  const done = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) =>
    child.on('close', (code, signal) => r({ code, signal })),
  );
  const killer = setTimeout(() => child.kill('SIGKILL'), 120_000);
  const running = () => child.exitCode === null && child.signalCode === null;
  await until(() => ready() && catchesStopSignals(child.pid!), running, `the moment to interrupt it: ${stderr}`);
  child.kill(opts.signal ?? 'SIGINT');
  if (opts.twice) {
    await until(() => /stopping: no new sends/.test(stderr), running, `saying it stops: ${stderr}`);
    child.kill(opts.signal ?? 'SIGINT');
  }
  const e = await done;
  clearTimeout(killer);
  return { ...e, stderr, report: jsonReport({ stdout }) };
}

/** The ledger's events by status, as `ledger stats --json` counts them. */
async function ledgerStatuses(ledger: string): Promise<Record<string, number>> {
  const r = await runCli(['ledger', 'stats', '--json', '--ledger', ledger]);
  assert.equal(r.code, 0, r.stderr);
  const stats = JSON.parse(r.stdout) as { events: number; byStatus: Array<{ status: string; count: number }> };
  const out: Record<string, number> = { events: stats.events };
  for (const s of stats.byStatus) out[s.status] = (out[s.status] ?? 0) + s.count;
  return out;
}

/** The numbers the human summary gives on its interrupted line. */
function summaryCounts(stderr: string): Stopped {
  const m =
    /interrupted: (\d+) in-flight sends? settled in the grace period; (\d+) cut after it \(in doubt\); (\d+) never sent/.exec(
      stderr,
    );
  assert.ok(m, `the summary says what the stop did: ${stderr}`);
  return { settled: Number(m[1]), cut: Number(m[2]), released: Number(m[3]) };
}

async function setUp(n: number, emuOpts: EmulatorOptions) {
  const emu = await emulator({ token: TOKEN, ...emuOpts });
  const dir = tmpDir();
  const file = join(dir, 'events.jsonl');
  writeFileSync(file, jsonlEvents(n));
  const ledger = join(dir, 'l.db');
  const args = ['push', file, '--sink', 'hubspot', '--hubspot-url', emu.url, '--ledger', ledger, '--json'];
  return { emu, ledger, args, file };
}

/** The counts the run reports agree with each other, with the summary and with the ledger. */
async function consistent(run: Run, ledger: string, emu: Emulator, hubspot = true): Promise<Record<string, number>> {
  assert.equal(run.signal, null, `ended by itself: ${run.stderr}`);
  assert.equal(run.code, 130, run.stderr);
  const d = run.report.delivery;
  const s = run.report.stopped!;
  assert.deepEqual(summaryCounts(run.stderr), s);
  const st = await ledgerStatuses(ledger);
  assert.equal(st.pending ?? 0, 0, 'nothing left pending');
  assert.equal(st.in_doubt ?? 0, d.inDoubt, 'in doubt: the report and the ledger agree');
  assert.equal(st.sent ?? 0, d.sent + d.exists + d.updated, 'sent: the report and the ledger agree');
  assert.equal(
    st.events,
    d.sent + d.exists + d.updated + d.failed + d.inDoubt,
    'released events are not in the ledger',
  );
  assert.equal(d.inDoubt, s.cut, 'what is in doubt is what was cut');
  const verify = await runCli(['ledger', 'verify', '--ledger', ledger]);
  assert.equal(verify.code, 0, `the released claims leave a sound ledger: ${verify.stdout}${verify.stderr}`);
  if (hubspot) assert.ok(emu.contacts().length >= d.sent);
  return st;
}

test(
  'Ctrl-C while requests wait for the rate limiter: they are released at once, none left in doubt; the next run sends them',
  async () => {
    // One request per 10 minutes: after the first answer every other batch waits for the limiter.
    const { emu, ledger, args } = await setUp(1000, { rateLimit: '1/600s' });
    // Interrupted once the first batch is settled and the next four are claimed and waiting: the run has then decided
    // past its first slice of 512 decisions (the sixth batch waits for a free slot), so every event is decided and
    // the 900 not sent are released. The CRM's answer alone came too early now that the settle commits on the writer
    // thread: with the first batch still unsettled the run could be stopped inside its first slice (412 released).
    const run = await pushAndInterrupt(args, () => {
      const st = emu.contacts().length >= 100 ? ledgerState(ledger) : undefined;
      return !!st && st.sent >= 100 && st.pending >= 400;
    });
    await consistent(run, ledger, emu);
    const d = run.report.delivery;
    assert.equal(d.sent, 100);
    assert.equal(d.inDoubt, 0);
    assert.equal(run.report.stopped!.released, 900, 'claimed or not, every event that did not go out is released');
    assert.equal(d.released, 900);
    assert.doesNotMatch(run.stderr, /to settle the/);
    // The next run decides them new again.
    const plan = await runCli([...args, '--dry-run']);
    assert.equal(jsonReport(plan).counts.new, 900);
  },
  { timeout: 170_000 },
);

for (const signal of ['SIGINT', 'SIGHUP'] as const)
  test(`${signal === 'SIGINT' ? 'Ctrl-C' : 'SIGHUP (a closed terminal)'} while batches are on the wire: they settle in the grace period and are counted so; the rest is released`, async () => {
    const { emu, ledger, args } = await setUp(1000, { faults: { latencyMs: 800 } });
    const run = await pushAndInterrupt(args, () => emu.stats().requests >= 4, { signal });
    await consistent(run, ledger, emu);
    const s = run.report.stopped!;
    assert.equal(s.cut, 0);
    assert.ok(s.settled >= 400, `the four batches in flight settled: ${JSON.stringify(s)}`);
    assert.equal(run.report.delivery.sent, s.settled);
    assert.equal(s.settled + s.released, run.report.counts.new, 'every event decided to send is one of the two');
    assert.equal(emu.contacts().length, s.settled);
  });

test('Ctrl-C twice while batches are on the wire: they are cut and in doubt, the summary names the command that settles them, which looks them up first', async () => {
  // The emulator stores each batch after 10 s, whether or not the client still waits for the answer: a second
  // Ctrl-C that did not cut them would see them settle.
  const { emu, ledger, args } = await setUp(1000, { faults: { latencyMs: 10_000 } });
  const run = await pushAndInterrupt(args, () => emu.stats().requests >= 4, { twice: true });
  await consistent(run, ledger, emu);
  const s = run.report.stopped!;
  assert.equal(s.settled, 0);
  assert.equal(s.cut, 400, JSON.stringify(s));
  assert.equal(s.released, run.report.counts.new - 400, 'the events read and not on the wire are released');
  const m =
    /to settle the 400 in doubt: (leadledger replay --in-doubt --sink hubspot --hubspot-url \S+ --ledger \S+) \(each looked up in the CRM first/.exec(
      run.stderr,
    );
  assert.ok(m, run.stderr);
  assert.equal(run.report.inDoubtResolution?.command, m[1]);
  // The CRM stored them after the client left; the command finds them there and creates nothing.
  while (emu.contacts().length < 400) await wait(50);
  emu.setFaults({});
  const replay = await runCli([...m[1]!.split(' ').slice(1), '--json'], { env });
  assert.equal(replay.code, 0, replay.stderr);
  assert.equal(jsonReport(replay).delivery.recovered, 400);
  const rest = await runCli(args, { env });
  assert.equal(rest.code, 0, rest.stderr);
  assert.equal(jsonReport(rest).delivery.sent, 600);
  assert.equal(emu.contacts().length, 1000, 'every person once');
  assert.equal(new Set(emu.contacts().map((c) => c.properties.email)).size, 1000);
});

test('Ctrl-C while a retry of earlier failures waits out its backoff: released back to failed, not in doubt', async () => {
  const { emu, ledger, args } = await setUp(300, { faults: { outage: true } });
  // HubSpot is down: the first run fails every event, retryably.
  const first = await runCli([...args, '--max-retries', '0'], { env });
  assert.equal(first.code, 1, first.stderr);
  assert.equal((await ledgerStatuses(ledger)).failed, 300);
  // Still down: the rerun claims them again, gets a 503 and waits ten minutes before its retry. Ctrl-C then.
  const run = await pushAndInterrupt([...args, '--backoff', '600000'], () => emu.stats().requests >= 4);
  assert.equal(run.code, 130, run.stderr);
  assert.deepEqual(run.report.stopped, { settled: 0, cut: 0, released: 300 });
  assert.deepEqual(summaryCounts(run.stderr), run.report.stopped);
  const st = await ledgerStatuses(ledger);
  assert.equal(st.failed, 300, 'back to the failures they were: the next run retries them');
  assert.equal(st.in_doubt ?? 0, 0);
  assert.equal(st.pending ?? 0, 0);
});

test('webhook sink: Ctrl-C while leads wait for --rate releases them; those answered count as settled', async () => {
  const { emu, ledger, file } = await setUp(50, {});
  const args = ['push', file, '--sink', 'webhook', '--url', `${emu.url}/webhook`, '--ledger', ledger, '--json'];
  const run = await pushAndInterrupt([...args, '--rate', '2'], () => emu.webhookReceived().requests >= 2);
  await consistent(run, ledger, emu, false);
  const s = run.report.stopped!;
  assert.equal(s.cut, 0);
  assert.equal(run.report.delivery.inDoubt, 0);
  // Sent before the stop or settled in the grace period, else released: each event decided new is one of them.
  assert.equal(run.report.delivery.sent + s.released, run.report.counts.new);
  assert.ok(s.released > 0);
  assert.ok(s.settled <= run.report.delivery.sent);
  assert.equal(emu.webhookReceived().requests, run.report.delivery.sent);
});
