// A real HTTP server on 127.0.0.1 that behaves like RD Station Marketing's API (rdstation-api.ts), with the same
// fault injection as the HubSpot emulator (faults.ts), so the RD Station sink and the OAuth client are tested
// against sockets. Its clock is injectable: the account's per-minute window, the 24 h per-contact budgets and the
// access tokens' expiry all read it, so tests move time instead of waiting.
//
// Per request, in order: admin routes (/__admin/...) bypass everything; then a fault may be drawn (scripted first,
// then seeded random); then latency; then /auth routes, or for /platform routes the bearer token, the account's
// rolling window (429 with Retry-After), and the handler. A commit-then-drop fault runs the handler (the conversion
// is recorded) and then destroys the socket without an answer.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';
import { drawFault, seededRandom, type Faults } from './faults.js';
import { RdStationApi, rdError, type RdReply, type RdStationApiOptions } from './rdstation-api.js';
import { RollingWindow, parseRateLimit } from './rolling-window.js';

export interface RdStationEmulatorOptions extends RdStationApiOptions {
  /** Default 0: any free port. */
  port?: number;
  /** Default 127.0.0.1. */
  host?: string;
  /** The account's limit, e.g. "120/1m" (default: 120 requests per minute, the Light/Basic/Pro plans). */
  rateLimit?: string | { max: number; intervalMs: number };
  faults?: Faults;
  /** Seed of the fault RNG (default 1). */
  seed?: number;
  /** Keep every non-admin request's method, path and query string (default false). */
  logRequests?: boolean;
}

export interface RdStationEmulatorStats {
  requests: number;
  byStatus: Record<string, number>;
  /** 429s sent: injected, the account's window, a contact's 24 h budget. */
  sent429: number;
  /** 429s because the account's window was full. */
  rateLimited: number;
  /** 429s because a contact's 24 h budget was spent. */
  contactLimited: number;
  sent5xx: number;
  commitThenDrops: number;
  drops: number;
  hangs: number;
  /** Successful refresh-token grants. */
  refreshes: number;
  /** Token requests refused (bad client, code or refresh token). */
  refusedGrants: number;
}

export interface RdStationEmulator {
  url: string;
  port: number;
  api: RdStationApi;
  /** Its request handling, for a server of another emulator to serve it on the same port (the sandbox). */
  listener: http.RequestListener;
  close(): Promise<void>;
  stats(): RdStationEmulatorStats;
  requests(): Array<{ method: string; path: string; query: string }>;
  setFaults(faults: Faults): void;
  /** Forget contacts, conversions, tokens issued, stats, faults and the windows. */
  reset(): void;
}

