// A real HTTP server on 127.0.0.1 that behaves like HubSpot's contacts v3 API and a generic webhook receiver, with
// fault injection, so sinks, delivery and the CLI are tested against sockets rather than mocks.
//
// Per request, in order: admin routes bypass everything; then a fault may be drawn (scripted first, then seeded
// random); then latency; then, for /crm routes, the bearer token, the rolling rate limit (X-HubSpot-RateLimit-*
// headers on every /crm response), and the handler.
//
// A request with no route is answered 404 quoting its target, query string included, as many servers' error pages
// do: a client must not let such an echo carry a key from its URL into a message.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';
import { drawFault, seededRandom, type FaultKind, type Faults } from './faults.js';
import { HubSpotApi, hubspotError, type StoredContact } from './hubspot-api.js';
import { RollingWindow, parseRateLimit } from './rolling-window.js';
import { WebhookReceiver, type WebhookDelivery, type WebhookReceiverOptions } from './webhook-receiver.js';

export interface EmulatorOptions {
  /** Default 0: any free port. */
  port?: number;
  /** Default 127.0.0.1. */
  host?: string;
  /** The bearer token the HubSpot routes accept; when unset any non-empty bearer token is accepted. */
  token?: string;
  /** HubSpot rate limit, e.g. "100/10s" or {max: 100, intervalMs: 10000}; default 190 per 10 s. */
  rateLimit?: string | { max: number; intervalMs: number };
  faults?: Faults;
  /** Seed of the fault RNG (default 1). */
  seed?: number;
  /** Custom contact properties the emulated portal has. */
  customProperties?: string[];
  /** Contact properties whose values must be unique: a taken value is a 409 CONFLICT without an existing id. */
  uniqueProperties?: string[];
  /** Batch create conflicts: one 409 for the whole batch (default) or per input in a 207. */
  conflictMode?: 'batch-409' | 'multi-status';
  /** Search index lag (ms). */
  searchLagMs?: number;
  /** false: batch create fails whole batches even with objectWriteTraceIds (default true: 207 multi-status). */
  multiStatus?: boolean;
  webhook?: WebhookReceiverOptions;
  /** Keep every non-admin request's method, path and query string, for requests() (default false). */
  logRequests?: boolean;
  /** The rate limit's clock (default Date.now): a test holds it still so that a loaded machine cannot stretch a window. */
  now?: () => number;
  /**
   * Other CRMs' emulators served on the same port: a prefix mount gets the request with its body read (Pipedrive's
   * /api/v2 and /v1); a listener mount claims paths and gets the request untouched by this emulator's faults, rate
   * limit and log (RD Station's /platform and /auth).
   */
  mounts?: Array<EmulatorMount | ListenerMount>;
}

/** An emulator served under path prefixes of this one, handed the request's body. */
export interface EmulatorMount {
  prefixes: string[];
  handle(req: http.IncomingMessage, res: http.ServerResponse, raw: Buffer): Promise<void>;
}

/** An emulator with a listener of its own, handed the paths it claims as they arrive. */
export interface ListenerMount {
  claims: (path: string) => boolean;
  listener: http.RequestListener;
}

/** One request as the emulator received it (logRequests). */
export interface LoggedRequest {
  method: string;
  path: string;
  /** The query string with its '?', or ''. */
  query: string;
}

export interface EmulatorStats {
  requests: number;
  byStatus: Record<string, number>;
  /** 429s sent, injected or from the rate limit. */
  sent429: number;
  /** 429s sent because the rolling window was full. */
  rateLimited: number;
  sent5xx: number;
  hangs: number;
  resets: number;
  commitThenDrops: number;
  /** Connections dropped without an answer (resets + commit-then-drops). */
  drops: number;
}

