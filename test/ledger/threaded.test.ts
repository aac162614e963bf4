// A push's SQLite ledger with its writes on a thread of their own (src/ledger/threaded.ts): what the thread
// commits, the main connection sees at once; its errors come back as the ledger's, SQLite code and all; a thread
// that is gone fails the calls made after, instead of leaving them waiting; close() leaves the WAL empty; a
// checkpointer thread copies the WAL back into the file while a long run writes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { serialize } from 'node:v8';
import { pathToFileURL } from 'node:url';
import type { Worker } from 'node:worker_threads';
import Database from 'better-sqlite3';
import { LedgerError } from '../../src/errors.js';
import { ledgerFailure } from '../../src/ledger/failure.js';
import { openLedger } from '../../src/ledger/ledger.js';
import { openLedgerStore } from '../../src/ledger/open.js';
import { claimColumns, settleColumns, settlementAt } from '../../src/ledger/columns.js';
import { ThreadedLedger } from '../../src/ledger/threaded.js';
import type { ClaimInput, Settlement } from '../../src/ledger/types.js';
import { claim } from '../commands/ledger/seed.js';
import { runCli } from '../helpers/cli.js';
import { readLedger } from '../helpers/kill.js';
import { tmpDir } from '../helpers/tmp.js';

const FIXTURE = join(import.meta.dirname, '..', '..', 'fixtures', 'webhook-events.jsonl');

async function threaded(file: string): Promise<ThreadedLedger> {
  const store = await openLedgerStore(file, { writeThread: true });
  assert.ok(store instanceof ThreadedLedger, 'a writable SQLite ledger opened for a push writes on a thread');
  return store;
}

/** After close(): the WAL is empty, and the file itself holds n events. */
function assertClosedHolding(file: string, n: number): void {
  assert.ok(!existsSync(file + '-wal') || statSync(file + '-wal').size === 0, 'the WAL was checkpointed');
  assert.equal(
    readLedger(file, (db) => (db.prepare('SELECT count(*) AS n FROM events').get() as { n: number }).n),
    n,
  );
}

/** Makes the ledger refuse every new event with a trigger: an error SQLite raises inside the thread's claim. */
function refuseInserts(file: string, when = 'true'): void {
  const db = new Database(file);
  db.exec(
    `CREATE TRIGGER refuse BEFORE INSERT ON events WHEN ${when} BEGIN SELECT RAISE(ABORT, 'refused by a trigger'); END`,
  );
  db.close();
}

// Claims and settles cross to the thread as columns: every field of every claim reaches the ledger's row as it was
// given (an optional one left out, or undefined, as NULL), each source named once; every settlement arrives as it
// was given, optional fields absent where they were.
test('claims and settles reach the thread whole, field by field', () => {
  const claims: ClaimInput[] = [
    { ...claim('k1', 'ana@example.com'), source: 'a.jsonl', line: 1, eventTime: '2026-10-01T00:00:00.000Z' },
    { ...claim('k2', 'bob@example.com'), source: 'b.csv', line: 2 ** 40 },
    { ...claim('k3', 'carla@example.com'), source: 'a.jsonl', line: 7, naturalKey: undefined },
  ];
  const cols = claimColumns(claims);
  assert.deepEqual(cols.sources, ['a.jsonl', 'b.csv']);
  // What the thread's ledger records of them, from the columns as they arrive (cloned, as postMessage clones them).
  const ledger = openLedger(join(tmpDir(), 'l.db'))!;
  const run = ledger.startRun('push', {}, { exclusive: true });
  assert.deepEqual(ledger.claimNewFromColumns(structuredClone(cols), run, 'jsonl x'), []);
  const rows = ledger.rowsByKeys(claims.map((c) => c.key)).sort((a, b) => a.key.localeCompare(b.key));
  assert.deepEqual(
    rows.map((r) => ({
      key: r.key,
      keyKind: r.key_kind,
      payloadHash: r.payload_hash,
      naturalKey: r.natural_key ?? undefined,
      downstreamKey: r.downstream_key,
      leadJson: r.lead_json,
      source: r.source,
      line: r.source_line,
      eventTime: r.event_time ?? undefined,
    })),
    claims.map((c) => ({ ...c })),
  );
  ledger.close();
  const settlements: Settlement[] = [
    { key: 'k1', status: 'sent', outcome: 'created', crmId: '42' },
    { key: 'k2', status: 'failed', failure: 'retryable', error: 'HTTP 503' },
    { key: 'k3', status: 'in_doubt', error: 'timed out' },
    { key: 'k4', status: 'sent', outcome: 'exists' },
  ];
  const cols2 = structuredClone(settleColumns(settlements));
  assert.deepEqual(
    settlements.map((_, i) => settlementAt(cols2, i)),
    settlements,
  );
});

