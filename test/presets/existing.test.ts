// The sources leadledger first knew (Typeform webhooks, RD Station's two webhooks, application logs around them) on
// fixtures written from their documentation, through the built CLI: what each input is read as, how each record is
// decided (a retry, a partial response, several leads in one body, log lines that are no events), what a push sends
// and that the same input pushed again sends nothing; and that replay --from reads a log as push did.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startEmulator } from '../../src/sandbox/emulator.js';
import { tmpDir } from '../helpers/tmp.js';
import { decided, dryRun, fx, nonZero, phones, pushTwice, pushTwiceEnding, readAs, run } from './helpers.js';

test('Typeform webhooks: answers read by type and ref, a retry is a duplicate, a partial response filtered', async () => {
  const dir = tmpDir();
  const input = fx('typeform/webhooks.jsonl');
  const { doc, rows } = await dryRun(dir, input);
  assert.deepEqual(readAs(doc), [{ as: 'Typeform webhook', events: 6 }]);
  assert.deepEqual(nonZero(doc), { read: 6, new: 2, duplicate_in_input: 1, known_lead: 1, invalid: 1, filtered: 1 });
  assert.deepEqual(
    rows.map((r) => [r.line, r.key, r.decision]),
    [
      [1, '01JNZ4Q8Y3T6B1XW2K7R5M9A0C', 'new'],
      [2, '01JNZ4Q8Y3T6B1XW2K7R5M9A0C', 'duplicate_in_input'],
      [3, '01JPA0M1R2P3A4R5T6I7A8L9X0', 'filtered'],
      [4, '01JPB7N5W2C9D4E6F8G0H1J2K3', 'known_lead'],
      [5, '01JPA0N4C5O6M7P8L9E0T1E2X3', 'new'],
      [6, '01JPC2Q3R4S5T6U7V8W9X0Y1Z2', 'invalid'],
    ],
  );
  assert.equal(rows[2]!.reason, 'a partial response (form_response_partial): the complete response is the lead');
  assert.equal(rows[5]!.reason, 'no email and no phone: nothing identifies the person');
  const sent = await pushTwice(dir, input, 2);
  assert.deepEqual(phones(sent), {
    'ana.souza@exemplo.com.br': '+5511987654321',
    'omar.haddad@example.com': '+12025550188',
  });
  // The email and phone by answer type; name and company by the question's ref; the source from a hidden field.
  assert.deepEqual(sent[0]!.lead, {
    email: 'ana.souza@exemplo.com.br',
    phone: '+5511987654321',
    name: 'Ana Souza',
    company: 'Padaria Pão Quente',
    source: 'google',
  });
});

test('RD Station legacy webhook: each lead of a body is an item of its line; a redelivered body is all duplicates', async () => {
  const dir = tmpDir();
  const input = fx('rdstation/webhook-legacy.jsonl');
  const { doc, rows } = await dryRun(dir, input, '--default-country', 'BR');
  assert.deepEqual(readAs(doc), [{ as: 'RD Station webhook (API 1.x)', events: 6 }]);
  assert.deepEqual(nonZero(doc), { read: 6, new: 2, duplicate_in_input: 2, known_lead: 1, invalid: 1 });
  assert.deepEqual(
    rows.map((r) => [r.line, r.item, r.decision, r.email]),
    [
      [1, 1, 'new', 'ana.souza@exemplo.com.br'],
      [1, 2, 'new', 'bruno.lima@exemplo.com.br'],
      [2, 1, 'duplicate_in_input', 'ana.souza@exemplo.com.br'],
      [2, 2, 'duplicate_in_input', 'bruno.lima@exemplo.com.br'],
      // Ana's next conversion (webinar-precos) in another body, with a lead whose address is broken.
      [3, 1, 'known_lead', 'ana.souza@exemplo.com.br'],
      [3, 2, 'invalid', ''],
    ],
  );
  assert.deepEqual(decided(rows, 'invalid'), [
    [3, 2, "email: 'carla.dias(at)exemplo.com.br' is not a valid email address: no @"],
  ]);
  assert.equal(rows[4]!.key, '0b6f3a52-1d0e-4c1e-9a51-6a1f0c0e0a01|2025-03-18T20:01:10-03:00|webinar-precos');
  const sent = await pushTwice(dir, input, 2, '--default-country', 'BR');
  assert.deepEqual(phones(sent), {
    'ana.souza@exemplo.com.br': '+5511987654321',
    'bruno.lima@exemplo.com.br': '+5511912345678',
  });
  assert.equal(sent[0]!.lead.company, 'Padaria Pão Quente');
  assert.equal(sent[0]!.lead.source, 'google');
});

