// The jsonl sink as a user runs it: the built CLI, the real deliver path (4 batches in flight), a real file.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, existsSync, readFileSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { jsonReport, ROOT, runCli } from '../helpers/cli.js';
import { eventCount } from '../helpers/ledger-count.js';
import { tmpDir } from '../helpers/tmp.js';

const fixture = join(ROOT, 'fixtures', 'webhook-events.jsonl');
/**
 * How a push of the fixture that sent all it could ends: 6, for its conflicting retry (evt_01JA0009 on line 16, with
 * another phone), which is never sent and wants a person to look.
 */
const SENT_ALL_BUT_CONFLICT = 6;

/** A push of the fixture to a JSONL file, with more flags. */
const pushJsonl = (output: string, ledger: string, ...more: string[]) =>
  runCli(['push', fixture, '--sink', 'jsonl', '--output', output, '--ledger', ledger, ...more]);

/** n leads, each with a 2 KB custom field, and a config that maps it: batches of 2,000 are ~4 MB each. */
function bigLeads(dir: string, n: number): { input: string; config: string } {
  const input = join(dir, 'big.jsonl');
  const lines: string[] = [];
  for (let i = 0; i < n; i++) {
    const notes = `${i}:`.padEnd(2048, String.fromCharCode(97 + (i % 26)));
    lines.push(JSON.stringify({ event_id: `evt_big_${i}`, email: `p${i}@example.com`, name: `Person ${i}`, notes }));
  }
  writeFileSync(input, lines.join('\n') + '\n');
  const config = join(dir, 'leadledger.config.json');
  writeFileSync(config, JSON.stringify({ fields: { custom: { notes: 'notes' } } }));
  return { input, config };
}

test('jsonl: 5,000 leads of 2 KB in 3 batches in flight at once are 5,000 whole JSON lines', async () => {
  const dir = tmpDir();
  const { input, config } = bigLeads(dir, 5000);
  const out = join(dir, 'out.jsonl');
  const r = await runCli(
    ['push', input, '--sink', 'jsonl', '--output', out, '--config', config, '--ledger', join(dir, 'l.db'), '--json'],
    { timeoutMs: 120_000 },
  );
  assert.equal(r.code, 0, r.stderr);
  assert.equal(jsonReport(r).delivery.sent, 5000);
  const lines = readFileSync(out, 'utf8').split('\n');
  assert.equal(lines.pop(), '', 'the file ends with a newline');
  assert.equal(lines.length, 5000);
  const keys = new Set<string>();
  lines.forEach((line, i) => {
    let parsed: { key: string; lead: { notes: string } };
    assert.doesNotThrow(() => (parsed = JSON.parse(line) as typeof parsed), `line ${i + 1} is not JSON`);
    keys.add(parsed!.key);
    assert.equal(parsed!.lead.notes.length, 2048);
  });
  assert.equal(keys.size, 5000, 'every lead once');
});

/** Events the ledger holds (0 when the run never created it). */

test('jsonl: --output through a symlink is refused before any lead is claimed; the target is untouched', async () => {
  const dir = tmpDir();
  const target = join(dir, 'precious.txt');
  writeFileSync(target, 'keep me\n');
  const link = join(dir, 'out.jsonl');
  symlinkSync(target, link);
  const ledger = join(dir, 'l.db');
  const r = await pushJsonl(link, ledger);
  assert.equal(r.code, 2, r.stderr);
  assert.equal(r.stderr.trimEnd().split('\n').length, 1, `one line: ${r.stderr}`);
  assert.ok(r.stderr.includes(link), r.stderr);
  assert.match(r.stderr, /symbolic link/);
  assert.equal(readFileSync(target, 'utf8'), 'keep me\n');
  assert.equal(eventCount(ledger), 0, 'nothing claimed');
});

