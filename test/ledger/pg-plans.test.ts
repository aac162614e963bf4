// The plans of the PostgreSQL ledger's batch statements: linear in the batch, whatever the table's statistics say.
// The pending rows of a push live between a claim and its settle, so ANALYZE seldom sees one: the statistics that
// count them are wrong by design, and a plan that trusts them (a nested loop from the events_status index over the
// batch, or a subplan per record) took a push of a million events to the JSONL sink from 20 s to 53 s. Against a real
// PostgreSQL 15 (test/helpers/postgres.ts); never skipped.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { openLedgerStore } from '../../src/ledger/open.js';
import type { LedgerStore } from '../../src/ledger/store.js';
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

/** Batch b of a thousand claims (keys evt_<b*1000>...), the people spread over the natural key index. */
function batch(b: number): ClaimInput[] {
  return Array.from({ length: 1000 }, (_, i) => {
    const n = b * 1000 + i;
    const key = `evt_${String(n).padStart(8, '0')}`;
    return {
      key,
      keyKind: 'id',
      payloadHash: `hash-${key}`,
      naturalKey: `person.${(n * 7919) % 100_003}@example.com`,
      downstreamKey: `dk-${key}`,
      leadJson: JSON.stringify({ email: `${key}@example.com` }),
      source: 'events.jsonl',
      line: n,
    };
  });
}

const sent = (c: ClaimInput): Settlement => ({ key: c.key, status: 'sent', outcome: 'created' });

interface Ledger {
  store: LedgerStore;
  /** The admin's connection, on the ledger's schema. */
  client: pg.Client;
  /** The run the test writes with: one the statistics have never seen. */
  run: number;
  /** How many batches the earlier run sent (batches 0 to settled - 1). */
  settled: number;
}

/**
 * A new ledger with `settled` batches claimed and sent by an earlier run, then analyzed: statistics that saw no
 * pending row, as the ledger's own ANALYZE and autovacuum nearly always see them, and none of the run that comes
 * next (`run`), as at the start of every push.
 */
async function withLedger(settled: number, fn: (l: Ledger) => Promise<void>): Promise<void> {
  await db.query('DROP SCHEMA IF EXISTS leadledger CASCADE');
  const store = (await openLedgerStore(db.url, { env }))!;
  const client = new pg.Client({ connectionString: db.urlWithPassword });
  await client.connect();
  try {
    const earlier = await store.startRun('push', {}, { exclusive: false });
    for (let b = 0; b < settled; b++) {
      assert.equal((await store.claimNew(batch(b), earlier, 'sink')).size, 1000);
      await store.settle(batch(b).map(sent), earlier);
    }
    await client.query('ANALYZE leadledger.events');
    await client.query('SET search_path = leadledger');
    const run = await store.startRun('push', {}, { exclusive: false });
    await fn({ store, client, run, settled });
  } finally {
    await client.end();
    await store.close();
  }
}

/** The four batches after the earlier run's claimed: in flight, as a push with --concurrency 4 has them. */
async function claimFourInFlight({ store, run, settled }: Ledger): Promise<ClaimInput[][]> {
  const inFlight = [0, 1, 2, 3].map((i) => batch(settled + i));
  for (const b of inFlight) assert.equal((await store.claimNew(b, run, 'sink')).size, 1000);
  return inFlight;
}

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Parent Relationship'?: string;
  'Join Filter'?: string;
  Plans?: PlanNode[];
}

/** Every node of the plan of a statement (written with ? or $n placeholders) for these parameters. */
async function planOf(client: pg.Client, sql: string, params: unknown[]): Promise<PlanNode[]> {
  const r = await client.query<{ 'QUERY PLAN': Array<{ Plan: PlanNode }> }>(
    `EXPLAIN (FORMAT JSON) ${numberParams(sql)}`,
    params,
  );
  const nodes = (n: PlanNode): PlanNode[] => [n, ...(n.Plans ?? []).flatMap(nodes)];
  return nodes(r.rows[0]!['QUERY PLAN'][0]!.Plan);
}

/**
 * The plan is linear in the batch: it reads events, never through events_status (whose statistics know no pending
 * row), and no nested loop tests its pairs one by one (a Join Filter: every events row against every record of the
 * batch); a nested loop that looks each record up by key has its condition in the inner index scan instead.
 */
