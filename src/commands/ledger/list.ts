// `leadledger ledger list`: the ledger's events, filtered, most recently updated first.
import type { LedgerEventRow } from '../../ledger/types.js';
import { listEvents } from '../../ledger/queries.js';
import type { CommandContext } from '../context.js';
import { buildFilter, ledgerName, resolveLedger, withLedger, type EventFilterOptions } from './access.js';

/** Options of `ledger list`. */
export interface LedgerListOptions extends EventFilterOptions {
  ledger?: string;
  /** At most this many rows; 0 for all. */
  limit?: number;
}

/** An events row as listed: everything but the stored lead (that is what `show` and `export` are for). */
export type ListedEvent = Omit<LedgerEventRow, 'lead_json'>;

/** The listed rows and how many matched in all. */
export interface LedgerListResult {
  ledger: string;
  total: number;
  events: ListedEvent[];
}

/** Lists events matching the filters. Read-only. */
export async function ledgerList(o: LedgerListOptions, ctx: CommandContext): Promise<LedgerListResult> {
  const path = resolveLedger(o.ledger, ctx);
  const filter = buildFilter(o);
  return withLedger(path, { readonly: true, env: ctx.env }, async (l) => {
    const { rows, total } = await listEvents(l.sql, filter, o.limit ?? 50);
    return { ledger: ledgerName(path), total, events: rows.map(({ lead_json: _lead, ...rest }) => rest) };
  });
}
