// push against a HubSpot that already holds the people (a team adopting leadledger on an account with years of
// contacts, without `ledger import`): spawned CLI, the emulator on 127.0.0.1.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import type { Emulator } from '../../src/sandbox/emulator.js';
import { jsonReport, runCli } from '../helpers/cli.js';
import { emulator } from '../helpers/emulator.js';
import { expectedPeople, generateEvents } from '../helpers/events.js';
import { tmpDir } from '../helpers/tmp.js';

const TOKEN = 'pat-na1-populated-crm-token';
const env = { HUBSPOT_TOKEN: TOKEN };

function ledgerRows(
  path: string,
): Array<{ status: string; natural_key: string; crm_id: string | null; outcome: string }> {
  const db = new Database(path, { readonly: true });
  try {
    return db.prepare('SELECT status, natural_key, crm_id, outcome FROM events').all() as Array<{
      status: string;
      natural_key: string;
      crm_id: string | null;
      outcome: string;
    }>;
  } finally {
    db.close();
  }
}

/** Batch calls to each contacts endpoint, by path, since `from` (the emulator's request log). */
function callsSince(emu: Emulator, from: number): Record<string, number> {
  const out: Record<string, number> = {};
  for (const r of emu.requests().slice(from)) {
    const what = r.path.startsWith('/crm/v3/objects/contacts/batch/')
      ? r.path.slice('/crm/v3/objects/contacts/'.length)
      : `${r.method} ${r.path.startsWith('/crm/v3/objects/contacts/') ? 'contact' : r.path}`;
    out[what] = (out[what] ?? 0) + 1;
  }
  return out;
}

async function setUp(n: number, seed: number) {
  const emu = await emulator({ token: TOKEN, logRequests: true, rateLimit: '400/1s' });
  const dir = tmpDir();
  const file = generateEvents(dir, n, seed);
  const people = [...(await expectedPeople(file, dir))];
  const push = (extra: string[] = []) =>
    runCli(
      ['push', file, '--sink', 'hubspot', '--hubspot-url', emu.url, '--ledger', join(dir, 'l.db'), '--json', ...extra],
      { env },
    );
  return { emu, dir, people, push, ledger: join(dir, 'l.db') };
}

test('a CRM that holds every person: each settles already in the CRM with its id, nobody is created, a batch costs about one request', async () => {
  const { emu, people, push, ledger } = await setUp(1200, 3);
  emu.seed(people.map((email) => ({ email, firstname: 'Held' })));
  const r = await push();
  assert.equal(r.code, 0, r.stderr);
  const d = jsonReport(r);
  assert.equal(d.delivery.exists, d.counts.new);
  assert.equal(d.counts.new, people.length);
  assert.equal(d.delivery.sent, 0);
  assert.equal(emu.contacts().length, people.length, 'nobody created');
  const ids = new Map(emu.contacts().map((c) => [c.properties.email, c.id]));
  const rows = ledgerRows(ledger).filter((x) => x.status === 'sent');
  assert.equal(rows.length, people.length);
  for (const row of rows) {
    assert.equal(row.outcome, 'exists');
    assert.equal(row.crm_id, ids.get(row.natural_key), row.natural_key);
  }
  // Before: a 409 and a GET per person (2 requests a lead). Now a read per batch, after the first few batches
  // learned that this CRM holds its people (a 409 and a read each).
  const batches = Math.ceil(people.length / 100);
  const calls = callsSince(emu, 0);
  assert.equal(calls['GET contact'] ?? 0, 0, JSON.stringify(calls));
  assert.ok(
    d.http.requests <= batches + 4,
    `${d.http.requests} requests for ${batches} batches: ${JSON.stringify(calls)}`,
  );
});

test('a CRM that holds some of the people: those settle with their id, the others are created, at most a few requests a batch', async () => {
  const { emu, people, push, ledger } = await setUp(1200, 4);
  const held = people.filter((_, i) => i % 3 === 0);
  emu.seed(held.map((email) => ({ email })));
  const heldIds = new Map(emu.contacts().map((c) => [c.properties.email, c.id]));
  const r = await push();
  assert.equal(r.code, 0, r.stderr);
  const d = jsonReport(r);
  assert.equal(d.delivery.exists, held.length);
  assert.equal(d.delivery.sent, people.length - held.length);
  assert.equal(emu.contacts().length, people.length, 'each person once');
  for (const row of ledgerRows(ledger))
    if (heldIds.has(row.natural_key)) assert.equal(row.crm_id, heldIds.get(row.natural_key));
  const batches = Math.ceil(people.length / 100);
  assert.ok(d.http.requests <= 3 * batches, `${d.http.requests} requests for ${batches} batches`);
  const again = await push();
  assert.equal(jsonReport(again).delivery.sent + jsonReport(again).delivery.exists, 0, 'a rerun sends nothing');
});

test('--existing update: people the CRM holds are updated by their id, nobody is created', async () => {
  const { emu, people, push, ledger } = await setUp(600, 5);
  emu.seed(people.map((email) => ({ email, firstname: 'Old', lastname: 'Name' })));
  const r = await push(['--existing', 'update']);
  assert.equal(r.code, 0, r.stderr);
  const d = jsonReport(r);
  assert.equal(d.delivery.updated, d.counts.new + d.counts.known_lead);
  assert.equal(d.delivery.sent, 0);
  assert.equal(d.delivery.exists, 0);
  assert.equal(emu.contacts().length, people.length, 'nobody created');
  assert.ok(
    emu.contacts().every((c) => c.properties.firstname !== 'Old'),
    'every held person got the lead’s name',
  );
  const calls = callsSince(emu, 0);
  assert.ok((calls['batch/update'] ?? 0) >= Math.ceil(people.length / 100), JSON.stringify(calls));
  const rows = ledgerRows(ledger);
  const ids = new Map(emu.contacts().map((c) => [c.properties.email, c.id]));
  for (const row of rows) assert.equal(row.crm_id, ids.get(row.natural_key));
});

test('in-doubt recovery looks people up a batch at a time (batch read by email), not one GET each', async () => {
  const { emu, people, push } = await setUp(700, 6);
  // Every create is applied and its answer lost: with no retries, every event ends in doubt.
  emu.setFaults({ commitThenDropRate: 1 });
  const first = await push(['--max-retries', '0']);
  assert.equal(first.code, 1, first.stderr);
  assert.equal(jsonReport(first).delivery.inDoubt, people.length);
  assert.equal(emu.contacts().length, people.length);
  emu.setFaults({});
  const from = emu.requests().length;
  const second = await push();
  assert.equal(second.code, 0, second.stderr);
  assert.equal(jsonReport(second).delivery.recovered, people.length);
  const calls = callsSince(emu, from);
  assert.equal(calls['GET contact'] ?? 0, 0, JSON.stringify(calls));
  assert.equal(calls['batch/read'], Math.ceil(people.length / 100), JSON.stringify(calls));
  assert.equal(emu.contacts().length, people.length, 'nobody created twice');
});

test('a CRM that holds nobody: no read at all, one create a batch', async () => {
  const { emu, people, push } = await setUp(900, 7);
  const r = await push();
  assert.equal(r.code, 0, r.stderr);
  assert.equal(jsonReport(r).delivery.sent, people.length);
  const calls = callsSince(emu, 0);
  assert.deepEqual(calls, { 'batch/create': Math.ceil(people.length / 100) });
});
