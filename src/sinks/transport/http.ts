// The one HTTP policy every sink uses: keep-alive, per-request timeout, rate limiting, retries with backoff and
// jitter on 408/429/5xx/network errors, Retry-After honoured and clamped, no retry on other 4xx, secrets redacted.
//
// In-doubt rule: a failure before the request could reach the server (connection refused, DNS) or an answer from
// the server (429, 5xx) means nothing was committed. A timeout or a reset after the request was written may have
// committed: once any attempt ended that way and no later attempt got a definite answer, the result is in doubt.
import http from 'node:http';
import https from 'node:https';
import { RateLimiter, readRateLimitHeaders, realSleep, type Sleep } from './rate-limiter.js';
import { redact } from './redact.js';
import { CircuitBreaker, isTlsFailure } from './breaker.js';
import { backoffDelay, retryPolicy, type RetryPolicy } from './retry.js';
import { onAbort } from './on-abort.js';
import type { SinkOpenContext } from '../definition.js';

export type HttpMethod = 'GET' | 'HEAD' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export interface HttpRequest {
  method: HttpMethod;
  url: string;
  headers?: Record<string, string>;
  body?: string;
  signal?: AbortSignal;
  /**
   * Retry when a failure may have happened after the server got the request (timeout, reset after writing).
   * Only safe where the destination drops repeats (HubSpot's unique email, an Idempotency-Key honoured); default true.
   */
  retryInDoubt?: boolean;
  /**
   * A 429 that will not clear within any wait worth taking (RD Station's 24 conversions per contact per 24 h): true
   * returns it at once, without holding this sink's other requests. Unset: every 429 but a daily quota is retried.
   */
  quota429?: (response: HttpResponse) => boolean;
}

/** A response the server gave (possibly a 4xx/5xx after retries ran out). */
export interface HttpResponse {
  status: number;
  /** Lower-cased header names. */
  headers: Record<string, string | undefined>;
  text: string;
  attempts: number;
  /** An earlier attempt timed out or was reset after sending: the request may have been applied before this answer. */
  maybeCommitted: boolean;
}

/** No answer from the server after all attempts. */
export interface HttpFailure {
  /** true when some attempt may have reached the server (timeout / reset after writing). */
  inDoubt: boolean;
  /** Redacted, human-readable. */
  reason: string;
  code: string;
  attempts: number;
}

export type HttpResult = { kind: 'response'; response: HttpResponse } | { kind: 'failure'; failure: HttpFailure };

/** Progress events for the caller's counters and --verbose logs; urls carry no query string. */
export type HttpEvent =
  | { type: 'request'; method: HttpMethod; url: string; attempt: number }
  | { type: 'response'; method: HttpMethod; url: string; attempt: number; status: number; durationMs: number }
  | {
      type: 'network-error';
      method: HttpMethod;
      url: string;
      attempt: number;
      code: string;
      inDoubt: boolean;
      durationMs: number;
    }
  | {
      type: 'retry';
      method: HttpMethod;
      url: string;
      attempt: number;
      delayMs: number;
      reason: string;
      status?: number;
    }
  | { type: 'rate-limit-wait'; waitedMs: number };

/** Running totals: "429s hit: N, all retried". */
export interface HttpStats {
  requests: number;
  retries: number;
  /** 429 responses seen (each one was retried unless retries ran out). */
  rateLimited: number;
  networkErrors: number;
  timeouts: number;
  /** Responses by status code. */
  byStatus: Record<string, number>;
  /** Total time spent waiting for the rate limiter (ms). */
  rateLimitWaitMs: number;
}

