// The fast reader of well-formed CSV must yield exactly what readCsv (csv-parse) yields for the same text.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { NotWellFormed, readCsv, readCsvWellFormed } from '../../src/sources/read-csv.js';
import type { RawItem } from '../../src/sources/types.js';

async function collect(read: typeof readCsv, text: string, delimiter: string, lineOffset = 0): Promise<RawItem[]> {
  async function* chunks(): AsyncGenerator<Buffer> {
    // Uneven chunks, so CRLF and multi-byte characters are split across them.
    const b = Buffer.from(text, 'utf8');
    for (let i = 0; i < b.length; i += 997) yield b.subarray(i, i + 997);
  }
  const out: RawItem[] = [];
  for await (const batch of read(
    chunks(),
    { source: 's.csv', selector: null, progress: { line: 0 }, lineOffset },
    { encoding: 'utf-8', delimiter },
  ))
    out.push(...batch);
  return out;
}

function randomCsv(seed: number, delimiter: string): string {
  let s = seed;
  const rnd = () => (s = (s * 1664525 + 1013904223) >>> 0) / 4294967296;
  const eol = rnd() < 0.5 ? '\n' : '\r\n';
  const cell = (): string => {
    const r = rnd();
    if (r < 0.15) return '';
    if (r < 0.25) return '""';
    if (r < 0.4) return `"a${delimiter}b ""q"" ${rnd() < 0.5 ? eol : '\n'}c"`;
    if (r < 0.5) return ' spaced ';
    if (r < 0.6) return 'São Paulo ✓';
    return `v${Math.floor(rnd() * 1000)}`;
  };
  const rows = [['id', 'email', 'name', 'note'].join(delimiter)];
  for (let i = 0; i < 400; i++) {
    const r = rnd();
    if (r < 0.05) rows.push('');
    else if (r < 0.08) rows.push(delimiter.repeat(3));
    else {
      const n = r < 0.12 ? 3 : r < 0.15 ? 6 : 4; // short and long rows are rejects, the same way in both
      rows.push(Array.from({ length: n }, cell).join(delimiter));
    }
  }
  return (rnd() < 0.3 ? eol : '') + rows.join(eol) + (rnd() < 0.5 ? eol : '');
}

test('the fast reader of well-formed CSV yields what csv-parse yields', async () => {
  for (let seed = 1; seed <= 60; seed++) {
    const delimiter = [',', ';', '\t', '|'][seed % 4]!;
    const text = randomCsv(seed, delimiter);
    const offset = seed % 3 === 0 ? 1000 : 0;
    assert.deepEqual(
      await collect(readCsvWellFormed, text, delimiter, offset),
      await collect(readCsv, text, delimiter, offset),
      `seed ${seed}`,
    );
  }
});

test('the fast reader refuses what it does not read', async () => {
  for (const text of ['id,name\n1,"never closed\n2,b\n', 'id,name\n1,"a"b\n', 'id,name\n1,5" screen\n']) {
    await assert.rejects(collect(readCsvWellFormed, text, ','), NotWellFormed, JSON.stringify(text));
  }
});
