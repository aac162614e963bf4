// replay and forget as users run them: the built CLI against the emulator.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { jsonReport, ROOT, runCli } from '../helpers/cli.js';
import { emulator } from '../helpers/emulator.js';
import { countByStatus, killWhen, readLedger, start } from '../helpers/kill.js';
import { tmpDir } from '../helpers/tmp.js';
import { generateEvents, jsonlEvents } from '../helpers/events.js';

const TOKEN = 'pat-replay-test-token';
const env = { HUBSPOT_TOKEN: TOKEN };
const fx = (f: string) => join(ROOT, 'fixtures', f);
const statusCounts = (ledger: string) => {
  const db = new Database(ledger, { readonly: true });
  try {
    return countByStatus(db);
  } finally {
    db.close();
  }
};

test('after an outage, replay sends exactly the failed events, once', async () => {
  const emu = await emulator({ token: TOKEN });
  const dir = tmpDir();
  const ledger = join(dir, 'l.db');
  const events = generateEvents(dir, 400, 31);
  const hub = ['--sink', 'hubspot', '--hubspot-url', emu.url, '--ledger', ledger, '--json', '--quiet'];
  // The CRM goes down (503 to everything) once the first batch is in.
  emu.setFaults({ latencyMs: 60 });
  const first = runCli(['push', events, ...hub, '--max-retries', '1', '--backoff', '10', '--concurrency', '1'], {
    env,
  });
  while (emu.contacts().length === 0) await new Promise((r) => setTimeout(r, 2));
  emu.setFaults({ outage: true });
  const push = await first;
  assert.equal(push.code, 1, push.stderr);
  const failed = jsonReport(push).delivery.failed;
  assert.ok(failed > 0, 'the outage failed some events');
  const sentBefore = emu.contacts().length;
  emu.setFaults({});
  const dry = await runCli(['replay', '--dry-run', '--ledger', ledger, '--json', '--report', join(dir, 'plan.csv')]);
  assert.equal(jsonReport(dry).counts.new, failed, 'the dry-run lists exactly the failed events');
  assert.equal(readFileSync(join(dir, 'plan.csv'), 'utf8').trim().split('\n').length, failed + 1);
  assert.equal(emu.contacts().length, sentBefore, 'a dry-run sends nothing');
  const r = await runCli(['replay', ...hub], { env });
  assert.equal(r.code, 0, r.stderr);
  assert.equal(jsonReport(r).delivery.sent + jsonReport(r).delivery.exists, failed);
  assert.equal(emu.contacts().length, sentBefore + failed);
  const again = await runCli(['replay', ...hub], { env });
  assert.equal(jsonReport(again).counts.read, 0, 'nothing left to replay');
  assert.deepEqual(Object.keys(statusCounts(ledger)), ['sent']);
});

