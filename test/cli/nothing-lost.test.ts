// Silent loss and corruption, tried as a careful user with unlucky inputs would: the built CLI on real files.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runCli } from '../helpers/cli.js';
import { tmpDir } from '../helpers/tmp.js';

const report = (s: string) =>
  JSON.parse(s) as {
    counts: Record<string, number>;
    exitCode: number;
    examples: Record<string, Array<{ reason: string }>>;
  };

test('a null in an earlier record hides no field from later records of its shape (stdin)', async () => {
  const input =
    [
      '{"event_id":"e1","email":"a@example.com","phone":null}',
      '{"event_id":"e2","email":null,"phone":"+5511987654321"}',
    ].join('\n') + '\n';
  const r = await runCli(
    ['push', '-', '--format', 'jsonl', '--dry-run', '--json', '--ledger', join(tmpDir(), 'l.db')],
    { input },
  );
  assert.equal(r.code, 0, r.stderr);
  const doc = report(r.stdout);
  assert.equal(doc.counts.new, 2, JSON.stringify(doc.examples));
  assert.equal(doc.counts.invalid, 0);
});

test('nulls, booleans and objects in mapped fields decide the same with map workers as in-thread, wherever blocks are cut', async () => {
  // Over 8 MiB, so the workers map it; the small copy is mapped in-thread. Every record of one shape.
  const lines: string[] = [];
  for (let i = 0; lines.join('\n').length < 9 << 20 || i % 7 !== 0; i++) {
    const odd = i % 5 === 0;
    lines.push(
      JSON.stringify({
        event_id: `e${i}`,
        email: odd ? null : `p${i}@example.com`,
        phone: i % 3 === 0 ? { n: 1 } : i % 3 === 1 ? null : `+55119${String(10000000 + i).slice(-8)}`,
        name: i % 4 === 0 ? true : `Pessoa ${i}`,
        pad: 'x'.repeat(200),
      }),
    );
  }
  const dir = tmpDir();
  const big = join(dir, 'big.jsonl');
  writeFileSync(big, lines.join('\n') + '\n');
  const r = await runCli(['push', big, '--dry-run', '--json', '--ledger', join(dir, 'l.db')], { timeoutMs: 120_000 });
  assert.equal(r.code, 0, r.stderr);
  const doc = report(r.stdout);
  // Every record has an email or a valid phone except those with neither: every 5th has a null email, and of
  // those, a third have a phone (i % 3 === 2).
  const invalid = lines.filter((_, i) => i % 5 === 0 && i % 3 !== 2).length;
  assert.equal(doc.counts.read, lines.length);
  assert.equal(doc.counts.invalid, invalid);
  assert.equal(doc.counts.new, lines.length - invalid);
});
