// Pipedrive's limits as the sink keeps them: the company's daily token budget (shared by every user and app of the
// company, reset at midnight server time), spent by each request at its documented cost, and the burst window of
// 2 s, read from the response headers (pipedrive.readme.io/docs/core-api-concepts-rate-limiting;
// ../shared/reference/crm-apis.md section 2):
// - x-ratelimit-limit / x-ratelimit-remaining / x-ratelimit-reset: the 2 s window (the search endpoint answers with
//   its own, tighter, window in the same headers);
// - x-daily-ratelimit-token-limit / x-daily-ratelimit-token-remaining: the token budget (seen live; sometimes absent);
// - x-daily-requests-left: POST/PUT requests left today, on api_token requests (the older fair-usage limit).
// The run stops before the budget runs out, leaving a reserve for the people who use Pipedrive that day, instead of
// meeting 429s (and, after many, a CDN block) that would stop them too.
import { BudgetError, ExitCode } from '../../errors.js';

/** Pipedrive's burst window, documented as 2 s for every plan. */
export const PIPEDRIVE_WINDOW_MS = 2000;

/** The exit code of a run stopped before Pipedrive's daily budget ran out (ExitCode.budget). */
export const DAILY_BUDGET_EXIT_CODE = ExitCode.budget;

/** Pipedrive's daily API budget is (nearly) spent: the run stopped sending before it ran out (exit 7). */
export class DailyBudgetError extends BudgetError {}

/** Token cost of each operation the sink uses: the `x-token-cost` of Pipedrive's OpenAPI documents. */
export const TOKEN_COST = {
  addPerson: 5,
  updatePerson: 5,
  searchPersons: 20,
  addLead: 10,
} as const;
export type PipedriveOperation = keyof typeof TOKEN_COST;

/** What a response said about the 2 s window. */
export interface BurstInfo {
  max?: number;
  remaining?: number;
}

/** Read the 2 s window's headers (lower-case names); absent or junk values are left out. */
export function readBurstHeaders(headers: Record<string, string | undefined>): BurstInfo {
  const info: BurstInfo = {};
  const max = count(headers['x-ratelimit-limit']);
  const remaining = count(headers['x-ratelimit-remaining']);
  if (max !== undefined && max > 0) info.max = max;
  if (remaining !== undefined) info.remaining = remaining;
  return info;
}

function count(raw: string | undefined): number | undefined {
  if (raw === undefined || raw.trim() === '') return undefined;
  const n = Number(raw);
  return Number.isInteger(n) && n >= 0 ? n : undefined;
}

export interface DailyBudgetOptions {
  /** Tokens kept unspent (default: 5% of the budget once a response told it; none before). */
  reserve?: number;
}

/**
 * The daily budget as the answers tell it, less what requests in flight will spend. admit() before a request (with
 * its cost), settle() with its answer's headers; admit() refuses once a request could leave less than the reserve.
 */
export class DailyBudget {
  private limit: number | undefined;
  private remaining: number | undefined;
  private writesLeft: number | undefined;
  private inFlight = 0;
  private writesInFlight = 0;
  private readonly reserveOption: number | undefined;

  constructor(opts: DailyBudgetOptions = {}) {
    this.reserveOption = opts.reserve;
  }

  /** Tokens kept unspent. */
  reserve(): number {
    if (this.reserveOption !== undefined) return this.reserveOption;
    return this.limit === undefined ? 0 : Math.ceil(this.limit * 0.05);
  }

  /** May a request of this cost leave now? Counts it as in flight when it may. */
  admit(cost: number, write: boolean): boolean {
    if (this.remaining !== undefined && this.remaining - this.inFlight - cost < this.reserve()) return false;
    if (write && this.writesLeft !== undefined && this.writesLeft - this.writesInFlight <= 0) return false;
    this.inFlight += cost;
    if (write) this.writesInFlight++;
    return true;
  }

  /** The request admitted with this cost was answered (headers) or failed without an answer (undefined). */
  settle(cost: number, write: boolean, headers?: Record<string, string | undefined>): void {
    this.inFlight = Math.max(0, this.inFlight - cost);
    if (write) this.writesInFlight = Math.max(0, this.writesInFlight - 1);
    if (!headers) return;
    const limit = count(headers['x-daily-ratelimit-token-limit']);
    const remaining = count(headers['x-daily-ratelimit-token-remaining']);
    const writesLeft = count(headers['x-daily-requests-left']);
    if (limit !== undefined && limit > 0) this.limit = limit;
    if (remaining !== undefined) this.remaining = remaining;
    if (writesLeft !== undefined) this.writesLeft = writesLeft;
  }

  /** The stop message: what is left, what is kept, and when it comes back. */
  describe(): string {
    const left =
      this.remaining !== undefined
        ? `${this.remaining} of its ${this.limit ?? '?'} API tokens are left today`
        : `${this.writesLeft ?? 0} write requests are left today`;
    const kept = this.reserve() > 0 ? `, and ${this.reserve()} are kept for the company's other users and apps` : '';
    return (
      `Pipedrive's daily API budget is nearly spent: ${left}${kept}. leadledger stopped sending before it ran out; ` +
      'the leads not sent go out with the next run, after the budget resets at midnight (Pipedrive server time)'
    );
  }
}
