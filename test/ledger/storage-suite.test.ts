// One suite, both storages: the ledger's rules (claim, settle, recover, erase) and every `ledger` subcommand (stats,
// list, show, runs, export, import, forget, prune, verify) on SQLite and on a real PostgreSQL, with the same answers;
// and on SQLite once more with a push's writes on their own thread (threaded.ts), which must change no answer.
// PostgreSQL comes from test/helpers/postgres.ts: a missing server fails this file, it never skips.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { openLedgerStore } from '../../src/ledger/open.js';
import type { LedgerStore } from '../../src/ledger/store.js';
import { ledgerStats } from '../../src/commands/ledger/stats.js';
import { ledgerList } from '../../src/commands/ledger/list.js';
import { ledgerShow } from '../../src/commands/ledger/show.js';
import { ledgerRuns } from '../../src/commands/ledger/runs.js';
import { ledgerExport } from '../../src/commands/ledger/export.js';
import { ledgerImport } from '../../src/commands/ledger/import.js';
import { ledgerForget } from '../../src/commands/ledger/forget.js';
import { ledgerPrune } from '../../src/commands/ledger/prune.js';
import { ledgerVerify } from '../../src/commands/ledger/verify.js';
import { LedgerError } from '../../src/errors.js';
import { LeaseKeeper } from '../../src/ledger/rules.js';
import { Deliverer } from '../../src/deliver/deliver.js';
import type { Decision } from '../../src/decide/types.js';
import type { Sink } from '../../src/sinks/types.js';
import { claim, testCtx } from '../commands/ledger/seed.js';
import { pgDatabase, type PgDatabase } from '../helpers/postgres.js';
import { tmpDir } from '../helpers/tmp.js';
import { decideInputs } from '../../src/engine/decide-inputs.js';
import { lookUpStats } from '../../src/engine/decider.js';

interface Storage {
  kind: 'sqlite' | 'sqlite-thread' | 'postgres';
  /** A new, empty ledger: its --ledger value, and the env and cwd the commands need. */
  fresh(): Opened;
}

interface Opened {
  ledger: string;
  env: NodeJS.ProcessEnv;
  dir: string;
  /** Writes (claims, settles, releases) on the writer thread, as a push opens a SQLite ledger. */
  writeThread?: boolean;
}

// At the top of the file: the database lives as long as the file's tests (a test's own after() would drop it).
const db: PgDatabase = await pgDatabase('leadledger_suite');
const storages: Storage[] = [
  {
    kind: 'sqlite',
    fresh: () => {
      const dir = tmpDir('leadledger-suite-');
      return { ledger: join(dir, 'ledger.db'), env: {}, dir };
    },
  },
  {
    kind: 'sqlite-thread',
    fresh: () => {
      const dir = tmpDir('leadledger-suite-');
      return { ledger: join(dir, 'ledger.db'), env: {}, dir, writeThread: true };
    },
  },
  {
    kind: 'postgres',
    fresh: () => {
      // A schema per test: one database, many ledgers side by side (the schema-name option).
      const schema = 's_' + randomBytes(4).toString('hex');
      return {
        ledger: `${db.url}?schema=${schema}`,
        env: { PGPASSWORD: db.cluster.password },
        dir: tmpDir('leadledger-suite-'),
      };
    },
  },
];

async function open(l: Omit<Opened, 'dir'>, readonly = false): Promise<LedgerStore> {
  return (await openLedgerStore(l.ledger, { readonly, env: l.env, writeThread: l.writeThread }))!;
}

/** The seed of ../commands/ledger/seed.ts, through the storage interface: run 1 sent, failed, in doubt, pending. */
async function seed(l: Omit<Opened, 'dir'>): Promise<void> {
  const s = await open(l);
  const run = await s.startRun('push', { sink: 'webhook', authorization: 'Bearer abc' }, { exclusive: true });
  const claims = [
    claim('evt-1', 'ana@example.com'),
    claim('evt-2', 'bob@example.com', 'logs/events.jsonl', 2),
    claim('evt-3', 'carla@example.com', 'other.csv', 7),
    claim('evt-4', 'dan@example.com', 'other.csv', 8),
  ];
  assert.deepEqual([...(await s.claimNew(claims, run, 'webhook x'))].sort(), ['evt-1', 'evt-2', 'evt-3', 'evt-4']);
  await s.settle(
    [
      { key: 'evt-1', status: 'sent', outcome: 'created', crmId: '101' },
      { key: 'evt-2', status: 'failed', failure: 'permanent', error: 'HTTP 400: contact bob@example.com is invalid' },
      { key: 'evt-3', status: 'in_doubt', error: 'timeout' },
    ],
    run,
  );
  await s.finishRun(run, 'done', { read: 4 });
  await s.importDelivered([{ key: 'imp-1' }, { naturalKey: 'eve@example.com', crmId: '555' }], 'crm.csv');
  await s.close();
}

