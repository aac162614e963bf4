// The dry-run's ledger filters may only ever say "maybe" for what the ledger holds: a false "no" would decide a
// delivered event as new.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { BloomFilter } from '../../src/decide/bloom-filter.js';
import { fingerprint } from '../../src/decide/fingerprint.js';
import { eraseEmail } from '../../src/ledger/erase.js';
import { openLedger, type ClaimInput } from '../../src/ledger/ledger.js';
import { buildPrefilter } from '../../src/ledger/prefilter.js';
import { tmpDir } from '../helpers/tmp.js';

const fp = (s: string): Int32Array => {
  const out = new Int32Array(3);
  fingerprint(s, out, 0);
  return out;
};

function seeded(n: number) {
  const l = openLedger(join(tmpDir(), 'l.db'))!;
  const run = l.startRun('push', {}, { exclusive: true });
  const claims: ClaimInput[] = [];
  for (let i = 0; i < n; i++) claims.push({ key: `evt_${i}`, keyKind: 'id', payloadHash: 'h', naturalKey: `p${i}@x.io`, downstreamKey: `d${i}`, leadJson: '{}', source: 's', line: i });
  l.claimNew(claims, run, 'sink');
  // Sent, failed and still pending rows: the people of sent and pending rows count as delivered, of failed not.
  l.settle(claims.filter((_, i) => i % 3 !== 2).map((c, i) => (i % 2 ? { key: c.key, status: 'sent' as const } : { key: c.key, status: 'failed' as const, failure: 'permanent' as const })), run);
  l.finishRun(run, 'done', {});
  return l;
}

test('the filters say "maybe" for every key and every delivered person, and "no" for most others', () => {
  const l = seeded(3000);
  const f = buildPrefilter(l.db, 10_000);
  assert.ok(f, 'a ledger smaller than the input gets filters');
  const keys = BloomFilter.over(f.keys);
  const people = BloomFilter.over(f.people);
  const rows = l.db.prepare('SELECT key, natural_key, status FROM events').all() as Array<{ key: string; natural_key: string; status: string }>;
  assert.equal(rows.length, 3000);
  for (const r of rows) {
    const k = fp(r.key);
    assert.equal(keys.mightHave(k[2]!, k[1]!), true, r.key);
    if (r.status !== 'failed') {
      const p = fp(r.natural_key);
      assert.equal(people.mightHave(p[2]!, p[1]!), true, r.natural_key);
    }
  }
  let maybes = 0;
  for (let i = 0; i < 10_000; i++) {
    const k = fp(`other_${i}`);
    if (keys.mightHave(k[2]!, k[1]!)) maybes++;
  }
  assert.ok(maybes < 300, `${maybes} of 10,000 absent keys pass the filter`);
  l.close();
});

test('no filters for a ledger larger than the input, or one with erased keys', () => {
  const l = seeded(500);
  assert.ok(buildPrefilter(l.db, 499) === undefined, 'more events than the limit');
  assert.ok(buildPrefilter(l.db, 500) !== undefined);
  eraseEmail(l.db, 'p1@x.io');
  assert.ok(buildPrefilter(l.db, 10_000) === undefined, 'tombstones are matched by hash, which the filter lacks');
  l.close();
});