// Both kinds of columns cross as dense arrays: a holey one (what an optimized map made of a batch's claims) is
// cloned element by element with each one's index. The optimized code shows only after many batches, as a push's
// come.
test("a push's claim and settle columns cross as dense arrays", () => {
  const manyClaims = Array.from({ length: 2000 }, (_, i) => claim(`k${i}`, `p${i}@example.com`));
  const manySettled = manyClaims.map((c): Settlement => ({ key: c.key, status: 'sent', outcome: 'created' }));
  for (let i = 0; i < 300; i++) {
    claimColumns(manyClaims);
    settleColumns(manySettled);
  }
  const columns = [...Object.entries(claimColumns(manyClaims)), ...Object.entries(settleColumns(manySettled))];
  for (const [name, col] of columns)
    if (Array.isArray(col)) assert.equal(serialize(col)[2], 'A'.charCodeAt(0), `${name} crosses as a dense array`);
});

// The writer's claim takes a batch as columns: a key twice in it is taken once, by its first claim (the second's
// insert changes nothing, and must not make the key "not taken"), and only a key claimed before is not taken.
test('a claim of columns takes a key twice in its batch once, and leaves only keys claimed before', () => {
  const ledger = openLedger(join(tmpDir(), 'l.db'))!;
  const run = ledger.startRun('push', {}, { exclusive: true });
  assert.deepEqual(ledger.claimNew([claim('old', 'old@example.com')], run, 'jsonl x'), new Set(['old']));
  const batch = [
    claim('k1', 'ana@example.com', 'a.jsonl', 1),
    claim('old', 'old@example.com', 'a.jsonl', 2),
    claim('k1', 'ana.again@example.com', 'a.jsonl', 3),
    claim('k2', 'bob@example.com', 'a.jsonl', 4),
  ];
  assert.deepEqual(ledger.claimNewFromColumns(claimColumns(batch), run, 'jsonl x'), ['old']);
  const k1 = ledger.rowsByKeys(['k1'])[0]!;
  assert.equal(k1.natural_key, 'ana@example.com', 'the first claim of k1 is the one recorded');
  assert.equal(k1.source_line, 1);
  assert.deepEqual(ledger.claimNew(batch, run, 'jsonl x'), new Set(), 'claimed before, all of them');
  ledger.close();
});

test('writes commit on the thread and the main connection sees them at once; close() leaves the WAL empty', async () => {
  const file = join(tmpDir(), 'l.db');
  const store = await threaded(file);
  const run = await store.startRun('push', {}, { exclusive: true });
  const mine = await store.claimNew([claim('k1', 'ana@example.com'), claim('k2', 'bob@example.com')], run, 'jsonl x');
  assert.deepEqual([...mine].sort(), ['k1', 'k2']);
  assert.equal((await store.lookupKeys(['k1'])).get('k1')?.status, 'pending', 'the main connection sees the claim');
  await store.settle([{ key: 'k1', status: 'sent', outcome: 'created' }], run);
  assert.equal((await store.lookupKeys(['k1'])).get('k1')?.status, 'sent');
  assert.deepEqual([...(await store.lookupDelivered(['ana@example.com']))], [['ana@example.com', 'k1']]);
  await store.release([{ key: 'k2', to: null }], run, 'stopped');
  assert.equal((await store.lookupKeys(['k2'])).size, 0);
  await store.finishRun(run, 'done', {});
  await store.close();
  await store.close(); // twice is harmless
  assert.ok(!existsSync(file + '-wal') || statSync(file + '-wal').size === 0, 'the WAL was checkpointed');
  assert.deepEqual(
    readLedger(file, (db) => db.prepare('SELECT key, status FROM events').all()),
    [{ key: 'k1', status: 'sent' }],
  );
});

