import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ledgerPrune } from '../../../src/commands/ledger/prune.js';
import { UsageError } from '../../../src/errors.js';
import { openLedger } from '../../../src/ledger/ledger.js';
import { seedLedger, testCtx } from './seed.js';

// Every seeded row is made 200 days old, except evt-1 (sent) stays recent.
function agedLedger() {
  const s = seedLedger({ pending: true });
  const l = openLedger(s.path)!;
  const old = new Date(Date.now() - 200 * 86_400_000).toISOString();
  l.db.prepare(`UPDATE events SET first_seen_at = ?, updated_at = ? WHERE key <> 'evt-1'`).run(old, old);
  l.close();
  return s;
}

const rows = (path: string) => {
  const l = openLedger(path, { readonly: true })!;
  const r = l.db.prepare('SELECT key, status, lead_json FROM events ORDER BY key').all() as Array<{
    key: string;
    status: string;
    lead_json: string | null;
  }>;
  l.close();
  return r;
};

test('prune clears the stored lead of old sent events only; the rows stay and still count as delivered', async () => {
  const { dir, path } = agedLedger();
  const l0 = openLedger(path)!;
  // Give an imported (old, sent) row a payload too, so the count is not only about evt-1.
  l0.db.prepare(`UPDATE events SET lead_json = '{"email":"x@y.io"}' WHERE key = 'imp-1'`).run();
  l0.close();
  const r = await ledgerPrune({ ledger: path, olderThan: '90d' }, testCtx(dir));
  assert.equal(r.mode, 'payloads');
  assert.equal(r.matched, 1);
  assert.equal(r.changed, 1);
  const after = rows(path);
  assert.equal(after.find((x) => x.key === 'imp-1')!.lead_json, null);
  assert.notEqual(after.find((x) => x.key === 'evt-1')!.lead_json, null, 'a recent sent event keeps its payload');
  for (const k of ['evt-2', 'evt-3', 'evt-4'])
    assert.notEqual(after.find((x) => x.key === k)!.lead_json, null, `${k} (not sent) keeps its payload`);
  assert.equal(after.length, 6);
});

test('prune --rows deletes old sent rows (they become eligible again) and never pending, failed or in-doubt ones', async () => {
  const { dir, path } = agedLedger();
  const asked: string[] = [];
  const r = await ledgerPrune(
    { ledger: path, olderThan: '90d', rows: true, confirm: async (q) => (asked.push(q), true) },
    testCtx(dir),
  );
  assert.match(asked[0]!, /^Delete 2 sent events last updated before .*sends them again/);
  assert.equal(r.changed, 2);
  assert.deepEqual(
    rows(path).map((x) => x.key),
    ['evt-1', 'evt-2', 'evt-3', 'evt-4'],
  );
  const l = openLedger(path)!;
  assert.equal(l.lookupKeys(['imp-1']).size, 0, 'a pruned row is eligible again');
  l.close();
});

test('prune --dry-run counts and changes nothing; a no at the prompt changes nothing', async () => {
  const { dir, path } = agedLedger();
  const before = rows(path);
  const d = await ledgerPrune({ ledger: path, olderThan: '90d', rows: true, dryRun: true }, testCtx(dir));
  assert.equal(d.matched, 2);
  assert.equal(d.applied, false);
  const n = await ledgerPrune({ ledger: path, olderThan: '90d', rows: true, confirm: async () => false }, testCtx(dir));
  assert.equal(n.applied, false);
  assert.deepEqual(rows(path), before);
});

test('prune needs a readable --older-than in the past', async () => {
  const { dir, path } = seedLedger();
  await assert.rejects(ledgerPrune({ ledger: path }, testCtx(dir)), UsageError);
  await assert.rejects(ledgerPrune({ ledger: path, olderThan: 'three months' }, testCtx(dir)), /--older-than/);
  await assert.rejects(ledgerPrune({ ledger: path, olderThan: '2999-01-01' }, testCtx(dir)), /in the future/);
});
