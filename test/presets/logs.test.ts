// Logs that wrap lead bodies, read without a flag through the built CLI: a web server's access log whose last field
// is the request body, a CloudWatch Logs export (one document holding a list of events), Cloud Logging's entries,
// the systemd journal, a receiver's log of requests (their headers and body). Each entry is unwrapped and decided
// on its own; lines that are no events are filtered with what they were, never invalid and never dropped; the
// summary says what each input was read as; and `init` on such a log writes a config that decides the same.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runCli, ROOT } from '../helpers/cli.js';
import { tmpDir } from '../helpers/tmp.js';
import { decided, dryRun, nonZero, pushTwice, readAs, type Row } from './helpers.js';

const generic = (f: string): string => join(ROOT, 'fixtures', 'generic', f);
const lines = (rows: Row[]) => rows.map((r) => [r.line, r.item, r.decision]);

test('an nginx access log whose last field is the request body: each body an event, a GET none', async () => {
  const dir = tmpDir();
  const input = generic('nginx-request-body/access.log');
  const { doc, rows, stderr } = await dryRun(dir, input);
  assert.deepEqual(nonZero(doc), { read: 9, new: 3, duplicate_in_input: 1, known_lead: 1, invalid: 1, filtered: 3 });
  assert.deepEqual(decided(rows, 'filtered'), [
    [1, '', 'not an event: GET /healthz with no request body (a web server access log line)'],
    [5, '', 'not an event: GET /obrigado with no request body (a web server access log line)'],
    [7, '', 'a test event (test: true)'],
  ]);
  assert.deepEqual(readAs(doc), [
    { as: 'web server access log lines that are not events', events: 2 },
    { as: 'events in a web server access log (request_body), read by field names', events: 7 },
  ]);
  assert.match(stderr, /access\.log: read as web server access log lines that are not events \(2\)/);
  const sent = await pushTwice(dir, input, 3);
  // A form (percent-encoded, + for a space) and JSON whose quotes and UTF-8 bytes nginx wrote as \xXX.
  assert.deepEqual(
    sent.map((s) => [s.lead.name, s.lead.email, s.lead.phone]),
    [
      ['João Pereira', 'joao.pereira@example.com.br', '+5511999995001'],
      ['Marina Costa', 'marina.costa@example.com', '+447911123201'],
      ['Luís Araújo', 'luis.araujo@example.com.br', '+5531999995003'],
    ],
  );
});

test('a CloudWatch Logs export: each event of its list a record at its line, the runtime lines and an error filtered', async () => {
  const dir = tmpDir();
  const input = generic('cloudwatch-filter-log-events/events.json');
  const { doc, rows } = await dryRun(dir, input);
  assert.deepEqual(lines(rows), [
    [3, 1, 'filtered'],
    [10, 2, 'filtered'],
    [17, 3, 'new'],
    [24, 4, 'filtered'],
    [31, 5, 'filtered'],
    [38, 6, 'filtered'],
    [45, 7, 'new'],
    [52, 8, 'filtered'],
    [59, 9, 'filtered'],
    [66, 10, 'duplicate_in_input'],
    [73, 11, 'filtered'],
  ]);
  const reasons = rows.filter((r) => r.decision === 'filtered').map((r) => r.reason);
  assert.match(
    reasons[1]!,
    /^not an event: a CloudWatch Logs export entry with no webhook body \(message\): "START RequestId: /,
  );
  assert.equal(
    reasons[5],
    'not an event: an error logged in a CloudWatch Logs export entry (TypeError: Cannot read properties of undefined (reading…)',
  );
  assert.deepEqual(readAs(doc), [
    { as: 'CloudWatch Logs export entries that are not events', events: 7 },
    { as: 'events in a CloudWatch Logs export (events[].message), read by field names', events: 4 },
  ]);
});

test('Cloud Logging entries: a body after the words of textPayload or jsonPayload.message, a request entry filtered', async () => {
  const dir = tmpDir();
  const { doc, rows } = await dryRun(dir, generic('gcp-logging-cloudrun/logs.json'));
  assert.deepEqual(lines(rows), [
    [2, 1, 'new'],
    [22, 2, 'invalid'],
    [43, 3, 'new'],
    [69, 4, 'filtered'],
    [99, 5, 'duplicate_in_input'],
    [119, 6, 'filtered'],
  ]);
  assert.match(rows[5]!.reason, /no webhook body .*: "Listening on port 8080"$/);
  assert.deepEqual(readAs(doc), [
    { as: 'events in a Google Cloud Logging export (textPayload), read by field names', events: 3 },
    { as: 'events in a Google Cloud Logging export (jsonPayload.message), read by field names', events: 1 },
    { as: 'Google Cloud Logging export entries that are not events', events: 2 },
  ]);
});