test('a crash leaves events in doubt; replay --in-doubt re-sends them with the same key and the receiver keeps one copy', async () => {
  const emu = await emulator({ faults: { latencyMs: 15 }, webhook: { honourIdempotencyKey: true } });
  const dir = tmpDir();
  const ledger = join(dir, 'l.db');
  const config = join(dir, 'c.json');
  writeFileSync(config, JSON.stringify({ sinks: { webhook: { honoursIdempotencyKey: false } } }));
  const events = generateEvents(dir, 300, 32);
  const args = [
    'push',
    events,
    '--sink',
    'webhook',
    '--url',
    `${emu.url}/webhook`,
    '--ledger',
    ledger,
    '--config',
    config,
    '--concurrency',
    '4',
    '--quiet',
  ];
  const child = start(args, {}, 'ignore');
  const killed = await killWhen(
    child,
    () => readLedger(ledger, countByStatus),
    (s) => (s.pending ?? 0) > 0 && (s.sent ?? 0) > 20,
    2,
  );
  if (!killed) assert.fail('the push ended before it could be killed');
  // The next push marks the orphans in doubt; this sink (as configured) cannot check, so they stay in doubt.
  const rerun = await runCli([...args, '--json'], {});
  assert.equal(rerun.code, 1, 'exit 1 while events are in doubt');
  const doubt = statusCounts(ledger).in_doubt ?? 0;
  assert.ok(doubt > 0, 'the kill left sends in doubt');
  const refused = await runCli([
    'replay',
    '--in-doubt',
    '--sink',
    'webhook',
    '--url',
    `${emu.url}/webhook`,
    '--ledger',
    ledger,
    '--config',
    config,
    '--json',
    '--quiet',
  ]);
  assert.equal(jsonReport(refused).counts.filtered, doubt, 'without --resend they are reported, not sent blind');
  // The receiver does drop repeated Idempotency-Keys: tell leadledger so, and replay.
  writeFileSync(config, JSON.stringify({ sinks: { webhook: { honoursIdempotencyKey: true } } }));
  const r = await runCli([
    'replay',
    '--in-doubt',
    '--sink',
    'webhook',
    '--url',
    `${emu.url}/webhook`,
    '--ledger',
    ledger,
    '--config',
    config,
    '--json',
    '--quiet',
  ]);
  assert.equal(r.code, 0, r.stderr);
  const got = emu.webhookReceived();
  const emails = got.deliveries.map((d) => (d.body as { lead: { email: string } }).lead.email);
  assert.equal(emails.length, new Set(emails).size, 'no lead stored twice');
  assert.equal(statusCounts(ledger).in_doubt ?? 0, 0);
  const db = new Database(ledger, { readonly: true });
  const sent = (db.prepare(`SELECT count(*) n FROM events WHERE status = 'sent'`).get() as { n: number }).n;
  db.close();
  assert.equal(sent, emails.length, 'the ledger and the receiver agree');
});

test('replay --force re-sends delivered events only when confirmed, with the same downstream key', async () => {
  const emu = await emulator({ webhook: { honourIdempotencyKey: true } });
  const dir = tmpDir();
  const ledger = join(dir, 'l.db');
  const hook = ['--sink', 'webhook', '--url', `${emu.url}/webhook`, '--ledger', ledger];
  // 6: the log's conflicting retry (evt_01JA0009) is never sent; the rest is.
  assert.equal((await runCli(['push', fx('webhook-events.jsonl'), ...hook, '--quiet'])).code, 6);
  const keysBefore = emu.webhookReceived().deliveries.map((d) => d.idempotencyKey);
  const refused = await runCli(['replay', '--force', '--keys', 'evt_01JA0001,evt_01JA0002', ...hook]);
  assert.equal(refused.code, 2, 'not on a terminal and no --yes');
  assert.match(refused.stderr, /Re-send 2 event\(s\) that were already delivered to .*--yes/s);
  const r = await runCli([
    'replay',
    '--force',
    '--yes',
    // A key named twice is one event, sent once.
    '--keys',
    'evt_01JA0001,evt_01JA0002',
    '--keys',
    'evt_01JA0001',
    ...hook,
    '--json',
    '--quiet',
  ]);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(jsonReport(r).counts.new, 2);
  const got = emu.webhookReceived();
  assert.equal(got.requests, keysBefore.length + 2, 'two more requests');
  assert.deepEqual(
    got.deliveries.map((d) => d.idempotencyKey),
    keysBefore,
    'with the keys of the first sends: the receiver stored nothing new',
  );
});

