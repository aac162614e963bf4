// The PostgreSQL ledger's shared write (claimWriteSettle): a batch's events go in by COPY, in the transaction of the
// sink's own write. What it records must be what the ordinary claim and settle would: every character of every
// field (COPY's text format gives backslash, tab, newline and carriage return a meaning), the attempts of the events
// not sent. And it commits only whole: a key another run holds, or a lease that ran out, rolls back the sink's rows
// with it. Against a real PostgreSQL 15 (test/helpers/postgres.ts); never skipped.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ClientBase } from 'pg';
import { openLedgerStore } from '../../src/ledger/open.js';
import type { LedgerStore } from '../../src/ledger/store.js';
import type { ClaimInput, Settlement } from '../../src/ledger/types.js';
import { pgDatabase } from '../helpers/postgres.js';

const db = await pgDatabase('leadledger_shared_write');
const env = { PGPASSWORD: db.cluster.password };

// Each COPY special character, the JSON escapes that put backslashes in a lead's JSON, and text outside ASCII.
const AWKWARD = 'tab\there, line\nbreak, cr\rhere, back\\slash, \\N, "quoted", ação 😀';

function claimOf(key: string, extra: Partial<ClaimInput> = {}): ClaimInput {
  return {
    key,
    keyKind: 'id',
    payloadHash: `hash-${key}`,
    naturalKey: `${key}@example.com`,
    downstreamKey: `dk-${key}`,
    leadJson: JSON.stringify({ email: `${key}@example.com`, name: AWKWARD }),
    source: `/exports/with\ttab\\and\nnewline/${key}.jsonl`,
    line: 7,
    eventTime: '2026-10-01T00:00:00.000Z',
    ...extra,
  };
}

async function freshLedger(): Promise<{ store: LedgerStore; run: number }> {
  await db.query('DROP SCHEMA IF EXISTS leadledger CASCADE');
  await db.query('DROP TABLE IF EXISTS shared_rows');
  await db.query('CREATE TABLE shared_rows (key text PRIMARY KEY)');
  const store = (await openLedgerStore(db.url, { env }))!;
  const run = await store.startRun('push', {}, { exclusive: false });
  return { store, run };
}

/** The sink's part of the transaction: a row per lead in shared_rows, then the outcomes. */
function writing(items: ClaimInput[], outcomes: (c: ClaimInput) => Settlement) {
  return async (client: ClientBase): Promise<Settlement[]> => {
    await client.query('INSERT INTO public.shared_rows (key) SELECT unnest($1::text[])', [items.map((c) => c.key)]);
    return items.map(outcomes);
  };
}

/** A shared write of the items by the run, every one of them sent (created). */
function writeAllSent(store: LedgerStore, run: number, items: ClaimInput[]) {
  return store.claimWriteSettle!(
    items,
    run,
    'sink',
    writing(items, (c) => ({ key: c.key, status: 'sent', outcome: 'created' })),
  );
}

test('a shared write records every field as written, and an attempts row for each event not sent', async () => {
  const { store, run } = await freshLedger();
  const items = [claimOf('a1'), claimOf('a2', { naturalKey: undefined, eventTime: undefined }), claimOf('a3')];
  const r = await store.claimWriteSettle!(
    items,
    run,
    'sink\twith tab',
    writing(items, (c) =>
      c.key === 'a3'
        ? { key: c.key, status: 'failed', failure: 'permanent', error: `refused:\n${AWKWARD}` }
        : { key: c.key, status: 'sent', outcome: 'created', crmId: `id\\${c.key}` },
    ),
  );
  assert.deepEqual(r, { kind: 'committed' });
  const rows = (
    await db.query(
      `SELECT key, key_kind, payload_hash, natural_key, status, failure, outcome, crm_id, attempts, last_error, sink,
         downstream_key, lead_json, source, source_line, event_time, run_id, sent_at IS NOT NULL AS has_sent_at
       FROM leadledger.events ORDER BY key`,
    )
  ).rows;
  assert.equal(rows.length, 3);
  for (const [i, c] of items.entries()) {
    const row = rows[i]!;
    const sent = c.key !== 'a3';
    assert.deepEqual(row, {
      key: c.key,
      key_kind: 'id',
      payload_hash: c.payloadHash,
      natural_key: c.naturalKey ?? null,
      status: sent ? 'sent' : 'failed',
      failure: sent ? null : 'permanent',
      outcome: sent ? 'created' : null,
      crm_id: sent ? `id\\${c.key}` : null,
      attempts: 1,
      last_error: sent ? null : `refused:\n${AWKWARD}`,
      sink: 'sink\twith tab',
      downstream_key: c.downstreamKey,
      lead_json: c.leadJson,
      source: c.source,
      source_line: 7,
      event_time: c.eventTime ?? null,
      run_id: String(run),
      has_sent_at: sent,
    });
  }
  assert.equal((JSON.parse(rows[0]!.lead_json as string) as { name: string }).name, AWKWARD);
  const attempts = (await db.query('SELECT key, run_id, outcome, detail FROM leadledger.attempts')).rows;
  assert.deepEqual(attempts, [{ key: 'a3', run_id: String(run), outcome: 'failed', detail: `refused:\n${AWKWARD}` }]);
  assert.equal((await db.query('SELECT count(*)::int AS n FROM shared_rows')).rows[0]!.n, 3);
  await store.close();
});