export interface Emulator {
  /** Base URL, e.g. http://127.0.0.1:41234 */
  url: string;
  port: number;
  close(): Promise<void>;
  contacts(): StoredContact[];
  /** Store contacts as if the portal already had them (no rate limit, no faults); returns how many were new. */
  seed(contacts: Array<Record<string, string>>): number;
  webhookReceived(): { deliveries: WebhookDelivery[]; requests: number };
  stats(): EmulatorStats;
  /** The requests received since the start or the last reset, oldest first (empty unless logRequests). */
  requests(): LoggedRequest[];
  /** Replace the fault settings (script and burst counters included). */
  setFaults(faults: Faults): void;
  /** Change the webhook receiver settings. */
  configureWebhook(opts: WebhookReceiverOptions): void;
  /** Forget contacts, deliveries, stats, faults and the rate window. */
  reset(): void;
}

const emptyStats = (): EmulatorStats => ({
  requests: 0,
  byStatus: {},
  sent429: 0,
  rateLimited: 0,
  sent5xx: 0,
  hangs: 0,
  resets: 0,
  commitThenDrops: 0,
  drops: 0,
});

const tooManyBody = (): Record<string, unknown> => ({
  status: 'error',
  message: 'You have reached your ten_secondly_rolling limit.',
  errorType: 'RATE_LIMIT',
  correlationId: crypto.randomUUID(),
  policyName: 'TEN_SECONDLY_ROLLING',
  groupName: 'publicapi:private_app-api-calls-ten-secondly:emulator',
});

