// `leadledger serve` as a sender meets it: the built CLI listening on 127.0.0.1, the HubSpot emulator behind it, a
// real SQLite ledger. Every 2xx means the event is in the ledger; a repeat is already_processed; each person reaches
// the CRM once; what is acknowledged and not delivered when the process dies is delivered by the next start.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { test } from 'node:test';
import Database from 'better-sqlite3';
import { openLedger } from '../../src/ledger/ledger.js';
import { canonicalLeadJson, downstreamKey, payloadHashOfJson } from '../../src/mapping/keys.js';
import { Inbox } from '../../src/serve/inbox.js';
import { runCli } from '../helpers/cli.js';
import { emulator } from '../helpers/emulator.js';
import { post, startServe, waitFor } from '../helpers/serve.js';
import { tmpDir } from '../helpers/tmp.js';

const TOKEN = { HUBSPOT_TOKEN: 'test-token' };

function rows(ledger: string, sql: string): Array<Record<string, unknown>> {
  const db = new Database(ledger, { readonly: true });
  try {
    return db.prepare(sql).all() as Array<Record<string, unknown>>;
  } finally {
    db.close();
  }
}

function emails(emu: { contacts(): Array<{ properties: Record<string, string> }> }): string[] {
  return emu
    .contacts()
    .map((c) => c.properties.email!)
    .sort();
}

async function receiver(dir: string, crm: string, more: string[] = [], env: Record<string, string> = {}) {
  return startServe(
    [
      '--sink',
      'hubspot',
      '--hubspot-url',
      crm,
      '--ledger',
      join(dir, 'ledger.db'),
      '--port',
      '0',
      '--endpoint',
      'app',
      ...more,
    ],
    { env: { ...TOKEN, ...env }, cwd: dir },
  );
}

test('a new event is acknowledged once committed, delivered once; a repeat is already_processed', async () => {
  const dir = tmpDir();
  const emu = await emulator();
  const srv = await receiver(dir, emu.url);
  const hook = `${srv.url}/hooks/app`;
  const ev = { event_id: 'evt-1', type: 'lead.created', email: 'Ana.Lima@Example.com', name: 'Ana Lima' };
  const first = await post(hook, ev);
  assert.equal(first.status, 200);
  assert.equal(first.json.status, 'accepted');
  // Committed before the answer: the row is there the moment the 200 is.
  const row = rows(join(dir, 'ledger.db'), `SELECT status FROM events WHERE key = 'evt-1'`)[0];
  assert.ok(row && ['queued', 'pending', 'sent'].includes(row.status as string), JSON.stringify(row));
  // The sender retries, twice at once.
  const [a, b] = await Promise.all([post(hook, ev), post(hook, ev)]);
  for (const r of [a, b]) {
    assert.equal(r.status, 200);
    assert.equal(r.json.status, 'already_processed');
  }
  await waitFor('the delivery', () => emu.contacts().length === 1);
  assert.deepEqual(emails(emu), ['ana.lima@example.com']);
  // And after delivery, a repeat is still answered 200 already_processed, and nothing more reaches the CRM.
  const late = await post(hook, ev);
  assert.equal(late.json.status, 'already_processed');
  assert.equal(await srv.stop(), 0);
  assert.equal(emu.contacts().length, 1);
  const done = rows(join(dir, 'ledger.db'), `SELECT key, status, outcome FROM events`);
  assert.deepEqual(done, [{ key: 'evt-1', status: 'sent', outcome: 'created' }]);
});