export interface HttpClientOptions {
  /** Per-attempt timeout (default 30 s). */
  timeoutMs?: number;
  /** Retries after the first attempt (default 5, as every sink's: retry.ts). */
  maxRetries?: number;
  /** First backoff step (default 500 ms); doubles each retry. */
  baseDelayMs?: number;
  /** Backoff cap (default 30 s). */
  maxDelayMs?: number;
  /** Retry-After and interval waits are clamped to this (default 60 s). */
  maxRetryAfterMs?: number;
  /** Requests per second (--rate). */
  rate?: number;
  /** Share one limiter between clients that hit the same CRM account. */
  limiter?: RateLimiter;
  /** Values to mask in every message (tokens, HMAC secrets). */
  secrets?: string[];
  /** The run's circuit breaker (breaker.ts): shared by every client of the run; default one of the client's own. */
  breaker?: CircuitBreaker;
  onEvent?: (event: HttpEvent) => void;
  /** Parallel sockets per host (default 8). */
  maxSockets?: number;
  userAgent?: string;
  sleep?: Sleep;
  now?: () => number;
  random?: () => number;
}

type Attempt =
  | { ok: true; status: number; headers: Record<string, string | undefined>; text: string }
  | {
      ok: false;
      code: string;
      message: string;
      inDoubt: boolean;
      timeout: boolean;
      /** No connection could be made (refused, unresolved, connect timeout, TLS): the breaker counts it. */
      unreachable: boolean;
    };

/** Network error codes raised before any byte of the request reached a server: nothing can have been committed. */
const NOT_SENT_CODES = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EADDRNOTAVAIL',
]);

/** Parse Retry-After (delta seconds or an HTTP date) into ms from now; undefined when absent or unreadable. */
export function parseRetryAfter(value: string | undefined, now: number): number | undefined {
  if (value === undefined || value.trim() === '') return undefined;
  const trimmed = value.trim();
  if (/^\d+(\.\d+)?$/.test(trimmed)) return Math.round(Number(trimmed) * 1000);
  const date = Date.parse(trimmed);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, date - now);
}

/** Statuses the policy retries: the server answered, so a retry cannot duplicate anything. */
export function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 429 || status >= 500;
}

/**
 * The request never left: the run stopped (or was cut) while it waited for the rate limiter, a retry's backoff or a
 * connection, and no earlier attempt of it may have reached the server. Nothing can have been committed, so its
 * events are released rather than left in doubt.
 */
export class RequestNotSent extends Error {
  constructor(message = 'not sent: the run stopped before the request left') {
    super(message);
    this.name = 'RequestNotSent';
  }
}

/** Keep-alive HTTP client applying the retry, timeout, rate-limit and redaction policy. */
export class HttpClient {
  readonly limiter: RateLimiter;
  readonly stats: HttpStats = {
    requests: 0,
    retries: 0,
    rateLimited: 0,
    networkErrors: 0,
    timeouts: 0,
    byStatus: {},
    rateLimitWaitMs: 0,
  };
  private readonly opts: Required<Pick<HttpClientOptions, 'timeoutMs' | 'maxRetryAfterMs'>>;
  /** The retry and backoff policy of every sink (retry.ts). */
  private readonly retry: RetryPolicy;
  private readonly secrets: string[];
  private readonly onEvent: ((event: HttpEvent) => void) | undefined;
  private readonly sleep: Sleep;
  private readonly now: () => number;
  private readonly random: () => number;
  private readonly userAgent: string;
  private readonly httpAgent: http.Agent;
  private readonly httpsAgent: https.Agent;
  /** Aborted when the run stops: a request that has not left yet is abandoned (RequestNotSent); one on the wire goes on. */
  private stopSignal: AbortSignal | undefined;
  /** The run's stop or the breaker's opening, whichever comes first: made once, not per request. */
  private halt: AbortSignal | undefined;
  /** Opens after too many connection failures in a row: from then on no request leaves (RequestNotSent). */
  readonly breaker: CircuitBreaker;