// What differs between storages by nature: the ledger's name, timestamps, sizes, run durations.
function normalize(v: unknown): unknown {
  return JSON.parse(
    JSON.stringify(v, (k, x: unknown) => {
      if (k === 'ledger' || k === 'output' || k === 'size' || k === 'durationMs' || k === 'pid' || k === 'host')
        return '*';
      if (typeof x === 'string' && /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/.test(x)) return 'T';
      return x;
    }),
  );
}

const results: Record<string, Record<string, unknown>> = { sqlite: {}, 'sqlite-thread': {}, postgres: {} };

for (const st of storages) {
  test(`${st.kind}: claims are one winner per key, settles are fenced, dead runs leave their claims in doubt`, async () => {
    const l = st.fresh();
    const a = await open(l);
    const b = await open(l);
    const ra = await a.startRun('push', {}, { exclusive: false });
    const rb = await b.startRun('push', {}, { exclusive: false });
    const mineA = await a.claimNew([claim('k1', 'x@x.io'), claim('k2', 'y@y.io'), claim('k1', 'x@x.io')], ra, 's');
    const mineB = await b.claimNew([claim('k2', 'y@y.io'), claim('k3', 'z@z.io')], rb, 's');
    assert.deepEqual([...mineA].sort(), ['k1', 'k2']);
    assert.deepEqual([...mineB], ['k3'], 'a key claimed by another run is not claimed again');
    // B settles a row it does not own: nothing changes (the fence), though the attempt is recorded.
    await b.settle([{ key: 'k1', status: 'sent', outcome: 'created' }], rb);
    assert.equal((await a.lookupKeys(['k1'])).get('k1')?.status, 'pending');
    await a.settle([{ key: 'k1', status: 'sent', outcome: 'created', crmId: 'c1' }], ra);
    assert.equal((await b.lookupKeys(['k1'])).get('k1')?.status, 'sent');
    // A ends with k2 unsettled: the next run finds it in doubt, and may claim it from there, once.
    await a.finishRun(ra, 'interrupted', {});
    assert.equal(await b.markOrphansInDoubt(), 1);
    assert.equal((await b.lookupKeys(['k2'])).get('k2')?.status, 'in_doubt');
    assert.deepEqual([...(await b.claimExisting(['k2'], rb, ['in_doubt'], 's'))], ['k2']);
    assert.deepEqual([...(await a.claimExisting(['k2'], rb, ['in_doubt'], 's'))], []);
    assert.deepEqual([...(await b.lookupDelivered(['y@y.io', 'nobody@x.io']))], [['y@y.io', 'k2']]);
    assert.equal(await b.getLeadJson('k3'), JSON.stringify({ email: 'z@z.io', name: 'Person k3' }));
    assert.deepEqual(
      (await b.rowsByKeys(['k3', 'nope', 'k1'])).map((r) => r.key),
      ['k3', 'k1'],
    );
    // A claim whose request never left is released: an inserted row goes, a re-claimed one returns to its status.
    await b.settle([{ key: 'k3', status: 'failed', failure: 'retryable', error: '503' }], rb);
    assert.deepEqual([...(await b.claimExisting(['k3'], rb, ['failed'], 's'))], ['k3']);
    assert.deepEqual([...(await b.claimNew([claim('k4', 'w@w.io')], rb, 's'))], ['k4']);
    await b.release(
      [
        { key: 'k3', to: 'failed' },
        { key: 'k4', to: null },
      ],
      rb,
      'stopped',
    );
    const left = await b.lookupKeys(['k3', 'k4']);
    assert.equal(left.get('k3')?.status, 'failed');
    assert.equal(left.has('k4'), false);
    const released = await b.sql.all<{ key: string }>(`SELECT key FROM attempts WHERE outcome = 'released'`);
    assert.deepEqual(released, [{ key: 'k3' }]);
    await b.finishRun(rb, 'done', {});
    await a.close();
    await b.close();
  });

  test(`${st.kind}: a settle to sent is recorded by its row; fenced, failed and replayed attempts are attempts rows`, async () => {
    const l = st.fresh();
    const ctx = testCtx(l.dir, l.env);
    const s = await open(l);
    const r1 = await s.startRun('push', {}, { exclusive: false });
    const other = await s.startRun('push', {}, { exclusive: false });
    await s.claimNew([claim('a', 'a@x.io'), claim('b', 'b@x.io'), claim('c', 'c@x.io')], r1, 's');
    // A settle the fence refuses (another run's) leaves its attempt as a row.
    await s.settle([{ key: 'a', status: 'sent', outcome: 'created', crmId: 'z9' }], other);
    // Not in the same millisecond as the send below: a row of its moment and outcome would stand for it.
    await new Promise((r) => setTimeout(r, 5));
    await s.settle(
      [
        { key: 'a', status: 'sent', outcome: 'created', crmId: 'c1' },
        { key: 'b', status: 'failed', failure: 'retryable', error: 'HTTP 503' },
        { key: 'c', status: 'sent', outcome: 'exists' },
      ],
      r1,
    );
    const rows = async () =>
      (
        await s.sql.all<{ key: string; run_id: number; outcome: string }>(
          'SELECT key, run_id, outcome FROM attempts ORDER BY id',
        )
      ).map((x) => `${x.key} ${x.run_id === other ? 'other' : x.run_id} ${x.outcome}`);
    assert.deepEqual(
      await rows(),
      ['a other created', `b ${r1} failed`],
      'no row for the two sends that made a row sent',
    );
    const shown = async (key: string) =>
      (await ledgerShow({ ledger: l.ledger, key }, ctx)).attempts.map(
        (x) => `${x.id === null ? 'row' : 'table'} ${x.run_id === other ? 'other' : x.run_id} ${x.outcome} ${x.detail}`,
      );
    assert.deepEqual(await shown('a'), ['table other created crm id z9', `row ${r1} created crm id c1`]);
    assert.deepEqual(await shown('c'), [`row ${r1} exists null`]);
    assert.equal((await ledgerStats({ ledger: l.ledger }, ctx)).attempts, 4);

    // A replay of a sent event: its first attempt is written out before the row is taken again.
    await s.finishRun(r1, 'done', {});
    await s.finishRun(other, 'done', {});
    const r2 = await s.startRun('replay', {}, { exclusive: true });
    assert.deepEqual([...(await s.claimExisting(['a', 'b'], r2, ['sent'], 's'))], ['a']);
    assert.deepEqual(await rows(), ['a other created', `b ${r1} failed`, `a ${r1} created`]);
    await s.settle([{ key: 'a', status: 'sent', outcome: 'updated', crmId: 'c1' }], r2);
    assert.deepEqual(await shown('a'), [
      'table other created crm id z9',
      `table ${r1} created crm id c1`,
      `row ${r2} updated crm id c1`,
    ]);
    // A ledger written before kept that attempt as a row: the row of the same run at the same moment is the attempt.
    await s.sql.run(
      `INSERT INTO attempts (key, run_id, at, outcome, detail) SELECT key, run_id, sent_at, outcome, NULL FROM events WHERE key = 'c'`,
    );
    assert.deepEqual(await shown('c'), [`table ${r1} exists null`]);
    assert.equal((await ledgerStats({ ledger: l.ledger }, ctx)).attempts, 5);
    await s.finishRun(r2, 'done', {});
    await s.close();
    const forgot = await ledgerForget({ ledger: l.ledger, keys: ['a', 'c'] }, ctx);
    assert.equal(forgot.attemptsDeleted, 4, "a's two rows and the attempt its row records; c's row");
  });

  test(`${st.kind}: a released replay, a key settled twice in one call, a re-send without a CRM id: each attempt once, as it was`, async () => {
    const l = st.fresh();
    const ctx = testCtx(l.dir, l.env);
    const s = await open(l);
    const r1 = await s.startRun('push', {}, { exclusive: true });
    await s.claimNew([claim('a', 'a@x.io'), claim('b', 'b@x.io'), claim('c', 'c@x.io'), claim('d', 'd@x.io')], r1, 's');
    await s.settle(
      [
        { key: 'a', status: 'sent', outcome: 'created', crmId: 'c1' },
        { key: 'c', status: 'sent', outcome: 'created', crmId: 'c3' },
      ],
      r1,
    );
    // Two records of one key in one settle: the first changes the row, and each is an attempt.
    await s.settle(
      [
        { key: 'b', status: 'failed', failure: 'retryable', error: 'HTTP 503' },
        { key: 'b', status: 'sent', outcome: 'created' },
      ],
      r1,
    );
    // Two plain sends of one key in one settle (no CRM id, no error): still each an attempt of its own.
    await s.settle(
      [
        { key: 'd', status: 'sent', outcome: 'created' },
        { key: 'd', status: 'sent', outcome: 'exists' },
      ],
      r1,
    );
    await s.finishRun(r1, 'done', {});
    const r2 = await s.startRun('replay', {}, { exclusive: true });
    assert.deepEqual([...(await s.claimExisting(['a', 'c'], r2, ['sent'], 's'))].sort(), ['a', 'c']);
    // a: the replay stopped before its send left; c: re-sent, and the CRM answered without an id.
    await s.release([{ key: 'a', to: 'sent' }], r2, 'stopped');
    await s.settle([{ key: 'c', status: 'sent', outcome: 'exists' }], r2);
    await s.finishRun(r2, 'done', {});
    const run = (id: number | null) => (id === r1 ? 'r1' : id === r2 ? 'r2' : String(id));
    const shown = async (key: string) =>
      (await ledgerShow({ ledger: l.ledger, key }, ctx)).attempts.map(
        (x) => `${run(x.run_id)} ${x.outcome} ${x.detail}`,
      );
    assert.deepEqual(await shown('a'), ['r1 created crm id c1', 'r2 released stopped']);
    assert.deepEqual(await shown('b'), ['r1 failed HTTP 503', 'r1 created null']);
    assert.deepEqual(await shown('c'), ['r1 created crm id c3', 'r2 exists null']);
    assert.deepEqual(await shown('d'), ['r1 created null', 'r1 exists null']);
    const known = await s.lookupKeys(['a', 'b']);
    assert.equal(known.get('a')?.status, 'sent');
    assert.equal(known.get('a')?.runId, r1, 'back to the run that sent it');
    assert.equal(known.get('b')?.status, 'failed', 'the first record of the two');
    assert.equal((await ledgerStats({ ledger: l.ledger }, ctx)).attempts, 8);
    await s.close();
  });

  test(`${st.kind}: an older ledger's released replay, its row left under the replaying run, shows each attempt once`, async () => {
    const l = st.fresh();
    const ctx = testCtx(l.dir, l.env);
    const s = await open(l);
    const r1 = await s.startRun('push', {}, { exclusive: true });
    await s.claimNew([claim('a', 'a@x.io')], r1, 's');
    await s.settle([{ key: 'a', status: 'sent', outcome: 'created', crmId: 'c1' }], r1);
    // As leadledger wrote it before: the send's attempts row, and a replay released with the row left as its own.
    await s.sql.run(
      `INSERT INTO attempts (key, run_id, at, outcome, detail) SELECT key, run_id, sent_at, outcome, 'crm id c1' FROM events WHERE key = 'a'`,
    );
    await s.finishRun(r1, 'done', {});
    const r2 = await s.startRun('replay', {}, { exclusive: true });
    await s.sql.run(`UPDATE events SET run_id = ? WHERE key = 'a'`, [r2]);
    await s.sql.run(
      `INSERT INTO attempts (key, run_id, at, outcome, detail) VALUES ('a', ?, '2099-01-01T00:00:00.000Z', 'released', 'stopped')`,
      [r2],
    );
    await s.finishRun(r2, 'done', {});
    const shown = (await ledgerShow({ ledger: l.ledger, key: 'a' }, ctx)).attempts.map(
      (x) => `${x.run_id === r1 ? 'r1' : 'r2'} ${x.outcome} ${x.detail}`,
    );
    assert.deepEqual(shown, ['r1 created crm id c1', 'r2 released stopped']);
    assert.equal((await ledgerStats({ ledger: l.ledger }, ctx)).attempts, 2);
    await s.close();
  });

  test(`${st.kind}: one run at a time holds the ledger; the second is refused with exit 5`, async () => {
    const l = st.fresh();
    const a = await open(l);
    const run = await a.startRun('push', {}, { exclusive: true });
    const b = await open(l);
    await assert.rejects(
      async () => b.startRun('push', {}, { exclusive: true }),
      (e: Error) => e instanceof LedgerError && /is in use by run/.test(e.message),
    );
    await a.finishRun(run, 'done', {});
    const again = await b.startRun('push', {}, { exclusive: true });
    assert.ok(again > run);
    await b.finishRun(again, 'done', {});
    await a.close();
    await b.close();
  });

  // A push holding the ledger alone decides through a snapshot of it, asking only what the snapshot may hold: the
  // decisions of asking every key. Once another run starts, what it writes is asked of the ledger again.
  test(`${st.kind}: a run with the ledger to itself decides through its snapshot, until another run starts`, async () => {
    const l = st.fresh();
    const s = await open(l);
    // Payload hashes as a push writes them (the seed's placeholders are more than a snapshot can hold).
    const hashed = (key: string, email: string) => ({ ...claim(key, email), payloadHash: 'ab'.repeat(32) });
    const first = await s.startRun('push', {}, { exclusive: true });
    await s.claimNew([hashed('evt-1', 'ana@example.com'), hashed('evt-2', 'bob@example.com')], first, 's');
    await s.settle([{ key: 'evt-1', status: 'sent', outcome: 'created' }], first);
    await s.finishRun(first, 'done', {});
    await s.importDelivered([{ naturalKey: 'eve@example.com' }], 'crm.csv');
    const run = await s.startRun('push', {}, { exclusive: true });
    const input = join(l.dir, 'events.jsonl');
    const ev = (id: string, email: string) => JSON.stringify({ event_id: id, data: { email, name: 'Ana Lima' } });
    const lines = [ev('evt-1', 'other@example.com'), ev('n-ana', 'ana@example.com'), ev('n-eve', 'eve@example.com')];
    for (let i = 0; i < 20_000; i++) lines.push(ev(`n-${i}`, `p${i}@example.com`));
    lines.push(ev('late', 'zed@example.com'));
    writeFileSync(input, lines.join('\n') + '\n');
    const decide = async (exclusiveRun?: number, between?: () => Promise<void>) => {
      const out: Decision[] = [];
      const before = lookUpStats.filtered;
      for await (const batch of decideInputs({
        inputs: [input],
        read: {},
        map: { config: {} },
        ledger: s,
        workers: 2,
        blockBytes: 4096,
        exclusiveRun,
      })) {
        for (const d of batch) out.push(d);
        if (between && out.length) await between().then(() => (between = undefined));
      }
      return { kinds: out.map((d) => `${d.key} ${d.kind}`), filtered: lookUpStats.filtered - before };
    };
    const asking = await decide();
    assert.deepEqual(asking.kinds.slice(0, 3), ['evt-1 conflict', 'n-ana known_lead', 'n-eve known_lead']);
    assert.equal(asking.filtered, 0);
    const filtered = await decide(run);
    assert.deepEqual(filtered.kinds, asking.kinds);
    assert.ok(filtered.filtered > 0, 'blocks looked up through the snapshot');
    // Another run starts after the first blocks, claims the last event and ends: asked of the ledger, it is not new.
    const other = await open(l);
    const late = await decide(run, async () => {
      const r = await other.startRun('push', {}, { exclusive: false });
      await other.claimNew([hashed('late', 'zed@example.com')], r, 's');
      await other.finishRun(r, 'done', {});
    });
    // (Its claim holds another lead than the input's: a conflict. Through a stale snapshot it would be new.)
    assert.equal(late.kinds.at(-1), 'late conflict');
    assert.ok(late.filtered < filtered.filtered, 'the snapshot dropped');
    // A `ledger import` of the last event's person meanwhile (it takes no lock): a known lead, not a new one.
    const emails = join(l.dir, 'emails.txt');
    writeFileSync(emails, 'yan@example.com\n');
    await other.close();
    await s.finishRun(run, 'done', {});
    const run2 = await s.startRun('push', {}, { exclusive: true });
    writeFileSync(input, lines.slice(0, -1).join('\n') + '\n' + ev('late-2', 'yan@example.com') + '\n');
    const imported = await decide(run2, async () => {
      await ledgerImport({ ledger: l.ledger, files: [emails], as: 'emails' }, testCtx(l.dir, l.env));
    });
    assert.equal(imported.kinds.at(-1), 'late-2 known_lead');
    assert.ok(imported.filtered > 0, 'decided through a snapshot until the import');
    await s.close();
  });

  test(`${st.kind}: every ledger subcommand`, async () => {
    const l = st.fresh();
    const ctx = testCtx(l.dir, l.env);
    const r = results[st.kind]!;
    await assert.rejects(
      () => ledgerStats({ ledger: l.ledger }, ctx),
      (e: Error) => e instanceof LedgerError && /no ledger at/.test(e.message),
      'a management command never creates a ledger',
    );
    await seed(l);
    // A second run finds evt-4 pending under the finished run: in doubt now.
    const s = await open(l);
    const run2 = await s.startRun('replay', {}, { exclusive: true });
    assert.equal(await s.markOrphansInDoubt(), 1);
    await s.finishRun(run2, 'done', {});
    await s.close();

    r.stats = await ledgerStats({ ledger: l.ledger }, ctx);
    r.list = await ledgerList({ ledger: l.ledger, status: 'in-doubt,failed' }, ctx);
    r.listSource = await ledgerList({ ledger: l.ledger, source: 'EVENTS.jsonl' }, ctx);
    r.show = await ledgerShow({ ledger: l.ledger, key: 'evt-4' }, ctx);
    r.runs = await ledgerRuns({ ledger: l.ledger }, ctx);
    r.verify = await ledgerVerify({ ledger: l.ledger }, ctx);
    assert.equal((r.verify as { ok: boolean }).ok, true, JSON.stringify(r.verify));
    assert.equal((r.stats as { events: number }).events, 6);

    const out = join(l.dir, 'export.jsonl');
    r.export = await ledgerExport({ ledger: l.ledger, output: out }, ctx);
    r.exported = readFileSync(out, 'utf8')
      .trim()
      .split('\n')
      .map((x) => JSON.parse(x) as unknown);
    assert.equal((r.export as { rows: number }).rows, 6);

    const ids = join(l.dir, 'ids.txt');
    writeFileSync(ids, 'imp-1\nimp-2\nfrank@example.com\n');
    r.import = await ledgerImport({ ledger: l.ledger, files: [ids], as: 'auto' }, ctx);
    assert.equal((r.import as { added: number }).added, 2);

    r.forgetKeys = await ledgerForget({ ledger: l.ledger, keys: ['evt-2', 'nope'] }, ctx);
    r.erase = await ledgerForget({ ledger: l.ledger, keys: [], email: 'ANA@example.com' }, ctx);
    const after = await open(l, true);
    const known = await after.lookupKeys(['evt-1', 'evt-2']);
    assert.equal(known.get('evt-1')?.tombstone, true, 'an erased key stays a duplicate');
    assert.equal(known.has('evt-2'), false, 'a forgotten key is new again');
    await after.close();
    await assert.rejects(() => ledgerShow({ ledger: l.ledger, key: 'evt-1' }, ctx), /erased/);

    // Backdate the imports, then prune their rows: only sent rows older than the cutoff go.
    const w = await open(l);
    await w.sql.run(`UPDATE events SET updated_at = '2020-01-01T00:00:00.000Z' WHERE key_kind = 'imported'`);
    await w.close();
    r.pruneDry = await ledgerPrune({ ledger: l.ledger, olderThan: '30d', rows: true, dryRun: true }, ctx);
    r.prune = await ledgerPrune({ ledger: l.ledger, olderThan: '30d', rows: true }, ctx);
    assert.equal((r.prune as { changed: number }).changed, 4);
    r.statsAfter = await ledgerStats({ ledger: l.ledger }, ctx);
    r.verifyAfter = await ledgerVerify({ ledger: l.ledger }, ctx);
    assert.equal((r.verifyAfter as { ok: boolean }).ok, true, JSON.stringify(r.verifyAfter));
  });
}

