// The emulator's server-side rate limit: a rolling window like HubSpot's TEN_SECONDLY_ROLLING policy.

/** Counts requests accepted in the last intervalMs and refuses more than max. */
export class RollingWindow {
  private stamps: number[] = [];
  constructor(
    readonly max: number,
    readonly intervalMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** Try to admit one request; returns whether it fits and how many remain in the window afterwards. */
  admit(): { ok: boolean; remaining: number } {
    const now = this.now();
    const edge = now - this.intervalMs;
    while (this.stamps.length > 0 && (this.stamps[0] ?? Infinity) <= edge) this.stamps.shift();
    if (this.stamps.length >= this.max) return { ok: false, remaining: 0 };
    this.stamps.push(now);
    return { ok: true, remaining: this.max - this.stamps.length };
  }

  /** How long until the window admits one more request (0 when it would now): a 429's Retry-After. */
  msUntilFree(): number {
    if (this.stamps.length < this.max) return 0;
    const oldest = this.stamps[this.stamps.length - this.max] ?? this.now();
    return Math.max(0, oldest + this.intervalMs - this.now());
  }

  /** Forget every request (admin reset). */
  clear(): void {
    this.stamps = [];
  }
}

/** Parse "100/10s", "100/10000ms", "5/1m" or "190/10000" (ms) into a max and an interval. */
export function parseRateLimit(spec: string): { max: number; intervalMs: number } {
  const m = /^\s*(\d+)\s*\/\s*(\d+(?:\.\d+)?)\s*(ms|s|m)?\s*$/.exec(spec);
  if (!m) throw new RangeError(`rate limit must look like 100/10s, got "${spec}"`);
  const max = Number(m[1]);
  const amount = Number(m[2]);
  const unit = m[3] ?? 'ms';
  const intervalMs = unit === 'm' ? amount * 60_000 : unit === 's' ? amount * 1000 : amount;
  if (max <= 0 || intervalMs <= 0) throw new RangeError(`rate limit must be positive, got "${spec}"`);
  return { max, intervalMs };
}
