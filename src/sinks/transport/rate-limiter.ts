// Client-side rate limiting: an optional fixed --rate plus a sliding window learned from the CRM's own headers.
// The window is what lets a run approach a limit like 100 requests / 10 s without tripping 429s: every request we
// send is stamped, and a new one waits while the last interval already holds (max - headroom) of them.
import { onAbort } from './on-abort.js';

/** Sleep that wakes early, with the signal's reason, when the signal aborts. */
export type Sleep = (ms: number, signal?: AbortSignal) => Promise<void>;

/** Default sleep: a timer that an AbortSignal can cut short. */
export const realSleep: Sleep = (ms, signal) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    // The run's stop signal is shared by every wait: watched through one listener (on-abort.ts).
    const unwatch = signal
      ? onAbort(signal, () => {
          clearTimeout(timer);
          reject(signal.reason);
        })
      : () => undefined;
    const timer = setTimeout(
      () => {
        unwatch();
        resolve();
      },
      Math.max(0, ms),
    );
  });

/** What a response said about the server's rate limit (HubSpot's X-HubSpot-RateLimit-* headers). */
export interface RateLimitInfo {
  max?: number;
  remaining?: number;
  intervalMs?: number;
}

/** One admitted request; done() when its answer (or error) arrived. */
export interface RateTicket {
  waitedMs: number;
  done(): void;
}

export interface RateLimiterOptions {
  /** Requests per second, from --rate; requests are spaced evenly rather than sent in bursts. */
  rate?: number;
  /** Share of a learned window kept free, so requests in flight and clock skew don't cross the server's limit. */
  headroom?: number;
  now?: () => number;
  sleep?: Sleep;
}

/** Read HubSpot-style rate-limit headers (lower-cased names) into numbers; absent or junk values are left out. */
export function readRateLimitHeaders(headers: Record<string, string | undefined>): RateLimitInfo {
  const num = (name: string): number | undefined => {
    const raw = headers[name];
    if (raw === undefined) return undefined;
    const n = Number(raw);
    return Number.isFinite(n) && n >= 0 ? n : undefined;
  };
  const info: RateLimitInfo = {};
  const max = num('x-hubspot-ratelimit-max');
  const remaining = num('x-hubspot-ratelimit-remaining');
  const intervalMs = num('x-hubspot-ratelimit-interval-milliseconds');
  if (max !== undefined && max > 0) info.max = max;
  if (remaining !== undefined) info.remaining = remaining;
  if (intervalMs !== undefined && intervalMs > 0) info.intervalMs = intervalMs;
  return info;
}

/** Stamps kept while no window is known yet (enough for any realistic first interval). */
const UNKNOWN_WINDOW_STAMPS = 1000;

/** Shared by every request of one sink: acquire() before each send, observe() each response's headers. */
export class RateLimiter {
  private readonly rate: number | undefined;
  private readonly headroom: number;
  private readonly now: () => number;
  private readonly sleep: Sleep;
  private nextSlot = 0;
  private blockedUntil = 0;
  private windowMax: number | undefined;
  private windowMs: number | undefined;
  /** Requests inside the current window, unordered (phantoms for other clients' use included). */
  private stamps: Array<{ t: number }> = [];

  constructor(opts: RateLimiterOptions = {}) {
    if (opts.rate !== undefined && !(opts.rate > 0)) throw new RangeError('rate must be a positive number');
    this.rate = opts.rate;
    this.headroom = opts.headroom ?? 0.05;
    this.now = opts.now ?? Date.now;
    this.sleep = opts.sleep ?? realSleep;
  }

  /**
   * Wait until one more request may go out, and count it. Call done() on the ticket when the answer arrives: the
   * request is then re-stamped at that time, an upper bound of when the server counted it (connection setup and
   * latency make the server's stamp later than ours, which would otherwise cross its window edge).
   */
  async acquire(signal?: AbortSignal): Promise<RateTicket> {
    let waited = 0;
    for (;;) {
      signal?.throwIfAborted();
      const now = this.now();
      let wait = 0;
      if (this.blockedUntil > now) wait = this.blockedUntil - now;
      if (this.rate !== undefined && this.nextSlot > now) wait = Math.max(wait, this.nextSlot - now);
      const limit = this.windowLimit();
      if (limit !== undefined && this.windowMs !== undefined) {
        this.prune(now);
        if (this.stamps.length >= limit) wait = Math.max(wait, this.oldest() + this.windowMs + 1 - now);
      }
      if (wait <= 0) {
        // Stamp even before the window is known: the requests in flight when the first headers arrive count too.
        const stamp = { t: now };
        this.stamps.push(stamp);
        if (this.windowMs === undefined && this.stamps.length > UNKNOWN_WINDOW_STAMPS) this.stamps.shift();
        // A waiter wakes a little after its slot (timers overshoot, more so on a loaded machine): counting from its
        // slot, not from when it woke, keeps the pace at --rate. At most one slot is made up, so no burst follows.
        if (this.rate !== undefined) this.nextSlot = Math.max(this.nextSlot, now - 1000 / this.rate) + 1000 / this.rate;
        return { waitedMs: waited, done: () => void (stamp.t = Math.max(stamp.t, this.now())) };
      }
      await this.sleep(wait, signal);
      waited += wait;
    }
  }

  /** Learn from a response's rate-limit headers: the window size, and usage by others sharing the same limit. */
  observe(info: RateLimitInfo): void {
    if (info.intervalMs !== undefined) this.windowMs = info.intervalMs;
    if (info.max !== undefined) this.windowMax = info.max;
    if (this.windowMs !== undefined) this.prune(this.now());
    if (this.windowMs === undefined || this.windowMax === undefined || info.remaining === undefined) return;
    const now = this.now();
    this.prune(now);
    const usedByServer = this.windowMax - info.remaining;
    // Responses arrive out of order and the server stamps on arrival, so a small gap is normal; only a gap larger
    // than the headroom means someone else uses the same limit, and then their share is counted as if sent now.
    const deficit = usedByServer - this.stamps.length;
    const reserve = this.reserve();
    if (deficit > reserve) for (let i = 0; i < deficit - reserve; i++) this.stamps.push({ t: now });
    if (info.remaining <= 0) {
      // The server's window is full: wait until its oldest request (about our oldest stamp) leaves it.
      const oldest = this.stamps.length ? this.oldest() : now;
      this.blockedUntil = Math.max(this.blockedUntil, Math.max(oldest + this.windowMs, now + 1));
    }
  }

  /** Hold every request for ms (a 429's Retry-After, or HubSpot's interval when it gave none). */
  pause(ms: number): void {
    this.blockedUntil = Math.max(this.blockedUntil, this.now() + ms);
  }

  /** The rolling window currently learned from the server, if any (for reports and tests). */
  window(): { max: number; intervalMs: number } | undefined {
    if (this.windowMax === undefined || this.windowMs === undefined) return undefined;
    return { max: this.windowMax, intervalMs: this.windowMs };
  }

  private reserve(): number {
    return this.windowMax === undefined ? 0 : Math.max(1, Math.ceil(this.windowMax * this.headroom));
  }

  private windowLimit(): number | undefined {
    if (this.windowMax === undefined) return undefined;
    return Math.max(1, this.windowMax - this.reserve());
  }

  private oldest(): number {
    let min = Infinity;
    for (const s of this.stamps) if (s.t < min) min = s.t;
    return min;
  }

  private prune(now: number): void {
    if (this.windowMs === undefined) return;
    const edge = now - this.windowMs;
    if (this.stamps.some((s) => s.t <= edge)) this.stamps = this.stamps.filter((s) => s.t > edge);
  }
}
