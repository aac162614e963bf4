// Changing the ledger from a management command (forget, prune): confirmed first, then applied under the run lock.
import type { LedgerStore } from '../../ledger/store.js';
import { openExistingLedger } from './access.js';

/** Asks the person to confirm a change (the CLI reads a TTY, or requires --yes); false means leave things as they are. */
export type Confirm = (question: string) => Promise<boolean>;

/**
 * Applies a change under the run lock: a live push could otherwise settle, or re-claim, a row being deleted. The
 * change is recorded as a run of its own.
 */
export async function locked<T extends object>(
  path: string,
  command: string,
  args: Record<string, unknown>,
  fn: (l: LedgerStore) => T | Promise<T>,
  env?: Record<string, string | undefined>,
): Promise<T> {
  const l = await openExistingLedger(path, { readonly: false, env });
  try {
    const run = await l.startRun(command, args, { exclusive: true });
    try {
      const r = await fn(l);
      await l.finishRun(run, 'done', countsOf(r));
      return r;
    } catch (e) {
      await l.finishRun(run, 'failed', { error: (e as Error).message });
      throw e;
    }
  } finally {
    await l.close();
  }
}

// Only the numbers go into the run record: plans hold event keys, which are not needed there.
function countsOf(r: object): Record<string, number> {
  const out: Record<string, number> = {};
  const walk = (o: object, prefix: string) => {
    for (const [k, v] of Object.entries(o) as Array<[string, unknown]>) {
      if (typeof v === 'number') out[prefix + k] = v;
      else if (v && typeof v === 'object' && !Array.isArray(v) && k !== 'plan') walk(v, prefix + k + '.');
    }
  };
  walk(r, '');
  return out;
}