test('RD Station webhook (WEBHOOK.CONVERTED, WEBHOOK.MARKED_OPPORTUNITY): a retry sent later is the same event', async () => {
  const dir = tmpDir();
  const input = fx('rdstation/webhook-v2.jsonl');
  const { doc, rows } = await dryRun(dir, input, '--default-country', 'BR');
  assert.deepEqual(readAs(doc), [{ as: 'RD Station webhook', events: 7 }]);
  assert.deepEqual(nonZero(doc), { read: 7, new: 2, duplicate_in_input: 1, known_lead: 3, invalid: 1 });
  assert.deepEqual(
    rows.map((r) => [r.line, r.decision, r.email]),
    [
      [1, 'new', 'ana.souza@exemplo.com.br'],
      // The same conversion delivered again two minutes later: another `timestamp`, the same event_timestamp.
      [2, 'duplicate_in_input', 'ana.souza@exemplo.com.br'],
      [3, 'new', 'bruno.lima@exemplo.com.br'],
      [4, 'known_lead', 'ana.souza@exemplo.com.br'],
      [5, 'known_lead', 'ana.souza@exemplo.com.br'],
      [6, 'invalid', ''],
      // Ana downloads the same ebook again a week later: the same form, a new conversion.
      [7, 'known_lead', 'ana.souza@exemplo.com.br'],
    ],
  );
  assert.ok(rows[4]!.key.includes('|WEBHOOK.MARKED_OPPORTUNITY|'), rows[4]!.key);
  assert.equal(
    rows[5]!.reason,
    "phone: '11 9' is not a valid phone number, and there is no email: nothing identifies the person",
  );
  const sent = await pushTwice(dir, input, 2, '--default-country', 'BR');
  assert.deepEqual(phones(sent), {
    'ana.souza@exemplo.com.br': '+5511987654321',
    'bruno.lima@exemplo.com.br': '+5511912345678',
  });
  assert.equal(sent[0]!.lead.company, 'Padaria Pão Quente');
  assert.equal(sent[0]!.lead.source, 'google');
  // --preset forces the source on a body it would not claim (entity_type missing): its fields are still read.
  const odd = join(dir, 'no-entity-type.jsonl');
  const line = JSON.parse(readFileSync(input, 'utf8').split('\n')[0]!) as Record<string, unknown>;
  delete line.entity_type;
  writeFileSync(odd, JSON.stringify(line) + '\n');
  const plain = await dryRun(dir, odd);
  assert.deepEqual(readAs(plain.doc), []);
  const forced = await dryRun(dir, odd, '--preset', 'rdstation-webhook');
  assert.deepEqual(readAs(forced.doc), [{ as: 'RD Station webhook', events: 1 }]);
  assert.equal(forced.rows[0]!.key, rows[0]!.key);
});

const LOG_DECISIONS: Array<[number, number | '', string]> = [
  [1, '', 'filtered'], // pino: server listening
  [2, '', 'new'], // pino, body: a Typeform response (Ana)
  [3, '', 'filtered'], // pino-http: request completed
  [4, '', 'filtered'], // Node's deprecation warning, not JSON
  [5, '', 'filtered'],
  [6, '', 'duplicate_in_input'], // pino, body as a JSON string: Typeform's retry of line 2
  [7, '', 'new'], // winston, payload as a JSON string: a Typeform response (Jane)
  [8, '', 'filtered'], // winston: a warning
  [9, 1, 'new'], // bunyan, req.body: an RD Station legacy body with two leads (Bruno, Ana's next conversion)
  [9, 2, 'known_lead'],
  [10, '', 'known_lead'], // bunyan, request.body as a JSON string: an RD Station CONVERTED for Bruno
  [11, '', 'filtered'], // a stack trace, not JSON
  [12, '', 'filtered'],
  [13, '', 'filtered'], // pino: an error
  [14, '', 'known_lead'], // pino, payload: RD Station MARKED_OPPORTUNITY for Ana
  [15, '', 'invalid'], // pino, payload: a body the logger cut short
  [16, '', 'filtered'], // bunyan: shutting down
];

