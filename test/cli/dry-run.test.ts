// The audit path as a user runs it: the built CLI on the bundled fixtures.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import { jsonReport, runCli, ROOT } from '../helpers/cli.js';
import { tmpDir } from '../helpers/tmp.js';

const fx = (f: string) => join(ROOT, 'fixtures', f);
const sumDecisions = (c: Record<string, number>) =>
  Object.entries(c)
    .filter(([k]) => k !== 'read')
    .reduce((a, [, v]) => a + v, 0);

test('dry-run of a webhook log: every decision counted, nothing written, summary on stdout', async () => {
  const dir = tmpDir();
  const ledger = join(dir, 'ledger.db');
  const r = await runCli(['push', fx('webhook-events.jsonl'), '--dry-run', '--ledger', ledger]);
  // The log's conflicting retry (evt_01JA0009) would never be sent: the audit says so, and ends 6 as a push would.
  assert.equal(r.code, 6, r.stderr);
  assert.match(r.stdout, /conflict \(exit code 6\): 1 event whose key came with another lead .*a person must look/);
  assert.doesNotMatch(r.stderr, /records read/, 'the summary is the result: on stdout, not stderr');
  assert.match(r.stdout, /nothing was sent and the ledger was not written/);
  assert.match(r.stdout, /records read\s+25/);
  assert.match(r.stdout, /new \(would send\)\s+15/);
  assert.match(r.stdout, /conflict: .*webhook-events.jsonl:16 \[evt_01JA0009\] .*different phone/);
  assert.match(r.stdout, /invalid: .*:14 .*email: 'fernanda.costa\(at\)example.com' is not a valid email address/);
  assert.equal(existsSync(ledger), false, 'a dry-run creates no ledger');
});

test('--json is one document on stdout whose counts add up to the records read', async () => {
  const r = await runCli([
    'push',
    fx('webhook-events.jsonl'),
    fx('crm-export-pt.csv'),
    '--dry-run',
    '--json',
    '--quiet',
    '--default-country',
    'BR',
    '--ledger',
    join(tmpDir(), 'l.db'),
  ]);
  // The conflicting retry of the webhook log: exit 6, and --quiet's one line says why.
  assert.equal(r.code, 6, r.stderr);
  assert.match(r.stderr, /^leadledger: error: 1 conflict: an event whose key came with another lead, .*\(exit 6\)\n$/);
  const doc = jsonReport(r);
  assert.equal(doc.dryRun, true);
  assert.equal(doc.counts.read, 36);
  assert.equal(sumDecisions(doc.counts), doc.counts.read);
  assert.equal(doc.perSource[fx('crm-export-pt.csv')]!.read, 11);
  assert.equal(doc.perSource[fx('crm-export-pt.csv')]!.known_lead, 1, 'the repeated person of the Windows-1252 export');
});