// What a push of `batches` batches of 2,500 new events claims, batch by batch: the number each batch took.
async function claimBatches(s: LedgerStore, run: number, batches: number): Promise<number[]> {
  const took: number[] = [];
  for (let b = 0; b < batches; b++) {
    const batch = Array.from({ length: 2_500 }, (_, i) => claim(`k${b * 2_500 + i}`, `p${b * 2_500 + i}@x.io`));
    took.push((await s.claimNew(batch, run, 's')).size);
  }
  return took;
}

/** A column of the events table's row in pg_stat_user_tables (statistics of the ledger's current schema). */
async function eventsStat<T>(s: LedgerStore, column: string): Promise<T | null> {
  const row = await s.sql.get<{ v: T | null }>(
    `SELECT ${column} AS v FROM pg_stat_user_tables WHERE schemaname = current_schema() AND relname = 'events'`,
  );
  return row?.v ?? null;
}

// A push fills a ledger faster than autovacuum analyzes it; without statistics the people lookup scanned the table.
test('postgres: a push that inserts 10,000 events analyzes the events table itself', async () => {
  const l = storages.find((x) => x.kind === 'postgres')!.fresh();
  const s = await open(l);
  const run = await s.startRun('push', {}, { exclusive: true });
  assert.equal(await eventsStat(s, 'last_analyze::text'), null, 'a new ledger has not been analyzed');
  assert.deepEqual(await claimBatches(s, run, 4), [2_500, 2_500, 2_500, 2_500]);
  await s.finishRun(run, 'done', {});
  await s.close();
  const again = await open(l);
  const at = await eventsStat<string>(again, 'last_analyze::text');
  // Of the columns the push's lookups filter on only: the others' statistics would cost the sample twice as much.
  const analyzed = await again.sql.all<{ attname: string }>(
    `SELECT attname::text AS attname FROM pg_stats WHERE schemaname = current_schema() AND tablename = 'events' ORDER BY attname`,
  );
  await again.close();
  assert.ok(at, 'ANALYZE ran once 10,000 rows were in');
  assert.deepEqual(
    analyzed.map((a) => a.attname),
    ['key', 'natural_key', 'run_id', 'status'],
  );
});