  constructor(options: HttpClientOptions = {}) {
    this.opts = {
      timeoutMs: options.timeoutMs ?? 30_000,
      maxRetryAfterMs: options.maxRetryAfterMs ?? 60_000,
    };
    this.retry = retryPolicy(options);
    this.breaker = options.breaker ?? new CircuitBreaker();
    this.secrets = [...(options.secrets ?? [])];
    this.onEvent = options.onEvent;
    this.sleep = options.sleep ?? realSleep;
    this.now = options.now ?? Date.now;
    this.random = options.random ?? Math.random;
    this.userAgent = options.userAgent ?? 'leadledger';
    this.limiter =
      options.limiter ??
      new RateLimiter({
        ...(options.rate !== undefined ? { rate: options.rate } : {}),
        now: this.now,
        sleep: this.sleep,
      });
    const maxSockets = options.maxSockets ?? 8;
    this.httpAgent = new http.Agent({ keepAlive: true, maxSockets });
    this.httpsAgent = new https.Agent({ keepAlive: true, maxSockets });
  }

  /**
   * From the run's stop (Ctrl-C / SIGTERM) on, no new request leaves: requests waiting for the rate limiter, a
   * retry's backoff or a connection throw RequestNotSent; those already written are answered (or cut by their signal).
   */
  abandonUnsentOn(stop: AbortSignal): void {
    this.stopSignal = stop;
    this.halt = AbortSignal.any([stop, this.breaker.signal]);
  }

  /** Add a value to mask in messages (e.g. a token read after construction). */
  addSecret(secret: string): void {
    this.secrets.push(secret);
  }

  /** Mask every known secret in a text. */
  redact(text: string): string {
    return redact(text, this.secrets);
  }