test('the systemd journal: MESSAGE read, as text or as its list of bytes; init writes a config that decides the same', async () => {
  const dir = tmpDir();
  const input = generic('journald-json/journal.json');
  const before = await dryRun(dir, input);
  assert.deepEqual(lines(before.rows), [
    [1, '', 'filtered'],
    [2, '', 'new'],
    [3, '', 'new'],
    [4, '', 'filtered'],
    [5, '', 'duplicate_in_input'],
    [6, '', 'filtered'],
    [7, '', 'invalid'],
  ]);
  // The id of systemd's message type (MESSAGE_ID) is the journal's, not the event's: no key is made of it.
  assert.ok(
    before.rows.every((r) => r.key === '' || r.key.startsWith('c:')),
    JSON.stringify(before.rows),
  );
  assert.match(before.rows[0]!.reason, /"Started lead-intake\.service - Lead intake webhook receiver\."$/);
  const init = await runCli(['init', input, '--yes', '--default-country', 'BR'], { cwd: dir });
  assert.equal(init.code, 0, init.stderr);
  const config = join(dir, 'leadledger.config.json');
  // Nothing to map: the config holds the country alone (and the schema editors check it against).
  const { $schema, ...written } = JSON.parse(readFileSync(config, 'utf8')) as Record<string, unknown>;
  assert.match(String($schema), /\/schemas\/config\.schema\.json$/);
  assert.deepEqual(written, { defaultCountry: 'BR' });
  const after = await dryRun(dir, input, '--config', config);
  assert.deepEqual(lines(after.rows), lines(before.rows));
});