// Statistics need not follow every doubling of a push's rows (store.ts): seven ANALYZEs in a push of a million cost
// the server 1.23 s. Between 10,000 and 100,000 inserted rows, the first is the only one.
test('postgres: a push analyzes again only once its rows have grown tenfold', async () => {
  const l = storages.find((x) => x.kind === 'postgres')!.fresh();
  const s = await open(l);
  const run = await s.startRun('push', {}, { exclusive: true });
  assert.deepEqual(await claimBatches(s, run, 36), Array(36).fill(2_500));
  await s.finishRun(run, 'done', {});
  await s.close();
  const again = await open(l);
  const n = await eventsStat<number>(again, 'analyze_count::int');
  await again.close();
  assert.equal(n, 1, '90,000 rows inserted: analyzed at 10,000, not again before 100,000');
});

test('postgres: the analyze skips a table another session holds locked: the push ends without waiting for it', async () => {
  const l = storages.find((x) => x.kind === 'postgres')!.fresh();
  const s = await open(l);
  const run = await s.startRun('push', {}, { exclusive: true });
  const locker = await open(l);
  await locker.sql.transaction(async (tx) => {
    // As a VACUUM or an index build would: ANALYZE needs this lock.
    await tx.run('LOCK TABLE events IN SHARE UPDATE EXCLUSIVE MODE');
    await claimBatches(s, run, 5);
    await s.finishRun(run, 'done', {});
    // A close that waited for the lock would wait for this transaction, which waits for the close: it would never
    // return, and the runner's timeout would fail the test. Timing it (it was < 2 s) failed on a loaded machine.
    await s.close();
  });
  await locker.close();
});