  /** Send a request under the policy; resolves with the final response or a failure, throws only when the caller aborts. */
  async request(req: HttpRequest): Promise<HttpResult> {
    const url = new URL(req.url);
    const shownUrl = `${url.origin}${url.pathname}`;
    let maybeCommitted = false;
    const breaker = this.breaker;
    // The breaker opening stops what has not left as a run's stop does (the stop signal of once(), the waits).
    const stop = this.halt ?? breaker.signal;
    const waitSignal = req.signal ? AbortSignal.any([stop, req.signal]) : stop;
    // Stopped before an attempt left: nothing of it reached the server. An earlier attempt that may have committed
    // makes the request in doubt; otherwise it was never sent.
    const notLeft = (): HttpResult => {
      if (!maybeCommitted)
        throw new RequestNotSent(
          breaker.open && !this.stopSignal?.aborted && !req.signal?.aborted ? `not sent: ${breaker.why()}` : undefined,
        );
      return {
        kind: 'failure',
        failure: {
          inDoubt: true,
          reason: this.redact(`stopped before a retry of ${shownUrl}; an earlier attempt may have been applied`),
          code: 'ESTOPPED',
          attempts: 0,
        },
      };
    };
    for (let attempt = 1; ; attempt++) {
      if (stop?.aborted || req.signal?.aborted) return notLeft();
      let ticket;
      try {
        ticket = await this.limiter.acquire(waitSignal);
      } catch (e) {
        if (stop?.aborted || req.signal?.aborted) return notLeft();
        throw e;
      }
      const waited = ticket.waitedMs;
      if (waited > 0) {
        this.stats.rateLimitWaitMs += waited;
        this.emit({ type: 'rate-limit-wait', waitedMs: waited });
      }
      this.stats.requests++;
      this.emit({ type: 'request', method: req.method, url: shownUrl, attempt });
      const started = this.now();
      const result = await this.once(url, req, stop)
        .catch((e: unknown) => {
          // Not left: notLeft() says why (the run's stop, or the breaker) and whether an earlier attempt may have landed.
          if (e instanceof RequestNotSent) return undefined;
          throw e;
        })
        .finally(() => ticket.done());
      if (result === undefined) return notLeft();
      const durationMs = this.now() - started;
      const canRetry = attempt <= this.retry.maxRetries;

      if (result.ok) {
        breaker.reached();
        this.stats.byStatus[result.status] = (this.stats.byStatus[result.status] ?? 0) + 1;
        this.emit({ type: 'response', method: req.method, url: shownUrl, attempt, status: result.status, durationMs });
        const rateInfo = readRateLimitHeaders(result.headers);
        this.limiter.observe(rateInfo);
        const response: HttpResponse = {
          status: result.status,
          headers: result.headers,
          text: result.text,
          attempts: attempt,
          maybeCommitted,
        };
        if (!isRetryableStatus(result.status)) return { kind: 'response', response };
        let delay = this.backoff(attempt);
        const retryAfter = parseRetryAfter(result.headers['retry-after'], this.now());
        if (result.status === 429) {
          this.stats.rateLimited++;
          const policy = read429Policy(result.text);
          // A daily quota will not come back within any sensible wait: report it now instead of sleeping for hours.
          if (policy === 'DAILY' || req.quota429?.(response)) return { kind: 'response', response };
          if (retryAfter === undefined && (policy === 'TEN_SECONDLY_ROLLING' || policy === 'SECONDLY')) {
            delay = policy === 'SECONDLY' ? 1000 : (rateInfo.intervalMs ?? this.limiter.window()?.intervalMs ?? 10_000);
          }
        }
        if (retryAfter !== undefined) delay = retryAfter;
        delay = Math.min(delay, this.opts.maxRetryAfterMs);
        if (!canRetry) return { kind: 'response', response };
        // A 429 is about the account, not this request: hold every request of this sink, not only this one.
        if (result.status === 429) this.limiter.pause(delay);
        this.stats.retries++;
        this.emit({
          type: 'retry',
          method: req.method,
          url: shownUrl,
          attempt,
          delayMs: delay,
          reason: `HTTP ${result.status}`,
          status: result.status,
        });
        // A 429 waits inside the limiter's acquire(), together with every other request of this sink.
        if (result.status !== 429) {
          try {
            await this.sleep(delay, waitSignal);
          } catch (e) {
            if (stop?.aborted || req.signal?.aborted) return notLeft();
            throw e;
          }
        }
        continue;
      }

      this.stats.networkErrors++;
      if (result.timeout) this.stats.timeouts++;
      if (result.inDoubt) maybeCommitted = true;
      if (result.unreachable) breaker.unreachable(result.code);
      else breaker.reached();
      this.emit({
        type: 'network-error',
        method: req.method,
        url: shownUrl,
        attempt,
        code: result.code,
        inDoubt: result.inDoubt,
        durationMs,
      });
      const reason = this.redact(
        result.timeout ? `no answer within ${this.opts.timeoutMs} ms (${shownUrl})` : `${result.message} (${shownUrl})`,
      );
      // The breaker opened (on this failure or another request's): no retry; unsent unless an attempt may have landed.
      if (breaker.open) return notLeft();
      if (!canRetry || (result.inDoubt && req.retryInDoubt === false)) {
        return { kind: 'failure', failure: { inDoubt: maybeCommitted, reason, code: result.code, attempts: attempt } };
      }
      const delay = this.backoff(attempt);
      this.stats.retries++;
      this.emit({ type: 'retry', method: req.method, url: shownUrl, attempt, delayMs: delay, reason: result.code });
      try {
        await this.sleep(delay, waitSignal);
      } catch (e) {
        if (stop?.aborted || req.signal?.aborted) return notLeft();
        throw e;
      }
    }
  }

  /** Release keep-alive sockets. */
  close(): void {
    this.httpAgent.destroy();
    this.httpsAgent.destroy();
  }

  /** The wait after attempt number `attempt`, under the policy every sink shares. */
  private backoff(attempt: number): number {
    return backoffDelay(this.retry, attempt, this.random);
  }

  private emit(event: HttpEvent): void {
    this.onEvent?.(event);
  }

