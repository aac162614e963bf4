import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BloomFilter } from '../../src/engine/bloom-filter.js';
import { fingerprint } from '../../src/engine/fingerprint.js';
import { FpTable } from '../../src/engine/fp-table.js';

const fp = (s: string): Int32Array => {
  const out = new Int32Array(3);
  fingerprint(s, out, 0);
  return out;
};

test('fingerprints differ for near-identical strings and never start with a 0 word', () => {
  const seen = new Set<string>();
  const strings = [
    '',
    'a',
    'b',
    'ab',
    'ba',
    'evt_1',
    'evt_10',
    'evt_01',
    'ana@exämple.com',
    '😀',
    'x'.repeat(7),
    'x'.repeat(8),
    'x'.repeat(9),
  ];
  for (let i = 0; i < 50_000; i++) strings.push(`evt_${i}`, `p${i}@example.com`);
  for (const s of strings) {
    const f = fp(s);
    assert.notEqual(f[0], 0, s);
    seen.add(f.join(','));
  }
  assert.equal(seen.size, new Set(strings).size, 'no two of these strings share a fingerprint');
  assert.deepEqual(fp('evt_1'), fp('evt_1'), 'the same string always gives the same fingerprint');
});

test('a table finds every entry, in memory or in any spilled run, and nothing else', () => {
  // 256 slots: spills every 128 entries; a 4096-bit Bloom filter to start with, which has to grow twice.
  const t = new FpTable(4, 100, 12);
  const entry = new Uint32Array(4);
  const n = 5000;
  for (let i = 0; i < n; i++) {
    const f = fp(`k${i}`);
    assert.equal(t.get(f[0]!, f[1]!, f[2]!), false, `k${i} before it is added`);
    entry.set(f);
    entry[3] = i;
    t.add(entry);
  }
  assert.ok(t.spills >= 30, `${t.spills} spilled runs`);
  assert.equal(t.bloomBits, 16, 'the Bloom filter grew with the spilled entries');
  for (let i = 0; i < n; i++) {
    const f = fp(`k${i}`);
    assert.equal(t.get(f[0]!, f[1]!, f[2]!), true, `k${i}`);
    assert.equal(t.found[3], i, `k${i} keeps its entry`);
  }
  for (let i = n; i < 4 * n; i++) {
    const f = fp(`k${i}`);
    assert.equal(t.get(f[0]!, f[1]!, f[2]!), false, `k${i} was never added`);
  }
  t.close();
});

test('entries whose home slots collide are all found after a spill, also across the end of the table', () => {
  const t = new FpTable(3, 8); // 16 slots
  const entries: number[][] = [];
  // Same home slot (second word) for most, and home slots at the very end, so probe sequences wrap around.
  for (let i = 0; i < 7; i++) entries.push([2 * i + 1, i < 4 ? 15 : 14, 100 + i]);
  for (const e of entries) t.add(e);
  t.add([99, 0, 1]); // the 8th entry spills the table
  assert.equal(t.spills, 1);
  for (const e of entries) assert.equal(t.get(e[0]!, e[1]!, e[2]!), true, e.join(' '));
  assert.equal(t.get(99, 0, 1), true);
  assert.equal(t.get(3, 15, 999), false);
  t.close();
});

test('a Bloom filter never forgets what it was given', () => {
  const b = new BloomFilter(17);
  for (let i = 0; i < 5000; i++) {
    const f = fp(`evt_${i}`);
    b.add(f[2]!, f[1]!);
  }
  for (let i = 0; i < 5000; i++) {
    const f = fp(`evt_${i}`);
    assert.equal(b.mightHave(f[2]!, f[1]!), true);
  }
  let falsePositives = 0;
  for (let i = 5000; i < 15000; i++) {
    const f = fp(`evt_${i}`);
    if (b.mightHave(f[2]!, f[1]!)) falsePositives++;
  }
  // About 26 bits per entry: well under 1% expected; a broken hash would say yes to most.
  assert.ok(falsePositives < 100, `${falsePositives} false positives in 10000`);
});