test('jsonl: an --output in a directory that does not exist, or that is a directory, is refused before any lead is claimed', async () => {
  const dir = tmpDir();
  const ledger = join(dir, 'l.db');
  for (const [out, why] of [
    [join(dir, 'no-such-dir', 'out.jsonl'), /no-such-dir does not exist/],
    [dir, /is a directory/],
  ] as const) {
    const r = await pushJsonl(out, ledger);
    assert.equal(r.code, 2, r.stderr);
    assert.equal(r.stderr.trimEnd().split('\n').length, 1, `one line: ${r.stderr}`);
    assert.ok(r.stderr.includes(`--output ${out}`), r.stderr);
    assert.match(r.stderr, why);
    assert.equal(eventCount(ledger), 0, 'nothing claimed');
  }
  // The path fixed, the same push sends all 15.
  const r = await pushJsonl(join(dir, 'out.jsonl'), ledger, '--json');
  assert.equal(r.code, SENT_ALL_BUT_CONFLICT, r.stderr);
  assert.equal(jsonReport(r).delivery.sent, 15);
});

test('jsonl: an --output ending in a slash, or a file leadledger may write but not read, is refused before any claim', async () => {
  const dir = tmpDir();
  const ledger = join(dir, 'l.db');
  const slash = await pushJsonl(join(dir, 'newdir') + '/', ledger);
  assert.equal(slash.code, 2, slash.stderr);
  assert.match(slash.stderr, /newdir\/ names a directory/);
  // Write-only, and not empty: its last byte is read before the first append (a cut line?), its lines by replay.
  const wo = join(dir, 'write-only.jsonl');
  writeFileSync(wo, '{"key":"k","lead":{"email":"x@example.com"}}\n');
  chmodSync(wo, 0o200);
  const denied = await runCli(['push', fixture, '--sink', 'jsonl', '--output', wo, '--ledger', ledger], {
    fileModes: true,
  });
  assert.equal(denied.code, 2, denied.stderr);
  assert.match(denied.stderr, /write-only\.jsonl cannot be read \(leadledger reads back what it wrote there\): EACCES/);
  assert.equal(eventCount(ledger), 0, 'nothing claimed');
});

test('jsonl: a dangling symlink as --output is refused too, and its target is not created', async () => {
  const dir = tmpDir();
  const target = join(dir, 'elsewhere.jsonl');
  const link = join(dir, 'out.jsonl');
  symlinkSync(target, link);
  const ledger = join(dir, 'l.db');
  const r = await pushJsonl(link, ledger);
  assert.equal(r.code, 2, r.stderr);
  assert.equal(r.stderr.trimEnd().split('\n').length, 1, `one line: ${r.stderr}`);
  assert.ok(r.stderr.includes(link), r.stderr);
  assert.equal(existsSync(target), false);
  assert.equal(eventCount(ledger), 0, 'nothing claimed');
});

test('jsonl: --output /dev/null sends every event (a device is written, not fsynced), exit 0', async () => {
  const dir = tmpDir();
  const r = await pushJsonl('/dev/null', join(dir, 'l.db'), '--json', '--quiet');
  assert.equal(r.code, SENT_ALL_BUT_CONFLICT, r.stdout);
  assert.equal(jsonReport(r).delivery.sent, 15);
  assert.equal(jsonReport(r).delivery.inDoubt, 0);
});

test("a push (and a replay) records its own sink's parameters: a JSONL push names its output, and no HubSpot URL", async () => {
  const dir = tmpDir();
  const out = join(dir, 'out.jsonl');
  const ledger = join(dir, 'l.db');
  const r = await pushJsonl(out, ledger, '--json');
  assert.equal(r.code, SENT_ALL_BUT_CONFLICT, r.stderr);
  const options = (JSON.parse(r.stdout) as { options: Record<string, unknown> }).options;
  assert.equal(options.output, out);
  assert.equal(options.sink, 'jsonl');
  assert.equal('hubspotUrl' in options, false, JSON.stringify(options));
  const db = new Database(ledger, { readonly: true });
  const args = JSON.parse((db.prepare('SELECT args_json FROM runs').get() as { args_json: string }).args_json);
  db.close();
  assert.deepEqual(args, options, 'the ledger records what the report shows');
  const replayed = await runCli([
    'replay',
    '--failed',
    '--sink',
    'jsonl',
    '--output',
    out,
    '--ledger',
    ledger,
    '--json',
  ]);
  assert.equal(replayed.code, 0, replayed.stderr);
  const replayOptions = (JSON.parse(replayed.stdout) as { options: Record<string, unknown> }).options;
  assert.equal('hubspotUrl' in replayOptions, false, JSON.stringify(replayOptions));
});

