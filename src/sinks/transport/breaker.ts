// The run's circuit breaker: a destination that refuses every connection (nothing listening, a name that does not
// resolve, a TLS handshake that fails) would otherwise make each batch retry its whole schedule, and a run of 20,000
// events take minutes to fail. After `threshold` connection-level failures in a row across the run, with nothing
// getting through in between, the breaker opens: no request starts any more, waits for a retry end at once, and the
// run stops with one message. Answers of the server (4xx, 5xx) are not connection failures: the server is there.

/** How many connection failures in a row, with no success between, open the breaker. */
export const DEFAULT_BREAKER_THRESHOLD = 10;

/** Counts consecutive connection-level failures of one destination; open once they reach the threshold. */
export class CircuitBreaker {
  private consecutive = 0;
  private lastCode = '';
  private readonly trip = new AbortController();

  constructor(readonly threshold: number = DEFAULT_BREAKER_THRESHOLD) {}

  /** Aborted when the breaker opens: waits for a retry or the rate limiter end at once. */
  get signal(): AbortSignal {
    return this.trip.signal;
  }

  /** True once the destination failed `threshold` connections in a row: nothing more is sent this run. */
  get open(): boolean {
    return this.trip.signal.aborted;
  }

  /** Records a connection that could not be made (nothing reached the destination). */
  unreachable(code: string): void {
    if (this.open) return;
    this.consecutive++;
    this.lastCode = code;
    if (this.consecutive >= this.threshold) this.trip.abort();
  }

  /** Records that the destination answered (any status): the count starts over. */
  reached(): void {
    if (!this.open) this.consecutive = 0;
  }

  /** Why the breaker opened, for the run's one message: "10 connections in a row failed (ECONNREFUSED)". */
  why(): string {
    return `${this.threshold} connections in a row failed (${this.lastCode}), none got through`;
  }
}

/** TLS failures: the handshake (or the certificate) failed, so no request reached the destination. */
export function isTlsFailure(code: string): boolean {
  return (
    code === 'EPROTO' ||
    code.startsWith('ERR_TLS_') ||
    code.startsWith('ERR_SSL_') ||
    code.startsWith('CERT_') ||
    code === 'UNABLE_TO_VERIFY_LEAF_SIGNATURE' ||
    code === 'UNABLE_TO_GET_ISSUER_CERT_LOCALLY' ||
    code === 'DEPTH_ZERO_SELF_SIGNED_CERT' ||
    code === 'SELF_SIGNED_CERT_IN_CHAIN' ||
    code === 'HOSTNAME_MISMATCH'
  );
}
