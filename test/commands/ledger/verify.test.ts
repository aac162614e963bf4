import { test } from 'node:test';
import assert from 'node:assert/strict';
import { openSync, writeSync, closeSync, statSync } from 'node:fs';
import { ledgerVerify } from '../../../src/commands/ledger/verify.js';
import { openLedger } from '../../../src/ledger/ledger.js';
import { tombstoneHash } from '../../../src/ledger/queries.js';
import { seedLedger, testCtx } from './seed.js';

test('a ledger written by the ledger API verifies clean', async () => {
  const { dir, path } = seedLedger();
  assert.deepEqual(await ledgerVerify({ ledger: path }, testCtx(dir)), { ledger: path, ok: true, problems: [] });
});

test('a deliberately broken ledger: every broken invariant is reported with examples', async () => {
  const { dir, path } = seedLedger({ pending: true });
  const l = openLedger(path)!;
  const x = (sql: string, ...p: unknown[]) => l.db.prepare(sql).run(...p);
  x(`UPDATE events SET status = 'delivered' WHERE key = 'imp-1'`);
  x(`UPDATE events SET failure = NULL WHERE key = 'evt-2'`);
  x(`UPDATE events SET sent_at = NULL WHERE key = 'evt-1'`);
  x(`UPDATE events SET run_id = 99 WHERE key = 'evt-3'`);
  x(`UPDATE events SET lead_json = '{broken' WHERE key = 'evt-3'`);
  x(
    `INSERT INTO attempts (key, run_id, at, outcome, detail) VALUES ('ghost', 1, '2024-01-01T00:00:00.000Z', 'failed', NULL)`,
  );
  x(`UPDATE runs SET status = 'weird' WHERE id = 1`);
  x(`INSERT INTO tombstones (key_hash) VALUES (?)`, tombstoneHash('evt-1'));
  l.close();
  const r = await ledgerVerify({ ledger: path }, testCtx(dir));
  assert.equal(r.ok, false);
  const found = Object.fromEntries(r.problems.map((p) => [p.check, p.examples]));
  assert.deepEqual(found, {
    status: ['imp-1'],
    'orphan-pending': ['evt-4'],
    'unknown-run': ['evt-3'],
    'failed-kind': ['evt-2'],
    'sent-at': ['evt-1'],
    'lead-json': ['evt-3'],
    'orphan-attempts': ['ghost'],
    'run-status': ['1'],
    'tombstoned-present': ['evt-1'],
  });
});

test('a damaged file is reported by the integrity check, not thrown', async () => {
  const { dir, path } = seedLedger();
  // Overwrite the middle of the file (past the header), where table pages live.
  const size = statSync(path).size;
  const fd = openSync(path, 'r+');
  writeSync(fd, Buffer.alloc(Math.min(4096, size - 4096), 0xab), 0, undefined, 4096);
  closeSync(fd);
  const r = await ledgerVerify({ ledger: path }, testCtx(dir));
  assert.equal(r.ok, false);
  assert.deepEqual(
    r.problems.map((p) => p.check),
    ['integrity'],
  );
});