test('in doubt: the summary and --json give the reason of every in-doubt event, grouped with counts', async () => {
  const dir = tmpDir();
  // /dev/full opens, and every write to it fails with ENOSPC, as a full disk does: the lines may be partly there.
  const full = [
    'push',
    fixture,
    '--sink',
    'jsonl',
    '--output',
    '/dev/full',
    '--ledger',
    join(dir, 'full.db'),
    '--json',
  ];
  const r = await runCli(full);
  assert.equal(r.code, 1, r.stderr);
  assert.equal(jsonReport(r).delivery.inDoubt, 15);
  const reasons = Object.entries(jsonReport(r).inDoubtReasons ?? {});
  assert.equal(reasons.length, 1, JSON.stringify(reasons));
  const [reason, n] = reasons[0]!;
  assert.equal(n, 15);
  assert.match(reason, /^cannot write JSONL file \/dev\/full: ENOSPC/);
  assert.ok(r.stderr.includes(`in doubt ×15: ${reason}`), r.stderr);
  // A device cannot be read back: the next push leaves them as they are, and the summary says so.
  assert.equal(jsonReport(r).inDoubtResolution?.nextPush, 'the next push on this sink leaves them in doubt');
  assert.match(r.stderr, /may get them twice; the next push on this sink leaves them in doubt\)/);

  // Sent to a file whose settles never came (a run killed right after its writes), and the file moved away since.
  const out = join(dir, 'out.jsonl');
  const ledger = join(dir, 'l.db');
  const args = ['push', fixture, '--sink', 'jsonl', '--output', out, '--ledger', ledger, '--json'];
  assert.equal((await runCli(args)).code, SENT_ALL_BUT_CONFLICT);
  const db = new Database(ledger);
  db.prepare(`UPDATE events SET status = 'in_doubt' WHERE status = 'sent'`).run();
  db.close();
  unlinkSync(out);

  // The next run looks for them in the file, which is not there (moved away with the lines it may hold): a lead
  // not found settles nothing, so they stay in doubt, and the reason says what re-sends them.
  const again = await runCli(args);
  assert.equal(again.code, 1, again.stderr);
  assert.equal(jsonReport(again).delivery.inDoubt, 15);
  assert.equal(jsonReport(again).delivery.recovered, 0);
  const left = Object.entries(jsonReport(again).inDoubtReasons ?? {});
  assert.equal(left.length, 1, JSON.stringify(left));
  assert.equal(left[0]![1], 15);
  assert.match(
    left[0]![0],
    /^in doubt, and not in JSONL file .*out\.jsonl \(which may have been rotated since\): leadledger replay --in-doubt --resend re-sends it$/,
  );
  assert.ok(again.stderr.includes(`in doubt ×15: ${left[0]![0]}`), again.stderr);
  // The command the summary names looks for them in the output first, and writes the others (--resend).
  assert.equal(
    jsonReport(again).inDoubtResolution?.how,
    'each looked for in the output first: those there are settled, the others written again',
  );
  const nextPush = 'the next push on this sink settles those it finds there first, and writes none of the others';
  assert.equal(jsonReport(again).inDoubtResolution?.nextPush, nextPush);
  assert.ok(again.stderr.includes(`the others written again; ${nextPush})`), again.stderr);
  assert.match(
    jsonReport(again).inDoubtResolution?.command ?? '',
    /^leadledger replay --in-doubt --resend --sink jsonl /,
  );
  assert.doesNotMatch(jsonReport(again).inDoubtResolution?.command ?? '', /--hubspot-url/);
});

test('ledger runs and ledger show print the counts a push recorded (delivered first), not an empty column', async () => {
  const dir = tmpDir();
  const ledger = join(dir, 'l.db');
  const r = await pushJsonl(join(dir, 'o.jsonl'), ledger, '--quiet');
  assert.equal(r.code, SENT_ALL_BUT_CONFLICT, r.stderr);
  const runs = await runCli(['ledger', 'runs', '--ledger', ledger]);
  assert.equal(runs.code, 0, runs.stderr);
  assert.match(runs.stdout, /\n\s*1\s+push\s+done\s.*\s+sent=15 read=25 new=15 duplicate_in_input=4/);
  const show = await runCli(['ledger', 'show', 'evt_01JA0001', '--ledger', ledger]);
  assert.match(show.stdout, /\n\s*1\s+push\s+done\s.*\s+sent=15 read=25 new=15/);
});

