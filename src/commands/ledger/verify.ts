// `leadledger ledger verify`: is the file sound and does the ledger hold to its own rules?
import { verifyLedger, type VerifyProblem } from '../../ledger/verify.js';
import type { CommandContext } from '../context.js';
import { ledgerName, resolveLedger, withLedger } from './access.js';

/** Options of `ledger verify`. */
export interface LedgerVerifyOptions {
  ledger?: string;
}

/** The verdict: ok when no problem was found. */
export interface LedgerVerifyResult {
  ledger: string;
  ok: boolean;
  problems: VerifyProblem[];
}

/** Runs SQLite's integrity check and the ledger invariants. Read-only; the CLI exits 5 when problems are found. */
export async function ledgerVerify(o: LedgerVerifyOptions, ctx: CommandContext): Promise<LedgerVerifyResult> {
  const path = resolveLedger(o.ledger, ctx);
  return withLedger(path, { readonly: true, env: ctx.env }, async (l) => {
    const problems = await verifyLedger(l);
    return { ledger: ledgerName(path), ok: problems.length === 0, problems };
  });
}