test('postgres: a run is a lease on the server clock; once it runs out another run takes the ledger, and the first can neither renew nor claim', async () => {
  const l = storages.find((st) => st.kind === 'postgres')!.fresh();
  const short = { ledger: l.ledger, env: { ...l.env, LEADLEDGER_LEASE_MS: '600' } };
  const a = await open(short);
  const b = await open(short);
  const ra = await a.startRun('push', {}, { exclusive: true });
  const keeper = a.keepAlive(ra) as LeaseKeeper;
  assert.equal(keeper.live(), true);
  keeper.stop(); // A stops renewing, as a host that froze or lost the network would.
  await assert.rejects(async () => b.startRun('push', {}, { exclusive: true }), /is in use by run/);
  // --wait: B waits for A's lease to run out, finds A dead, and takes the ledger.
  const rb = await b.startRun('push', {}, { exclusive: true, waitMs: 5000 });
  assert.ok(rb > ra);
  assert.deepEqual([...(await a.claimNew([claim('late', 'late@x.io')], ra, 's'))], [], 'a dead run claims nothing');
  assert.deepEqual([...(await b.claimNew([claim('late', 'late@x.io')], rb, 's'))], ['late']);
  // A's own fence: its lease is gone, so it stops sending (live() false) as soon as it next renews or is overdue.
  const renewer = a.keepAlive(ra) as LeaseKeeper;
  await new Promise((r) => setTimeout(r, 400));
  assert.equal(renewer.live(), false, 'a run whose lease was taken over may not send');
  renewer.stop();
  await b.finishRun(rb, 'done', {});
  await a.close();
  await b.close();
});

