import { test } from 'node:test';
import assert from 'node:assert/strict';
import { statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createRequire } from 'node:module';
import { openLedger } from '../../src/ledger/ledger.js';
import type { ClaimInput } from '../../src/ledger/types.js';
import { LedgerError } from '../../src/errors.js';
import { MIGRATIONS, SCHEMA_VERSION } from '../../src/ledger/schema.js';
import Database from 'better-sqlite3';
import { schemaV2Ledger } from '../helpers/ledger-files.js';
import { catchesStopSignals, until } from '../helpers/signals.js';
import { tmpDir } from '../helpers/tmp.js';

const claim = (key: string, email = `${key}@x.io`): ClaimInput => ({
  key,
  keyKind: 'id',
  payloadHash: 'h-' + key,
  naturalKey: email,
  downstreamKey: 'dk-' + key,
  leadJson: JSON.stringify({ email }),
  source: 'f.jsonl',
  line: 1,
});

test('a new ledger is created 0600, in WAL mode, at the current schema version', () => {
  const dir = tmpDir();
  const path = join(dir, 'sub', 'ledger.db');
  const l = openLedger(path)!;
  assert.equal(statSync(path).mode & 0o777, 0o600);
  assert.equal(l.db.pragma('journal_mode', { simple: true }), 'wal');
  assert.equal(l.db.pragma('user_version', { simple: true }), SCHEMA_VERSION);
  l.close();
});

// The mark is in files already written: it never changes.
const LEDGER_APPLICATION_ID = 0x4c4c4447;

// A ledger as leadledger wrote it before ledgers were marked: schema v1, WAL mode, no application_id.
function writeV1Ledger(path: string): void {
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  db.exec(MIGRATIONS[0]!);
  db.pragma('user_version = 1');
  db.prepare(
    `INSERT INTO events (key, key_kind, status, outcome, first_seen_at, updated_at, sent_at) VALUES ('evt_1', 'imported', 'sent', 'imported', 't', 't', 't')`,
  ).run();
  db.close();
}

test("a new ledger is marked with leadledger's application_id", () => {
  const path = join(tmpDir(), 'l.db');
  openLedger(path)!.close();
  const db = new Database(path, { readonly: true });
  assert.equal(db.pragma('application_id', { simple: true }), LEDGER_APPLICATION_ID);
  db.close();
});

test('a ledger of schema v1 (before the mark) is read as it is read-only, and marked when next written', () => {
  const path = join(tmpDir(), 'l.db');
  writeV1Ledger(path);
  const ro = openLedger(path, { readonly: true })!;
  assert.equal(ro.lookupKeys(['evt_1']).get('evt_1')!.status, 'sent');
  assert.equal(ro.db.pragma('user_version', { simple: true }), 1, 'read-only: not migrated');
  ro.close();
  const rw = openLedger(path)!;
  assert.equal(rw.db.pragma('user_version', { simple: true }), SCHEMA_VERSION);
  assert.equal(rw.db.pragma('application_id', { simple: true }), LEDGER_APPLICATION_ID);
  assert.equal(rw.lookupKeys(['evt_1']).get('evt_1')!.status, 'sent');
  rw.close();
});