test('a shared write whose batch holds a key another run claimed rolls back whole, the sink’s rows with it', async () => {
  const { store, run } = await freshLedger();
  const other = await store.startRun('push', {}, { exclusive: false });
  assert.deepEqual([...(await store.claimNew([claimOf('b2')], other, 'sink'))], ['b2']);
  const items = [claimOf('b1'), claimOf('b2'), claimOf('b3')];
  const r = await writeAllSent(store, run, items);
  assert.deepEqual(r, { kind: 'rolled_back', reason: 'another run holds some of these events' });
  const keys = (await db.query('SELECT key, run_id, status FROM leadledger.events')).rows;
  assert.deepEqual(keys, [{ key: 'b2', run_id: String(other), status: 'pending' }]);
  assert.equal((await db.query('SELECT count(*)::int AS n FROM shared_rows')).rows[0]!.n, 0);
  await store.close();
});

test('a shared write of a run whose lease ran out rolls back whole', async () => {
  const { store, run } = await freshLedger();
  await db.query(`UPDATE leadledger.runs SET lease_expires_at = now() - interval '1 second' WHERE id = $1`, [run]);
  const items = [claimOf('c1')];
  const r = await writeAllSent(store, run, items);
  assert.deepEqual(r, { kind: 'rolled_back', reason: "the run's lease ran out" });
  assert.equal((await db.query('SELECT count(*)::int AS n FROM leadledger.events')).rows[0]!.n, 0);
  assert.equal((await db.query('SELECT count(*)::int AS n FROM shared_rows')).rows[0]!.n, 0);
  await store.close();
});

/** Every column of every events row and attempts row of a schema, in key order. */
async function rowsOf(schema: string) {
  const events = (await db.query(`SELECT * FROM ${schema}.events ORDER BY key`)).rows;
  const attempts = (await db.query(`SELECT key, run_id, at, outcome, detail FROM ${schema}.attempts ORDER BY key`))
    .rows;
  return { events, attempts };
}

test('a shared write leaves the rows the ordinary claim and settle leave, payloads dropped or kept', async () => {
  // Keys and values COPY's text format could take for something else: its NULL and end-of-data markers as whole
  // fields, the separators, escapes, text outside ASCII.
  const keys = ['\\N', '\\.', 'k\tab', 'k\nline', 'k\\back', 'k\r', 'çã😀', 'plain'];
  const outcome = (c: ClaimInput, i: number): Settlement =>
    i % 4 === 1
      ? { key: c.key, status: 'failed', failure: 'retryable', error: `429\t${AWKWARD}` }
      : i % 4 === 2
        ? { key: c.key, status: 'in_doubt', error: 'timeout\\N' }
        : {
            key: c.key,
            status: 'sent',
            outcome: i % 4 === 3 ? 'exists' : 'created',
            crmId: i % 4 ? `crm\t${i}` : undefined,
          };
  for (const drop of [false, true]) {
    await db.query('DROP SCHEMA IF EXISTS eq_ordinary CASCADE');
    await db.query('DROP SCHEMA IF EXISTS eq_shared CASCADE');
    await db.query('DROP TABLE IF EXISTS shared_rows');
    await db.query('CREATE TABLE shared_rows (key text PRIMARY KEY)');
    const items = keys.map((k, i) => claimOf(k, i % 3 ? {} : { naturalKey: undefined, eventTime: undefined }));
    const ordinary = (await openLedgerStore(`${db.url}?schema=eq_ordinary`, { env }))!;
    const shared = (await openLedgerStore(`${db.url}?schema=eq_shared`, { env }))!;
    ordinary.dropSentPayloads = drop;
    shared.dropSentPayloads = drop;
    const runA = await ordinary.startRun('push', {}, { exclusive: false });
    const runB = await shared.startRun('push', {}, { exclusive: false });
    assert.equal(runA, runB, 'both schemas number their first run alike');
    assert.equal((await ordinary.claimNew(items, runA, 'the sink')).size, items.length);
    await ordinary.settle(items.map(outcome), runA);
    const r = await shared.claimWriteSettle!(items, runB, 'the sink', writing(items, outcome));
    assert.deepEqual(r, { kind: 'committed' });
    const a = await rowsOf('eq_ordinary');
    const b = await rowsOf('eq_shared');
    // Times: the ordinary path claims, then settles (two times); the shared write has one, for all of it.
    for (const e of b.events) {
      assert.equal(e.first_seen_at, e.updated_at);
      assert.equal(e.sent_at, e.status === 'sent' ? e.updated_at : null);
    }
    for (const x of b.attempts) assert.equal(x.at, b.events[0]!.updated_at);
    const timeless = (rows: Array<Record<string, unknown>>) =>
      rows.map((e) => ({ ...e, first_seen_at: 0, updated_at: 0, at: 0, sent_at: e.sent_at === null ? null : 0 }));
    assert.deepEqual(timeless(b.events), timeless(a.events));
    assert.deepEqual(timeless(b.attempts), timeless(a.attempts));
    assert.equal(b.events.filter((e) => e.lead_json === null).length, drop ? 4 : 0);
    await ordinary.close();
    await shared.close();
  }
});
