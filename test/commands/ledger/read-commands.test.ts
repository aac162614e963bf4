import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { ledgerList } from '../../../src/commands/ledger/list.js';
import { ledgerRuns } from '../../../src/commands/ledger/runs.js';
import { ledgerShow } from '../../../src/commands/ledger/show.js';
import { ledgerStats } from '../../../src/commands/ledger/stats.js';
import { ledgerForget } from '../../../src/commands/ledger/forget.js';
import { ExitCode, LeadledgerError, LedgerError, UsageError } from '../../../src/errors.js';
import { openLedger } from '../../../src/ledger/ledger.js';
import { SCHEMA_VERSION } from '../../../src/ledger/schema.js';
import { tmpDir } from '../../helpers/tmp.js';
import { seedLedger, testCtx } from './seed.js';

test('stats counts events by status and failure kind, by source and by run, and measures the files', async () => {
  const { dir, path } = seedLedger({ pending: true });
  const s = await ledgerStats({ ledger: path }, testCtx(dir));
  assert.equal(s.events, 6);
  assert.equal(s.schemaVersion, SCHEMA_VERSION);
  const by = Object.fromEntries(s.byStatus.map((x) => [`${x.status}/${x.failure ?? ''}`, x.count]));
  assert.deepEqual(by, { 'sent/': 3, 'failed/permanent': 1, 'in_doubt/': 1, 'pending/': 1 });
  assert.deepEqual(Object.fromEntries(s.bySource.map((x) => [x.source, x.count])), {
    'crm.csv': 2,
    'logs/events.jsonl': 2,
    'other.csv': 2,
  });
  assert.deepEqual(
    s.byRun.map((r) => [r.runId, r.command, r.count]),
    [
      [1, 'push', 4],
      [null, null, 2],
    ],
  );
  assert.ok(s.oldestFirstSeen && s.newestFirstSeen && s.oldestFirstSeen <= s.newestFirstSeen);
  assert.ok(s.size.db > 0);
  assert.equal(s.size.total, s.size.db + s.size.wal + s.size.shm);
  assert.equal(s.attempts, 3);
  assert.equal(s.runs, 1);
});

test('read-only commands on a missing ledger fail with exit 5 and say where they looked; nothing is created', async () => {
  const dir = tmpDir();
  const missing = join(dir, 'nope', 'ledger.db');
  for (const run of [
    () => ledgerStats({ ledger: missing }, testCtx(dir)),
    () => ledgerList({ ledger: missing }, testCtx(dir)),
  ]) {
    await assert.rejects(
      run,
      (e: Error) => e instanceof LedgerError && e.exitCode === ExitCode.ledger && e.message.includes(missing),
    );
  }
  assert.equal(openLedger(missing, { readonly: true }), undefined, 'no file was created');
});

test('the ledger path comes from --ledger, else LEADLEDGER_LEDGER, relative to the working directory', async () => {
  const { dir } = seedLedger();
  assert.equal((await ledgerStats({}, testCtx(dir, { LEADLEDGER_LEDGER: 'ledger.db' }))).events, 5);
  await assert.rejects(() => ledgerStats({}, testCtx(dir)), /\.leadledger\/ledger\.db/);
});

test('list filters by status, source, run and time, and limits', async () => {
  const { dir, path } = seedLedger({ pending: true });
  const ctx = testCtx(dir);
  const keys = async (o: Parameters<typeof ledgerList>[0]) =>
    (await ledgerList({ ledger: path, ...o }, ctx)).events.map((e) => e.key).sort();
  assert.deepEqual(await keys({ status: 'failed,in-doubt' }), ['evt-2', 'evt-3']);
  assert.deepEqual(await keys({ source: 'events.jsonl' }), ['evt-1', 'evt-2'], 'the last part of a path matches');
  assert.deepEqual(await keys({ source: 'logs/events.jsonl', status: 'sent' }), ['evt-1']);
  assert.deepEqual(await keys({ run: 1 }), ['evt-1', 'evt-2', 'evt-3', 'evt-4']);
  assert.deepEqual((await keys({ since: '1h' })).length, 6);
  assert.deepEqual(await keys({ until: '1h' }), []);
  // Backdate one row: `--since 7d` on first_seen leaves it out; on updated it depends on updated_at.
  const l = openLedger(path)!;
  l.db.prepare(`UPDATE events SET first_seen_at = '2020-01-01T00:00:00.000Z' WHERE key = 'evt-1'`).run();
  l.close();
  assert.ok(!(await keys({ since: '7d' })).includes('evt-1'));
  assert.ok((await keys({ since: '7d', timeField: 'updated' })).includes('evt-1'));
  assert.deepEqual(await keys({ until: '2021-01-01' }), ['evt-1']);
  const limited = await ledgerList({ ledger: path, limit: 2 }, ctx);
  assert.equal(limited.events.length, 2);
  assert.equal(limited.total, 6);
  assert.equal((await ledgerList({ ledger: path, limit: 0 }, ctx)).events.length, 6, 'limit 0 is all');
  assert.ok(!('lead_json' in limited.events[0]!), 'the stored lead is not listed');
});