/** Start the RD Station emulator; resolves once it listens. */
export async function startRdStationEmulator(opts: RdStationEmulatorOptions = {}): Promise<RdStationEmulator> {
  const api = new RdStationApi(opts);
  const now = api.now;
  const limit =
    typeof opts.rateLimit === 'string'
      ? parseRateLimit(opts.rateLimit)
      : (opts.rateLimit ?? { max: 120, intervalMs: 60_000 });
  let window = new RollingWindow(limit.max, limit.intervalMs, now);
  let faults: Faults = cloneFaults(opts.faults ?? {});
  let random = seededRandom(opts.seed ?? 1);
  let counts = { requests: 0, byStatus: {} as Record<string, number>, sent429: 0, rateLimited: 0, sent5xx: 0 };
  let drops = { commitThenDrops: 0, drops: 0, hangs: 0 };
  let log: Array<{ method: string; path: string; query: string }> = [];

  const send = (res: http.ServerResponse, reply: RdReply): void => {
    counts.byStatus[reply.status] = (counts.byStatus[reply.status] ?? 0) + 1;
    if (reply.status === 429) counts.sent429++;
    if (reply.status >= 500) counts.sent5xx++;
    const text = reply.status === 302 ? '' : JSON.stringify(reply.body);
    res.writeHead(reply.status, {
      ...(text ? { 'content-type': 'application/json; charset=utf-8' } : {}),
      'content-length': Buffer.byteLength(text),
      ...reply.headers,
    });
    res.end(text);
  };

  const tooMany = (retryAfterMs: number): RdReply => ({
    status: 429,
    body: rdError(
      'TOO_MANY_REQUESTS',
      `API rate limit exceeded: at most ${limit.max} requests per ${limit.intervalMs / 1000} s.`,
    ),
    headers: { 'retry-after': String(Math.max(1, Math.ceil(retryAfterMs / 1000))) },
  });

  const route = (req: http.IncomingMessage, url: URL, raw: Buffer): RdReply => {
    const path = url.pathname.replace(/\/+$/, '');
    if (path === '/auth/dialog' && req.method === 'GET') return api.dialog(url.searchParams);
    if (path === '/auth/token' && req.method === 'POST') return api.token(req.headers['content-type'], raw);
    // GET /marketing/account_info: the account the token belongs to ({"name": ...}), as RD Station documents it.
    if (path === '/marketing/account_info' && req.method === 'GET')
      return api.authorize(req.headers.authorization) ?? { status: 200, body: { name: 'Sandbox account' } };
    if (!path.startsWith('/platform/'))
      return { status: 404, body: rdError('NOT_FOUND', `no route ${req.method} ${path}`) };
    const refused = api.authorize(req.headers.authorization);
    if (refused) return refused;
    const admitted = window.admit();
    if (!admitted.ok) {
      counts.rateLimited++;
      return tooMany(window.msUntilFree());
    }
    if (path === '/platform/events' && req.method === 'POST') return api.conversion(url.searchParams, raw);
    const m = /^\/platform\/contacts\/([^/]+)(\/events)?$/.exec(path);
    if (m?.[1]) {
      const id = decodeURIComponent(m[1]);
      if (m[2] && req.method === 'GET') return api.contactEvents(id, url.searchParams);
      if (!m[2] && req.method === 'GET') return api.getContact(id);
      if (!m[2] && req.method === 'PATCH') return api.patchContact(id, raw);
    }
    return { status: 404, body: rdError('NOT_FOUND', `no route ${req.method} ${path}`) };
  };

  const admin = (req: http.IncomingMessage, res: http.ServerResponse, path: string, raw: Buffer): void => {
    const body = (): unknown => JSON.parse(raw.toString('utf8') || '{}');
    try {
      if (req.method === 'GET' && path === '/__admin/contacts')
        return send(res, { status: 200, body: api.contactViews() });
      if (req.method === 'GET' && path === '/__admin/conversions')
        return send(res, { status: 200, body: api.conversions() });
      if (req.method === 'GET' && path === '/__admin/stats') return send(res, { status: 200, body: emulator.stats() });
      if (req.method === 'POST' && path === '/__admin/contacts') {
        const list = body();
        if (!Array.isArray(list)) throw new Error('not an array');
        return send(res, { status: 200, body: { ok: true, stored: api.seed(list as Array<Record<string, unknown>>) } });
      }
      if (req.method === 'POST' && path === '/__admin/faults') {
        faults = cloneFaults(body() as Faults);
        return send(res, { status: 200, body: { ok: true } });
      }
      if (req.method === 'POST' && path === '/__admin/expire-tokens') {
        api.expireAccessTokens();
        return send(res, { status: 200, body: { ok: true } });
      }
      if (req.method === 'POST' && path === '/__admin/revoke') {
        api.revokeGrant();
        return send(res, { status: 200, body: { ok: true } });
      }
      if (req.method === 'POST' && path === '/__admin/grant')
        return send(res, { status: 200, body: { refresh_token: api.grant() } });
      if (req.method === 'POST' && path === '/__admin/reset') {
        emulator.reset();
        return send(res, { status: 200, body: { ok: true } });
      }
    } catch {
      return send(res, { status: 400, body: { error: 'the admin body must be JSON' } });
    }
    return send(res, { status: 404, body: { error: `no admin route ${req.method} ${path}` } });
  };

  const handle = async (req: http.IncomingMessage, res: http.ServerResponse, raw: Buffer): Promise<void> => {
    const url = new URL(req.url ?? '/', 'http://emulator');
    // Beside HubSpot's emulator (the sandbox), its admin routes are under /__admin/rdstation/.
    if (url.pathname.startsWith('/__admin/'))
      return admin(req, res, url.pathname.replace(/^\/__admin\/rdstation\//, '/__admin/'), raw);
    counts.requests++;
    if (opts.logRequests) log.push({ method: req.method ?? '', path: url.pathname, query: url.search });
    const fault = drawFault(faults, random);
    if (faults.latencyMs) await delay(faults.latencyMs);
    const retryAfter: Record<string, string> =
      faults.retryAfter !== undefined ? { 'retry-after': faults.retryAfter } : {};
    switch (fault) {
      case 'hang':
        drops.hangs++;
        return;
      case 'reset':
        drops.drops++;
        req.socket.destroy();
        return;
      case '503':
        return send(res, {
          status: 503,
          body: rdError('SERVICE_UNAVAILABLE', 'Service Unavailable (emulated)'),
          headers: retryAfter,
        });
      case '429':
        return send(res, { ...tooMany(1000), headers: { 'retry-after': '1', ...retryAfter } });
      default:
        break;
    }
    const reply = route(req, url, raw);
    if (fault === 'commit-then-drop') {
      drops.commitThenDrops++;
      drops.drops++;
      res.socket?.destroy();
      return;
    }
    send(res, reply);
  };

  const listener: http.RequestListener = (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      void handle(req, res, Buffer.concat(chunks)).catch((err: unknown) => {
        if (!res.headersSent)
          send(res, { status: 500, body: rdError('INTERNAL_ERROR', `emulator error: ${String(err)}`) });
      });
    });
  };
  const server = http.createServer(listener);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, opts.host ?? '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;

  const emulator: RdStationEmulator = {
    url: `http://${host}:${address.port}`,
    port: address.port,
    api,
    listener,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
    stats: () => ({
      ...structuredClone(counts),
      ...drops,
      contactLimited: api.counters.contactLimited,
      refreshes: api.counters.refreshes,
      refusedGrants: api.counters.refused,
    }),
    requests: () => log.map((r) => ({ ...r })),
    setFaults: (f) => {
      faults = cloneFaults(f);
    },
    reset: () => {
      api.reset();
      window = new RollingWindow(limit.max, limit.intervalMs, now);
      counts = { requests: 0, byStatus: {}, sent429: 0, rateLimited: 0, sent5xx: 0 };
      drops = { commitThenDrops: 0, drops: 0, hangs: 0 };
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