/** Start the emulator; resolves once it listens. */
export async function startEmulator(opts: EmulatorOptions = {}): Promise<Emulator> {
  const limit =
    typeof opts.rateLimit === 'string'
      ? parseRateLimit(opts.rateLimit)
      : (opts.rateLimit ?? { max: 190, intervalMs: 10_000 });
  const hubspot = new HubSpotApi({
    ...(opts.customProperties ? { customProperties: opts.customProperties } : {}),
    ...(opts.uniqueProperties ? { uniqueProperties: opts.uniqueProperties } : {}),
    ...(opts.conflictMode ? { conflictMode: opts.conflictMode } : {}),
    ...(opts.searchLagMs !== undefined ? { searchLagMs: opts.searchLagMs } : {}),
    ...(opts.multiStatus !== undefined ? { multiStatus: opts.multiStatus } : {}),
  });
  const receiver = new WebhookReceiver(opts.webhook ?? {});
  const window = new RollingWindow(limit.max, limit.intervalMs, opts.now);
  let faults: Faults = cloneFaults(opts.faults ?? {});
  let random = seededRandom(opts.seed ?? 1);
  let stats = emptyStats();
  let log: LoggedRequest[] = [];

  const send = (
    res: http.ServerResponse,
    status: number,
    body: unknown,
    headers: Record<string, string> = {},
  ): void => {
    stats.byStatus[status] = (stats.byStatus[status] ?? 0) + 1;
    if (status === 429) stats.sent429++;
    if (status >= 500) stats.sent5xx++;
    const text = JSON.stringify(body);
    res.writeHead(status, {
      'content-type': 'application/json;charset=utf-8',
      'content-length': Buffer.byteLength(text),
      ...headers,
    });
    res.end(text);
  };

  const rateHeaders = (remaining: number): Record<string, string> => ({
    'x-hubspot-ratelimit-max': String(limit.max),
    'x-hubspot-ratelimit-remaining': String(remaining),
    'x-hubspot-ratelimit-interval-milliseconds': String(limit.intervalMs),
  });

  const admin = (req: http.IncomingMessage, res: http.ServerResponse, path: string, raw: Buffer): void => {
    if (req.method === 'GET' && path === '/__admin/contacts') return send(res, 200, hubspot.contacts());
    if (req.method === 'GET' && path === '/__admin/webhooks') return send(res, 200, receiver.received());
    if (req.method === 'GET' && path === '/__admin/stats') return send(res, 200, stats);
    if (req.method === 'POST' && path === '/__admin/contacts') {
      // Seeds the portal with people it already holds (a CRM with years of contacts), bypassing limits and faults.
      try {
        const body = JSON.parse(raw.toString('utf8') || '[]') as unknown;
        if (!Array.isArray(body)) throw new Error('not an array');
        const props = body.map(
          (c) => ((c as { properties?: Record<string, string> }).properties ?? c) as Record<string, string>,
        );
        return send(res, 200, { ok: true, stored: hubspot.seed(props) });
      } catch {
        return send(res, 400, { error: 'contacts must be a JSON array of {"properties": {"email": ...}}' });
      }
    }
    if (req.method === 'POST' && path === '/__admin/reset') {
      emulator.reset();
      return send(res, 200, { ok: true });
    }
    if (req.method === 'POST' && path === '/__admin/faults') {
      try {
        const body = JSON.parse(raw.toString('utf8') || '{}') as Faults & { webhook?: WebhookReceiverOptions };
        const { webhook, ...f } = body;
        faults = cloneFaults(f);
        if (webhook) receiver.configure(webhook);
        return send(res, 200, { ok: true, faults });
      } catch {
        return send(res, 400, { error: 'faults must be a JSON object' });
      }
    }
    return send(res, 404, { error: `no admin route ${req.method} ${path}` });
  };

  const crm = (
    req: http.IncomingMessage,
    res: http.ServerResponse,
    url: URL,
    raw: Buffer,
    fault: FaultKind | undefined,
  ): void => {
    const auth = req.headers.authorization;
    const bearer = auth?.startsWith('Bearer ') ? auth.slice(7).trim() : '';
    if (!bearer || (opts.token !== undefined && bearer !== opts.token)) {
      return send(
        res,
        401,
        hubspotError(
          'INVALID_AUTHENTICATION',
          'Authentication credentials not found. This API supports OAuth 2.0 authentication and you can find more details at https://developers.hubspot.com/docs/methods/auth/oauth-overview',
        ),
      );
    }
    const admitted = window.admit();
    if (!admitted.ok) {
      stats.rateLimited++;
      return send(res, 429, tooManyBody(), rateHeaders(0));
    }
    const headers = rateHeaders(admitted.remaining);
    let body: unknown;
    if (req.method === 'POST') {
      try {
        body = raw.length ? JSON.parse(raw.toString('utf8')) : undefined;
      } catch {
        return send(
          res,
          400,
          hubspotError('VALIDATION_ERROR', 'Invalid input JSON on line 1, column 1: Unexpected character'),
          headers,
        );
      }
    }
    const base = '/crm/v3/objects/contacts';
    const path = url.pathname.replace(/\/+$/, '');
    let reply: { status: number; body: unknown };
    if (req.method === 'POST' && path === base) reply = hubspot.createOne(body);
    else if (req.method === 'POST' && path === `${base}/batch/create`) reply = hubspot.batchCreate(body);
    else if (req.method === 'POST' && path === `${base}/batch/upsert`) reply = hubspot.batchUpsert(body);
    else if (req.method === 'POST' && path === `${base}/batch/read`) reply = hubspot.batchRead(body);
    else if (req.method === 'POST' && path === `${base}/batch/update`) reply = hubspot.batchUpdate(body);
    else if (req.method === 'POST' && path === `${base}/search`) reply = hubspot.search(body);
    else if (req.method === 'GET' && path === base) reply = hubspot.list(url.searchParams);
    else if (req.method === 'GET' && path.startsWith(`${base}/`) && !path.slice(base.length + 1).includes('/')) {
      reply = hubspot.get(decodeURIComponent(path.slice(base.length + 1)), url.searchParams.get('idProperty'));
    } else
      reply = {
        status: 404,
        body: hubspotError('OBJECT_NOT_FOUND', `no route ${req.method} ${url.pathname}${url.search}`),
      };
    if (fault === 'commit-then-drop') return dropAfterCommit(res);
    return send(res, reply.status, reply.body, headers);
  };

  const dropAfterCommit = (res: http.ServerResponse): void => {
    stats.commitThenDrops++;
    stats.drops++;
    res.socket?.destroy();
  };

  const server = http.createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://emulator').pathname;
    const mount = opts.mounts?.find((m): m is ListenerMount => 'claims' in m && m.claims(path));
    if (mount) return void mount.listener(req, res);
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      void handle(req, res, Buffer.concat(chunks)).catch((err: unknown) => {
        if (!res.headersSent)
          send(res, 500, { status: 'error', message: `emulator error: ${String(err)}`, category: 'INTERNAL_ERROR' });
      });
    });
  });

  const handle = async (req: http.IncomingMessage, res: http.ServerResponse, raw: Buffer): Promise<void> => {
    const url = new URL(req.url ?? '/', 'http://emulator');
    const mount = opts.mounts?.find(
      (m): m is EmulatorMount => 'prefixes' in m && m.prefixes.some((p) => url.pathname.startsWith(p)),
    );
    if (mount) return mount.handle(req, res, raw);
    if (url.pathname.startsWith('/__admin/')) return admin(req, res, url.pathname, raw);
    stats.requests++;
    if (opts.logRequests) log.push({ method: req.method ?? '', path: url.pathname, query: url.search });
    const fault = drawFault(faults, random);
    if (faults.latencyMs) await delay(faults.latencyMs);
    const retryAfter: Record<string, string> =
      faults.retryAfter !== undefined ? { 'retry-after': faults.retryAfter } : {};
    switch (fault) {
      case 'hang':
        // Never answered; close() destroys the socket.
        stats.hangs++;
        return;
      case 'reset':
        stats.resets++;
        stats.drops++;
        req.socket.destroy();
        return;
      case '503':
        return send(
          res,
          503,
          {
            status: 'error',
            message: 'Service Unavailable (emulated)',
            category: 'SERVICE_UNAVAILABLE',
            correlationId: crypto.randomUUID(),
          },
          retryAfter,
        );
      case '429':
        return send(res, 429, tooManyBody(), { ...rateHeaders(0), ...retryAfter });
      default:
        break;
    }
    if (url.pathname.startsWith('/crm/')) return crm(req, res, url, raw, fault);
    if (req.method === 'POST' && (url.pathname === '/webhook' || url.pathname.startsWith('/hooks/'))) {
      const reply = receiver.handle(url.pathname, req.headers, raw);
      if (fault === 'commit-then-drop') return dropAfterCommit(res);
      return send(res, reply.status, reply.body, reply.replayed ? { 'idempotent-replayed': 'true' } : {});
    }
    // The receiver takes POST only: any other method is told so, as a POST-only endpoint answers (RFC 9110 §15.5.6).
    if (url.pathname === '/webhook' || url.pathname.startsWith('/hooks/'))
      return send(res, 405, { error: `method ${req.method} not allowed: POST only` }, { allow: 'POST' });
    return send(res, 404, { error: `no route ${req.method} ${url.pathname}${url.search}` });
  };

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, opts.host ?? '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;

  const emulator: Emulator = {
    url: `http://${host}:${address.port}`,
    port: address.port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
    contacts: () => hubspot.contacts(),
    seed: (contacts) => hubspot.seed(contacts),
    webhookReceived: () => receiver.received(),
    stats: () => structuredClone(stats),
    requests: () => log.map((r) => ({ ...r })),
    setFaults: (f) => {
      faults = cloneFaults(f);
    },
    configureWebhook: (w) => receiver.configure(w),
    reset: () => {
      hubspot.reset();
      receiver.reset();
      window.clear();
      stats = emptyStats();
      log = [];
      faults = {};
      random = seededRandom(opts.seed ?? 1);
    },
  };
  return emulator;
}

/** Faults are consumed (script, burst counters): keep the caller's object untouched. */
function cloneFaults(f: Faults): Faults {
  return { ...f, ...(f.script ? { script: [...f.script] } : {}) };
}
