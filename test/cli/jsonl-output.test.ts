// The jsonl sink as a user runs it: the built CLI, the real deliver path (4 batches in flight), a real file.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runCli, type CliResult } from '../helpers/cli.js';
import { tmpDir } from '../helpers/tmp.js';

type Report = { delivery: Record<string, number>; exitCode: number };
const doc = (r: CliResult) => JSON.parse(r.stdout) as Report;

/** n leads, each with a 2 KB custom field, and a config that maps it: batches of 500 are ~1 MB each. */
function bigLeads(dir: string, n: number): { input: string; config: string } {
  const input = join(dir, 'big.jsonl');
  const lines: string[] = [];
  for (let i = 0; i < n; i++) {
    const notes = `${i}:`.padEnd(2048, String.fromCharCode(97 + (i % 26)));
    lines.push(JSON.stringify({ event_id: `evt_big_${i}`, email: `p${i}@example.com`, name: `Person ${i}`, notes }));
  }
  writeFileSync(input, lines.join('\n') + '\n');
  const config = join(dir, 'leadledger.config.json');
  writeFileSync(config, JSON.stringify({ fields: { custom: { notes: 'notes' } } }));
  return { input, config };
}

test('jsonl: 5,000 leads of 2 KB with 4 batches in flight are 5,000 whole JSON lines', async () => {
  const dir = tmpDir();
  const { input, config } = bigLeads(dir, 5000);
  const out = join(dir, 'out.jsonl');
  const r = await runCli(
    ['push', input, '--sink', 'jsonl', '--output', out, '--config', config, '--ledger', join(dir, 'l.db'), '--json'],
    { timeoutMs: 120_000 },
  );
  assert.equal(r.code, 0, r.stderr);
  assert.equal(doc(r).delivery.sent, 5000);
  const lines = readFileSync(out, 'utf8').split('\n');
  assert.equal(lines.pop(), '', 'the file ends with a newline');
  assert.equal(lines.length, 5000);
  const keys = new Set<string>();
  lines.forEach((line, i) => {
    let parsed: { key: string; lead: { notes: string } };
    assert.doesNotThrow(() => (parsed = JSON.parse(line) as typeof parsed), `line ${i + 1} is not JSON`);
    keys.add(parsed!.key);
    assert.equal(parsed!.lead.notes.length, 2048);
  });
  assert.equal(keys.size, 5000, 'every lead once');
});
