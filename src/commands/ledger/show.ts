// `leadledger ledger show <key>`: one event, its attempts and the runs that touched it.
import { ExitCode, LeadledgerError } from '../../errors.js';
import type { LedgerEventRow } from '../../ledger/types.js';
import { attemptsFor, getEvent, isTombstoned, runsById, type AttemptRow } from '../../ledger/queries.js';
import type { CommandContext } from '../context.js';
import { resolveLedger, withLedger } from './access.js';
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
export function ledgerShow(o: LedgerShowOptions, ctx: CommandContext): LedgerShowResult {
  const path = resolveLedger(o.ledger, ctx);
  return withLedger(path, { readonly: true }, (l) => {
    const row = getEvent(l.db, o.key);
    if (!row) {
      const msg = isTombstoned(l.db, o.key)
        ? `key '${o.key}' was erased (ledger forget --email): only its hash remains, so the event still counts as a duplicate`
        : `key '${o.key}' is not in the ledger ${path}`;
      throw new LeadledgerError(msg, ExitCode.incomplete);
    }
    const attempts = attemptsFor(l.db, o.key);
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
      ledger: path,
      event: { ...row, lead },
      attempts,
      runs: runsById(
        l.db,
        [...runIds].sort((a, b) => a - b),
      ).map(summarizeRun),
    };
  });
}
