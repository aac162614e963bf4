// Runs that end 0 when a person should look: a conflict (the same event key, another lead: the second person is
// never sent), and a record that could not be read (a broken JSON line, a CSV row with broken quoting). From cron,
// with --quiet, each ends non-zero and says why on a line; invalid data (a bad email, nobody to identify) does not.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { jsonReport, ROOT, runCli } from '../helpers/cli.js';
import { tmpDir } from '../helpers/tmp.js';

const line = (o: Record<string, unknown>) => JSON.stringify(o);

test('a conflict under --quiet: the push ends 6 and says so on a line; the second person is not sent; its dry-run ends 6 too; a rerun still does', async () => {
  const dir = tmpDir();
  const input = join(dir, 'events.jsonl');
  writeFileSync(
    input,
    [
      line({ event_id: 'e1', email: 'ana@example.com' }),
      line({ event_id: 'e2', email: 'bia@example.com' }),
      line({ event_id: 'e1', email: 'carla@example.com' }), // the same key, another person
    ].join('\n') + '\n',
  );
  const ledger = join(dir, 'l.db');
  const out = join(dir, 'out.jsonl');
  const conflictLine =
    /^leadledger: error: 1 conflict: an event whose key came with another lead, never sent: a person must look \(e\.g\. .*events\.jsonl:3 \[e1\] same key as .*events\.jsonl line 1 with different email\) \(exit 6\)\n$/;

  const dry = await runCli(['push', input, '--dry-run', '--ledger', ledger, '--quiet']);
  assert.equal(dry.code, 6, dry.stderr);
  assert.match(dry.stderr, conflictLine);

  const push = await runCli(['push', input, '--sink', 'jsonl', '--output', out, '--ledger', ledger, '--quiet']);
  assert.equal(push.code, 6, push.stderr);
  assert.match(push.stderr, conflictLine);
  const sent = readFileSync(out, 'utf8')
    .trim()
    .split('\n')
    .map((l) => (JSON.parse(l) as { lead: { email: string } }).lead.email);
  assert.deepEqual(sent, ['ana@example.com', 'bia@example.com']);

  // The ledger holds e1 with Ana: Carla's e1 conflicts with it on every run until a person settles it.
  const again = await runCli(['push', input, '--sink', 'jsonl', '--output', out, '--ledger', ledger, '--json']);
  assert.equal(again.code, 6, again.stderr);
  assert.equal(jsonReport(again).counts.conflict, 1);
  assert.equal(jsonReport(again).exitCode, 6);
  assert.match(again.stderr, /conflict \(exit code 6\): 1 event whose key came with another lead .*a person must look/);
});

/** Inputs holding one record that could not be read, each beside a record that could, and how it is named. */
const UNREADABLE: Array<{
  what: string;
  name: string;
  bytes: string | Buffer;
  args?: string[];
  at: number;
  reason: RegExp;
}> = [
  {
    what: 'a broken JSON line',
    name: 'events.jsonl',
    bytes: `${line({ event_id: 'e1', email: 'ana@example.com' })}\n{"event_id":"e2","email":\n`,
    at: 2,
    reason: /^invalid JSON: /,
  },
  {
    what: 'a broken element of a JSON document',
    name: 'events.json',
    bytes: `[\n${line({ event_id: 'e1', email: 'ana@example.com' })},\n{"event_id": "e2" "email": "x@example.com"}\n]\n`,
    at: 3,
    reason: /^invalid JSON: /,
  },
  {
    what: 'a CSV row with a quote never closed',
    name: 'export.csv',
    bytes: 'event_id,email,name\ne1,ana@example.com,Ana\ne2,bia@example.com,"Bia\ne3,carla@example.com,Carla\n',
    at: 3,
    reason: /^stray quote\? a quote opened at line 3 is never closed/,
  },
  {
    what: 'a CSV row whose cells do not line up with the header',
    name: 'export.csv',
    bytes: 'event_id,email,name\ne1,ana@example.com,Ana\ne2,bia@example.com\n',
    at: 3,
    reason: /^expected 3 columns, found 2$/,
  },
  {
    what: 'a wrapped event (--select body) that is broken JSON',
    name: 'app.jsonl',
    bytes: `${line({ msg: 'webhook', body: line({ event_id: 'e1', email: 'ana@example.com' }) })}\n${line({ msg: 'webhook', body: '{"event_id":"e2","ema' })}\n`,
    args: ['--select', 'body'],
    at: 2,
    reason: /^--select body: invalid JSON: /,
  },
  {
    what: 'a webhook body a pino logger cut short',
    name: 'webhooks.log',
    bytes: readFileSync(join(ROOT, 'fixtures', 'sources', 'app-logs', 'webhooks.log')),
    at: 15,
    reason: /^payload: the logged body is not whole JSON \(/,
  },
  {
    // A JSONL line that is not UTF-8 is read as Windows-1252; a form body's %-escaped bytes are taken as UTF-8.
    what: 'an email whose bytes are not UTF-8 (a form-encoded body)',
    name: 'app.jsonl',
    bytes:
      `${line({ msg: 'webhook', body: 'event_id=e1&email=a%40example.com' })}\n` +
      `${line({ msg: 'webhook', body: 'event_id=e2&email=b%E9%40example.com' })}\n`,
    args: ['--select', 'body'],
    at: 2,
    reason: /^email: its bytes are not UTF-8 /,
  },
];

for (const u of UNREADABLE) {
  test(`${u.what}: the record is invalid, the run names it as not read and ends 3 (--quiet: one line), dry-run and push`, async () => {
    const dir = tmpDir();
    const input = join(dir, u.name);
    writeFileSync(input, u.bytes);
    const ledger = join(dir, 'l.db');
    const sink = ['--sink', 'jsonl', '--output', join(dir, 'out.jsonl')];
    for (const how of [['--dry-run'], sink]) {
      const r = await runCli(['push', input, ...how, ...(u.args ?? []), '--ledger', ledger, '--json', '--quiet'], {
        env: { LEADLEDGER_DEFAULT_COUNTRY: 'BR' },
      });
      assert.equal(r.code, 3, `${how[0]}: ${r.stderr}`);
      const doc = jsonReport(r);
      assert.ok(doc.counts.invalid >= 1, JSON.stringify(doc.counts));
      assert.ok(doc.counts.new >= 1, 'what could be read was decided');
      const part = doc.unread.find((x) => x.line === u.at);
      assert.ok(part, `line ${u.at} among the parts not read: ${JSON.stringify(doc.unread)}`);
      assert.equal(part.toLine, u.at, 'one line');
      assert.match(part.reason, u.reason);
      assert.equal(doc.unread.length, 1, JSON.stringify(doc.unread));
      assert.match(r.stderr, new RegExp(`^leadledger: error: not read: .*${u.name} line ${u.at}: .* \\(exit 3\\)\\n$`));
    }
  });
}

test('invalid data that was read whole (a bad email, no email and no phone, a line that is null) stays exit 0', async () => {
  const dir = tmpDir();
  const input = join(dir, 'events.jsonl');
  writeFileSync(
    input,
    [
      line({ event_id: 'e1', email: 'ana@example.com' }),
      line({ event_id: 'e2', email: 'fernanda.costa(at)example.com' }),
      line({ event_id: 'e3', name: 'Nobody' }),
      'null',
    ].join('\n') + '\n',
  );
  const r = await runCli(['push', input, '--dry-run', '--ledger', join(dir, 'l.db'), '--json', '--quiet']);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stderr, '');
  assert.equal(jsonReport(r).counts.invalid, 3);
  assert.deepEqual(jsonReport(r).unread, []);
});

