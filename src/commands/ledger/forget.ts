// `leadledger ledger forget`: delete events so they are eligible again (`forget <key...>`), or erase a person
// (`forget --email`, LGPD/GDPR): their keys stay known as tombstones, and no byte of the address stays on disk.
import { UsageError } from '../../errors.js';
import {
  eraseEmail,
  forgetKeys,
  planErasure,
  planForgetKeys,
  type ErasurePlan,
  type ErasureResult,
  type ForgetKeysPlan,
} from '../../ledger/erase.js';
import { normalizeEmail } from '../../mapping/normalize.js';
import type { CommandContext } from '../context.js';
import { ledgerName, resolveLedger, withLedger } from './access.js';
import { locked, type Confirm } from './change.js';

/** Options of `ledger forget`: keys, or --email, not both. */
export interface LedgerForgetOptions {
  ledger?: string;
  keys: string[];
  email?: string;
  dryRun?: boolean;
  /** Called once before anything changes; absent means no confirmation is needed (tests, --yes). */
  confirm?: Confirm;
}

/** What `forget <key...>` found and did. */
export interface ForgetKeysResult {
  ledger: string;
  mode: 'keys';
  dryRun: boolean;
  /** False when the person declined: nothing changed. */
  applied: boolean;
  plan: ForgetKeysPlan;
  deleted: number;
  attemptsDeleted: number;
}

/** What `forget --email` found and did; the address itself is left out, so the result can be logged. */
export interface ErasureCommandResult {
  ledger: string;
  mode: 'email';
  dryRun: boolean;
  applied: boolean;
  plan: ErasurePlan;
  erasure?: ErasureResult;
}

/** Forgets keys or erases a person; with dryRun, opens the ledger read-only and returns only the plan. */
export async function ledgerForget(
  o: LedgerForgetOptions,
  ctx: CommandContext,
): Promise<ForgetKeysResult | ErasureCommandResult> {
  if (o.email !== undefined && o.keys.length) throw new UsageError('forget takes event keys or --email, not both');
  if (o.email === undefined && !o.keys.length)
    throw new UsageError('forget needs event keys, or --email <address> to erase a person');
  const path = resolveLedger(o.ledger, ctx);
  const dryRun = !!o.dryRun;
  if (o.email !== undefined) {
    const e = normalizeEmail(o.email);
    if (!e.ok) throw new UsageError(`--email: ${e.reason}`);
    return eraseCommand(path, e.value, dryRun, o.confirm, ctx.env);
  }
  return forgetKeysCommand(path, o.keys, dryRun, o.confirm, ctx.env);
}

async function forgetKeysCommand(
  path: string,
  keys: string[],
  dryRun: boolean,
  confirm: Confirm | undefined,
  env: Record<string, string | undefined>,
): Promise<ForgetKeysResult> {
  const plan = await withLedger(path, { readonly: true, env }, (l) => planForgetKeys(l.sql, keys));
  const res: ForgetKeysResult = {
    ledger: ledgerName(path),
    mode: 'keys',
    dryRun,
    applied: false,
    plan,
    deleted: 0,
    attemptsDeleted: 0,
  };
  if (dryRun || !plan.found.length) return res;
  const n = plan.found.length;
  if (
    confirm &&
    !(await confirm(
      `Forget ${n} event${n === 1 ? '' : 's'}? They will be sent again by the next push that reads them.`,
    ))
  )
    return res;
  return locked(
    path,
    'ledger forget',
    { keys: n },
    async (l) => {
      const r = await forgetKeys(
        l.sql,
        plan.found.map((f) => f.key),
      );
      return { ...res, applied: true, ...r };
    },
    env,
  );
}

async function eraseCommand(
  path: string,
  email: string,
  dryRun: boolean,
  confirm: Confirm | undefined,
  env: Record<string, string | undefined>,
): Promise<ErasureCommandResult> {
  const plan = await withLedger(path, { readonly: true, env }, (l) => planErasure(l.sql, email));
  const res: ErasureCommandResult = { ledger: ledgerName(path), mode: 'email', dryRun, applied: false, plan };
  if (dryRun) return res;
  const n = plan.found.length;
  const mentions = plan.scrub.attempts + plan.scrub.events + plan.scrub.runs;
  // With nothing of the person left, the erasure still compacts the file: an earlier delete may have left free pages.
  if ((n || mentions) && confirm) {
    const what = [
      n ? `${n} event${n === 1 ? '' : 's'} of this person` : '',
      mentions ? `${mentions} mention${mentions === 1 ? '' : 's'} in other rows` : '',
    ]
      .filter(Boolean)
      .join(' and ');
    if (!(await confirm(`Erase ${what}? Their event keys stay known (as hashes) so old events are still skipped.`)))
      return res;
  }
  // The run's recorded args name no address: the runs table must not undo the erasure.
  return locked(
    path,
    'ledger forget',
    { by: 'email' },
    async (l) => ({ ...res, applied: true, erasure: await eraseEmail(l, email) }),
    env,
  );
}
