// The org's daily API allowance as Salesforce reports it on every REST answer: `Sforce-Limit-Info: api-usage=18/5000`
// (optionally followed by `; per-app-api-usage=17/250(appName=…)`) [doc: headers_api_usage]. Past the allowance
// Salesforce answers 403 REQUEST_LIMIT_EXCEEDED ("TotalRequests Limit exceeded."), not 429, and every integration of
// the org is refused until the 24-hour window frees requests: the run stops before that, leaving a reserve for them.
import { BudgetError } from '../../errors.js';

/** The org's daily API requests are (nearly) spent: the run stopped before they ran out (exit 7). */
export class ApiAllowanceError extends BudgetError {}

/** api-usage used/max (and the app's own, when present) from a Sforce-Limit-Info value; undefined if unreadable. */
export function parseLimitInfo(
  value: string | undefined,
): { used: number; max: number; appUsed?: number; appMax?: number } | undefined {
  if (!value) return undefined;
  const m = /(?:^|[;\s])api-usage=(\d+)\/(\d+)/.exec(value);
  if (!m) return undefined;
  const out: { used: number; max: number; appUsed?: number; appMax?: number } = {
    used: Number(m[1]),
    max: Number(m[2]),
  };
  const app = /per-app-api-usage=(\d+)\/(\d+)/.exec(value);
  if (app) {
    out.appUsed = Number(app[1]);
    out.appMax = Number(app[2]);
  }
  return out;
}

/**
 * The allowance as the answers tell it, less the requests in flight. admit() before a request, settle() with its
 * answer's headers; admit() refuses once a request could leave fewer than the reserve.
 */
export class ApiAllowance {
  private max: number | undefined;
  private left: number | undefined;
  private inFlight = 0;

  /** reserve: requests kept for the org's other integrations (default 5% of the allowance, once known). */
  constructor(private readonly reserveOption?: number) {}

  /** Requests kept unspent. */
  reserve(): number {
    if (this.reserveOption !== undefined) return this.reserveOption;
    return this.max === undefined ? 0 : Math.ceil(this.max * 0.05);
  }

  /** May one more request leave now? Counts it in flight when it may. */
  admit(): boolean {
    if (this.left !== undefined && this.left - this.inFlight - 1 < this.reserve()) return false;
    this.inFlight++;
    return true;
  }

  /** The admitted request was answered (its headers) or not (undefined). */
  settle(headers?: Record<string, string | undefined>): void {
    this.inFlight = Math.max(0, this.inFlight - 1);
    const info = parseLimitInfo(headers?.['sforce-limit-info']);
    if (!info) return;
    this.max = info.max;
    let left = info.max - info.used;
    if (info.appMax !== undefined && info.appUsed !== undefined) left = Math.min(left, info.appMax - info.appUsed);
    this.left = Math.max(0, left);
  }

  /** Spent under us (a 403 REQUEST_LIMIT_EXCEEDED): nothing is left. */
  exhausted(): void {
    this.left = 0;
  }

  /** The stop message: what is left, what is kept, when it comes back. */
  describe(): string {
    const left =
      this.left !== undefined
        ? `${this.left} of its ${this.max ?? '?'} daily API requests are left`
        : 'its daily API requests are spent';
    const kept = this.reserve() > 0 ? `, and ${this.reserve()} are kept for the org's other integrations` : '';
    return (
      `Salesforce's API allowance is nearly spent: ${left}${kept}. leadledger stopped sending before it ran out; ` +
      'the leads not sent go out with the next run, once the rolling 24-hour window frees requests'
    );
  }
}