test('a run that cannot renew its lease in time stops sending: nothing is claimed or sent after the fence', async () => {
  let renewals = 0;
  const keeper = new LeaseKeeper({ ttlMs: 300, renewMs: 50, fenceMs: 150 }, () => {
    renewals++;
    throw new Error('connection lost');
  });
  const sent: string[] = [];
  const sink: Sink = {
    name: 'spy',
    capabilities: { maxBatch: 1, honoursIdempotencyKey: false },
    send: (items) => {
      sent.push(...items.map((i) => i.key));
      return Promise.resolve(items.map(() => ({ kind: 'created' as const })));
    },
    describe: () => 'spy',
  };
  const l = storages[0]!.fresh();
  const store = await open(l);
  const run = await store.startRun('push', {}, { exclusive: true });
  const never = new AbortController().signal;
  const d = new Deliverer({
    ledger: store,
    sink,
    runId: run,
    namespace: 'n',
    concurrency: 1,
    existing: 'skip',
    stop: never,
    hardStop: never,
    mayStillSend: () => keeper.live(),
  });
  const decision = (key: string): Decision => ({
    kind: 'new',
    reason: 'x',
    source: 's',
    line: 1,
    key,
    event: {
      kind: 'event',
      source: 's',
      line: 1,
      key,
      keyKind: 'id',
      payloadHash: 'h',
      lead: { email: `${key}@x.io` },
    },
  });
  await d.enqueue(decision('before'));
  await d.drain();
  assert.deepEqual(sent, ['before']);
  await new Promise((r) => setTimeout(r, 250));
  assert.ok(renewals > 0);
  await assert.rejects(async () => {
    await d.enqueue(decision('after'));
    await d.finish();
  }, /lost its lease/);
  assert.deepEqual(sent, ['before'], 'nothing was sent after the fence');
  assert.equal((await store.lookupKeys(['after'])).size, 0, 'nor claimed');
  keeper.stop();
  await store.finishRun(run, 'failed', {});
  await store.close();
});

test('both storages answer every subcommand alike, and so does SQLite with its writes on a thread', () => {
  assert.ok(Object.keys(results.sqlite!).length > 0, 'sqlite answered');
  for (const other of ['postgres', 'sqlite-thread']) {
    assert.deepEqual(Object.keys(results[other]!), Object.keys(results.sqlite!), `${other} answered every subcommand`);
    for (const k of Object.keys(results.sqlite!)) {
      const a = normalize(results.sqlite![k]);
      const b = normalize(results[other]![k]);
      // Storage facts differ by nature (file bytes, the schema version's own numbering).
      if (k.startsWith('stats')) {
        for (const x of [a, b] as Array<Record<string, unknown>>) delete x.schemaVersion;
      }
      assert.deepEqual(b, a, `${other}: ledger ${k}`);
    }
  }
});
