// The emulator's generic webhook receiver: stores deliveries, checks HMAC signatures, and optionally honours
// Idempotency-Key the way Merge.dev documents it (same key + same body → the stored response; other body → 422).
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';

export interface WebhookReceiverOptions {
  /** When set, every delivery must carry a valid HMAC-SHA256 of the raw body. */
  secret?: string;
  /** Header holding `sha256=<hex>` (default X-Leadledger-Signature). */
  signatureHeader?: string;
  /** Replay the first response for a repeated Idempotency-Key instead of storing again. */
  honourIdempotencyKey?: boolean;
  /**
   * Keep one lead per email (`lead.email`, or `email` at the top of a templated body): a lead whose email is stored
   * already is answered 409 `{"message": "a lead with this email already exists", "id": <the stored one's id>}`,
   * with `"retryable": false` too when conflictRetryable is false.
   */
  uniqueEmails?: boolean;
  conflictRetryable?: boolean;
}

export interface WebhookDelivery {
  id: string;
  path: string;
  idempotencyKey?: string;
  body: unknown;
  receivedAt: string;
}

export interface WebhookReply {
  status: number;
  body: unknown;
  replayed?: boolean;
}

/** Stored deliveries plus the handler for POST /webhook and /hooks/*. */
export class WebhookReceiver {
  private deliveries: WebhookDelivery[] = [];
  private byKey = new Map<string, { bodyHash: string; reply: WebhookReply }>();
  /** Email → id of the delivery that stored it (uniqueEmails). */
  private byEmail = new Map<string, string>();
  private requests = 0;
  private nextId = 1;

  constructor(private opts: WebhookReceiverOptions = {}) {}

  /** Change the receiver settings at run time (admin faults endpoint). */
  configure(opts: WebhookReceiverOptions): void {
    this.opts = { ...this.opts, ...opts };
  }

  /** Deliveries stored (deduplicated when the receiver honours keys) and the raw number of POSTs received. */
  received(): { deliveries: WebhookDelivery[]; requests: number } {
    return { deliveries: this.deliveries.map((d) => ({ ...d })), requests: this.requests };
  }

  /** Forget everything (admin reset). */
  reset(): void {
    this.deliveries = [];
    this.byKey.clear();
    this.byEmail.clear();
    this.requests = 0;
    this.nextId = 1;
  }

  /** Handle one delivery; `store` is false when the caller will drop the connection before answering anyway. */
  handle(path: string, headers: Record<string, string | string[] | undefined>, raw: Buffer): WebhookReply {
    this.requests++;
    if (this.opts.secret) {
      const name = (this.opts.signatureHeader ?? 'X-Leadledger-Signature').toLowerCase();
      const given = headers[name];
      const expected = `sha256=${createHmac('sha256', this.opts.secret).update(raw).digest('hex')}`;
      if (
        typeof given !== 'string' ||
        given.length !== expected.length ||
        !timingSafeEqual(Buffer.from(given), Buffer.from(expected))
      ) {
        return { status: 401, body: { error: 'invalid signature' } };
      }
    }
    let body: unknown;
    try {
      body = JSON.parse(raw.toString('utf8'));
    } catch {
      return { status: 400, body: { error: 'body is not JSON' } };
    }
    const keyHeader = headers['idempotency-key'];
    const key = typeof keyHeader === 'string' && keyHeader !== '' ? keyHeader : undefined;
    const bodyHash = createHash('sha256').update(raw).digest('hex');
    if (this.opts.honourIdempotencyKey && key !== undefined) {
      const prior = this.byKey.get(key);
      if (prior) {
        if (prior.bodyHash !== bodyHash)
          return { status: 422, body: { error: 'Idempotency-Key reused with a different body' } };
        return { ...prior.reply, replayed: true };
      }
    }
    const email = this.opts.uniqueEmails ? emailOf(body) : undefined;
    const holder = email !== undefined ? this.byEmail.get(email) : undefined;
    if (holder !== undefined)
      return {
        status: 409,
        body: {
          message: 'a lead with this email already exists',
          id: holder,
          ...(this.opts.conflictRetryable === false ? { retryable: false } : {}),
        },
      };
    const id = `wh_${this.nextId++}`;
    if (email !== undefined) this.byEmail.set(email, id);
    this.deliveries.push({
      id,
      path,
      ...(key !== undefined ? { idempotencyKey: key } : {}),
      body,
      receivedAt: new Date().toISOString(),
    });
    const reply: WebhookReply = { status: 201, body: { id } };
    if (this.opts.honourIdempotencyKey && key !== undefined) this.byKey.set(key, { bodyHash, reply });
    return reply;
  }
}

/** The lead's email in a delivered body: `lead.email`, else `email`; lower-cased. */
function emailOf(body: unknown): string | undefined {
  if (typeof body !== 'object' || body === null) return undefined;
  const b = body as { lead?: { email?: unknown }; email?: unknown };
  const e = typeof b.lead === 'object' && b.lead !== null ? b.lead.email : b.email;
  return typeof e === 'string' ? e.toLowerCase() : undefined;
}