function assertLinear(plan: PlanNode[], what: string): void {
  const onEvents = plan.filter((n) => n['Relation Name'] === 'events' && n['Node Type'] !== 'ModifyTable');
  assert.ok(onEvents.length > 0, `${what}: the plan reads events`);
  for (const n of onEvents)
    assert.notEqual(n['Index Name'], 'events_status', `${what}: the rows are found by key, not by status`);
  const pairwise = plan.filter((n) => n['Node Type'] === 'Nested Loop' && n['Join Filter'] !== undefined);
  assert.deepEqual(
    pairwise.map((n) => n['Join Filter']),
    [],
    `${what}: no nested loop tests every row against every record`,
  );
}

async function statusCounts(client: pg.Client): Promise<Array<{ status: string; n: number }>> {
  const r = await client.query<{ status: string; n: number }>(
    `SELECT status, count(*)::int AS n FROM events GROUP BY status ORDER BY status`,
  );
  return r.rows;
}

test('a settle finds its rows by key and matches its records by a join, with statistics that saw no pending row', async () => {
  await withLedger(3, async (l) => {
    const inFlight = await claimFourInFlight(l);
    // One batch's settle, with a record repeated (a key sent twice in the input's retries).
    const settlements = [...inFlight[0]!.map(sent), sent(inFlight[0]![0]!)];
    const plan = await planOf(l.client, SETTLE_SQL, settleParams(settleRecords(settlements), l.run, false));
    assertLinear(plan, 'settle');
    assert.deepEqual(
      plan.filter((n) => n['Parent Relationship'] === 'SubPlan').map((n) => n['Node Type']),
      [],
      'no subplan runs once per record',
    );

    // The statement does what it did: the batch sent, the others still pending, each record of the repeated key an
    // attempts row of its own (mayBeInRow).
    await l.store.settle(settlements, l.run);
    assert.deepEqual(await statusCounts(l.client), [
      { status: 'pending', n: 3000 },
      { status: 'sent', n: 4000 },
    ]);
    const repeated = await l.client.query<{ n: number }>(`SELECT count(*)::int AS n FROM attempts WHERE key = $1`, [
      inFlight[0]![0]!.key,
    ]);
    assert.equal(repeated.rows[0]!.n, 2);
  });
});

test('a release finds its rows by key, with statistics that saw no pending row', async () => {
  // 40,000 rows: where a release that compared the run with a constant was estimated at one row and rescanned its
  // batch for each row of a sequential scan (2.4 s a batch).
  await withLedger(40, async (l) => {
    const keys = (await claimFourInFlight(l))[0]!.map((c) => c.key);
    const t = '2026-12-02T00:00:00.000Z';
    assertLinear(await planOf(l.client, RELEASE_DROP_SQL, [l.run, keys]), 'drop');
    const back = [l.run, keys, keys.map(() => 'failed'), t, l.run, t, 'stopped'];
    assertLinear(await planOf(l.client, RELEASE_BACK_SQL, back), 'back');

    // What a stop does with a batch that never left: its rows removed; the other batches still pending.
    await l.store.release(
      keys.map((key) => ({ key, to: null })),
      l.run,
      'stopped before the send',
    );
    assert.deepEqual(await statusCounts(l.client), [
      { status: 'pending', n: 3000 },
      { status: 'sent', n: 40_000 },
    ]);
  });
});

test('a claim of failed rows finds them by key, with statistics taken before they failed', async () => {
  await withLedger(4, async (l) => {
    // The statistics saw every row sent; then three thousand fail (a CRM that was down), and a replay takes them.
    await l.client.query(`UPDATE events SET status = 'failed', failure = 'retryable' WHERE key < 'evt_00003000'`);
    const keys = batch(1).map((c) => c.key);
    assertLinear(await planOf(l.client, CLAIM_EXISTING_SQL, [['failed'], keys, l.run, 'sink', 't', l.run]), 'claim');

    // Only rows in a status they are claimed from move: the failed thousand, not the sent ones asked with them.
    const asked = [...keys, ...batch(3).map((c) => c.key)];
    assert.equal((await l.store.claimExisting(asked, l.run, ['failed'], 'sink')).size, 1000);
    assert.deepEqual(await statusCounts(l.client), [
      { status: 'failed', n: 2000 },
      { status: 'pending', n: 1000 },
      { status: 'sent', n: 1000 },
    ]);
  });
});
