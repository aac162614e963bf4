// A damaged ledger (a real one whose pages were overwritten) is a ledger problem: exit 5, saying it is damaged and
// pointing at `leadledger ledger verify` — never an invalid input record, never an unexpected error, and on the
// parallel paths of a dry-run (an index read in the input loop, map workers looking it up) as on the others.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { decideInputs } from '../../../src/engine/decide-inputs.js';
import { LedgerError } from '../../../src/errors.js';
import { openLedger } from '../../../src/ledger/ledger.js';
import { runCli } from '../../helpers/cli.js';
import { damagedLedgerInput, writeDamagedLedger } from '../../helpers/damage.js';
import { snapshot } from '../../helpers/files.js';
import { tmpDir } from '../../helpers/tmp.js';

const DAMAGED =
  /^leadledger: error: ledger .*ledger\.db is damaged \(.*\); `leadledger ledger verify --ledger .*` tells what is wrong\n$/;

/**
 * stderr without the plain progress lines a run off a terminal prints every few seconds once it has run three: how
 * many come before the error depends on the machine's speed (`[time] read N · …` on stdin, `[time] 9% of 11.5 MB ·
 * read N · …` on files).
 */
const withoutProgress = (stderr: string) => stderr.replace(/^\[\d{4}-\d\d-\d\dT[\d:.]+Z\] .*· .*\n/gm, '');

for (const erasedKey of [false, true]) {
  const how = erasedKey ? 'looked up by its map workers' : 'read into an index';
  test(`push --dry-run of a large JSONL input against a damaged ledger ${how}: exit 5, it is damaged`, async () => {
    const dir = tmpDir();
    const path = join(dir, 'ledger.db');
    writeDamagedLedger(path, { erasedKey });
    const input = join(dir, 'events.jsonl');
    writeFileSync(input, damagedLedgerInput());
    assert.ok(statSync(input).size > 8 << 20, 'large enough for map workers');
    const before = snapshot(path).db;
    const r = await runCli(['push', input, '--dry-run', '--ledger', path]);
    assert.equal(r.code, 5, r.stderr);
    const stderr = withoutProgress(r.stderr);
    assert.match(stderr, DAMAGED);
    assert.doesNotMatch(stderr, /input failed|invalid|unexpected/);
    assert.equal(snapshot(path).db, before, 'a dry-run writes nothing');
  });
}

test('decideInputs on a damaged ledger rejects with a LedgerError, in-thread, indexed or looked up by workers, JSONL or CSV', async () => {
  const dir = tmpDir();
  const path = join(dir, 'ledger.db');
  writeDamagedLedger(path);
  const jsonl = join(dir, 'events.jsonl');
  writeFileSync(jsonl, damagedLedgerInput());
  const csv = join(dir, 'events.csv');
  const rows = damagedLedgerInput()
    .trim()
    .split('\n')
    .map((l) => {
      const e = JSON.parse(l) as { event_id: string; email: string };
      return `${e.event_id},${e.email}`;
    });
  writeFileSync(csv, ['event_id,email', ...rows].join('\n') + '\n');
  const paths = [{ workers: 0 }, { workers: 0, indexMaxRows: 0 }, { workers: 2 }, { workers: 2, indexMaxRows: 0 }];
  for (const input of [jsonl, csv])
    for (const p of paths) {
      const what = `${input.slice(-4)} ${JSON.stringify(p)}`;
      const ledger = openLedger(path, { readonly: true })!;
      await assert.rejects(
        async () => {
          for await (const batch of decideInputs({ inputs: [input], read: {}, map: { config: {} }, ledger, ...p }))
            for (const d of batch) assert.doesNotMatch(d.reason, /input failed/, what);
        },
        (e: unknown) => e instanceof LedgerError && /is damaged/.test(e.message),
        what,
      );
      ledger.close();
    }
});

test('ledger stats and list on a damaged ledger exit 5, it is damaged; verify exits 5 with the integrity problem', async () => {
  const dir = tmpDir();
  const path = join(dir, 'ledger.db');
  writeDamagedLedger(path);
  for (const args of [['stats'], ['list', '--limit', '0']]) {
    const r = await runCli(['ledger', ...args, '--ledger', path]);
    assert.equal(r.code, 5, `${args[0]}: ${r.stderr}`);
    assert.match(r.stderr, DAMAGED, args[0]);
  }
  const v = await runCli(['ledger', 'verify', '--ledger', path]);
  assert.equal(v.code, 5, v.stderr);
  assert.match(v.stdout, /integrity/);
});

test('a push, a replay and an export on a damaged ledger exit 5, it is damaged (not an unexpected error)', async () => {
  const dir = tmpDir();
  const input = join(dir, 'events.jsonl');
  writeFileSync(input, damagedLedgerInput());
  const runs = [
    ['push', input, '--sink', 'jsonl', '--output', join(dir, 'out.jsonl')],
    ['replay', '--dry-run', '--in-doubt', '--permanent'],
    ['ledger', 'export', '--output', join(dir, 'export.csv')],
  ];
  for (const args of runs) {
    const path = join(tmpDir(), 'ledger.db');
    writeDamagedLedger(path);
    const r = await runCli([...args, '--ledger', path]);
    assert.equal(r.code, 5, `${args[0]}: ${r.stderr}`);
    assert.match(withoutProgress(r.stderr), DAMAGED, args[0]);
  }
});