test('list rejects an unknown status and a time it cannot read, as usage errors', async () => {
  const { dir, path } = seedLedger();
  await assert.rejects(
    () => ledgerList({ ledger: path, status: 'done' }, testCtx(dir)),
    (e: Error) => e instanceof UsageError && /--status/.test(e.message),
  );
  await assert.rejects(
    () => ledgerList({ ledger: path, since: 'last tuesday' }, testCtx(dir)),
    (e: Error) => e instanceof UsageError && /--since/.test(e.message),
  );
});

test('show gives the row, the stored lead, the attempts and the runs that touched the key', async () => {
  const { dir, path } = seedLedger();
  const r = await ledgerShow({ ledger: path, key: 'evt-2' }, testCtx(dir));
  assert.equal(r.event.status, 'failed');
  assert.deepEqual(r.event.lead, { email: 'bob@example.com', name: 'Person evt-2' });
  assert.deepEqual(
    r.attempts.map((a) => [a.run_id, a.outcome, a.detail]),
    [[1, 'failed', 'HTTP 400: contact bob@example.com is invalid']],
  );
  assert.deepEqual(
    r.runs.map((x) => [x.id, x.command, x.status]),
    [[1, 'push', 'done']],
  );
});

test('show of an unknown key exits 1; of an erased key it says so', async () => {
  const { dir, path } = seedLedger();
  const ctx = testCtx(dir);
  await assert.rejects(
    () => ledgerShow({ ledger: path, key: 'nope' }, ctx),
    (e: Error) => e instanceof LeadledgerError && e.exitCode === 1 && /not in the ledger/.test(e.message),
  );
  await ledgerForget({ ledger: path, keys: [], email: 'ana@example.com' }, ctx);
  await assert.rejects(
    () => ledgerShow({ ledger: path, key: 'evt-1' }, ctx),
    (e: Error) => e instanceof LeadledgerError && e.exitCode === 1 && /erased/.test(e.message),
  );
});

test('runs lists runs newest first with counts, a duration and args whose secret-named keys are masked', async () => {
  const { dir, path } = seedLedger();
  const l = openLedger(path)!;
  const second = l.startRun(
    'replay',
    { token: 'abc123', password: 'pw', headers: { Authorization: 'Basic x' } },
    { exclusive: true },
  );
  l.close();
  const r = await ledgerRuns({ ledger: path }, testCtx(dir));
  assert.deepEqual(
    r.runs.map((x) => x.id),
    [second, 1],
  );
  const [running, done] = r.runs as [(typeof r.runs)[0], (typeof r.runs)[0]];
  assert.equal(running.durationMs, null, 'a run that has not ended has no duration');
  assert.deepEqual(running.args, {
    token: '[redacted]',
    password: '[redacted]',
    headers: { Authorization: '[redacted]' },
  });
  assert.deepEqual(done.args, {
    sink: 'webhook',
    url: 'https://example.com/hook',
    authorization: '[redacted]',
    nested: { apiToken: '[redacted]' },
  });
  assert.deepEqual(done.counts, { read: 3, sent: 1, failed: 1 });
  assert.ok(done.durationMs !== null && done.durationMs >= 0);
  assert.ok(!JSON.stringify(r).includes('abc123') && !JSON.stringify(r).includes('t0k'));
  assert.equal((await ledgerRuns({ ledger: path, limit: 1 }, testCtx(dir))).runs.length, 1);
});