// v3 rebuilt events as a rowid table (a claim of random keys wrote a page per event into the key-ordered table).
test('a ledger of schema v2 is rebuilt as v3 when next written: the same rows, a rowid table, keys still unique', () => {
  const path = join(tmpDir(), 'l.db');
  const db = schemaV2Ledger(path);
  const ins = db.prepare(
    `INSERT INTO events (key, key_kind, natural_key, status, outcome, lead_json, source, source_line, run_id, attempts, first_seen_at, updated_at, sent_at)
     VALUES (?, 'content', ?, ?, ?, ?, 'in.csv', ?, NULL, ?, ?, ?, ?)`,
  );
  for (let i = 0; i < 500; i++) {
    const sent = i % 3 !== 0;
    const t = `2026-11-0${1 + (i % 9)}T00:00:00.000Z`;
    ins.run(
      `c:${(i * 7919) % 1000}`,
      `p${i % 50}@example.com`,
      sent ? 'sent' : 'failed',
      sent ? 'created' : null,
      `{"email":"p${i % 50}@example.com"}`,
      i + 2,
      1,
      t,
      t,
      sent ? t : null,
    );
  }
  db.prepare(
    `INSERT INTO attempts (key, run_id, at, outcome, detail) VALUES ('c:0', NULL, 't', 'created', NULL)`,
  ).run();
  const before = db.prepare('SELECT * FROM events ORDER BY key').all();
  db.close();

  const l = openLedger(path)!;
  assert.equal(l.db.pragma('user_version', { simple: true }), SCHEMA_VERSION);
  const sql = l.db
    .prepare(`SELECT name, sql FROM sqlite_master WHERE tbl_name = 'events' ORDER BY name`)
    .all() as Array<{
    name: string;
    sql: string;
  }>;
  assert.deepEqual(
    sql.map((r) => r.name),
    ['events', 'events_key', 'events_natural', 'events_status'],
  );
  assert.doesNotMatch(sql[0]!.sql, /WITHOUT ROWID/);
  assert.match(sql[1]!.sql, /CREATE UNIQUE INDEX events_key ON events\(key\)/);
  assert.deepEqual(l.db.prepare('SELECT * FROM events ORDER BY key').all(), before, 'every row, every column');
  assert.equal((l.db.prepare('SELECT count(*) AS n FROM attempts').get() as { n: number }).n, 1);
  // Rows are in the order they were first seen.
  const seen = l.db.prepare('SELECT first_seen_at FROM events ORDER BY rowid').pluck().all() as string[];
  assert.deepEqual(seen, [...seen].sort());
  const run = l.startRun('push', {}, { exclusive: true });
  const claim = (key: string) => ({
    key,
    keyKind: 'content' as const,
    payloadHash: 'h',
    leadJson: '{}',
    downstreamKey: 'd',
    source: 'in.csv',
    line: 1,
  });
  assert.deepEqual(
    [...l.claimNew([claim('c:0'), claim('c:new')], run, 'jsonl:out')],
    ['c:new'],
    'a key already there is not claimed',
  );
  assert.equal(l.lookupKeys(['c:0']).get('c:0')!.status, 'failed', 'i = 0: a failed row');
  l.close();
});

// A v2 ledger whose write lock another process holds for `ms` (or until `release()`), as a long upgrade would;
// resolves once it is held.
async function lockedV2Ledger(
  ms: number | 'until released',
): Promise<{ path: string; released: Promise<unknown>; release: () => void }> {
  const path = join(tmpDir(), 'l.db');
  const db = schemaV2Ledger(path);
  db.close();
  const holder = spawn(
    process.execPath,
    [
      '-e',
      `const db = new (require(process.argv[1]))(process.argv[2]); db.exec('BEGIN IMMEDIATE'); console.log('locked');
       const release = () => { db.exec('COMMIT'); db.close(); };
       ${ms === 'until released' ? "process.stdin.on('end', release).resume();" : `setTimeout(release, ${ms});`}`,
      createRequire(import.meta.url).resolve('better-sqlite3'),
      path,
    ],
    { stdio: ['pipe', 'pipe', 'inherit'] },
  );
  const released = once(holder, 'exit');
  await once(holder.stdout!, 'data');
  return { path, released, release: () => holder.stdin!.end() };
}

test('an open waits for another process upgrading the ledger, past the usual 5 s busy timeout', async () => {
  const { path, released } = await lockedV2Ledger(5500);
  const t0 = Date.now();
  // In a child of its own: this process must stay free to reap the holder.
  const opener = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      '-e',
      `import { openLedgerStore } from ${JSON.stringify(new URL('../../src/ledger/open.ts', import.meta.url).href)};
       await (await openLedgerStore(${JSON.stringify(path)}))?.close();`,
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let err = '';
  opener.stderr!.on('data', (d) => (err += d));
  const [code] = (await once(opener, 'exit')) as [number];
  await released;
  assert.equal(code, 0, err);
  assert.ok(Date.now() - t0 > 4000, 'it waited for the lock');
  const after = new Database(path, { readonly: true });
  assert.equal(after.pragma('user_version', { simple: true }), SCHEMA_VERSION);
  after.close();
});