test('replay --permanent --from: after a mapping fix, permanently failed events go out with the re-mapped lead', async () => {
  const emu = await emulator({ token: TOKEN });
  const dir = tmpDir();
  const ledger = join(dir, 'l.db');
  const config = join(dir, 'c.json');
  writeFileSync(config, JSON.stringify({ fields: { custom: { favourite_colour: 'data.company' } } }));
  const hub = [
    '--sink',
    'hubspot',
    '--hubspot-url',
    emu.url,
    '--ledger',
    ledger,
    '--json',
    '--quiet',
    '--config',
    config,
  ];
  const push = await runCli(['push', fx('webhook-events.jsonl'), ...hub], { env });
  assert.equal(push.code, 1);
  const failed = jsonReport(push).delivery.failed;
  assert.ok(failed >= 14, 'the CRM has no such property: a permanent 400 for every lead with a company');
  const plain = await runCli(['replay', ...hub], { env });
  assert.equal(jsonReport(plain).counts.read, 0, 'permanent failures are not replayed without --permanent');
  writeFileSync(config, JSON.stringify({}));
  const r = await runCli(['replay', '--permanent', '--from', fx('webhook-events.jsonl'), ...hub], { env });
  // The log's conflicting retry (evt_01JA0009, line 16) is reported as a conflict, as push reports it: exit 6.
  assert.equal(r.code, 6, r.stderr);
  assert.equal(jsonReport(r).counts.conflict, 1);
  assert.equal(jsonReport(r).delivery.sent, failed);
  assert.equal(emu.contacts().length, 15);
  assert.ok(emu.contacts().every((c) => !('favourite_colour' in c.properties)));
});

test('forget --email leaves no trace of the address in the ledger bytes, and a new push still skips the old events', async () => {
  const dir = tmpDir();
  const ledger = join(dir, 'l.db');
  const out = join(dir, 'out.jsonl');
  const push = [
    'push',
    fx('webhook-events.jsonl'),
    '--sink',
    'jsonl',
    '--output',
    out,
    '--ledger',
    ledger,
    '--json',
    '--quiet',
  ];
  assert.equal((await runCli(push)).code, 6, 'all sent but the conflicting retry (evt_01JA0009)');
  const address = 'ana.souza@example.com.br';
  assert.ok(
    readFileSync(ledger).includes(Buffer.from(address)) ||
      (existsSync(ledger + '-wal') && readFileSync(ledger + '-wal').includes(Buffer.from(address))),
  );
  const f = await runCli(['ledger', 'forget', '--email', 'Ana.Souza@Example.com.br', '--yes', '--ledger', ledger]);
  assert.equal(f.code, 0, f.stderr);
  for (const file of [ledger, ledger + '-wal']) {
    if (!existsSync(file)) continue;
    const bytes = readFileSync(file);
    assert.ok(
      !bytes.includes(Buffer.from(address)) && !bytes.includes(Buffer.from(address.toUpperCase())),
      `${file} still holds the address`,
    );
  }
  const again = await runCli(push);
  const d = jsonReport(again);
  assert.equal(d.delivery.sent, 0, 'the erased person is not sent again');
  assert.equal(readFileSync(out, 'utf8').trim().split('\n').length, 15);
});

test('retention "drop": sent events keep no stored lead, and replay says to use --from for them', async () => {
  const dir = tmpDir();
  const ledger = join(dir, 'l.db');
  const config = join(dir, 'c.json');
  writeFileSync(config, JSON.stringify({ retention: { sentPayloads: 'drop' } }));
  const out = join(dir, 'out.jsonl');
  const sink = ['--sink', 'jsonl', '--output', out, '--ledger', ledger, '--config', config];
  // 6: the log's conflicting retry (evt_01JA0009) is never sent; the rest is.
  assert.equal((await runCli(['push', fx('webhook-events.jsonl'), ...sink, '--quiet'])).code, 6);
  const db = new Database(ledger, { readonly: true });
  const kept = (db.prepare(`SELECT count(*) n FROM events WHERE lead_json IS NOT NULL`).get() as { n: number }).n;
  db.close();
  assert.equal(kept, 0);
  const r = await runCli(['replay', '--force', '--yes', '--keys', 'evt_01JA0001', ...sink, '--json', '--quiet']);
  assert.equal(jsonReport(r).counts.invalid, 1);
  assert.match(r.stdout, /replay --from/);
  const from = await runCli([
    'replay',
    '--force',
    '--yes',
    '--keys',
    'evt_01JA0001',
    '--from',
    fx('webhook-events.jsonl'),
    ...sink,
    '--json',
    '--quiet',
  ]);
  assert.equal(jsonReport(from).delivery.sent, 1, 'with --from the lead comes from the input');
});