test("a journal entry holding the person itself: the journal's ids (MESSAGE_ID, the same on every such line) are no key", async () => {
  const dir = tmpDir();
  // An application writing its leads as structured journal fields (sd_journal_send), with its catalog's MESSAGE_ID.
  const entry = (i: number, email: string, name: string) => ({
    __CURSOR: `s=739ad463;i=4ed${i}`,
    __REALTIME_TIMESTAMP: String(1742338870123456 + i * 1000000),
    _BOOT_ID: '6c7c6013a26343b29e964691ff25d04c',
    _SYSTEMD_UNIT: 'lead-intake.service',
    SYSLOG_IDENTIFIER: 'lead-intake',
    PRIORITY: '6',
    MESSAGE_ID: '0f6b1c2d3e4f4a5b8c9d0e1f2a3b4c5d',
    MESSAGE: 'lead received',
    LEAD_EMAIL: email,
    LEAD_NAME: name,
  });
  for (const name of ['journal.json', 'journal.jsonl']) {
    const input = join(dir, name);
    writeFileSync(
      input,
      [entry(1, 'ana.lima@example.com', 'Ana Lima'), entry(2, 'bruno.reis@example.com', 'Bruno Reis')]
        .map((e) => JSON.stringify(e))
        .join('\n') + '\n',
    );
    const { doc, rows } = await dryRun(dir, input);
    assert.deepEqual(
      rows.map((r) => [r.line, r.email, r.decision]),
      [
        [1, 'ana.lima@example.com', 'new'],
        [2, 'bruno.reis@example.com', 'new'],
      ],
      name,
    );
    assert.ok(
      rows.every((r) => r.key.startsWith('c:')),
      JSON.stringify(rows),
    );
    assert.deepEqual(readAs(doc), [
      {
        as: "systemd journal entries that hold the person, read whole without the log's own fields",
        events: 2,
      },
    ]);
    const init = await runCli(['init', input, '--dry-run'], { cwd: dir });
    assert.equal(init.code, 0, init.stderr);
    assert.match(init.stdout, /key: the lead's content \(no event id found\)/);
  }
});

test('init writes no event id that only some records have: push with its config decides as without one', async () => {
  const dir = tmpDir();
  const input = join(dir, 'leads.jsonl');
  writeFileSync(
    input,
    [
      '{"MESSAGE_ID":"39f53479d3a045ac8e11786248231fbf","email":"ana@example.com","name":"Ana Lima"}',
      '{"email":"bia@example.com","name":"Bia Souza"}',
      '{"email":"caio@example.com","name":"Caio Reis"}',
    ].join('\n') + '\n',
  );
  const before = await dryRun(dir, input);
  assert.deepEqual(nonZero(before.doc), { read: 3, new: 3 });
  const init = await runCli(['init', input, '--yes', '--default-country', 'BR'], { cwd: dir });
  assert.equal(init.code, 0, init.stderr);
  assert.match(init.stdout, /key: MESSAGE_ID where a record has it, else the lead's content/);
  const config = JSON.parse(readFileSync(join(dir, 'leadledger.config.json'), 'utf8')) as { fields: object };
  assert.equal('id' in config.fields, false, JSON.stringify(config));
  const after = await dryRun(dir, input, '--config', join(dir, 'leadledger.config.json'));
  assert.deepEqual(
    after.rows.map((r) => [r.line, r.key, r.decision]),
    before.rows.map((r) => [r.line, r.key, r.decision]),
  );
});

test("a receiver's log of requests: the body unwrapped, the delivery's id and topic taken from its headers", async () => {
  const dir = tmpDir();
  const input = generic('woocommerce/webhooks.jsonl');
  const { doc, rows } = await dryRun(dir, input);
  assert.deepEqual(
    rows.map((r) => [r.line, r.key, r.decision]),
    [
      // WooCommerce's ping when a webhook is saved: its body is the webhook's id alone.
      [1, '7', 'filtered'],
      [2, '4a1f0e2d-6b3c-4d8e-9f7a-1b2c3d4e5f60', 'new'],
      [3, '4a1f0e2d-6b3c-4d8e-9f7a-1b2c3d4e5f60', 'duplicate_in_input'],
      // The same order updated: another delivery of another event, about a person already sent.
      [4, '9c8b7a6f-5e4d-4c3b-8a2f-1e0d9c8b7a61', 'known_lead'],
      [5, '0f1e2d3c-4b5a-4968-8776-a5b4c3d2e1f0', 'filtered'],
      [6, '7d6c5b4a-3f2e-4d1c-9b8a-7f6e5d4c3b2a', 'new'],
    ],
  );
  assert.equal(rows[4]!.reason, 'not about a person: product.updated');
  assert.deepEqual(readAs(doc), [{ as: 'events in a log of webhook requests (body), read by field names', events: 6 }]);
});

test('a JSON log line holding a list of entries, and a text log: each entry an item, each line a record', async () => {
  const dir = tmpDir();
  const subscription = join(dir, 'subscription.jsonl');
  const entry = (id: string, message: string) => ({ id, timestamp: 1742338870123, message });
  writeFileSync(
    subscription,
    JSON.stringify({
      messageType: 'DATA_MESSAGE',
      logGroup: '/aws/lambda/lead-intake',
      logEvents: [
        entry('1', 'START RequestId: 6f1c2b3a Version: $LATEST'),
        entry('2', 'INFO lead received {"email":"ana@example.com","name":"Ana Lima"}'),
        entry('3', "INFO lead received {'email': 'bia@example.com', 'name': 'Bia Souza'}"),
      ],
    }) + '\n',
  );
  const sub = await dryRun(dir, subscription);
  assert.deepEqual(lines(sub.rows), [
    [1, 1, 'filtered'],
    [1, 2, 'new'],
    [1, 3, 'new'],
  ]);
  const text = join(dir, 'app.log');
  writeFileSync(
    text,
    [
      'Mar 18 20:01:09 web-1 lead-intake[4121]: Listening on port 8080',
      'Mar 18 20:01:10 web-1 lead-intake[4121]: INFO lead received {"email": "caio@example.com", "name": "Caio Reis"}',
      'Mar 18 20:01:11 web-1 lead-intake[4121]: INFO form email=dani%40example.com&name=Dani+Melo',
    ].join('\n') + '\n',
  );
  const { doc, rows } = await dryRun(dir, text);
  assert.deepEqual(lines(rows), [
    [1, '', 'filtered'],
    [2, '', 'new'],
    [3, '', 'new'],
  ]);
  assert.deepEqual(
    rows.map((r) => r.email),
    ['', 'caio@example.com', 'dani@example.com'],
  );
  assert.deepEqual(readAs(doc), [
    { as: 'text log lines that are not events', events: 1 },
    { as: 'events in a text log (message), read by field names', events: 2 },
  ]);
});