test('conflicts, known leads, invalid and filtered records are answered 2xx with their reason and recorded', async () => {
  const dir = tmpDir();
  const emu = await emulator();
  const srv = await receiver(dir, emu.url);
  const hook = `${srv.url}/hooks/app`;
  const ledger = join(dir, 'ledger.db');
  assert.equal((await post(hook, { event_id: 'k1', email: 'bea@example.com', name: 'Bea' })).json.status, 'accepted');
  const conflict = await post(hook, { event_id: 'k1', email: 'bea@example.com', name: 'Someone Else' });
  assert.equal(conflict.status, 200);
  assert.equal(conflict.json.status, 'conflict');
  const known = await post(hook, { event_id: 'k2', email: 'BEA@example.com', name: 'Bea' });
  assert.equal(known.json.status, 'known_lead');
  const invalid = await post(hook, { event_id: 'k3', name: 'nobody to reach' });
  assert.equal(invalid.status, 200);
  assert.equal(invalid.json.status, 'invalid');
  const events = invalid.json.events as Array<{ reason: string }>;
  assert.match(events[0]!.reason, /no email and no phone/);
  const garbage = await post(hook, 'this is not json {', { 'content-type': 'application/json' });
  assert.equal(garbage.status, 200);
  assert.equal(garbage.json.status, 'invalid');
  // A form body (a sender that posts forms) is read as one.
  const form = await post(hook, 'event_id=k4&email=caio%40example.com&name=Caio', {
    'content-type': 'application/x-www-form-urlencoded',
  });
  assert.equal(form.json.status, 'accepted');
  await waitFor('the deliveries', () => emu.contacts().length === 2);
  assert.equal(await srv.stop(), 0);
  assert.deepEqual(emails(emu), ['bea@example.com', 'caio@example.com']);
  const recorded = rows(ledger, `SELECT key, status, outcome, last_error FROM events ORDER BY key`);
  const byKey = new Map(recorded.map((r) => [r.key, r]));
  assert.equal(byKey.get('k3')?.status, 'failed');
  assert.equal(byKey.get('k3')?.outcome, 'invalid');
  assert.match(byKey.get('k3')?.last_error as string, /no email and no phone/);
  assert.ok(
    recorded.some((r) => String(r.key).startsWith('serve:') && r.outcome === 'invalid'),
    'the unreadable body is recorded too',
  );
  assert.equal(byKey.has('k2'), false, 'a known lead is answered, not queued');
  const attempts = rows(ledger, `SELECT key, outcome, detail FROM attempts WHERE outcome = 'conflict'`);
  assert.equal(attempts.length, 1);
  assert.equal(attempts[0]!.key, 'k1');
  const metrics = await (await fetch(`${srv.url}/metrics`).catch(() => undefined))?.text();
  assert.equal(metrics, undefined, 'the receiver stopped listening');
});