test('adopting leadledger on a CRM with data: its contact export imported as emails makes those people known leads', async () => {
  const dir = tmpDir();
  const ledger = join(dir, 'l.db');
  const imp = await runCli([
    'ledger',
    'import',
    fx('hubspot-contacts-export.csv'),
    '--as',
    'emails',
    '--ledger',
    ledger,
  ]);
  assert.ok(imp.code === 0 || imp.code === 1, imp.stderr);
  const r = await runCli([
    'push',
    fx('hubspot-contacts-export.csv'),
    '--default-country',
    'BR',
    '--dry-run',
    '--json',
    '--ledger',
    ledger,
  ]);
  const c = jsonReport(r).counts;
  assert.equal(c.new, 0, JSON.stringify(c));
  assert.ok(c.known_lead > 0);
});

test('in doubt on a JSONL file: replay --in-doubt settles those the file holds; the rest, and stdout, need --resend, which writes them once', async () => {
  const dir = tmpDir();
  const ledger = join(dir, 'l.db');
  const out = join(dir, 'out.jsonl');
  const lines = jsonlEvents(15).trim().split('\n');
  const sentInput = join(dir, 'a.jsonl');
  const doubtInput = join(dir, 'b.jsonl');
  writeFileSync(sentInput, lines.slice(0, 10).join('\n') + '\n');
  writeFileSync(doubtInput, lines.slice(10).join('\n') + '\n');
  const sink = ['--sink', 'jsonl', '--output', out, '--ledger', ledger];
  assert.equal((await runCli(['push', sentInput, ...sink, '--quiet'])).code, 0);
  // A full disk (/dev/full fails every write with ENOSPC): the five leads may or may not be there: in doubt.
  const broken = ['--sink', 'jsonl', '--output', '/dev/full', '--ledger', ledger, '--json'];
  assert.equal(jsonReport(await runCli(['push', doubtInput, ...broken])).delivery.inDoubt, 5);
  // And three written to out.jsonl whose settle never came (a run killed right after the write).
  const inDoubt = (keys: string[]) => {
    const db = new Database(ledger);
    db.prepare(`UPDATE events SET status = 'in_doubt' WHERE key IN (${keys.map(() => '?').join(',')})`).run(...keys);
    db.close();
  };
  inDoubt(['e0', 'e1', 'e2']);
  assert.deepEqual(statusCounts(ledger), { sent: 7, in_doubt: 8 });
  const dry = jsonReport(await runCli(['push', doubtInput, '--dry-run', '--ledger', ledger, '--json']));
  assert.match(
    dry.examples.duplicate?.[0]?.reason ?? '',
    /leadledger replay --in-doubt looks it up where the sink can/,
  );

  // All eight are looked for in out.jsonl: the three there are settled. The five are not there, which proves
  // nothing (they were sent elsewhere; a file may also have been rotated): they stay in doubt, for --resend.
  const replayed = await runCli(['replay', '--in-doubt', ...sink, '--json', '--quiet']);
  assert.equal(replayed.code, 1, 'events it leaves in doubt do not end the run 0');
  assert.equal(jsonReport(replayed).delivery.recovered, 3, 'the three in the file are found there');
  assert.equal(jsonReport(replayed).delivery.sent, 0);
  assert.equal(jsonReport(replayed).delivery.inDoubt, 5);
  assert.deepEqual(Object.entries(jsonReport(replayed).inDoubtReasons ?? {}), [
    [
      `in doubt, and not in JSONL file ${out} (which may have been rotated since): leadledger replay --in-doubt --resend re-sends it`,
      5,
    ],
  ]);
  assert.deepEqual(statusCounts(ledger), { sent: 10, in_doubt: 5 });
  const resent = await runCli(['replay', '--in-doubt', '--resend', ...sink, '--yes', '--json', '--quiet']);
  assert.equal(resent.code, 0, resent.stderr);
  assert.equal(jsonReport(resent).delivery.sent, 5, 'the five are written (looked for first: still not there)');
  const keys = readFileSync(out, 'utf8')
    .trim()
    .split('\n')
    .map((l) => (JSON.parse(l) as { key: string }).key);
  assert.equal(keys.length, 15, 'nothing written twice');
  assert.equal(new Set(keys).size, 15);
  assert.deepEqual(statusCounts(ledger), { sent: 15 });

  // On stdout nothing can be looked for: replay --in-doubt leaves them, naming the command that re-sends them.
  inDoubt(['e3', 'e4']);
  const toStdout = ['--sink', 'jsonl', '--output', '-', '--ledger', ledger];
  const asked = await runCli(['replay', '--in-doubt', ...toStdout]);
  assert.equal(asked.code, 1, 'events it leaves in doubt do not end the run 0');
  assert.equal(asked.stdout, '', 'nothing written blind');
  const hint = /can neither look it up nor drop a repeat: (leadledger replay(?: --[a-z-]+)+) re-sends/.exec(
    asked.stderr,
  );
  assert.ok(hint, asked.stderr);
  const followed = await runCli([...hint[1]!.split(' ').slice(1), ...toStdout, '--yes', '--quiet']);
  assert.equal(followed.code, 0, followed.stderr);
  assert.deepEqual(
    followed.stdout
      .trim()
      .split('\n')
      .map((l) => (JSON.parse(l) as { lead: { email: string } }).lead.email),
    ['a3@example.com', 'a4@example.com'],
  );
  assert.deepEqual(statusCounts(ledger), { sent: 15 });
  const alone = await runCli(['replay', '--resend', ...sink]);
  assert.equal(alone.code, 2, 'without --in-doubt, --resend says what it is for');
  assert.match(alone.stderr, /--resend .* --in-doubt/);
});

