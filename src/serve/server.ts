// The receiver's HTTP side, on node:http: no framework, because what a webhook receiver needs from one is little
// (one route shape, raw bodies for the signatures, which frameworks parse away) and what it must control is the
// server's own (header and request timeouts against slow clients, the body limit, a graceful close); node:http
// gives all of it, and the fewest steps between a request and its commit.
//
// A request is answered 2xx only once its events are committed to the ledger (the inbox). Requests are committed in
// groups: those that arrive while a group commits form the next, so the ledger is written once per group, not per
// request.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Archive } from './archive.js';
import { readBody, type Endpoint } from './endpoint.js';
import type { AcceptResult, Inbox, InboxItem } from './inbox.js';
import type { ServeLog } from './log.js';
import type { ServeMetrics } from './metrics.js';

/** Limits and timeouts of the receiver. */
export interface ReceiverLimits {
  /** Largest body taken, in bytes (413 above it). */
  bodyLimit: number;
  /** Events (and bytes of leads) the inbox may hold before requests are answered 503 with Retry-After. */
  maxInboxEvents: number;
  maxInboxBytes: number;
  /** Seconds a sender is told to wait (Retry-After) under backpressure or while stopping. */
  retryAfterSec: number;
  /** Time a client has to send its headers, and its whole request (slow clients are cut off). */
  headersTimeoutMs: number;
  requestTimeoutMs: number;
  keepAliveTimeoutMs: number;
  /** Largest group of events committed in one transaction. */
  maxGroup: number;
}

/** The defaults: 1 MiB bodies, an inbox of 100,000 events or 256 MiB, 10 s for headers, 30 s for a request. */
export const DEFAULT_LIMITS: ReceiverLimits = {
  bodyLimit: 1024 * 1024,
  maxInboxEvents: 100_000,
  maxInboxBytes: 256 * 1024 * 1024,
  retryAfterSec: 30,
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  keepAliveTimeoutMs: 5_000,
  maxGroup: 2000,
};

/** What the receiver needs around it. */
export interface ReceiverOptions {
  endpoints: Endpoint[];
  inbox: Inbox;
  archive?: Archive;
  metrics: ServeMetrics;
  log: ServeLog;
  limits: ReceiverLimits;
  /** Called after each committed group that queued events (the delivery wakes). */
  onQueued: () => void;
  /** Whether the ledger answered its last check, and why delivery is paused (readiness). */
  ready: () => { ok: boolean; why?: string };
}

/** A request waiting for its group's commit. */
interface Waiting {
  items: InboxItem[];
  line: Record<string, unknown>;
  resolve: (r: AcceptResult[]) => void;
  reject: (e: Error) => void;
}

/** The receiver: routes, verification, group commits, backpressure, and its close. */
export class Receiver {
  readonly server: Server;
  private readonly byPath: Map<string, Endpoint>;
  private queue: Waiting[] = [];
  private committing = false;
  private closing = false;
  /** Events acknowledged since the inbox was last counted (added to the count for the backpressure). */
  private acceptedSinceCount = 0;

  constructor(private readonly o: ReceiverOptions) {
    this.byPath = new Map(o.endpoints.map((e) => [e.path, e]));
    // Slow clients are looked for every second (Node's default is every 30 s: a 10 s limit could last 40).
    this.server = createServer({ connectionsCheckingInterval: 1000 }, (req, res) => void this.handle(req, res));
    this.server.headersTimeout = o.limits.headersTimeoutMs;
    this.server.requestTimeout = o.limits.requestTimeoutMs;
    this.server.keepAliveTimeout = o.limits.keepAliveTimeoutMs;
  }

