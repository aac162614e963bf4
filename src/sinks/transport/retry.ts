// The one retry and backoff policy of every sink, HTTP requests and PostgreSQL batches alike: up to --max-retries
// retries of what may pass with time, the first after --backoff, each wait doubling up to 30 s, with 0.5-1x jitter
// so that parallel senders do not retry in lockstep. What counts as passing with time is each transport's to say
// (a 429 or a 5xx; a lost connection or a deadlock); how long to wait, and how often, is said here once.
import { onAbort } from './on-abort.js';

/** How often and how long a sink retries. */
export interface RetryPolicy {
  /** Retries after the first attempt. */
  maxRetries: number;
  /** The first retry's delay (ms). */
  baseDelayMs: number;
  /** No wait is longer (ms). */
  maxDelayMs: number;
}

/** The policy without flags: --max-retries 5, --backoff 500 (cli/options.ts shows the same defaults). */
export const DEFAULT_RETRY: RetryPolicy = { maxRetries: 5, baseDelayMs: 500, maxDelayMs: 30_000 };

/** The policy of a run's settings, each one not given taken from DEFAULT_RETRY. */
export function retryPolicy(o: { maxRetries?: number; baseDelayMs?: number; maxDelayMs?: number }): RetryPolicy {
  return {
    maxRetries: o.maxRetries ?? DEFAULT_RETRY.maxRetries,
    baseDelayMs: o.baseDelayMs ?? DEFAULT_RETRY.baseDelayMs,
    maxDelayMs: o.maxDelayMs ?? DEFAULT_RETRY.maxDelayMs,
  };
}

/** The wait before retry number `retry` (1 for the first): base · 2^(retry-1), capped, times 0.5-1 (jitter). */
export function backoffDelay(policy: RetryPolicy, retry: number, random: () => number = Math.random): number {
  const exp = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (retry - 1));
  return Math.round(exp * (0.5 + 0.5 * random()));
}

/**
 * Runs fn, and again after the policy's wait while what it threw passes with time (`transient`), retries remain and
 * the run is not stopped; then throws what the last attempt threw.
 */
export async function withRetries<T>(
  policy: RetryPolicy,
  transient: (error: unknown) => boolean,
  fn: () => Promise<T>,
  signal?: AbortSignal,
): Promise<T> {
  for (let retry = 1; ; retry++) {
    try {
      return await fn();
    } catch (e) {
      if (!transient(e) || retry > policy.maxRetries || signal?.aborted) throw e;
      await pause(backoffDelay(policy, retry), signal);
    }
  }
}

/** Waits ms, or less when the signal aborts (the caller then sees the stop and gives up): it never throws. */
export function pause(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const t = setTimeout(done, ms);
    // The run's stop signal is shared by every backoff: watched through one listener (on-abort.ts).
    const unwatch = signal ? onAbort(signal, done) : () => undefined;
    function done() {
      clearTimeout(t);
      unwatch();
      resolve();
    }
  });
}
