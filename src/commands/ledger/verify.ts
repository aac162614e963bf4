// `leadledger ledger verify`: is the file sound and does the ledger hold to its own rules?
import { verifyLedger, type VerifyProblem } from '../../ledger/verify.js';
import type { CommandContext } from '../context.js';
import { resolveLedger, withLedger } from './access.js';

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
export function ledgerVerify(o: LedgerVerifyOptions, ctx: CommandContext): LedgerVerifyResult {
  const path = resolveLedger(o.ledger, ctx);
  return withLedger(path, { readonly: true }, (l) => {
    const problems = verifyLedger(l.db);
    return { ledger: path, ok: problems.length === 0, problems };
  });
}
