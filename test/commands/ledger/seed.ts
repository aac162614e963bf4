// A small, realistic ledger for the `ledger ...` command tests: one push run with sent, failed, in-doubt and
// pending events, and an import of keys and people from a CRM export.
import { join } from 'node:path';
import { openLedger } from '../../../src/ledger/ledger.js';
import type { ClaimInput } from '../../../src/ledger/types.js';
import type { CommandContext } from '../../../src/commands/context.js';
import { tmpDir } from '../../helpers/tmp.js';

/** A claim for key, whose lead is the given email. */
export const claim = (key: string, email: string, source = 'logs/events.jsonl', line = 1): ClaimInput => ({
  key,
  keyKind: 'id',
  payloadHash: 'h-' + key,
  naturalKey: email,
  downstreamKey: 'dk-' + key,
  leadJson: JSON.stringify({ email, name: 'Person ' + key }),
  source,
  line,
  eventTime: '2024-05-01T10:00:00.000Z',
});

/** A context for command functions; warnings are collected. */
export function testCtx(cwd: string, env: NodeJS.ProcessEnv = {}): CommandContext & { warnings: string[] } {
  const warnings: string[] = [];
  const never = new AbortController().signal;
  return { env, cwd, stop: never, hardStop: never, warn: (m) => warnings.push(m), warnings };
}

/**
 * Seeds a ledger: run 1 (push, done) sent evt-1 (ana), failed evt-2 (bob, permanent), left evt-3 (carla) in doubt;
 * with `pending`, evt-4 (dan) stays pending under that finished run. Then imp-1 and eve@example.com are imported.
 */
export function seedLedger(opts: { pending?: boolean } = {}): { dir: string; path: string } {
  const dir = tmpDir('leadledger-cmd-');
  const path = join(dir, 'ledger.db');
  const l = openLedger(path)!;
  const run = l.startRun(
    'push',
    { sink: 'webhook', url: 'https://example.com/hook', authorization: 'Bearer abc', nested: { apiToken: 't0k' } },
    { exclusive: true },
  );
  const claims = [
    claim('evt-1', 'ana@example.com'),
    claim('evt-2', 'bob@example.com', 'logs/events.jsonl', 2),
    claim('evt-3', 'carla@example.com', 'other.csv', 7),
  ];
  if (opts.pending) claims.push(claim('evt-4', 'dan@example.com', 'other.csv', 8));
  l.claimNew(claims, run, 'webhook https://example.com/hook');
  l.settle(
    [
      { key: 'evt-1', status: 'sent', outcome: 'created', crmId: '101' },
      { key: 'evt-2', status: 'failed', failure: 'permanent', error: 'HTTP 400: contact bob@example.com is invalid' },
      { key: 'evt-3', status: 'in_doubt', error: 'timeout' },
    ],
    run,
  );
  l.finishRun(run, 'done', { read: claims.length, sent: 1, failed: 1 });
  l.importDelivered([{ key: 'imp-1' }, { naturalKey: 'eve@example.com', crmId: '555' }], 'crm.csv');
  l.close();
  return { dir, path };
}
