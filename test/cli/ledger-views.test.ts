// How `ledger runs` shows what each run recorded: its counts however a command grouped them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { formatRuns } from '../../src/cli/ledger-views.js';
import type { RunSummary } from '../../src/commands/ledger/run-summary.js';

const run = (id: number, status: string, counts: unknown): RunSummary => ({
  id,
  command: 'push',
  status,
  host: 'h',
  pid: 1,
  startedAt: '2026-12-03T12:00:00.000Z',
  endedAt: '2026-12-03T12:00:01.000Z',
  durationMs: 1000,
  counts,
  args: null,
});

test('ledger runs: delivered first, then the run’s own values (an error too), then the decisions; zeros left out', () => {
  const text = formatRuns({
    ledger: 'l.db',
    total: 3,
    runs: [
      run(3, 'failed', { error: 'cannot read ids.txt: ENOENT' }),
      run(2, 'done', {
        counts: { read: 25, new: 0, duplicate: 16 },
        delivery: { sent: 0, inDoubt: 0 },
        inDoubtInLedger: 16,
      }),
      run(1, 'done', { counts: { read: 25, new: 16 }, delivery: { sent: 16, failed: 0 } }),
    ],
  });
  const rows = text.split('\n').slice(1);
  assert.match(rows[0]!, /failed .* error=cannot read ids\.txt: ENOENT/);
  assert.match(rows[1]!, /done .* inDoubtInLedger=16 read=25 duplicate=16$/);
  assert.match(rows[2]!, /done .* sent=16 read=25 new=16$/);
});
