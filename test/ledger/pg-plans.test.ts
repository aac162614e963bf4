// The plans of the PostgreSQL ledger's batch statements: linear in the batch, whatever the table's statistics say.
// The pending rows of a push live between a claim and its settle, so ANALYZE seldom sees one: the statistics that
// count them are wrong by design, and a plan that trusts them (a nested loop from the events_status index over the
// batch, or a subplan per record) took a push of a million events to the JSONL sink from 10 s to 50 s. Against a real
// PostgreSQL 15 (test/helpers/postgres.ts); never skipped.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { openLedgerStore } from '../../src/ledger/open.js';
import {
  CLAIM_EXISTING_SQL,
  RELEASE_BACK_SQL,
  RELEASE_DROP_SQL,
  SETTLE_SQL,
  settleParams,
} from '../../src/ledger/postgres/store.js';
import { numberParams } from '../../src/ledger/sql.js';
import { settleRecords } from '../../src/ledger/rules.js';
import type { ClaimInput, Settlement } from '../../src/ledger/types.js';
import { pgDatabase } from '../helpers/postgres.js';

const db = await pgDatabase('leadledger_plans');
const env = { PGPASSWORD: db.cluster.password };

function claims(from: number, n: number): ClaimInput[] {
  return Array.from({ length: n }, (_, i) => {
    const key = `evt_${String(from + i).padStart(8, '0')}`;
    return {
      key,
      keyKind: 'id',
      payloadHash: `hash-${key}`,
      naturalKey: `person.${((from + i) * 7919) % 100_003}@example.com`,
      downstreamKey: `dk-${key}`,
      leadJson: JSON.stringify({ email: `${key}@example.com` }),
      source: 'events.jsonl',
      line: from + i,
    };
  });
}

const sent = (c: ClaimInput): Settlement => ({ key: c.key, status: 'sent', outcome: 'created' });

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Parent Relationship'?: string;
  Plans?: PlanNode[];
}

function nodes(n: PlanNode): PlanNode[] {
  return [n, ...(n.Plans ?? []).flatMap(nodes)];
}