  /** Listens; resolves with the URL served. */
  async listen(port: number, host: string): Promise<string> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, host, () => {
        this.server.off('error', reject);
        resolve();
      });
    });
    const a = this.server.address() as AddressInfo;
    const h = a.family === 'IPv6' ? `[${a.address}]` : a.address;
    return `http://${h}:${a.port}`;
  }

  /** What acceptedSinceCount is now: taken before the inbox is counted, and given back to counted() after. */
  acceptedMark(): number {
    return this.acceptedSinceCount;
  }

  /**
   * The inbox was counted again: the count includes what had been accepted when it began (`mark`), which is no longer
   * added to it; what was accepted since stays added (counted twice for a moment, the bound would refuse early).
   */
  counted(mark: number): void {
    this.acceptedSinceCount = Math.max(0, this.acceptedSinceCount - mark);
  }

  /**
   * Stops taking requests: the listener closes, idle connections are closed, requests under way are answered
   * (their groups commit); a request that arrives on a kept-alive connection meanwhile is answered 503.
   */
  async close(): Promise<void> {
    this.closing = true;
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    this.server.closeIdleConnections();
    await closed;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const started = process.hrtime.bigint();
    const path = (req.url ?? '/').split('?')[0]!;
    try {
      if (path === '/healthz' || path === '/readyz' || path === '/metrics') return this.admin(path, req, res);
      const ep = this.byPath.get(path);
      if (!ep) return this.answer(res, 404, { error: `no endpoint at ${path}` }, undefined, path);
      if (req.method !== 'POST') {
        res.setHeader('Allow', 'POST');
        return this.answer(res, 405, { error: 'webhooks are POSTed' }, ep);
      }
      if (this.closing) return this.busy(res, ep, 'the receiver is stopping');
      const body = await this.body(req, res, ep);
      if (!body) return;
      const v = ep.verify({ method: req.method, url: req.url ?? path, headers: req.headers, body, now: Date.now() });
      if (!v.ok) {
        this.o.metrics.signatureFailures.inc({ endpoint: ep.name, reason: v.reason });
        this.o.log.warn('signature refused', { endpoint: ep.name, reason: v.reason, detail: v.detail });
        // The sender is told why in a word; the details (which header, how stale) are for the log only.
        return this.answer(res, 401, { error: `signature ${v.reason}` }, ep);
      }
      if (this.full()) return this.busy(res, ep, 'the inbox is full (the CRM is behind)');
      const receivedAt = new Date().toISOString();
      const read = readBody(body, req.headers['content-type']);
      // A body that cannot be read is still a record: recorded as invalid, with why.
      const request = ep.read(read, body, req.headers, receivedAt);
      let results: AcceptResult[];
      try {
        results = await this.commit(request.items, request.line);
      } catch (e) {
        this.o.log.error('ledger commit failed: answered 503, the sender retries', {
          endpoint: ep.name,
          error: (e as Error).message,
        });
        return this.busy(res, ep, 'the ledger could not record the request');
      }
      for (const r of results) this.o.metrics.events.inc({ endpoint: ep.name, result: r.kind });
      this.answer(res, 200, responseBody(results, request.items), ep);
      this.o.metrics.ackLatency.observe(Number(process.hrtime.bigint() - started) / 1e9);
    } catch (e) {
      this.o.log.error('request failed', { path, error: (e as Error).message });
      if (!res.headersSent) this.answer(res, 500, { error: 'internal error' });
    }
  }

  private admin(path: string, req: IncomingMessage, res: ServerResponse): void {
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.setHeader('Allow', 'GET');
      return this.answer(res, 405, { error: 'GET only' });
    }
    if (path === '/healthz') return this.answer(res, 200, { status: 'ok' });
    if (path === '/metrics') {
      res.writeHead(200, { 'Content-Type': 'text/plain; version=0.0.4; charset=utf-8' });
      res.end(req.method === 'HEAD' ? undefined : this.o.metrics.text());
      return;
    }
    const r = this.o.ready();
    const full = this.full();
    if (this.closing) return this.answer(res, 503, { status: 'stopping' });
    if (!r.ok || full)
      return this.answer(res, 503, {
        status: 'not ready',
        why: full ? 'the inbox is full' : r.why,
      });
    return this.answer(res, 200, { status: 'ready', inbox: this.o.metrics.inboxEvents });
  }

  // The body, up to the limit: a Content-Length above it is refused before reading, a body that grows past it is
  // cut off. Undefined once answered.
  private body(req: IncomingMessage, res: ServerResponse, ep: Endpoint): Promise<Buffer | undefined> {
    const limit = this.o.limits.bodyLimit;
    const declared = Number(req.headers['content-length']);
    if (declared > limit) {
      res.setHeader('Connection', 'close');
      this.answer(res, 413, { error: `the body is larger than ${limit} bytes` }, ep);
      req.resume();
      return Promise.resolve(undefined);
    }
    return new Promise((resolve) => {
      const chunks: Buffer[] = [];
      let size = 0;
      let over = false;
      req.on('data', (c: Buffer) => {
        if (over) return;
        size += c.length;
        if (size > limit) {
          over = true;
          res.setHeader('Connection', 'close');
          this.answer(res, 413, { error: `the body is larger than ${limit} bytes` }, ep);
          resolve(undefined);
          return;
        }
        chunks.push(c);
      });
      req.on('end', () => {
        if (!over) resolve(Buffer.concat(chunks, size));
      });
      req.on('error', () => resolve(undefined));
      req.on('close', () => resolve(undefined));
    });
  }

  private full(): boolean {
    const m = this.o.metrics;
    const l = this.o.limits;
    return m.inboxEvents + this.acceptedSinceCount >= l.maxInboxEvents || m.inboxBytes >= l.maxInboxBytes;
  }

  private busy(res: ServerResponse, ep: Endpoint, why: string): void {
    res.setHeader('Retry-After', String(this.o.limits.retryAfterSec));
    if (this.closing) res.setHeader('Connection', 'close');
    this.answer(res, 503, { error: why }, ep);
  }

  private answer(res: ServerResponse, code: number, body: unknown, ep?: Endpoint, path?: string): void {
    this.o.metrics.requests.inc({ endpoint: ep?.name ?? (path ? 'none' : 'admin'), code: String(code) });
    const text = JSON.stringify(body);
    res.writeHead(code, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) });
    res.end(text);
  }

  // Queues a request's items for the next group and resolves with their results once it committed.
  private commit(items: InboxItem[], line: Record<string, unknown>): Promise<AcceptResult[]> {
    return new Promise((resolve, reject) => {
      this.queue.push({ items, line, resolve, reject });
      // The group forms from every request whose body arrived in this turn of the event loop (and, while one group
      // commits, from all that arrive meanwhile).
      if (!this.committing && this.queue.length === 1) setImmediate(() => void this.flush());
    });
  }

  private async flush(): Promise<void> {
    if (this.committing || !this.queue.length) return;
    this.committing = true;
    try {
      while (this.queue.length) {
        const group: Waiting[] = [];
        let n = 0;
        while (this.queue.length && (n === 0 || n + this.queue[0]!.items.length <= this.o.limits.maxGroup)) {
          const w = this.queue.shift()!;
          group.push(w);
          n += w.items.length;
        }
        await this.commitGroup(group);
      }
    } finally {
      this.committing = false;
    }
  }

  private async commitGroup(group: Waiting[]): Promise<void> {
    const all = group.flatMap((w) => w.items);
    let results: AcceptResult[];
    try {
      results = await this.o.inbox.accept(all);
    } catch (e) {
      for (const w of group) w.reject(e as Error);
      return;
    }
    // The archive holds the requests the ledger recorded, before any of them is answered.
    try {
      this.o.archive?.write(group.map((w) => w.line));
    } catch (e) {
      this.o.log.error('archive write failed (the events are in the ledger)', { error: (e as Error).message });
    }
    let at = 0;
    let queued = 0;
    for (const w of group) {
      const mine = results.slice(at, at + w.items.length);
      at += w.items.length;
      for (const r of mine) if (r.kind === 'accepted') queued++;
      w.resolve(mine);
    }
    if (queued) {
      this.acceptedSinceCount += queued;
      this.o.onQueued();
    }
  }
}

/** What a sender is answered: one status for the request, and each event's. */
function responseBody(results: AcceptResult[], items: InboxItem[]): Record<string, unknown> {
  const words: Record<AcceptResult['kind'], string> = {
    accepted: 'accepted',
    duplicate: 'already_processed',
    conflict: 'conflict',
    known_lead: 'known_lead',
    invalid: 'invalid',
    filtered: 'filtered',
  };
  const events = results.map((r, i) => {
    const it = items[i]!;
    const key = it.kind === 'event' ? it.event.key : it.key;
    const e: Record<string, unknown> = { key, status: words[r.kind] };
    if (r.kind === 'invalid' || r.kind === 'filtered') e.reason = r.reason;
    if (r.kind === 'conflict') e.reason = 'the ledger holds this event with other content; recorded, not sent';
    if (r.kind === 'known_lead') e.reason = `the person was delivered (or is being delivered) by event ${r.by}`;
    return e;
  });
  // The request's status: accepted when any event was; else what the first says (a repeat: already_processed).
  const status = results.some((r) => r.kind === 'accepted') ? 'accepted' : (events[0]?.status ?? 'empty');
  return { status, events };
}