// Push, replay and `ledger import` install the stop signals; each hands its stop to the open's wait.
for (const command of ['push', 'ledger import'] as const) {
  test(`Ctrl-C ends a ${command} that waits for another process upgrading the ledger, at once (exit 130)`, async () => {
    // Held until the command has ended: one that went on waiting after Ctrl-C never ends, and the test fails.
    const { path, released, release } = await lockedV2Ledger('until released');
    const cli = new URL('../../dist/cli/main.js', import.meta.url).pathname;
    const dir = tmpDir();
    const args =
      command === 'push'
        ? [
            'push',
            new URL('../../fixtures/webhook-events.jsonl', import.meta.url).pathname,
            '--sink',
            'jsonl',
            '--output',
            join(dir, 'out.jsonl'),
          ]
        : ['ledger', 'import', join(dir, 'ids.txt'), '--as', 'keys'];
    writeFileSync(join(dir, 'ids.txt'), 'evt_1\nevt_2\n');
    const child = spawn(process.execPath, [cli, ...args, '--ledger', path], { stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    child.stderr!.on('data', (d) => (err += d));
    const exited = once(child, 'exit');
    // Ctrl-C once it has taken its signals over (it then opens the ledger, or waits in the open already).
    await until(
      () => catchesStopSignals(child.pid!),
      () => child.exitCode === null,
      `its signals: ${err}`,
    );
    child.kill('SIGINT');
    const killer = setTimeout(() => child.kill('SIGKILL'), 120_000);
    const [code] = (await exited) as [number];
    clearTimeout(killer);
    release();
    await released;
    assert.equal(code, 130, err);
    assert.match(err, /waiting for another process to upgrade/);
  });
}

test('read-only open of a missing ledger is no ledger, not an error', () => {
  assert.equal(openLedger(join(tmpDir(), 'none.db'), { readonly: true }), undefined);
});

test('a ledger newer than this build is refused with exit code 5', () => {
  const path = join(tmpDir(), 'l.db');
  const l = openLedger(path)!;
  l.db.pragma(`user_version = ${SCHEMA_VERSION + 1}`);
  l.close();
  assert.throws(
    () => openLedger(path),
    (e: Error) => e instanceof LedgerError && /newer than this leadledger/.test(e.message),
  );
});

test('claims are atomic: of two connections claiming the same keys, each key goes to exactly one', () => {
  const path = join(tmpDir(), 'l.db');
  const a = openLedger(path)!;
  const b = openLedger(path)!;
  const ra = a.startRun('push', {}, { exclusive: false });
  const rb = b.startRun('push', {}, { exclusive: false });
  const keys = Array.from({ length: 50 }, (_, i) => claim('k' + i));
  const ca = a.claimNew(keys.slice(0, 30), ra, 's');
  const cb = b.claimNew(keys.slice(20), rb, 's');
  assert.equal(ca.size, 30);
  assert.equal(cb.size, 20, 'the 10 overlapping keys were already claimed by a');
  for (const k of cb) assert.ok(!ca.has(k));
  a.close();
  b.close();
});

test('settle commits outcomes only for rows the run owns; lookups see them', () => {
  const path = join(tmpDir(), 'l.db');
  const l = openLedger(path)!;
  const run = l.startRun('push', {}, { exclusive: true });
  l.claimNew([claim('a'), claim('b'), claim('c')], run, 's');
  l.settle(
    [
      { key: 'a', status: 'sent', outcome: 'created', crmId: '101' },
      { key: 'b', status: 'failed', failure: 'retryable', error: 'HTTP 503' },
      { key: 'c', status: 'failed', failure: 'permanent', error: 'INVALID_EMAIL' },
    ],
    run,
  );
  l.settle([{ key: 'a', status: 'failed', failure: 'permanent', error: 'late' }], run + 1);
  const m = l.lookupKeys(['a', 'b', 'c', 'zzz']);
  assert.equal(m.get('a')!.status, 'sent');
  assert.equal(m.get('b')!.failure, 'retryable');
  assert.equal(m.get('c')!.failure, 'permanent');
  assert.equal(m.has('zzz'), false);
  assert.deepEqual([...l.lookupDelivered(['a@x.io', 'b@x.io'])], [['a@x.io', 'a']]);
  // retryable failures can be claimed again, by one run only
  const run2 = l.startRun('push', {}, { exclusive: false });
  assert.deepEqual([...l.claimExisting(['a', 'b', 'c'], run2, ['failed'], 's')].sort(), ['b', 'c']);
  assert.equal(l.claimExisting(['b'], run2, ['failed'], 's').size, 0);
  l.close();
});

// The settle of a plain send (sent, no CRM id, no error) has a statement of its own: the row must record it exactly
// as the general one does, keep or drop the stored lead as configured, and leave a row that already holds a CRM id
// to the general path (which keeps the id and records the attempt as a row of its own).
test('a plain send settles as the general settle would: outcome, attempts, times, the lead kept or dropped', () => {
  const path = join(tmpDir(), 'l.db');
  const l = openLedger(path)!;
  const run = l.startRun('push', {}, { exclusive: true });
  l.claimNew([claim('a'), claim('b'), claim('c')], run, 's');
  l.settle([{ key: 'c', status: 'sent', outcome: 'created', crmId: '7' }], run);
  l.settle([{ key: 'a', status: 'sent', outcome: 'created' }], run + 100); // not this run's: fenced, its attempt kept
  assert.equal(l.lookupKeys(['a']).get('a')!.status, 'pending');
  l.settle([{ key: 'a', status: 'sent', outcome: 'created' }], run);
  l.dropSentPayloads = true;
  l.settle([{ key: 'b', status: 'sent', outcome: 'exists' }], run);
  // c again, as a re-send does: sent with no id this time
  const run2 = l.startRun('push', {}, { exclusive: false });
  l.claimExisting(['c'], run2, ['sent'], 's');
  l.settle([{ key: 'c', status: 'sent', outcome: 'created' }], run2);
  const rows = l.db
    .prepare(
      `SELECT key, status, outcome, crm_id, attempts, lead_json IS NOT NULL AS has_lead, sent_at = updated_at AS same_time,
         failure, last_error FROM events ORDER BY key`,
    )
    .all();
  assert.deepEqual(rows, [
    {
      key: 'a',
      status: 'sent',
      outcome: 'created',
      crm_id: null,
      attempts: 1,
      has_lead: 1,
      same_time: 1,
      failure: null,
      last_error: null,
    },
    {
      key: 'b',
      status: 'sent',
      outcome: 'exists',
      crm_id: null,
      attempts: 1,
      has_lead: 0,
      same_time: 1,
      failure: null,
      last_error: null,
    },
    {
      key: 'c',
      status: 'sent',
      outcome: 'created',
      crm_id: '7',
      attempts: 2,
      has_lead: 0,
      same_time: 1,
      failure: null,
      last_error: null,
    },
  ]);
  assert.deepEqual(l.db.prepare(`SELECT key, run_id, outcome, detail FROM attempts ORDER BY run_id`).all(), [
    { key: 'c', run_id: run, outcome: 'created', detail: 'crm id 7' },
    { key: 'c', run_id: run2, outcome: 'created', detail: null },
    { key: 'a', run_id: run + 100, outcome: 'created', detail: null },
  ]);
  l.close();
});

test('pending rows of a run that died become in doubt', () => {
  const path = join(tmpDir(), 'l.db');
  const l = openLedger(path)!;
  const run = l.startRun('push', {}, { exclusive: true });
  l.claimNew([claim('a'), claim('b')], run, 's');
  l.settle([{ key: 'a', status: 'sent', outcome: 'created' }], run);
  assert.equal(l.markOrphansInDoubt(), 0, 'the owner is still running');
  l.finishRun(run, 'failed', {});
  assert.equal(l.markOrphansInDoubt(), 1);
  assert.deepEqual(
    l.rowsInStatus('in_doubt').map((r) => r.key),
    ['b'],
  );
  l.close();
});

test('one run at a time: a live run holds the ledger, a dead one is marked crashed', async () => {
  const path = join(tmpDir(), 'l.db');
  const l = openLedger(path)!;
  const first = l.startRun('push', {}, { exclusive: true });
  assert.throws(
    () => l.startRun('push', {}, { exclusive: true }),
    (e: Error) => e instanceof LedgerError && /in use by run/.test(e.message),
  );
  l.finishRun(first, 'done', {});
  // a run whose process is gone
  const child = spawn(process.execPath, ['-e', '0']);
  await new Promise((r) => child.on('exit', r));
  l.db
    .prepare(
      `INSERT INTO runs (command, args_json, host, pid, started_at, heartbeat_at, status) VALUES ('push','{}',?,?,?,?,'running')`,
    )
    .run((await import('node:os')).hostname(), child.pid, new Date().toISOString(), new Date().toISOString());
  const next = l.startRun('push', {}, { exclusive: true });
  assert.ok(next > first);
  assert.equal((l.db.prepare(`SELECT count(*) n FROM runs WHERE status = 'crashed'`).get() as { n: number }).n, 1);
  l.close();
});

test('import marks keys and people as delivered, idempotently', () => {
  const l = openLedger(join(tmpDir(), 'l.db'))!;
  assert.deepEqual(l.importDelivered([{ key: 'evt_1' }, { naturalKey: 'ana@x.io', crmId: '77' }], 'seed.txt'), {
    added: 2,
    present: 0,
  });
  assert.deepEqual(l.importDelivered([{ key: 'evt_1' }], 'seed.txt'), { added: 0, present: 1 });
  assert.equal(l.lookupKeys(['evt_1']).get('evt_1')!.status, 'sent');
  assert.equal(l.lookupDelivered(['ana@x.io']).size, 1);
  l.close();
});
