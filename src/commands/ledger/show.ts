// `leadledger ledger show <key>`: one event, its attempts and the runs that touched it.
import { ExitCode, LeadledgerError } from '../../errors.js';
import type { LedgerEventRow } from '../../ledger/types.js';
import { attemptsFor, getEvent, isTombstoned, runsById, type AttemptRow } from '../../ledger/queries.js';
import type { CommandContext } from '../context.js';
import { ledgerName, resolveLedger, withLedger } from './access.js';
import { summarizeRun, type RunSummary } from './run-summary.js';

/** Options of `ledger show`. */
export interface LedgerShowOptions {
  ledger?: string;
  key: string;
}

/** An event with its history. */
export interface LedgerShowResult {
  ledger: string;
  event: LedgerEventRow & { lead: unknown };
  attempts: AttemptRow[];
  runs: RunSummary[];
}

/** Shows one event; a key not in the ledger is an error (exit 1) that says whether it was erased. Read-only. */
export async function ledgerShow(o: LedgerShowOptions, ctx: CommandContext): Promise<LedgerShowResult> {
  const path = resolveLedger(o.ledger, ctx);
  return withLedger(path, { readonly: true, env: ctx.env }, async (l) => {
    const row = await getEvent(l.sql, o.key);
    if (!row) {
      const msg = (await isTombstoned(l.sql, o.key))
        ? `key '${o.key}' was erased (ledger forget --email): only its hash remains, so the event still counts as a duplicate`
        : `key '${o.key}' is not in the ledger ${ledgerName(path)}`;
      throw new LeadledgerError(msg, ExitCode.incomplete);
    }
    const attempts = await attemptsFor(l.sql, o.key);
    const runIds = new Set<number>();
    for (const a of attempts) if (a.run_id !== null) runIds.add(a.run_id);
    if (row.run_id !== null) runIds.add(row.run_id);
    let lead: unknown;
    try {
      lead = row.lead_json === null ? null : JSON.parse(row.lead_json);
    } catch {
      lead = row.lead_json;
    }
    return {
      ledger: ledgerName(path),
      event: { ...row, lead },
      attempts,
      runs: (
        await runsById(
          l.sql,
          [...runIds].sort((a, b) => a - b),
        )
      ).map(summarizeRun),
    };
  });
}