test('replay --from reads the input as push does: --timezone and --date-order apply to its times', async () => {
  const emu = await emulator();
  const dir = tmpDir();
  const input = join(dir, 'in.jsonl');
  const event = { event_id: 'evt_T', created_at: '03/04/2026 10:00', data: { email: 'tom@example.com' } };
  writeFileSync(input, JSON.stringify(event) + '\n');
  const webhook = ['--sink', 'webhook', '--url', `${emu.url}/webhook`, '--ledger', join(dir, 'l.db')];
  emu.setFaults({ script: ['503'] });
  const first = await runCli(['push', input, ...webhook, '--max-retries', '0', '--json', '--quiet']);
  assert.equal(first.code, 1, first.stderr);
  emu.setFaults({});
  const times = ['--timezone', 'America/Sao_Paulo', '--date-order', 'mdy'];
  const r = await runCli(['replay', '--from', input, ...times, ...webhook, '--max-retries', '0', '--json', '--quiet']);
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual(jsonReport(r).dates, {
    timezone: 'America/Sao_Paulo',
    timezoneFrom: '--timezone',
    order: 'month/day',
    orderFrom: '--date-order',
  });
});

test('replay --from: an input that gives a key two leads is a conflict, reported, and the run ends 6', async () => {
  const emu = await emulator();
  const dir = tmpDir();
  const input = join(dir, 'in.jsonl');
  const event = (email: string) => JSON.stringify({ event_id: 'evt_C', data: { email } });
  writeFileSync(input, event('cora@example.com') + '\n');
  const webhook = ['--sink', 'webhook', '--url', `${emu.url}/webhook`, '--ledger', join(dir, 'l.db')];
  const quiet = ['--max-retries', '0', '--json', '--quiet'];
  emu.setFaults({ script: ['503'] });
  assert.equal((await runCli(['push', input, ...webhook, ...quiet])).code, 1);
  emu.setFaults({});
  writeFileSync(input, [event('cora@example.com'), event('other@example.com')].join('\n') + '\n');
  const r = await runCli(['replay', '--from', input, ...webhook, ...quiet]);
  assert.equal(r.code, 6, r.stderr);
  assert.equal(jsonReport(r).counts.conflict, 1);
  assert.deepEqual(
    emu.webhookReceived().deliveries.map((d) => (d.body as { lead: { email: string } }).lead.email),
    ['cora@example.com'],
    'the first lead of the key is sent, the other never silently',
  );
});
