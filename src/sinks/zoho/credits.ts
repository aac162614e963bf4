// Zoho CRM's API credits as the sink keeps them: a rolling 24 h allowance per account (by edition and users), a write
// costing 1 credit per 10 records (a call of 100 costs 10), a read 1 (../shared/reference/crm-apis.md section 5).
// The answers' X-RATELIMIT-LIMIT / X-RATELIMIT-REMAINING headers tell what is left where Zoho sends them; the run
// stops before the allowance runs out, keeping a reserve for the account's other users and integrations, instead of
// meeting refusals that would stop them too.
import { BudgetError } from '../../errors.js';

/** Credits a write of n records costs. */
export function writeCredits(records: number): number {
  return Math.ceil(records / 10);
}

/** What writing n leads costs, a call of 100 at a time: credits and calls. */
export function pushCost(leads: number): { credits: number; calls: number } {
  const calls = Math.ceil(leads / 100);
  const full = Math.floor(leads / 100);
  return { calls, credits: full * 10 + writeCredits(leads - full * 100) };
}

/** The line a dry-run and a push print of what sending n leads costs. */
export function costLine(leads: number): string {
  const { credits, calls } = pushCost(leads);
  return `Zoho CRM: sending ${leads} lead${leads === 1 ? '' : 's'} spends about ${credits} API credit${credits === 1 ? '' : 's'} (${calls} call${calls === 1 ? '' : 's'} of up to 100 records, 1 credit per 10 records) of the account's rolling 24 h allowance`;
}

/** Zoho's API credits are (nearly) spent: the run stopped sending before they ran out (exit 7). */
export class CreditsError extends BudgetError {}

function count(raw: string | undefined): number | undefined {
  if (raw === undefined || raw.trim() === '') return undefined;
  const n = Number(raw);
  return Number.isInteger(n) && n >= 0 ? n : undefined;
}

/** The allowance as answers tell it, less what requests in flight will spend. */
export class CreditBudget {
  private limit: number | undefined;
  private remaining: number | undefined;
  private inFlight = 0;
  /** Credits the answers were charged, by the sink's own count. */
  spent = 0;

  constructor(private readonly reserveOption?: number) {}

  /** Credits kept unspent. */
  reserve(): number {
    if (this.reserveOption !== undefined) return this.reserveOption;
    return this.limit === undefined ? 0 : Math.ceil(this.limit * 0.05);
  }

  /** What is known of the allowance, for a line at the start; undefined before any answer. */
  left(): { remaining: number; limit?: number } | undefined {
    return this.remaining === undefined
      ? undefined
      : { remaining: this.remaining, ...(this.limit !== undefined ? { limit: this.limit } : {}) };
  }

  /** May a request of this cost leave now? Counts it as in flight when it may. */
  admit(cost: number): boolean {
    if (this.remaining !== undefined && this.remaining - this.inFlight - cost < this.reserve()) return false;
    this.inFlight += cost;
    return true;
  }

  /** The request admitted with this cost was answered (headers; charged when Zoho did it) or not. */
  settle(cost: number, headers: Record<string, string | undefined> | undefined, charged: boolean): void {
    this.inFlight = Math.max(0, this.inFlight - cost);
    if (charged) this.spent += cost;
    if (!headers) return;
    const limit = count(headers['x-ratelimit-limit']);
    const remaining = count(headers['x-ratelimit-remaining']);
    if (limit !== undefined && limit > 0) this.limit = limit;
    if (remaining !== undefined) this.remaining = remaining;
  }

  /** Zoho said the credits ran out (a 429 on the allowance). */
  exhausted(): void {
    this.remaining = 0;
  }

  /** The stop message. */
  describe(): string {
    const left =
      this.remaining !== undefined
        ? `${this.remaining} of its ${this.limit ?? '?'} API credits are left`
        : 'no API credits are left';
    const kept =
      this.reserve() > 0 ? `, and ${this.reserve()} are kept for the account's other users and integrations` : '';
    return (
      `Zoho CRM's API credits are nearly spent: ${left} in the rolling 24 h window${kept}. leadledger stopped sending before they ran out; ` +
      'the leads not sent go out with the next run, once credits come back (sinks.zoho.creditsReserve sets the reserve)'
    );
  }
}
