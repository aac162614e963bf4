import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { ledgerForget, type ErasureCommandResult, type ForgetKeysResult } from '../../../src/commands/ledger/forget.js';
import { ledgerRuns } from '../../../src/commands/ledger/runs.js';
import { ledgerVerify } from '../../../src/commands/ledger/verify.js';
import { LedgerError, UsageError } from '../../../src/errors.js';
import { openLedger } from '../../../src/ledger/ledger.js';
import { claim, seedLedger, testCtx } from './seed.js';

const rowCount = (path: string, sql: string, ...params: unknown[]) => {
  const l = openLedger(path, { readonly: true })!;
  const n = l.db
    .prepare(sql)
    .pluck()
    .get(...params) as number;
  l.close();
  return n;
};

test('forget <key...> deletes the rows and their attempts; the keys are new again; unknown keys are reported', async () => {
  const { dir, path } = seedLedger();
  const r = (await ledgerForget({ ledger: path, keys: ['evt-2', 'evt-3', 'nope'] }, testCtx(dir))) as ForgetKeysResult;
  assert.equal(r.applied, true);
  assert.equal(r.deleted, 2);
  assert.equal(r.attemptsDeleted, 2);
  assert.deepEqual(r.plan.missing, ['nope']);
  const l = openLedger(path)!;
  assert.deepEqual(
    [...l.lookupKeys(['evt-1', 'evt-2', 'evt-3']).keys()],
    ['evt-1'],
    'forgotten keys are eligible again (no tombstone)',
  );
  l.close();
  assert.equal(rowCount(path, `SELECT count(*) FROM attempts WHERE key IN ('evt-2','evt-3')`), 0);
  assert.equal((await ledgerVerify({ ledger: path }, testCtx(dir))).ok, true);
  // The change is recorded as a run of its own, with counts only.
  const run = (await ledgerRuns({ ledger: path }, testCtx(dir))).runs[0]!;
  assert.equal(run.command, 'ledger forget');
  assert.equal(run.status, 'done');
});

test('forget --dry-run changes nothing and never writes the ledger', async () => {
  const { dir, path } = seedLedger();
  const before = readFileSync(path);
  const r = (await ledgerForget({ ledger: path, keys: ['evt-1'], dryRun: true }, testCtx(dir))) as ForgetKeysResult;
  assert.equal(r.dryRun, true);
  assert.equal(r.applied, false);
  assert.deepEqual(
    r.plan.found.map((f) => f.key),
    ['evt-1'],
  );
  const e = (await ledgerForget(
    { ledger: path, keys: [], email: 'ana@example.com', dryRun: true },
    testCtx(dir),
  )) as ErasureCommandResult;
  assert.deepEqual(
    e.plan.found.map((f) => f.key),
    ['evt-1'],
  );
  assert.equal(e.erasure, undefined);
  assert.equal(rowCount(path, `SELECT count(*) FROM events WHERE key = 'evt-1'`), 1);
  assert.deepEqual(readFileSync(path), before);
  assert.equal(rowCount(path, 'SELECT count(*) FROM runs'), 1, 'no run was recorded');
});

test('forget asks for confirmation, and a no changes nothing', async () => {
  const { dir, path } = seedLedger();
  const asked: string[] = [];
  const r = await ledgerForget(
    { ledger: path, keys: ['evt-1', 'evt-2', 'imp-1'], confirm: async (q) => (asked.push(q), false) },
    testCtx(dir),
  );
  assert.equal(r.applied, false);
  assert.match(asked[0]!, /^Forget 3 events\?/);
  assert.equal(rowCount(path, 'SELECT count(*) FROM events'), 5);
});

test('forget takes keys or --email, not both or neither; a bad address is a usage error; a missing ledger exit 5', async () => {
  const { dir, path } = seedLedger();
  const ctx = testCtx(dir);
  await assert.rejects(ledgerForget({ ledger: path, keys: ['a'], email: 'a@b.io' }, ctx), UsageError);
  await assert.rejects(ledgerForget({ ledger: path, keys: [] }, ctx), UsageError);
  await assert.rejects(ledgerForget({ ledger: path, keys: [], email: 'not-an-address' }, ctx), UsageError);
  await assert.rejects(ledgerForget({ ledger: dir + '/none.db', keys: ['a'] }, ctx), LedgerError);
  assert.equal(existsSync(dir + '/none.db'), false);
});

test('forget refuses while a live run holds the ledger (exit 5)', async () => {
  const { dir, path } = seedLedger();
  const l = openLedger(path)!;
  l.startRun('push', {}, { exclusive: true });
  await assert.rejects(
    ledgerForget({ ledger: path, keys: ['evt-1'] }, testCtx(dir)),
    (e: Error) => e instanceof LedgerError && /in use by run/.test(e.message),
  );
  l.close();
});

