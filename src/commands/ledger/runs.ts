// `leadledger ledger runs`: the recorded runs, newest first.
import { listRuns } from '../../ledger/queries.js';
import type { CommandContext } from '../context.js';
import { ledgerName, resolveLedger, withLedger } from './access.js';
import { summarizeRun, type RunSummary } from './run-summary.js';

/** Options of `ledger runs`. */
export interface LedgerRunsOptions {
  ledger?: string;
  /** At most this many runs; 0 for all. */
  limit?: number;
}

/** The runs shown and how many are recorded. */
export interface LedgerRunsResult {
  ledger: string;
  total: number;
  runs: RunSummary[];
}

/** Lists recorded runs with their counts and (redacted) arguments. Read-only. */
export async function ledgerRuns(o: LedgerRunsOptions, ctx: CommandContext): Promise<LedgerRunsResult> {
  const path = resolveLedger(o.ledger, ctx);
  return withLedger(path, { readonly: true, env: ctx.env }, async (l) => {
    const { rows, total } = await listRuns(l.sql, o.limit ?? 20);
    return { ledger: ledgerName(path), total, runs: rows.map(summarizeRun) };
  });
}