test('an application log (pino, winston, bunyan): the webhook bodies its lines hold are events, the rest is filtered', async () => {
  const dir = tmpDir();
  const input = fx('app-logs/webhooks.log');
  // The body the logger cut short (line 15) could not be read: every run over this log ends 3.
  const dry = ['push', input, '--dry-run', '--ledger', join(dir, 'dry.db'), '--default-country', 'BR'];
  const { doc, rows } = await run(dir, 'dry-run', dry, [3]);
  assert.deepEqual(nonZero(doc), { read: 17, new: 3, duplicate_in_input: 1, known_lead: 3, invalid: 1, filtered: 9 });
  assert.deepEqual(
    rows.map((r) => [r.line, r.item, r.decision]),
    LOG_DECISIONS,
  );
  const as = Object.fromEntries(readAs(doc).map((a) => [a.as, a.events]));
  assert.deepEqual(as, {
    'pino log lines that are not events': 3,
    'Typeform webhook (in a pino log)': 2,
    'log lines that are not JSON': 4,
    'Typeform webhook (in a winston log)': 1,
    'winston log lines that are not events': 1,
    'RD Station webhook (API 1.x) (in a bunyan log)': 2,
    'RD Station webhook (in a bunyan log)': 1,
    'RD Station webhook (in a pino log)': 1,
    'bunyan log lines that are not events': 1,
  });
  const reasons = new Set(rows.filter((r) => r.decision === 'filtered').map((r) => r.reason));
  // Each says where a body was looked for, and what the line said instead.
  const places = 'body, payload, req.body, request.body, rawBody';
  assert.deepEqual([...reasons].sort(), [
    `not an event: a bunyan log line with no webhook body (${places}, msg): "shutting down"`,
    'not an event: a log line that is not JSON',
    `not an event: a pino log line with no webhook body (${places}, msg): "CRM push failed"`,
    `not an event: a pino log line with no webhook body (${places}, msg): "request completed"`,
    `not an event: a pino log line with no webhook body (${places}, msg): "server listening on :3000"`,
    `not an event: a winston log line with no webhook body (${places}, message): "slow response from CRM"`,
  ]);
  assert.match(rows.find((r) => r.decision === 'invalid')!.reason, /^payload: the logged body is not whole JSON \(/);
  const sent = await pushTwiceEnding([3], dir, input, 3, '--default-country', 'BR');
  assert.deepEqual(phones(sent), {
    'ana.souza@exemplo.com.br': '+5511987654321',
    'jane.miller@example.com': '+12025550143',
    'bruno.lima@exemplo.com.br': '+5511912345678',
  });
});

test('replay --from a log picks the events push left failed, by the keys push gave them', async () => {
  const emu = await startEmulator({ faults: { outage: true } });
  after(() => emu.close());
  const dir = tmpDir();
  const input = fx('app-logs/webhooks.log');
  const ledger = join(dir, 'l.db');
  const sink = ['--sink', 'webhook', '--url', `${emu.url}/webhook`, '--ledger', ledger, '--default-country', 'BR'];
  // Line 15 of the log, a body the logger cut short, cannot be read: each run over it ends 3 (1 comes after).
  const push = await run(dir, 'push', ['push', input, ...sink, '--max-retries', '0'], [3]);
  assert.equal(push.doc.delivery?.failed, 3, JSON.stringify(push.doc.delivery));
  const failed = push.rows.filter((r) => r.decision === 'new').map((r) => r.key);
  assert.equal(failed.length, 3);
  const plan = await run(dir, 'replay', ['replay', '--from', input, '--dry-run', '--ledger', ledger], [3]);
  assert.deepEqual(
    plan.doc.unread.map((u) => [u.line, u.toLine]),
    [[15, 15]],
    'replay --from says what it could not read, as push does',
  );
  assert.deepEqual(readAs(plan.doc).find((a) => a.as === 'Typeform webhook (in a pino log)')?.events, 2);
  assert.deepEqual(plan.rows.map((r) => r.key).sort(), [...failed].sort());
  assert.ok(plan.rows.every((r) => r.decision === 'new' && r.reason.startsWith('replay: failed earlier')));
  // The CRM is back: the replay sends them, and a push of the same log then has nothing new.
  emu.setFaults({});
  const replay = await run(dir, 'replay', ['replay', '--from', input, ...sink], [3]);
  assert.equal(replay.doc.delivery?.sent, 3);
  const again = await run(dir, 'push-again', ['push', input, ...sink], [3]);
  assert.equal(again.doc.counts.new, 0);
  assert.equal(again.doc.delivery?.sent, 0);
});

test('a log line with an empty body (Express gives a GET {}, a handler may log []) is not an event, never lost', async () => {
  const dir = tmpDir();
  const input = join(dir, 'app.log');
  const first = readFileSync(fx('app-logs/webhooks.log'), 'utf8').split('\n').slice(0, 2).join('\n');
  const line = (extra: string) =>
    `{"level":30,"time":1741619564500,"pid":4100,"hostname":"web-1",${extra},"msg":"incoming"}`;
  writeFileSync(
    input,
    [first, line('"req":{"method":"GET","url":"/health","body":{}}'), line('"body":[]'), line('"payload":"[]"')].join(
      '\n',
    ) + '\n',
  );
  const { doc, rows } = await dryRun(dir, input);
  assert.deepEqual(nonZero(doc), { read: 5, new: 1, filtered: 4 });
  assert.deepEqual(
    rows.map((r) => [r.line, r.decision]),
    [
      [1, 'filtered'],
      [2, 'new'],
      [3, 'filtered'],
      [4, 'filtered'],
      [5, 'filtered'],
    ],
  );
  assert.ok(rows.slice(2).every((r) => r.reason.startsWith('not an event: a pino log line with no webhook body')));
});