test('--quiet still says, a line for each kind, why a run ends 1: what failed or is in doubt, what settles it, and its conflict', async () => {
  const dir = tmpDir();
  const ledger = join(dir, 'l.db');
  const r = await pushJsonl('/dev/full', ledger, '--quiet');
  assert.equal(r.code, 1);
  const lines = r.stderr.trimEnd().split('\n');
  assert.equal(lines.length, 2, r.stderr);
  assert.match(
    lines[0]!,
    /^leadledger: error: 15 in doubt \(cannot write JSONL file \/dev\/full: ENOSPC[^)]*\); to settle them: leadledger replay --in-doubt --resend --sink jsonl --output \/dev\/full --ledger .* \(exit 1\)$/,
  );
  // The conflicting retry, after what decided the exit code (1 comes before 6).
  assert.match(
    lines[1]!,
    /^leadledger: error: 1 conflict: an event whose key came with another lead, never sent: a person must look \(e\.g\. .*webhook-events\.jsonl:16 \[evt_01JA0009\] same key as .* line 12 with different phone\) \(exit 1\)$/,
  );
  // A run that did all it was asked prints nothing: the gzipped log holds no conflict.
  const gz = join(ROOT, 'fixtures', 'webhook-events.jsonl.gz');
  const ok = await runCli([
    'push',
    gz,
    '--sink',
    'jsonl',
    '--output',
    join(dir, 'o.jsonl'),
    '--ledger',
    join(dir, 'ok.db'),
    '--quiet',
  ]);
  assert.equal(ok.code, 0, ok.stderr);
  assert.equal(ok.stderr, '');
});

test('events in doubt since an earlier run on another output do not let a push to a new one end 0; the command it names writes each once', async () => {
  const dir = tmpDir();
  const ledger = join(dir, 'l.db');
  const full = await pushJsonl('/dev/full', ledger, '--quiet');
  assert.equal(full.code, 1, full.stderr);
  // The output changed (a date in its name, a disk replaced): the 15 are duplicates in the ledger, in doubt.
  const out = join(dir, 'leads-2026-12-03.jsonl');
  const moved = await pushJsonl(out, ledger, '--json');
  assert.equal(moved.code, 1, moved.stderr);
  const doc = jsonReport(moved);
  assert.equal(doc.delivery.sent, 0);
  assert.equal(doc.delivery.inDoubt, 0, 'none of them is this sink’s');
  assert.equal(doc.inDoubtInLedger, 15);
  assert.match(moved.stderr, /in doubt on another sink since an earlier run: 15 events of this input/);
  assert.match(moved.stderr, /no push settles another sink's: only this replay does\)/);
  // On the sink they are in doubt on, the same events are counted once: by the recovery, as this sink's.
  const same = await pushJsonl('/dev/full', ledger, '--json');
  assert.equal(same.code, 1, same.stderr);
  assert.equal(jsonReport(same).delivery.inDoubt, 15);
  assert.equal(jsonReport(same).inDoubtInLedger, undefined);
  // The run records it: ledger runs shows why a run ended 1.
  assert.match(
    (await runCli(['ledger', 'runs', '--ledger', ledger])).stdout,
    /\n\s*2\s+push\s+done\s.*inDoubtInLedger=15/,
  );
  const command = doc.inDoubtResolution?.command ?? '';
  assert.match(command, /^leadledger replay --in-doubt --resend --sink jsonl --output \S+leads-2026-12-03\.jsonl /);
  const replayed = await runCli([...command.split(' ').slice(1), '--yes', '--quiet']);
  assert.equal(replayed.code, 0, replayed.stderr);
  const again = await pushJsonl(out, ledger, '--json');
  assert.equal(again.code, SENT_ALL_BUT_CONFLICT, again.stderr);
  assert.equal(jsonReport(again).inDoubtInLedger, undefined);
  const keys = readFileSync(out, 'utf8').trim().split('\n');
  assert.equal(keys.length, 15);
  assert.equal(new Set(keys).size, 15);
});