// The WAL's pages go back into the ledger file on a thread of their own while the run writes (checkpoint-thread.ts),
// not inside the writer's commits. Seen from outside: the file alone, without its WAL, holds the run's claims while
// the run goes on. The writer's own autocheckpoint would copy nothing of so few writes until close().
test('a run of many writes: a checkpointer copies them into the ledger file while the run goes on', async () => {
  const dir = tmpDir();
  const file = join(dir, 'l.db');
  const store = await threaded(file);
  const run = await store.startRun('push', {}, { exclusive: true });
  for (let b = 0; b < 20; b++) {
    if (b === 10) assert.equal(store.checkpointing, false, 'a run of a few writes starts no checkpointer');
    const batch = Array.from({ length: 50 }, (_, i) => claim(`k-${b}-${i}`, `p${b}.${i}@example.com`));
    assert.equal((await store.claimNew(batch, run, 'jsonl x')).size, 50);
  }
  assert.equal(store.checkpointing, true);
  // The file as a copy would see it (no -wal beside it): immutable, so SQLite reads the file and nothing else.
  const inFile = (): number => {
    const copy = join(dir, `copy-${Date.now()}.db`);
    copyFileSync(file, copy);
    try {
      const db = new Database(`${pathToFileURL(copy).href}?immutable=1`, { readonly: true, fileMustExist: true });
      try {
        return (db.prepare('SELECT count(*) AS n FROM events').get() as { n: number }).n;
      } finally {
        db.close();
      }
    } catch {
      return -1; // not even the schema yet, or a copy taken mid-checkpoint
    }
  };
  let n = inFile();
  for (let i = 0; i < 100 && n !== 1000; i++) {
    await new Promise((r) => setTimeout(r, 30));
    n = inFile();
  }
  assert.equal(n, 1000, 'the ledger file holds every claim committed, with the run still open');
  await store.finishRun(run, 'done', {});
  await store.close();
  assertClosedHolding(file, 1000);
});

// The checkpointer is optional: gone before close() (it failed, or was ended), it must not hold close() up, nor
// leave the ledger open; and a close() that is the run's 16th write starts none.
test('close() with the checkpointer gone already still closes the ledger; a close that is the 16th write starts none', async () => {
  const dir = tmpDir();
  const file = join(dir, 'l.db');
  const store = await threaded(file);
  const run = await store.startRun('push', {}, { exclusive: true });
  for (let b = 0; b < 20; b++) await store.claimNew([claim(`k${b}`, `p${b}@example.com`)], run, 'jsonl x');
  assert.equal(store.checkpointing, true);
  await (store as unknown as { checkpointer: { worker: Worker } }).checkpointer.worker.terminate();
  await store.finishRun(run, 'done', {});
  await store.close();
  assertClosedHolding(file, 20);

  const other = await threaded(join(dir, 'm.db'));
  const run2 = await other.startRun('push', {}, { exclusive: true });
  for (let b = 0; b < 15; b++) await other.claimNew([claim(`k${b}`, `p${b}@example.com`)], run2, 'jsonl x');
  await other.close();
  assert.equal(other.checkpointing, false);
});

test("an error SQLite raises on the thread comes back with its code: it reads as the ledger's, and nothing of the claim stays", async () => {
  const file = join(tmpDir(), 'l.db');
  const store = await threaded(file);
  const run = await store.startRun('push', {}, { exclusive: true });
  refuseInserts(file, "NEW.key = 'k-bad'");
  const err = await store
    .claimNew([claim('k-ok', 'ana@example.com'), claim('k-bad', 'bob@example.com')], run, 's')
    .then(
      () => assert.fail('the claim was refused'),
      (e: unknown) => e as Error & { code?: string },
    );
  assert.match(err.code ?? '', /^SQLITE_CONSTRAINT/);
  const worded = ledgerFailure(err, file);
  assert.ok(worded instanceof LedgerError);
  assert.match(worded.message, new RegExp(`ledger ${file}: refused by a trigger`));
  assert.equal((await store.lookupKeys(['k-ok'])).size, 0, 'the claim was one transaction: none of it committed');
  // The thread goes on taking writes after an error.
  assert.deepEqual([...(await store.claimNew([claim('k-next', 'carla@example.com')], run, 's'))], ['k-next']);
  await store.finishRun(run, 'done', {});
  await store.close();
});

/** Holds the ledger's write lock from another connection until the returned function is called. */
function holdWriteLock(file: string): () => void {
  const db = new Database(file);
  db.exec('BEGIN IMMEDIATE');
  return () => {
    db.exec('COMMIT');
    db.close();
  };
}

