// `leadledger ledger stats`: what the ledger holds, counted, and how big it is on disk.
import { collectStats, type LedgerStats } from '../../ledger/stats.js';
import type { CommandContext } from '../context.js';
import { ledgerName, resolveLedger, withLedger } from './access.js';

/** Options of `ledger stats`. */
export interface LedgerStatsOptions {
  ledger?: string;
}

/** The stats of one ledger, with its path. */
export interface LedgerStatsResult extends LedgerStats {
  ledger: string;
}

/** Counts the ledger's events by status, source and run; measures its storage. Read-only. */
export async function ledgerStats(o: LedgerStatsOptions, ctx: CommandContext): Promise<LedgerStatsResult> {
  const path = resolveLedger(o.ledger, ctx);
  return withLedger(path, { readonly: true, env: ctx.env }, async (l) => ({
    ledger: ledgerName(path),
    ...(await collectStats(l)),
  }));
}