  /**
   * One attempt; never throws except when the caller's signal aborts (RequestNotSent when the request had not left
   * yet) or `stop` aborts before the request left (RequestNotSent). "Left" is conservative: from the moment a
   * connected socket carries it, even before every byte is written.
   */
  private once(url: URL, req: HttpRequest, stop?: AbortSignal): Promise<Attempt> {
    const timeout = AbortSignal.timeout(this.opts.timeoutMs);
    const signal = req.signal ? AbortSignal.any([req.signal, timeout]) : timeout;
    const isHttps = url.protocol === 'https:';
    const headers: Record<string, string> = {
      'user-agent': this.userAgent,
      accept: 'application/json',
      ...req.headers,
    };
    const body = req.body === undefined ? undefined : Buffer.from(req.body, 'utf8');
    if (body) headers['content-length'] = String(body.length);
    return new Promise<Attempt>((resolve, reject) => {
      let written = false;
      let left = false;
      let abandoned = false;
      let settled = false;
      // Set once the request exists: the run's stop is watched from then until the attempt settles.
      let unwatchStop = (): void => undefined;
      const onStop = (): void => {
        if (left || settled) return;
        abandoned = true;
        r.destroy(new RequestNotSent());
      };
      const done = (a: Attempt): void => {
        if (!settled) {
          settled = true;
          unwatchStop();
          resolve(a);
        }
      };
      const fail = (err: NodeJS.ErrnoException): void => {
        if (settled) return;
        if (abandoned || req.signal?.aborted) {
          settled = true;
          unwatchStop();
          reject(left ? req.signal?.reason : new RequestNotSent());
          return;
        }
        const timedOut = timeout.aborted;
        const code = timedOut ? 'ETIMEDOUT' : (err.code ?? err.name ?? 'ERROR');
        const notSent = !timedOut && NOT_SENT_CODES.has(code);
        // A timeout while the socket was still connecting, or a failed TLS handshake: no connection was made.
        const unreachable = notSent || (timedOut && !left) || isTlsFailure(code);
        done({
          ok: false,
          code,
          message: err.message || code,
          inDoubt: !notSent && written,
          timeout: timedOut,
          unreachable,
        });
      };
      const r = (isHttps ? https : http).request(url, {
        method: req.method,
        headers,
        agent: isHttps ? this.httpsAgent : this.httpAgent,
        signal,
      });
      r.on('socket', (socket) => {
        if (!socket.connecting) left = true;
        else socket.once('connect', () => (left = true));
      });
      r.on('finish', () => {
        written = true;
      });
      // `stop` is the client's, shared by every request in flight: one listener for them all (on-abort.ts).
      if (stop) unwatchStop = onAbort(stop, onStop);
      r.on('error', fail);
      r.on('response', (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', fail);
        // A response cut short after the status line arrived: the server did act on the request, so it is in doubt.
        res.on('aborted', () => fail(Object.assign(new Error('response aborted'), { code: 'ECONNRESET' })));
        res.on('end', () => {
          const h: Record<string, string | undefined> = {};
          for (const [k, v] of Object.entries(res.headers)) h[k] = Array.isArray(v) ? v.join(', ') : v;
          done({ ok: true, status: res.statusCode ?? 0, headers: h, text: Buffer.concat(chunks).toString('utf8') });
        });
      });
      r.end(body);
    });
  }
}

/** HubSpot names the exhausted policy in a 429 body (TEN_SECONDLY_ROLLING, SECONDLY, DAILY). */
export function read429Policy(text: string): string | undefined {
  try {
    const body = JSON.parse(text) as { policyName?: unknown };
    return typeof body.policyName === 'string' ? body.policyName : undefined;
  } catch {
    return undefined;
  }
}

/** The client a sink sends with, under the run's policy (--timeout, --max-retries, --backoff, --rate). */
export function httpClientFor(ctx: Pick<SinkOpenContext, 'transport' | 'onHttpEvent'>): HttpClient {
  const t = ctx.transport;
  return new HttpClient({
    ...(t.breaker ? { breaker: t.breaker } : {}),
    ...(t.timeoutMs !== undefined ? { timeoutMs: t.timeoutMs } : {}),
    ...(t.maxRetries !== undefined ? { maxRetries: t.maxRetries } : {}),
    ...(t.rate !== undefined ? { rate: t.rate } : {}),
    ...(t.baseDelayMs !== undefined ? { baseDelayMs: t.baseDelayMs } : {}),
    ...(ctx.onHttpEvent ? { onEvent: ctx.onHttpEvent } : {}),
  });
}
