// `leadledger ledger prune --older-than 90d`: payload retention. By default the stored lead of old sent events is
// cleared (the rows stay, so the events are still skipped as duplicates); with --rows the sent rows themselves go,
// and those events become eligible to be sent again. Pending, failed and in-doubt rows are never touched.
import { UsageError } from '../../errors.js';
import { planPrune, prune, type PruneMode } from '../../ledger/prune.js';
import type { CommandContext } from '../context.js';
import { ledgerName, parseTimeFlag, resolveLedger, withLedger } from './access.js';
import { locked, type Confirm } from './change.js';

/** Options of `ledger prune`. */
export interface LedgerPruneOptions {
  ledger?: string;
  /** An age (90d, 12h) or an ISO date: sent rows last updated before it are pruned. */
  olderThan?: string;
  /** Delete the rows instead of clearing their payload. */
  rows?: boolean;
  dryRun?: boolean;
  confirm?: Confirm;
}

/** What a prune found and did. */
export interface LedgerPruneResult {
  ledger: string;
  mode: PruneMode;
  cutoff: string;
  dryRun: boolean;
  applied: boolean;
  /** Sent rows matching the cutoff when planned. */
  matched: number;
  oldest: string | null;
  newest: string | null;
  changed: number;
  attemptsDeleted: number;
}

/** Prunes payloads (or rows) of sent events older than the cutoff; dryRun only counts them, read-only. */
export async function ledgerPrune(o: LedgerPruneOptions, ctx: CommandContext): Promise<LedgerPruneResult> {
  if (!o.olderThan) throw new UsageError('prune needs --older-than <age>, e.g. --older-than 90d');
  const cutoff = parseTimeFlag('--older-than', o.olderThan);
  if (cutoff.getTime() > Date.now()) throw new UsageError(`--older-than ${o.olderThan} is in the future`);
  const mode: PruneMode = o.rows ? 'rows' : 'payloads';
  const path = resolveLedger(o.ledger, ctx);
  const plan = await withLedger(path, { readonly: true, env: ctx.env }, (l) => planPrune(l.sql, cutoff, mode));
  const res: LedgerPruneResult = {
    ledger: ledgerName(path),
    mode,
    cutoff: cutoff.toISOString(),
    dryRun: !!o.dryRun,
    applied: false,
    matched: plan.count,
    oldest: plan.oldest,
    newest: plan.newest,
    changed: 0,
    attemptsDeleted: 0,
  };
  if (o.dryRun || !plan.count) return res;
  const n = `${plan.count} sent event${plan.count === 1 ? '' : 's'} last updated before ${res.cutoff}`;
  const question =
    mode === 'rows'
      ? `Delete ${n}? They will no longer count as delivered: a later push that reads them sends them again.`
      : `Clear the stored lead of ${n}? They still count as delivered, but can no longer be replayed.`;
  if (o.confirm && !(await o.confirm(question))) return res;
  return locked(
    path,
    'ledger prune',
    { mode, olderThan: o.olderThan },
    async (l) => ({ ...res, applied: true, ...(await prune(l.sql, cutoff, mode)) }),
    ctx.env,
  );
}