test('/metrics counts what came in and what was delivered; /healthz and /readyz answer', async () => {
  const dir = tmpDir();
  const emu = await emulator();
  const srv = await receiver(dir, emu.url);
  const hook = `${srv.url}/hooks/app`;
  await post(hook, { event_id: 'm1', email: 'm1@example.com' });
  await post(hook, { event_id: 'm1', email: 'm1@example.com' });
  await post(hook, { event_id: 'm2', name: 'no one' });
  await waitFor('the delivery', () => emu.contacts().length === 1);
  const health = await fetch(`${srv.url}/healthz`);
  assert.equal(health.status, 200);
  const ready = await fetch(`${srv.url}/readyz`);
  assert.equal(ready.status, 200);
  let text = '';
  await waitFor('the delivery in the metrics', async () => {
    text = await (await fetch(`${srv.url}/metrics`)).text();
    return /leadledger_serve_delivered_total\{result="sent"\} 1/.test(text);
  });
  assert.match(text, /leadledger_serve_events_total\{endpoint="app",result="accepted"\} 1/);
  assert.match(text, /leadledger_serve_events_total\{endpoint="app",result="duplicate"\} 1/);
  assert.match(text, /leadledger_serve_events_total\{endpoint="app",result="invalid"\} 1/);
  assert.match(text, /# TYPE leadledger_serve_inbox_depth gauge/);
  assert.match(text, /leadledger_serve_crm_request_seconds_count [1-9]/);
  assert.match(text, /leadledger_serve_ack_seconds_bucket\{le="\+Inf"\} 3/);
  assert.doesNotMatch(text, /test-token/);
  assert.equal(await srv.stop(), 0);
});

test('HTTP hygiene: unknown paths 404, other methods 405, bodies past the limit 413', async () => {
  const dir = tmpDir();
  const emu = await emulator();
  writeFileSync(join(dir, 'leadledger.config.json'), JSON.stringify({ serve: { bodyLimit: 2048 } }));
  const srv = await receiver(dir, emu.url);
  assert.equal((await post(`${srv.url}/hooks/nope`, {})).status, 404);
  const get = await fetch(`${srv.url}/hooks/app`);
  assert.equal(get.status, 405);
  assert.equal(get.headers.get('allow'), 'POST');
  const big = await post(`${srv.url}/hooks/app`, { event_id: 'big', email: 'big@example.com', pad: 'x'.repeat(5000) });
  assert.equal(big.status, 413);
  assert.equal(await srv.stop(), 0);
  assert.equal(rows(join(dir, 'ledger.db'), 'SELECT key FROM events').length, 0);
});

test('--endpoint (no signature) is refused beyond loopback', async () => {
  const dir = tmpDir();
  const r = await runCli(
    ['serve', '--sink', 'jsonl', '--output', join(dir, 'out.jsonl'), '--host', '0.0.0.0', '--endpoint', 'app'],
    { cwd: dir },
  );
  assert.equal(r.code, 2);
  assert.match(r.stderr, /--endpoint app takes requests with no signature: only on loopback/);
});

test('a CRM that is down: requests are still acknowledged into the inbox, up to its bound, then 503 with Retry-After; delivered once it is back', async () => {
  const dir = tmpDir();
  const emu = await emulator({ faults: { outage: true } });
  const srv = await receiver(dir, emu.url, ['--max-inbox', '3', '--max-retries', '0']);
  const hook = `${srv.url}/hooks/app`;
  for (let i = 1; i <= 3; i++)
    assert.equal((await post(hook, { event_id: `o${i}`, email: `o${i}@example.com` })).status, 200);
  // Acknowledged and not delivered, whether queued or failed and waiting for the CRM: all of them are the inbox.
  await waitFor('the metrics to count the 3 events in the inbox', async () =>
    /^leadledger_serve_inbox_depth 3$/m.test(await (await fetch(`${srv.url}/metrics`)).text()),
  );
  let refused: Awaited<ReturnType<typeof post>> | undefined;
  await waitFor('the inbox to count full', async () => {
    refused = await post(hook, { event_id: 'o4', email: 'o4@example.com' });
    return refused.status === 503;
  });
  assert.ok(Number(refused!.headers.get('retry-after')) > 0);
  const ready = await fetch(`${srv.url}/readyz`);
  assert.equal(ready.status, 503);
  emu.setFaults({});
  await waitFor('the delivery after the outage', () => emu.contacts().length === 3);
  await waitFor(
    'room in the inbox',
    async () => (await post(hook, { event_id: 'o4', email: 'o4@example.com' })).status === 200,
  );
  await waitFor('the last delivery', () => emu.contacts().length === 4);
  assert.equal(await srv.stop(), 0);
  assert.deepEqual(emails(emu), ['o1@example.com', 'o2@example.com', 'o3@example.com', 'o4@example.com']);
});

test('killed with events acknowledged and not delivered: the next start delivers them, once', async () => {
  const dir = tmpDir();
  const emu = await emulator({ faults: { outage: true } });
  const srv = await receiver(dir, emu.url, ['--max-retries', '0']);
  const hook = `${srv.url}/hooks/app`;
  for (let i = 1; i <= 5; i++)
    assert.equal((await post(hook, { event_id: `d${i}`, email: `d${i}@example.com` })).status, 200);
  srv.child.kill('SIGKILL');
  await srv.exited;
  emu.setFaults({});
  assert.equal(emu.contacts().length, 0);
  const again = await receiver(dir, emu.url);
  await waitFor('the delivery by the next start', () => emu.contacts().length === 5);
  // A sender's retry of an event the dead process acknowledged is still a repeat.
  assert.equal(
    (await post(`${again.url}/hooks/app`, { event_id: 'd3', email: 'd3@example.com' })).json.status,
    'already_processed',
  );
  assert.equal(await again.stop(), 0);
  assert.equal(emu.contacts().length, 5);
  const st = rows(join(dir, 'ledger.db'), `SELECT status, count(*) AS n FROM events GROUP BY status`);
  assert.deepEqual(st, [{ status: 'sent', n: 5 }]);
});

test('--archive keeps every accepted request as a log that push reads with the same keys', async () => {
  const dir = tmpDir();
  const emu = await emulator();
  const srv = await receiver(dir, emu.url, ['--archive', 'archive']);
  const hook = `${srv.url}/hooks/app`;
  await post(hook, { event_id: 'a1', email: 'a1@example.com' });
  // A key from the sender's delivery header (Standard Webhooks' webhook-id): the same in the archive.
  await post(
    hook,
    { email: 'a2@example.com', name: 'Ana' },
    { 'webhook-id': 'msg_2', authorization: 'Bearer secret-value' },
  );
  await waitFor('the deliveries', () => emu.contacts().length === 2);
  assert.equal(await srv.stop(), 0);
  const files = readdirSync(join(dir, 'archive'));
  assert.equal(files.length, 1);
  assert.match(files[0]!, /^requests-\d{4}-\d{2}-\d{2}\.jsonl$/);
  const text = readFileSync(join(dir, 'archive', files[0]!), 'utf8');
  assert.doesNotMatch(text, /secret-value/, 'no credential is archived');
  assert.match(text, /"webhook-id":"msg_2"/);
  const r = await runCli(['push', join('archive', files[0]!), '--dry-run', '--ledger', 'ledger.db', '--json'], {
    cwd: dir,
  });
  const report = JSON.parse(r.stdout) as { counts: Record<string, number> };
  assert.equal(report.counts.read, 2);
  assert.equal(report.counts.duplicate, 2, r.stdout);
  assert.equal(report.counts.new, 0);
});

test('a push runs beside the receiver on the same ledger (claims keep each send single)', async () => {
  const dir = tmpDir();
  const emu = await emulator();
  const srv = await receiver(dir, emu.url);
  await post(`${srv.url}/hooks/app`, { event_id: 'p1', email: 'p1@example.com' });
  writeFileSync(
    join(dir, 'backfill.jsonl'),
    [
      { event_id: 'p1', email: 'p1@example.com' },
      { event_id: 'p2', email: 'p2@example.com' },
    ]
      .map((e) => JSON.stringify(e))
      .join('\n') + '\n',
  );
  const r = await runCli(
    ['push', 'backfill.jsonl', '--sink', 'hubspot', '--hubspot-url', emu.url, '--ledger', 'ledger.db'],
    {
      cwd: dir,
      env: TOKEN,
    },
  );
  assert.equal(r.code, 0, r.stderr + r.stdout);
  await waitFor('both people', () => emu.contacts().length === 2);
  assert.equal(await srv.stop(), 0);
  assert.deepEqual(emails(emu), ['p1@example.com', 'p2@example.com']);
});

test('a client that never finishes its headers is cut off (slowloris); others are still served', async () => {
  const dir = tmpDir();
  const emu = await emulator();
  writeFileSync(
    join(dir, 'leadledger.config.json'),
    JSON.stringify({ serve: { headersTimeout: 1, requestTimeout: 2 } }),
  );
  const srv = await receiver(dir, emu.url);
  const { port } = new URL(srv.url);
  const sock = connect(Number(port), '127.0.0.1');
  sock.write('POST /hooks/app HTTP/1.1\r\nHost: x\r\nX-Slow: ');
  let answer = '';
  sock.on('data', (d: Buffer) => (answer += d.toString()));
  // A bound, not a measure: the receiver closes the connection well within it.
  await new Promise<void>((resolve, reject) => {
    const bound = setTimeout(() => reject(new Error('the slow client was never cut off')), 30_000);
    sock.on('close', () => {
      clearTimeout(bound);
      resolve();
    });
  });
  assert.match(answer, /^HTTP\/1\.1 408/);
  assert.equal((await post(`${srv.url}/hooks/app`, { event_id: 's1', email: 's1@example.com' })).status, 200);
  assert.equal(await srv.stop(), 0);
});

test('SIGTERM while the CRM is down: exit 0, acknowledged events stay queued, the next start delivers them', async () => {
  const dir = tmpDir();
  const emu = await emulator({ faults: { outage: true } });
  const srv = await receiver(dir, emu.url, ['--max-retries', '0'], { LEADLEDGER_GRACE_MS: '60000' });
  for (let i = 1; i <= 3; i++)
    assert.equal((await post(`${srv.url}/hooks/app`, { event_id: `t${i}`, email: `t${i}@example.com` })).status, 200);
  assert.equal(await srv.stop('SIGTERM'), 0);
  const left = rows(join(dir, 'ledger.db'), `SELECT status, count(*) AS n FROM events GROUP BY status`);
  // Nothing claimed and left pending (which the next start would have to look up): queued, or failed and retryable.
  assert.ok(
    left.every((r) => r.status === 'queued' || r.status === 'failed'),
    JSON.stringify(left),
  );
  assert.ok(srv.lines().some((l) => /"msg":"stopped"/.test(l)));
  emu.setFaults({});
  const again = await receiver(dir, emu.url);
  await waitFor('the delivery by the next start', () => emu.contacts().length === 3);
  assert.equal(await again.stop(), 0);
});

test('replay --queued delivers what a receiver acknowledged and never delivered, once', async () => {
  const dir = tmpDir();
  const emu = await emulator();
  const path = join(dir, 'ledger.db');
  // A receiver's inbox, as `serve` leaves it when it is stopped for good with events acknowledged: written by the
  // receiver's own inbox code into a real ledger file, under a run that records the sink as serve does.
  const ledger = openLedger(path)!;
  const runId = ledger.startRun('serve', { sink: 'hubspot', hubspotUrl: emu.url }, { exclusive: false });
  const inbox = new Inbox(ledger, runId, `HubSpot at ${emu.url}`);
  const results = await inbox.accept(
    [1, 2, 3].map((i) => {
      const lead = { email: `r${i}@example.com` };
      const leadJson = canonicalLeadJson(lead);
      return {
        kind: 'event' as const,
        event: {
          key: `r${i}`,
          keyKind: 'id',
          payloadHash: payloadHashOfJson(leadJson),
          naturalKey: lead.email,
          downstreamKey: downstreamKey('leadledger', `r${i}`),
          leadJson,
          source: 'serve:app',
          line: i,
        },
      };
    }),
  );
  assert.deepEqual(
    results.map((r) => r.kind),
    ['accepted', 'accepted', 'accepted'],
  );
  ledger.finishRun(runId, 'done', {});
  ledger.close();
  const dry = await runCli(['replay', '--queued', '--ledger', 'ledger.db', '--dry-run', '--json'], { cwd: dir });
  assert.equal(dry.code, 0, dry.stderr);
  assert.equal((JSON.parse(dry.stdout) as { counts: { new: number } }).counts.new, 3);
  // A plain replay (retryable failures) leaves the inbox alone.
  const plain = await runCli(['replay', '--ledger', 'ledger.db', '--sink', 'hubspot', '--hubspot-url', emu.url], {
    cwd: dir,
    env: TOKEN,
  });
  assert.equal(plain.code, 0, plain.stderr);
  assert.equal(emu.contacts().length, 0);
  // The sink the receiver recorded is the one replay sends to (no --sink).
  const r = await runCli(['replay', '--queued', '--ledger', 'ledger.db'], { cwd: dir, env: TOKEN });
  assert.equal(r.code, 0, r.stderr + r.stdout);
  assert.deepEqual(emails(emu), ['r1@example.com', 'r2@example.com', 'r3@example.com']);
  assert.deepEqual(rows(path, `SELECT status, count(*) AS n FROM events GROUP BY status`), [{ status: 'sent', n: 3 }]);
  const again = await runCli(
    ['replay', '--queued', '--ledger', 'ledger.db', '--sink', 'hubspot', '--hubspot-url', emu.url],
    {
      cwd: dir,
      env: TOKEN,
    },
  );
  assert.equal(again.code, 0, again.stderr);
  assert.equal(emu.contacts().length, 3);
});