test('a settle finds its rows by key and matches its records by a join, with statistics that saw no pending row', async () => {
  await db.query('DROP SCHEMA IF EXISTS leadledger CASCADE');
  const store = (await openLedgerStore(db.url, { env }))!;
  const client = new pg.Client({ connectionString: db.urlWithPassword });
  await client.connect();
  try {
    const run = await store.startRun('push', {}, { exclusive: false });
    // Settled events, then statistics taken while none is pending: what the ledger's own ANALYZE and autovacuum see.
    for (let b = 0; b < 3; b++) {
      const batch = claims(b * 1000, 1000);
      assert.equal((await store.claimNew(batch, run, 'sink')).size, 1000);
      await store.settle(batch.map(sent), run);
    }
    await client.query('ANALYZE leadledger.events');
    // Four batches in flight, as a push with --concurrency 4 has them.
    const inFlight = [3, 4, 5, 6].map((b) => claims(b * 1000, 1000));
    for (const batch of inFlight) assert.equal((await store.claimNew(batch, run, 'sink')).size, 1000);

    // One batch's settle, with a record repeated (a key sent twice in the input's retries).
    const batch = inFlight[0]!;
    const records = settleRecords([...batch.map(sent), sent(batch[0]!)]);
    await client.query('SET search_path = leadledger');
    const explained = await client.query<{ 'QUERY PLAN': Array<{ Plan: PlanNode }> }>(
      `EXPLAIN (FORMAT JSON) ${SETTLE_SQL}`,
      settleParams(records, run, false),
    );
    const plan = nodes(explained.rows[0]!['QUERY PLAN'][0]!.Plan);
    const onEvents = plan.filter((n) => n['Relation Name'] === 'events' && n['Node Type'] !== 'ModifyTable');
    assert.ok(onEvents.length > 0, 'the plan reads events');
    for (const n of onEvents)
      assert.notEqual(n['Index Name'], 'events_status', `the rows are found by key, not by status: ${n['Node Type']}`);
    assert.deepEqual(
      plan.filter((n) => n['Parent Relationship'] === 'SubPlan').map((n) => n['Node Type']),
      [],
      'no subplan runs once per record',
    );

    // The statement does what it did: the batch sent, the others still pending, each record of the repeated key an
    // attempts row of its own (mayBeInRow).
    await store.settle([...batch.map(sent), sent(batch[0]!)], run);
    const counts = await client.query<{ status: string; n: number }>(
      `SELECT status, count(*)::int AS n FROM leadledger.events GROUP BY status ORDER BY status`,
    );
    assert.deepEqual(counts.rows, [
      { status: 'pending', n: 3000 },
      { status: 'sent', n: 4000 },
    ]);
    const repeated = await client.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM leadledger.attempts WHERE key = $1`,
      [batch[0]!.key],
    );
    assert.equal(repeated.rows[0]!.n, 2);
  } finally {
    await client.end();
    await store.close();
  }
});

/** The plan's nodes, for a statement written with ? placeholders (as the store's SqlDb runs them). */
async function planOf(client: pg.Client, sql: string, params: unknown[]): Promise<PlanNode[]> {
  const r = await client.query<{ 'QUERY PLAN': Array<{ Plan: PlanNode }> }>(
    `EXPLAIN (FORMAT JSON) ${numberParams(sql)}`,
    params,
  );
  return nodes(r.rows[0]!['QUERY PLAN'][0]!.Plan);
}

test('a release finds its rows by key, with statistics that saw no pending row', async () => {
  await db.query('DROP SCHEMA IF EXISTS leadledger CASCADE');
  const store = (await openLedgerStore(db.url, { env }))!;
  const client = new pg.Client({ connectionString: db.urlWithPassword });
  await client.connect();
  try {
    const run = await store.startRun('push', {}, { exclusive: false });
    for (let b = 0; b < 3; b++) {
      const batch = claims(b * 1000, 1000);
      await store.claimNew(batch, run, 'sink');
      await store.settle(batch.map(sent), run);
    }
    await client.query('ANALYZE leadledger.events');
    const inFlight = [3, 4, 5, 6].map((b) => claims(b * 1000, 1000));
    for (const batch of inFlight) await store.claimNew(batch, run, 'sink');
    await client.query('SET search_path = leadledger');
    const keys = inFlight[0]!.map((c) => c.key);
    const t = '2026-12-02T00:00:00.000Z';
    for (const [name, plan] of [
      ['drop', await planOf(client, RELEASE_DROP_SQL, [keys, run])],
      ['back', await planOf(client, RELEASE_BACK_SQL, [keys, keys.map(() => 'failed'), t, run, run, t, 'stopped'])],
    ] as const) {
      const onEvents = plan.filter((n) => n['Relation Name'] === 'events' && n['Node Type'] !== 'ModifyTable');
      assert.ok(onEvents.length > 0, `${name}: the plan reads events`);
      for (const n of onEvents)
        assert.notEqual(n['Index Name'], 'events_status', `${name}: the rows are found by key, not by status`);
    }

    // What a stop does with a batch that never left: its rows removed; the other batches still pending.
    await store.release(
      keys.map((key) => ({ key, to: null })),
      run,
      'stopped before the send',
    );
    const counts = await client.query<{ status: string; n: number }>(
      `SELECT status, count(*)::int AS n FROM leadledger.events GROUP BY status ORDER BY status`,
    );
    assert.deepEqual(counts.rows, [
      { status: 'pending', n: 3000 },
      { status: 'sent', n: 3000 },
    ]);
  } finally {
    await client.end();
    await store.close();
  }
});

test('a claim of failed rows finds them by key, with statistics taken before they failed', async () => {
  await db.query('DROP SCHEMA IF EXISTS leadledger CASCADE');
  const store = (await openLedgerStore(db.url, { env }))!;
  const client = new pg.Client({ connectionString: db.urlWithPassword });
  await client.connect();
  try {
    const run = await store.startRun('push', {}, { exclusive: false });
    for (let b = 0; b < 4; b++) {
      const batch = claims(b * 1000, 1000);
      await store.claimNew(batch, run, 'sink');
      await store.settle(batch.map(sent), run);
    }
    // The statistics see every row sent; then three thousand fail (a CRM that was down), and a replay takes them.
    await client.query('ANALYZE leadledger.events');
    await client.query(
      `UPDATE leadledger.events SET status = 'failed', failure = 'retryable' WHERE key < 'evt_00003000'`,
    );
    await client.query('SET search_path = leadledger');
    const keys = claims(1000, 1000).map((c) => c.key);
    const plan = await planOf(client, CLAIM_EXISTING_SQL, [['failed'], keys, run, 'sink', 't', run]);
    const onEvents = plan.filter((n) => n['Relation Name'] === 'events' && n['Node Type'] !== 'ModifyTable');
    assert.ok(onEvents.length > 0, 'the plan reads events');
    for (const n of onEvents)
      assert.notEqual(n['Index Name'], 'events_status', 'the rows are found by key, not by status');

    // Only rows in a status they are claimed from move: the failed thousand, not the sent ones asked with them.
    const asked = [...keys, ...claims(3000, 10).map((c) => c.key)];
    assert.equal((await store.claimExisting(asked, run, ['failed'], 'sink')).size, 1000);
    const counts = await client.query<{ status: string; n: number }>(
      `SELECT status, count(*)::int AS n FROM leadledger.events GROUP BY status ORDER BY status`,
    );
    assert.deepEqual(counts.rows, [
      { status: 'failed', n: 2000 },
      { status: 'pending', n: 1000 },
      { status: 'sent', n: 1000 },
    ]);
  } finally {
    await client.end();
    await store.close();
  }
});