test('forget --email erases the person: tombstoned keys stay duplicates, and no byte of the address remains in ledger.db or its WAL', async () => {
  const { dir, path } = seedLedger();
  const email = 'Ana.Maria_1@Example.com';
  const norm = email.toLowerCase();
  // Her events: by natural key, by an address inside another event's lead, and mentions in other rows' text.
  const l = openLedger(path)!;
  const run = l.startRun('push', { note: `retry for ${norm}` }, { exclusive: true });
  const ref = {
    ...claim('evt-ref', 'zed@example.com'),
    leadJson: JSON.stringify({ email: 'zed@example.com', referrer: norm }),
  };
  l.claimNew([claim('evt-a1', norm), claim('evt-a2', norm, 'later.csv', 3), ref], run, 'webhook');
  l.settle(
    [
      { key: 'evt-a1', status: 'sent', outcome: 'created', crmId: '900' },
      { key: 'evt-a2', status: 'failed', failure: 'retryable', error: `HTTP 503 while sending ${email}` },
      { key: 'evt-ref', status: 'sent', outcome: 'created' },
    ],
    run,
  );
  l.db
    .prepare(`INSERT INTO attempts (key, run_id, at, outcome, detail) VALUES ('evt-1', ?, ?, 'failed', ?)`)
    .run(run, new Date().toISOString(), `duplicate of ${email.toUpperCase()} in CRM`);
  l.db.prepare(`UPDATE events SET last_error = ? WHERE key = 'evt-3'`).run(`timeout (${norm})`);
  l.finishRun(run, 'done', {});
  // Keep some history in the WAL: bytes of the address must go from there too, not only from the main file.
  l.db.pragma('wal_autocheckpoint = 0');
  l.db.prepare(`UPDATE events SET updated_at = updated_at WHERE key = 'evt-a1'`).run();
  l.db.close();

  const needles = [norm, norm.toUpperCase(), email].map((s) => Buffer.from(s));
  const hits = () =>
    [path, path + '-wal']
      .filter(existsSync)
      .flatMap((f) => needles.filter((n) => readFileSync(f).includes(n)).map((n) => `${f}: ${n}`));
  assert.ok(hits().length > 0, 'the address is on disk before the erasure');

  const asked: string[] = [];
  const r = (await ledgerForget(
    { ledger: path, keys: [], email, confirm: async (q) => (asked.push(q), true) },
    testCtx(dir),
  )) as ErasureCommandResult;
  assert.match(asked[0]!, /^Erase 3 events of this person and \d+ mentions in other rows\?/);
  assert.deepEqual(r.plan.found.map((f) => f.key).sort(), ['evt-a1', 'evt-a2', 'evt-ref']);
  assert.equal(r.erasure?.deleted, 3);
  assert.equal(r.erasure?.tombstonesAdded, 3);
  assert.equal(r.erasure?.walTruncated, true);
  assert.deepEqual(r.erasure?.scrubbed, { attempts: 1, events: 1, runs: 1 });
  assert.ok(!JSON.stringify(r).toLowerCase().includes(norm), 'the result does not repeat the address');

  assert.deepEqual(hits(), [], 'no copy of the address in ledger.db or ledger.db-wal');

  const after = openLedger(path, { readonly: true })!;
  const known = after.lookupKeys(['evt-a1', 'evt-a2', 'evt-ref', 'evt-1', 'never-seen']);
  for (const k of ['evt-a1', 'evt-a2', 'evt-ref'])
    assert.equal(known.get(k)?.tombstone, true, `${k} is still a known duplicate`);
  assert.equal(known.get('evt-1')?.tombstone, undefined);
  assert.equal(known.has('never-seen'), false);
  assert.equal(
    after.db.prepare(`SELECT detail FROM attempts WHERE key = 'evt-1' AND outcome = 'failed'`).pluck().get(),
    'duplicate of [erased] in CRM',
  );
  assert.equal(
    after.db.prepare(`SELECT last_error FROM events WHERE key = 'evt-3'`).pluck().get(),
    'timeout ([erased])',
  );
  assert.equal(
    after.db.prepare(`SELECT count(*) FROM attempts WHERE key LIKE 'evt-a%' OR key = 'evt-ref'`).pluck().get(),
    0,
  );
  after.close();
  assert.equal((await ledgerVerify({ ledger: path }, testCtx(dir))).ok, true);
});

test('forget --email of an address the ledger never saw changes no row and asks nothing', async () => {
  const { dir, path } = seedLedger();
  const r = (await ledgerForget(
    { ledger: path, keys: [], email: 'nobody@example.com', confirm: async () => assert.fail('no question expected') },
    testCtx(dir),
  )) as ErasureCommandResult;
  assert.equal(r.plan.found.length, 0);
  assert.equal(r.erasure?.deleted, 0);
  assert.equal(rowCount(path, 'SELECT count(*) FROM events'), 5);
});

test('forget --email finds and scrubs the address in each spelling: NFD, Unicode domain, capitals', async () => {
  const { dir, path } = seedLedger();
  const l = openLedger(path)!;
  const run = l.startRun('push', {}, { exclusive: true });
  // The person as the ledger holds them (canonical), and mentions of them as a CRM or an older ledger wrote them.
  l.claimNew([claim('evt-j1', 'josé@xn--bcher-kva.example')], run, 'webhook');
  l.settle([{ key: 'evt-j1', status: 'sent', outcome: 'created', crmId: '77' }], run);
  l.db
    .prepare(`UPDATE events SET last_error = ? WHERE key = 'evt-3'`)
    .run('HTTP 409: JOSÉ@BÜCHER.example exists; jose\u0301@bu\u0308cher.example too');
  l.finishRun(run, 'done', {});
  l.close();
  const r = (await ledgerForget(
    { ledger: path, keys: [], email: 'José@bücher.example', confirm: async () => true },
    testCtx(dir),
  )) as ErasureCommandResult;
  assert.deepEqual(
    r.plan.found.map((f) => f.key),
    ['evt-j1'],
  );
  assert.equal(r.erasure?.scrubbed.events, 1);
  const after = openLedger(path, { readonly: true })!;
  assert.equal(
    after.db.prepare(`SELECT last_error FROM events WHERE key = 'evt-3'`).pluck().get(),
    'HTTP 409: [erased] exists; [erased] too',
  );
  after.close();
});