test('--report writes a row per record read, CSV cells neutralized', async () => {
  const dir = tmpDir();
  const input = join(dir, 'in.jsonl');
  writeFileSync(
    input,
    [
      JSON.stringify({ event_id: '=HYPERLINK("http://evil")', email: 'a@x.io' }),
      JSON.stringify({ event_id: 'e2', email: 'b@x.io' }),
      '{broken',
    ].join('\n') + '\n',
  );
  const report = join(dir, 'r.csv');
  const r = await runCli(['push', input, '--dry-run', '--report', report, '--ledger', join(dir, 'l.db')]);
  // The broken line could not be read: its row says so, and the run ends 3.
  assert.equal(r.code, 3, r.stderr);
  const rows = readFileSync(report, 'utf8').trim().split('\n');
  assert.equal(rows[0], 'source,line,item,key,email,decision,reason,result,crm_id,warnings');
  assert.equal(rows.length, 4);
  assert.ok(rows[1]!.includes(`"'=HYPERLINK(""http://evil"")"`), rows[1]);
  assert.match(rows[3]!, /,3,,,,invalid,invalid JSON/);
  const jsonl = join(dir, 'r.jsonl');
  await runCli(['push', input, '--dry-run', '--report', jsonl, '--ledger', join(dir, 'l.db')]);
  const recs = readFileSync(jsonl, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
  assert.deepEqual(
    recs.map((x) => x.decision),
    ['new', 'new', 'invalid'],
  );
});

test('dry-run against a seeded ledger: imported keys are duplicates, imported people are known leads', async () => {
  const dir = tmpDir();
  const ledger = join(dir, 'l.db');
  const seed = join(dir, 'seed.txt');
  writeFileSync(seed, 'evt_01JA0001\nevt_01JA0002\nkarina.lopes@example.com\n');
  const imp = await runCli(['ledger', 'import', seed, '--ledger', ledger]);
  assert.equal(imp.code, 0, imp.stderr);
  assert.match(imp.stderr, /imported 2 keys and 1 emails/);
  const r = await runCli(['push', fx('webhook-events.jsonl'), '--dry-run', '--json', '--ledger', ledger]);
  const doc = jsonReport(r);
  assert.equal(doc.counts.duplicate, 2, 'the first sightings of evt_01JA0001 and evt_01JA0002');
  assert.equal(doc.counts.duplicate_in_input, 4, 'their repeats (and the other retries) are duplicates in input');
  assert.equal(doc.counts.known_lead, 3);
  assert.equal(doc.counts.new, 15 - 2 - 1);
});

test('stdin, gzip, wrapped logs and globs', async () => {
  const dir = tmpDir();
  const l = join(dir, 'l.db');
  const stdin = await runCli(['push', '-', '--dry-run', '--json', '--ledger', l], {
    input: readFileSync(fx('webhook-events.jsonl')),
  });
  assert.equal(jsonReport(stdin).counts.read, 25);
  assert.ok(jsonReport(stdin).perSource.stdin);
  const gz = await runCli(['push', fx('webhook-events.jsonl.gz'), '--dry-run', '--json', '--ledger', l]);
  assert.equal(jsonReport(gz).counts.new, 19);
  const wrapped = await runCli([
    'push',
    fx('app-log-wrapped.jsonl'),
    '--select',
    'body',
    '--dry-run',
    '--json',
    '--ledger',
    l,
  ]);
  assert.equal(jsonReport(wrapped).counts.new, 6);
  const glob = await runCli([
    'push',
    join(ROOT, 'fixtures', 'webhook-events.jsonl*'),
    '--dry-run',
    '--json',
    '--ledger',
    l,
  ]);
  assert.equal(jsonReport(glob).counts.read, 45);
});

test('filters: --type and --since', async () => {
  const l = join(tmpDir(), 'l.db');
  const r = await runCli([
    'push',
    fx('webhook-events.jsonl'),
    '--type',
    'lead.created',
    '--since',
    '2026-10-01T13:00:00Z',
    '--dry-run',
    '--json',
    '--ledger',
    l,
  ]);
  const doc = jsonReport(r);
  assert.ok(doc.counts.filtered > 10, JSON.stringify(doc.counts));
  assert.equal(sumDecisions(doc.counts), 25);
});

test('exit codes: unreadable input 3, bad flags and config 2', async () => {
  const dir = tmpDir();
  const missing = await runCli(['push', join(dir, 'nope.jsonl'), '--dry-run']);
  assert.equal(missing.code, 3);
  assert.match(missing.stderr, /nope\.jsonl/);
  const flag = await runCli(['push', fx('webhook-events.jsonl'), '--dry-run', '--concurrency', 'lots']);
  assert.equal(flag.code, 2);
  const cfg = join(dir, 'c.json');
  writeFileSync(cfg, JSON.stringify({ fields: { emial: 'data.email' } }));
  const bad = await runCli(['push', fx('webhook-events.jsonl'), '--dry-run', '--config', cfg]);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /fields\.emial: unknown key \(did you mean email\?\)/);
  const nosink = await runCli(['push', fx('webhook-events.jsonl'), '--ledger', join(dir, 'l.db')]);
  assert.equal(nosink.code, 2);
  assert.match(nosink.stderr, /--sink/);
});

test('--help lists the exit codes and examples; --version prints the version', async () => {
  const h = await runCli(['--help']);
  assert.equal(h.code, 0);
  assert.match(h.stdout, /Exit codes:[\s\S]*130/);
  assert.match(h.stdout, /--dry-run/);
  const v = await runCli(['--version']);
  assert.match(v.stdout.trim(), /^\d+\.\d+\.\d+$/);
});

test('on generated events with a seeded ledger, new + known leads = the unique ids not in the ledger (independent count)', async () => {
  const dir = tmpDir();
  const events = join(dir, 'ev.jsonl');
  const gen = join(ROOT, 'bench', 'gen-events.mjs'); // the repository's copy of the team generator
  writeFileSync(events, execFileSync(process.execPath, [gen, '20000', '--seed', '7'], { maxBuffer: 64 << 20 }));
  const ids = [
    ...new Set(
      readFileSync(events, 'utf8')
        .trim()
        .split('\n')
        .map((l) => (JSON.parse(l) as { event_id: string }).event_id),
    ),
  ];
  const seeded = ids.filter((_, i) => i % 5 < 2);
  writeFileSync(join(dir, 'seed.txt'), seeded.join('\n') + '\n');
  const ledger = join(dir, 'l.db');
  assert.equal((await runCli(['ledger', 'import', join(dir, 'seed.txt'), '--ledger', ledger])).code, 0);
  const r = await runCli(['push', events, '--dry-run', '--json', '--ledger', ledger]);
  const c = jsonReport(r).counts;
  assert.equal(c.read, 20000);
  assert.equal(c.new + c.known_lead, ids.length - seeded.length);
  assert.equal(c.conflict, 0);
});
