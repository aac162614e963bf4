// The stray-quote guard: whatever the chunks, the same text out and the same records given up.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CsvGuard, MAX_QUOTED_LINES } from '../../src/sources/csv-guard.js';
import { seededRandom } from '../../src/sandbox/faults.js';

function guarded(text: string, chunk: number): { out: string; strays: string[] } {
  const g = new CsvGuard(',');
  let out = '';
  for (let i = 0; i < text.length; i += chunk) out += g.push(text.slice(i, i + chunk));
  out += g.end();
  return { out, strays: g.strays.map((s) => `${s.line}-${s.toLine}: ${s.reason}`) };
}

test('well-formed quoting passes through untouched, whatever the chunks', () => {
  const text = 'id,notes\n1,"a, b"\n2,"multi\nline"\n3,"say ""hi"""\n4,""\n5,5" screen\n6,"x"y\n';
  for (const c of [1, 2, 3, 7, 1000]) assert.deepEqual(guarded(text, c), { out: text, strays: [] }, `chunks of ${c}`);
});

test('a quote that runs past the limit, or never closes, gives up its row (blank lines kept) and reads on', () => {
  const rows = ['id,name'];
  for (let i = 1; i <= 400; i++) rows.push(i === 5 ? '5,"Ana' : i === 350 ? '350,"Bia' : `${i},N${i}`);
  const text = rows.join('\n') + '\n';
  for (const c of [1, 5, 4096, 1 << 20]) {
    const { out, strays } = guarded(text, c);
    assert.equal(out.split('\n').length, text.split('\n').length, 'every line keeps its number');
    assert.equal(out.split('\n')[5], '', 'the given-up row is blank');
    assert.deepEqual(strays, [
      `6-6: stray quote? a quote opened at line 6 is not closed within ${MAX_QUOTED_LINES} lines or 64 KB: row 6 is left out, and reading goes on at line 7`,
      '351-351: stray quote? a quote opened at line 351 is never closed: row 351 is left out, and reading goes on at line 352',
    ]);
  }
});

test('random text with quotes: the same output and the same given-up rows for every chunking', () => {
  const rnd = seededRandom(5);
  const alphabet = ['a', 'b', ',', '"', '\n', '""', ' ', '\n\n'];
  for (let t = 0; t < 200; t++) {
    let text = '';
    const n = Math.floor(rnd() * 2000);
    for (let i = 0; i < n; i++) text += alphabet[Math.floor(rnd() * alphabet.length)]!;
    const whole = guarded(text, 1 << 20);
    for (const c of [1, 3, 64]) assert.deepEqual(guarded(text, c), whole, `text ${t}, chunks of ${c}`);
    assert.equal(whole.out.split('\n').length, text.split('\n').length, `text ${t}: lines kept`);
  }
});
