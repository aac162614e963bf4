import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BloomFilter } from '../../src/decide/bloom-filter.js';
import { SpillMap } from '../../src/decide/spill-map.js';

test('a spill map returns every value, from memory or from its spill file, and nothing for absent keys', () => {
  const m = new SpillMap(3);
  for (let i = 0; i < 20; i++) {
    assert.equal(m.get(`k${i}`), undefined);
    m.add(`k${i}`, `v${i}`);
  }
  assert.equal(m.hasSpilled, true, 'capacity 3 spills');
  assert.equal(m.size, 20);
  for (let i = 0; i < 20; i++) assert.equal(m.get(`k${i}`), `v${i}`, `k${i}`);
  for (let i = 20; i < 200; i++) assert.equal(m.get(`k${i}`), undefined);
  m.close();
});

test('a spill map keeps values with tabs, unicode and empty-looking keys intact', () => {
  const m = new SpillMap(2);
  const entries: Array<[string, string]> = [['ana@exämple.com', 'h\t0\t1'], [' ', 'x'], ['0', '0'], ['c:abc', 'h2\t1\t99'], ['z', '']];
  for (const [k, v] of entries) m.add(k, v);
  for (const [k, v] of entries) assert.equal(m.get(k), v);
  m.close();
});

test('a Bloom filter never forgets a string it was given', () => {
  const b = new BloomFilter(16, 7);
  for (let i = 0; i < 5000; i++) b.add(`evt_${i}`);
  for (let i = 0; i < 5000; i++) assert.equal(b.mightHave(`evt_${i}`), true);
  let falsePositives = 0;
  for (let i = 5000; i < 15000; i++) if (b.mightHave(`evt_${i}`)) falsePositives++;
  // 65536 bits for 5000 strings: about 1% expected; a broken hash would say yes to most.
  assert.ok(falsePositives < 500, `${falsePositives} false positives in 10000`);
});
