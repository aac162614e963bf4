// A webhook receiver's 409, end to end: the built CLI pushes to the emulator's receiver on 127.0.0.1, which keeps one
// lead per email and answers 409 with its message to a second one. Only a 2xx is a delivery: a 409 is a failure whose
// reason quotes the receiver, unless the config says the receiver means "duplicate" by it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { jsonReport, runCli } from '../helpers/cli.js';
import { emulator } from '../helpers/emulator.js';
import { tmpDir } from '../helpers/tmp.js';

const SECRET = 'whsec-CANARY-409-secret-5b1d';
const MESSAGE = 'HTTP 409: a lead with this email already exists';

/** A receiver that already holds taken@example.com (as wh_1), and an input with it between two new people. */
async function setUp(webhook: { conflictRetryable?: boolean } = {}) {
  const emu = await emulator({ webhook: { uniqueEmails: true, ...webhook } });
  const seeded = await fetch(`${emu.url}/webhook`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ lead: { email: 'taken@example.com' } }),
  });
  assert.equal(seeded.status, 201);
  const dir = tmpDir();
  const input = join(dir, 'in.jsonl');
  writeFileSync(
    input,
    ['new1', 'taken', 'new2'].map((who, i) => JSON.stringify({ id: `e${i}`, email: `${who}@example.com` })).join('\n'),
  );
  const ledger = join(dir, 'l.db');
  const push = (config: object) => {
    const file = join(dir, `config-${Math.random().toString(36).slice(2)}.json`);
    writeFileSync(file, JSON.stringify(config));
    const args = ['push', input, '--sink', 'webhook', '--url', `${emu.url}/webhook`, '--ledger', ledger];
    return runCli([...args, '--config', file, '--json'], { env: { LEADLEDGER_WEBHOOK_SECRET: SECRET } });
  };
  const row = (key: string) => {
    const db = new Database(ledger, { readonly: true });
    try {
      return db.prepare('SELECT status, failure, crm_id, last_error FROM events WHERE key = ?').get(key);
    } finally {
      db.close();
    }
  };
  return { emu, push, row };
}

test('webhook: a 409 is a failure, retryable, with the receiver’s message; never recorded as sent', async () => {
  const { emu, push, row } = await setUp();
  const r = await push({});
  assert.equal(r.code, 1, r.stderr);
  const report = jsonReport(r);
  assert.equal(report.delivery.sent, 2);
  assert.equal(report.delivery.exists, 0);
  assert.equal(report.delivery.failed, 1);
  assert.deepEqual(report.failures, { [MESSAGE]: 1 });
  assert.ok(r.stderr.includes(`failed ×1: ${MESSAGE}`), r.stderr);
  assert.deepEqual(row('e1'), { status: 'failed', failure: 'retryable', crm_id: null, last_error: MESSAGE });
  assert.equal(emu.webhookReceived().deliveries.length, 3, 'the receiver stored the two new people only');
  // Retryable: the next push sends it again (and meets the same answer).
  const again = await push({});
  assert.equal(again.code, 1, again.stderr);
  assert.equal(jsonReport(again).delivery.failed, 1);
  assert.ok(!r.stdout.includes(SECRET) && !r.stderr.includes(SECRET));
});

test('webhook: a 409 whose body says "retryable": false fails for good', async () => {
  const { push, row } = await setUp({ conflictRetryable: false });
  const r = await push({});
  assert.equal(r.code, 1, r.stderr);
  assert.deepEqual(jsonReport(r).failures, { [MESSAGE]: 1 });
  assert.deepEqual(row('e1'), { status: 'failed', failure: 'permanent', crm_id: null, last_error: MESSAGE });
  // Permanent: the next push does not send it again.
  const again = await push({});
  assert.equal(again.code, 0, again.stderr);
  assert.equal(jsonReport(again).delivery.failed, 0);
});

test('webhook: with "conflictMeans": "duplicate" a 409 is already there, with the id the body gives', async () => {
  const { push, row } = await setUp();
  const r = await push({ sinks: { webhook: { conflictMeans: 'duplicate' } } });
  assert.equal(r.code, 0, r.stderr);
  const report = jsonReport(r);
  assert.equal(report.delivery.sent, 2);
  assert.equal(report.delivery.exists, 1);
  assert.deepEqual(row('e1'), { status: 'sent', failure: null, crm_id: 'wh_1', last_error: null });
});