test('a thread that dies under a waiting claim fails it as a ledger error (exit 5), and every call after it', async () => {
  const file = join(tmpDir(), 'l.db');
  const store = await threaded(file);
  const run = await store.startRun('push', {}, { exclusive: true });
  const release = holdWriteLock(file); // the thread's claim waits for the lock
  const waiting = store.claimNew([claim('k1', 'ana@example.com')], run, 's');
  await new Promise((r) => setTimeout(r, 100));
  await (store as unknown as { worker: Worker }).worker.terminate();
  await assert.rejects(waiting, (e: Error) => e instanceof LedgerError && /writer thread exited/.test(e.message));
  await assert.rejects(
    () => store.settle([{ key: 'k1', status: 'sent' }], run),
    (e: Error) => e instanceof LedgerError && e.message.includes(file),
  );
  release();
  assert.equal((await store.lookupKeys(['k1'])).size, 0, 'the claim never committed');
  await store.finishRun(run, 'failed', {});
  await store.close();
});

test('close() waits for the writes asked for before it; writes asked for after it are refused', async () => {
  const file = join(tmpDir(), 'l.db');
  const store = await threaded(file);
  const run = await store.startRun('push', {}, { exclusive: true });
  await store.finishRun(run, 'done', {});
  const release = holdWriteLock(file);
  const claimed = store.claimNew([claim('k1', 'ana@example.com')], run, 's');
  const closed = store.close();
  await assert.rejects(() => store.claimNew([claim('k2', 'bob@example.com')], run, 's'), /was closed/);
  setTimeout(release, 100);
  assert.deepEqual([...(await claimed)], ['k1']);
  await closed;
  assert.deepEqual(
    readLedger(file, (db) => db.prepare('SELECT key FROM events').all()),
    [{ key: 'k1' }],
  );
});

test("the run's heartbeat is written by the thread: waiting for the write lock, it never stops the main thread", async () => {
  const file = join(tmpDir(), 'l.db');
  const store = await threaded(file);
  const run = await store.startRun('push', {}, { exclusive: true });
  const beat = () =>
    readLedger(
      file,
      (db) => db.prepare('SELECT heartbeat_at FROM runs WHERE id = ?').get(run) as { heartbeat_at: string },
    )?.heartbeat_at;
  const first = beat();
  const release = holdWriteLock(file);
  const timer = store.keepAlive(run, 20);
  // On the main connection, a heartbeat would wait here for the lock (the 5 s busy timeout), timers and all: a 300 ms
  // timer would come 5 s late. The bound is that, not a measure of speed (1 s failed on a loaded machine).
  const started = Date.now();
  await new Promise((r) => setTimeout(r, 300));
  assert.ok(Date.now() - started < 4500, `the main thread went on (${Date.now() - started} ms for a 300 ms timer)`);
  assert.equal(beat(), first, 'no heartbeat while the lock is held');
  release();
  while (beat() === first) await new Promise((r) => setTimeout(r, 10));
  clearInterval(timer);
  assert.notEqual(beat(), first, 'the heartbeat moved once the lock was free');
  await store.finishRun(run, 'done', {});
  await store.close();
});

test('calls made after the thread is gone fail at once, never wait forever', async () => {
  const file = join(tmpDir(), 'l.db');
  const store = await threaded(file);
  const run = await store.startRun('push', {}, { exclusive: true });
  await (store as unknown as { worker: Worker }).worker.terminate();
  await assert.rejects(() => store.claimNew([claim('k1', 'ana@example.com')], run, 's'), /writer thread exited/);
  await assert.rejects(() => store.settle([{ key: 'k1', status: 'sent' }], run), /writer thread exited/);
  await store.finishRun(run, 'failed', {});
  await store.close();
});

test('push: a claim the ledger refuses on the thread fails the run with exit 5, naming the ledger; nothing is sent', async () => {
  const dir = tmpDir();
  const ledger = join(dir, 'l.db');
  const out = join(dir, 'out.jsonl');
  const args = ['push', FIXTURE, '--sink', 'jsonl', '--output', out, '--ledger', ledger, '--quiet'];
  openLedger(ledger)!.close(); // an empty ledger, then a trigger that refuses every claim
  refuseInserts(ledger);
  const r = await runCli(args);
  assert.equal(r.code, 5, r.stderr);
  assert.match(r.stderr, new RegExp(`ledger ${ledger}: refused by a trigger`));
  assert.doesNotMatch(r.stderr, /unexpected error/);
  assert.equal(existsSync(out) ? readFileSync(out, 'utf8') : '', '', 'no lead was written without its claim');
});