test('a record not read and a conflict: exit 3 comes first, and --quiet gives a line for each', async () => {
  const dir = tmpDir();
  const input = join(dir, 'events.jsonl');
  writeFileSync(
    input,
    [
      line({ event_id: 'e1', email: 'ana@example.com' }),
      '{"event_id":"e2"',
      line({ event_id: 'e1', email: 'bia@example.com' }),
    ].join('\n') + '\n',
  );
  const r = await runCli(['push', input, '--dry-run', '--ledger', join(dir, 'l.db'), '--quiet']);
  assert.equal(r.code, 3, r.stderr);
  const lines = r.stderr.trimEnd().split('\n');
  assert.equal(lines.length, 2, r.stderr);
  assert.match(lines[0]!, /^leadledger: error: not read: .*events\.jsonl line 2: invalid JSON: .* \(exit 3\)$/);
  assert.match(lines[1]!, /^leadledger: error: 1 conflict: .*\[e1\].* \(exit 3\)$/);
});

test('thousands of lines that cannot be read: the first 20 are named, the rest counted in one part, and every record decided', async () => {
  const dir = tmpDir();
  const input = join(dir, 'events.jsonl');
  const lines: string[] = [];
  for (let i = 1; i <= 3000; i++)
    lines.push(i % 2 === 0 ? `{"event_id":"bad${i}",` : line({ event_id: `e${i}`, email: `p${i}@example.com` }));
  writeFileSync(input, lines.join('\n') + '\n');
  const r = await runCli(['push', input, '--dry-run', '--ledger', join(dir, 'l.db'), '--json']);
  assert.equal(r.code, 3, r.stderr);
  const doc = jsonReport(r);
  assert.equal(doc.counts.read, 3000);
  assert.equal(doc.counts.invalid, 1500);
  assert.equal(doc.unread.length, 21);
  assert.deepEqual(
    doc.unread.slice(0, 20).map((u) => u.line),
    Array.from({ length: 20 }, (_, i) => 2 * (i + 1)),
  );
  const rest = doc.unread[20]!;
  assert.deepEqual([rest.line, rest.toLine, rest.records], [42, 3000, 1480]);
  assert.match(r.stderr, /events\.jsonl 1480 more records not read from line 42 to 3000, the first: invalid JSON/);
});

test('replay --from an input with a line that cannot be read names it and ends 3, as push does', async () => {
  const dir = tmpDir();
  const input = join(dir, 'events.jsonl');
  writeFileSync(input, `${line({ event_id: 'e1', email: 'ana@example.com' })}\n{"event_id":"e2",\n`);
  const ledger = join(dir, 'l.db');
  const push = await runCli(['push', input, '--sink', 'jsonl', '--output', join(dir, 'out.jsonl'), '--ledger', ledger]);
  assert.equal(push.code, 3, push.stderr);
  const r = await runCli(['replay', '--from', input, '--dry-run', '--ledger', ledger, '--json', '--quiet']);
  assert.equal(r.code, 3, r.stderr);
  assert.deepEqual(
    jsonReport(r).unread.map((u) => [u.line, u.toLine]),
    [[2, 2]],
  );
  assert.match(r.stderr, /^leadledger: error: not read: .*events\.jsonl line 2: invalid JSON: .* \(exit 3\)\n$/);
});
