// A real HTTP server on 127.0.0.1 that behaves like Zoho CRM's records API v8 for the Leads module and its accounts
// server's token endpoint, with the fault injection of the other emulators (faults.ts), so the Zoho sink and the
// OAuth client are tested against sockets. The facts are those of ../shared/reference/crm-apis.md section 5 and the
// OpenAPI document (../shared/specs/zoho/record.bundled.json), which the contract tests check every request and
// answer against; what neither says is marked [unv] below.
//
// - Auth: `Authorization: Zoho-oauthtoken <access token>`; an unknown or expired token is 401 INVALID_TOKEN.
//   POST /oauth/v2/token takes a refresh token (grant_type=refresh_token) or a grant code (authorization_code),
//   form-encoded or in the query string, and answers {access_token, api_domain, token_type, expires_in}; a refused
//   grant is 200 {"error":"invalid_code"}, as Zoho answers it. Refresh tokens may be rotated (an option: Zoho keeps
//   them, but the client must survive a CRM that rotates).
// - Insert (POST /crm/v8/Leads) and upsert (POST /crm/v8/Leads/upsert): at most 100 records; per record SUCCESS,
//   MANDATORY_NOT_FOUND (Last_Name), INVALID_DATA (an email that is not one), DUPLICATE_DATA naming the record that
//   holds the email (insert; the system duplicate check on Email); 201 / 200 when all succeed, 207 when mixed, 400
//   when none does. Upsert matches duplicate_check_fields (default Email): action update or insert.
// - Search (GET /crm/v8/Leads/search?email=|phone=|criteria=(Email:equals:x)): 200 with data, or 204 with no body.
// - API credits: a rolling 24 h window; a write costs 1 per 10 records, any other call 1. The X-RATELIMIT-LIMIT,
//   X-RATELIMIT-REMAINING and X-RATELIMIT-RESET headers on every answer tell them [unv: third parties list these
//   names]; spent credits are a 429 TOO_MANY_REQUESTS saying so, with X-RATELIMIT-REMAINING 0.
// - Concurrency: requests of the account in flight at once above the edition's cap are a 429 TOO_MANY_REQUESTS.
//
// Per request, in order: admin routes (/__admin/zoho/...) bypass everything; then a fault (scripted first, then
// seeded random); then latency; then /oauth routes, or for /crm routes the token, the concurrency cap, the credits,
// and the handler. A commit-then-drop fault runs the handler (the records are written) and destroys the socket.
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';
import { drawFault, seededRandom, type Faults } from './faults.js';

/** One lead as the emulated account holds it: its fields by API name, and its id. */
export interface ZohoLead {
  id: string;
  fields: Record<string, unknown>;
  created: string;
  modified: string;
}

export interface ZohoEmulatorOptions {
  port?: number;
  host?: string;
  /** The OAuth client of the account (default leadledger-test-client / leadledger-test-secret). */
  clientId?: string;
  clientSecret?: string;
  /** Refresh tokens valid from the start. */
  refreshTokens?: string[];
  /** Access tokens valid from the start (a bare ZOHO_ACCESS_TOKEN). */
  accessTokens?: string[];
  /** Access token lifetime (default 3600 s, Zoho's). */
  accessTokenTtlSec?: number;
  /** A refresh hands out a new refresh token and revokes the one used (default false: Zoho keeps them). */
  rotateRefreshTokens?: boolean;
  /** The api_domain the token endpoint answers (default: the emulator's own URL). */
  apiDomain?: string;
  /** API credits in a rolling 24 h window (default 100,000). */
  credits?: number;
  /** Requests in flight at once (default 10) [unv: 10 to 25 by edition]. */
  concurrency?: number;
  /** Insert refuses an email the account holds (the system duplicate check on Email; default true). */
  duplicateCheck?: boolean;
  faults?: Faults;
  seed?: number;
  now?: () => number;
  logRequests?: boolean;
}

export interface ZohoEmulatorStats {
  requests: number;
  byStatus: Record<string, number>;
  sent429: number;
  /** 429s because more requests were in flight than the cap. */
  concurrencyRefused: number;
  /** 429s because the credits were spent. */
  creditsRefused: number;
  sent5xx: number;
  commitThenDrops: number;
  drops: number;
  hangs: number;
  refreshes: number;
  refusedGrants: number;
  /** Credits spent in the window. */
  creditsSpent: number;
  /** The most requests in flight at once. */
  peakInFlight: number;
  /** Write calls and records written (inserted or updated). */
  writeCalls: number;
}

export interface ZohoEmulator {
  url: string;
  port: number;
  /** Its request handling, for the sandbox to serve it on its own port. */
  listener: http.RequestListener;
  close(): Promise<void>;
  leads(): ZohoLead[];
  /** Leads the account already holds (no credits, no faults); returns their ids. */
  seed(leads: Array<Record<string, unknown>>): string[];
  stats(): ZohoEmulatorStats;
  requests(): Array<{ method: string; path: string; query: string }>;
  setFaults(faults: Faults): void;
  /** Every access token handed out so far expires now. */
  expireAccessTokens(): void;
  /** n more authorized API requests, then every access token expires (a token expiring mid-run). */
  expireTokensAfter(n: number): void;
  /** A new valid refresh token (as `leadledger auth zoho` would have obtained). */
  grant(token?: string): string;
  /** A Self Client grant code, good once. */
  grantCode(): string;
  /** Revoke every refresh token. */
  revoke(): void;
  /** Set the credits left in the window (an account whose other integrations spent the rest). */
  setCreditsLeft(n: number): void;
  /** The api_domain tokens come with (the sandbox's own URL, where this one is served on its port). */
  setApiDomain(domain: string): void;
  /** Forget leads, tokens issued, credits spent, stats and faults set since the start (its own faults come back). */
  reset(): void;
}

interface Reply {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

const DAY_MS = 86_400_000;
const EMAIL_RE = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
const LEADS = '/crm/v8/Leads';
const USER = { name: 'Sandbox User', id: '5725767000000411001' };

/** Zoho's top-level error: {code, details, message, status: "error"}. */
export function zohoError(code: string, message: string, details: Record<string, unknown> = {}): unknown {
  return { code, details, message, status: 'error' };
}

/** Start the Zoho CRM emulator; resolves once it listens. */
export async function startZohoEmulator(opts: ZohoEmulatorOptions = {}): Promise<ZohoEmulator> {
  const now = opts.now ?? Date.now;
  const clientId = opts.clientId ?? 'leadledger-test-client';
  const clientSecret = opts.clientSecret ?? 'leadledger-test-secret';
  const ttl = opts.accessTokenTtlSec ?? 3600;
  const creditLimit = opts.credits ?? 100_000;
  const cap = opts.concurrency ?? 10;
  let leads: ZohoLead[] = [];
  let byEmail = new Map<string, ZohoLead>();
  let nextId = 1;
  let refreshTokens = new Set(opts.refreshTokens ?? []);
  let accessTokens = new Map<string, number>((opts.accessTokens ?? []).map((t) => [t, Infinity]));
  let codes = new Set<string>();
  let expireIn: number | undefined;
  // Credits spent, with when: the rolling window forgets those older than 24 h.
  let spends: Array<{ at: number; n: number }> = [];
  let spentBefore = 0;
  let inFlight = 0;
  let faults: Faults = { ...(opts.faults ?? {}), ...(opts.faults?.script ? { script: [...opts.faults.script] } : {}) };
  let random = seededRandom(opts.seed ?? 1);
  let log: Array<{ method: string; path: string; query: string }> = [];
  const emptyStats = (): ZohoEmulatorStats => ({
    requests: 0,
    byStatus: {},
    sent429: 0,
    concurrencyRefused: 0,
    creditsRefused: 0,
    sent5xx: 0,
    commitThenDrops: 0,
    drops: 0,
    hangs: 0,
    refreshes: 0,
    refusedGrants: 0,
    creditsSpent: 0,
    peakInFlight: 0,
    writeCalls: 0,
  });
  let stats = emptyStats();
  let url = '';
  let apiDomain = opts.apiDomain;

  const spent = (): number => {
    const edge = now() - DAY_MS;
    while (spends.length && spends[0]!.at <= edge) spends.shift();
    return spentBefore + spends.reduce((a, s) => a + s.n, 0);
  };
  const creditHeaders = (): Record<string, string> => {
    const left = Math.max(0, creditLimit - spent());
    const reset = spends.length ? Math.max(0, Math.ceil((spends[0]!.at + DAY_MS - now()) / 1000)) : 0;
    return {
      'x-ratelimit-limit': String(creditLimit),
      'x-ratelimit-remaining': String(left),
      'x-ratelimit-reset': String(reset),
    };
  };

  const store = (fields: Record<string, unknown>): ZohoLead => {
    const t = new Date(now()).toISOString();
    const lead: ZohoLead = {
      id: String(5725767000000500000n + BigInt(nextId++)),
      fields: { ...fields },
      created: t,
      modified: t,
    };
    leads.push(lead);
    const email = typeof fields.Email === 'string' ? fields.Email.toLowerCase() : undefined;
    if (email && !byEmail.has(email)) byEmail.set(email, lead);
    return lead;
  };

  const success = (lead: ZohoLead, action: 'insert' | 'update' | undefined): Record<string, unknown> => ({
    code: 'SUCCESS',
    details: {
      Modified_Time: lead.modified,
      Modified_By: USER,
      Created_Time: lead.created,
      id: lead.id,
      Created_By: USER,
      $approval_state: 'approved',
    },
    message: action === 'update' ? 'record updated' : 'record added',
    status: 'success',
    ...(action ? { action, duplicate_field: action === 'update' ? 'Email' : null } : {}),
  });

  // A record's own errors (MANDATORY_NOT_FOUND, INVALID_DATA), or undefined.
  const invalid = (rec: unknown, n: number): Record<string, unknown> | undefined => {
    if (typeof rec !== 'object' || rec === null || Array.isArray(rec))
      return { code: 'INVALID_DATA', details: { json_path: `$.data[${n}]` }, message: 'invalid data', status: 'error' };
    const r = rec as Record<string, unknown>;
    if (typeof r.Last_Name !== 'string' || r.Last_Name.trim() === '')
      return {
        code: 'MANDATORY_NOT_FOUND',
        details: { api_name: 'Last_Name', json_path: `$.data[${n}].Last_Name` },
        message: 'required field not found',
        status: 'error',
      };
    for (const [k, v] of Object.entries(r))
      if (typeof v === 'string' && v.length > 255 && k !== 'Description')
        return {
          code: 'INVALID_DATA',
          details: { api_name: k, json_path: `$.data[${n}].${k}`, maximum_length: 255 },
          message: 'invalid data',
          status: 'error',
        };
    if (r.Email !== undefined && (typeof r.Email !== 'string' || !EMAIL_RE.test(r.Email)))
      return {
        code: 'INVALID_DATA',
        details: { api_name: 'Email', json_path: `$.data[${n}].Email`, expected_data_type: 'email' },
        message: 'invalid data',
        status: 'error',
      };
    return undefined;
  };

  const records = (raw: Buffer): { data: unknown[]; body: Record<string, unknown> } | Reply => {
    let body: unknown;
    try {
      body = JSON.parse(raw.toString('utf8') || 'null');
    } catch {
      return { status: 400, body: zohoError('INVALID_DATA', 'the body is not JSON') };
    }
    const b = body as Record<string, unknown> | null;
    if (!b || !Array.isArray(b.data))
      return {
        status: 400,
        body: zohoError('MANDATORY_NOT_FOUND', 'required field not found', { api_name: 'data', json_path: '$.data' }),
      };
    if (b.data.length > 100)
      return { status: 400, body: zohoError('LIMIT_EXCEEDED', 'the number of records exceeds 100', { limit: 100 }) };
    return { data: b.data, body: b };
  };

  const status = (entries: Array<Record<string, unknown>>, ok: number): number => {
    const good = entries.filter((e) => e.status === 'success').length;
    return good === entries.length ? ok : good === 0 ? 400 : 207;
  };

  const insert = (raw: Buffer): Reply => {
    const got = records(raw);
    if ('status' in got) return got;
    const out = got.data.map((rec, n) => {
      const bad = invalid(rec, n);
      if (bad) return bad;
      const r = rec as Record<string, unknown>;
      const email = typeof r.Email === 'string' ? r.Email.toLowerCase() : undefined;
      const held = email !== undefined && opts.duplicateCheck !== false ? byEmail.get(email) : undefined;
      if (held)
        return {
          code: 'DUPLICATE_DATA',
          details: {
            api_name: 'Email',
            duplicate_record: {
              Owner: { ...USER, zuid: '60000000001' },
              module: { api_name: 'Leads', id: '5725767000000002175' },
              id: held.id,
            },
            json_path: `$.data[${n}].Email`,
            id: held.id,
            more_records: false,
          },
          message: 'duplicate data',
          status: 'error',
        };
      return success(store(r), undefined);
    });
    return { status: status(out, 201), body: { data: out } };
  };

  const upsert = (raw: Buffer): Reply => {
    const got = records(raw);
    if ('status' in got) return got;
    const checks = Array.isArray(got.body.duplicate_check_fields) ? got.body.duplicate_check_fields : ['Email'];
    const out = got.data.map((rec, n) => {
      const bad = invalid(rec, n);
      if (bad) return bad;
      const r = rec as Record<string, unknown>;
      const email = typeof r.Email === 'string' ? r.Email.toLowerCase() : undefined;
      const held = checks.includes('Email') && email !== undefined ? byEmail.get(email) : undefined;
      if (held) {
        Object.assign(held.fields, r);
        held.modified = new Date(now()).toISOString();
        return success(held, 'update');
      }
      return success(store(r), 'insert');
    });
    return { status: status(out, 200), body: { data: out } };
  };

  const view = (l: ZohoLead): Record<string, unknown> => ({
    ...l.fields,
    id: l.id,
    Created_Time: l.created,
    Modified_Time: l.modified,
  });

  const search = (q: URLSearchParams): Reply => {
    const email = q.get('email')?.toLowerCase();
    const phone = q.get('phone');
    const criteria = /^\(?\(?Email:equals:([^)]+)\)?\)?$/i.exec(q.get('criteria') ?? '')?.[1]?.toLowerCase();
    if (!email && !phone && !criteria)
      return {
        status: 400,
        body: zohoError('REQUIRED_PARAM_MISSING', 'one of the expected parameter is missing', { param: 'criteria' }),
      };
    const want = email ?? criteria;
    const found = leads.filter((l) =>
      want !== undefined
        ? typeof l.fields.Email === 'string' && l.fields.Email.toLowerCase() === want
        : l.fields.Phone === phone || l.fields.Mobile === phone,
    );
    if (!found.length) return { status: 204 };
    return {
      status: 200,
      body: {
        data: found.slice(0, 200).map(view),
        info: { per_page: 200, count: found.length, page: 1, more_records: found.length > 200 },
      },
    };
  };

  const token = (q: URLSearchParams, contentType: string | undefined, raw: Buffer): Reply => {
    const p = new URLSearchParams(q);
    if (contentType?.includes('application/x-www-form-urlencoded'))
      for (const [k, v] of new URLSearchParams(raw.toString('utf8'))) p.set(k, v);
    const refuse = (): Reply => {
      stats.refusedGrants++;
      return { status: 200, body: { error: 'invalid_code' } };
    };
    if (p.get('client_id') !== clientId) {
      stats.refusedGrants++;
      return { status: 200, body: { error: 'invalid_client' } };
    }
    if (p.get('client_secret') !== clientSecret) {
      stats.refusedGrants++;
      return { status: 200, body: { error: 'invalid_client_secret' } };
    }
    const issue = (refresh?: string): Reply => {
      const access = `1000.${randomUUID().replaceAll('-', '')}`;
      accessTokens.set(access, now() + ttl * 1000);
      return {
        status: 200,
        body: {
          access_token: access,
          ...(refresh ? { refresh_token: refresh } : {}),
          api_domain: apiDomain ?? url,
          token_type: 'Bearer',
          expires_in: ttl,
        },
      };
    };
    const grantType = p.get('grant_type');
    if (grantType === 'authorization_code') {
      const code = p.get('code') ?? '';
      if (!codes.delete(code)) return refuse();
      return issue(emulator.grant());
    }
    if (grantType === 'refresh_token') {
      const rt = p.get('refresh_token') ?? '';
      if (!refreshTokens.has(rt)) return refuse();
      stats.refreshes++;
      if (opts.rotateRefreshTokens) {
        refreshTokens.delete(rt);
        return issue(emulator.grant());
      }
      return issue();
    }
    return { status: 200, body: { error: 'unsupported_grant_type' } };
  };

  const authorized = (h: string | undefined): boolean => {
    const m = /^Zoho-oauthtoken\s+(\S+)$/.exec(h ?? '');
    const exp = m ? accessTokens.get(m[1]!) : undefined;
    if (exp === undefined || exp <= now()) return false;
    if (expireIn !== undefined && expireIn-- <= 0) {
      emulator.expireAccessTokens();
      return false;
    }
    return true;
  };

  const send = (res: http.ServerResponse, r: Reply): void => {
    stats.byStatus[r.status] = (stats.byStatus[r.status] ?? 0) + 1;
    if (r.status === 429) stats.sent429++;
    if (r.status >= 500) stats.sent5xx++;
    const text = r.body === undefined ? '' : JSON.stringify(r.body);
    res.writeHead(r.status, {
      ...(text ? { 'content-type': 'application/json;charset=UTF-8' } : {}),
      'content-length': Buffer.byteLength(text),
      ...r.headers,
    });
    res.end(text);
  };

  // The /crm routes once the token, the cap and the credits let the request through.
  const route = (req: http.IncomingMessage, u: URL, raw: Buffer): { reply: Reply; cost: number } => {
    const path = u.pathname.replace(/\/+$/, '');
    if (req.method === 'POST' && path === LEADS) {
      stats.writeCalls++;
      const r = insert(raw);
      return { reply: r, cost: writeCost(r) };
    }
    if (req.method === 'POST' && path === `${LEADS}/upsert`) {
      stats.writeCalls++;
      const r = upsert(raw);
      return { reply: r, cost: writeCost(r) };
    }
    if (req.method === 'GET' && path === `${LEADS}/search`) return { reply: search(u.searchParams), cost: 1 };
    if (req.method === 'GET' && path === LEADS) {
      const per = Math.min(200, Number(u.searchParams.get('per_page') ?? 200) || 200);
      return {
        reply: leads.length
          ? {
              status: 200,
              body: {
                data: leads.slice(0, per).map(view),
                info: { per_page: per, count: Math.min(per, leads.length), page: 1, more_records: leads.length > per },
              },
            }
          : { status: 204 },
        cost: 1,
      };
    }
    return {
      reply: {
        status: 404,
        body: zohoError('INVALID_URL_PATTERN', 'Please check if the URL trying to access is a correct one'),
      },
      cost: 0,
    };
  };

  const writeCost = (r: Reply): number => {
    const data = (r.body as { data?: unknown[] } | undefined)?.data;
    return Array.isArray(data) ? Math.ceil(data.length / 10) : 1;
  };

  const admin = (req: http.IncomingMessage, res: http.ServerResponse, path: string, raw: Buffer): void => {
    const body = (): unknown => JSON.parse(raw.toString('utf8') || '{}');
    try {
      if (req.method === 'GET' && path === 'leads') return send(res, { status: 200, body: leads.map(view) });
      if (req.method === 'GET' && path === 'stats') return send(res, { status: 200, body: emulator.stats() });
      if (req.method === 'POST' && path === 'leads') {
        const list = body();
        if (!Array.isArray(list)) throw new Error('not an array');
        return send(res, {
          status: 200,
          body: { ok: true, ids: emulator.seed(list as Array<Record<string, unknown>>) },
        });
      }
      if (req.method === 'POST' && path === 'faults') {
        emulator.setFaults(body() as Faults);
        return send(res, { status: 200, body: { ok: true } });
      }
      if (req.method === 'POST' && path === 'expire-tokens') {
        emulator.expireAccessTokens();
        return send(res, { status: 200, body: { ok: true } });
      }
      if (req.method === 'POST' && path === 'grant')
        return send(res, { status: 200, body: { refresh_token: emulator.grant() } });
      if (req.method === 'POST' && path === 'code')
        return send(res, { status: 200, body: { code: emulator.grantCode() } });
      if (req.method === 'POST' && path === 'reset') {
        emulator.reset();
        return send(res, { status: 200, body: { ok: true } });
      }
    } catch {
      return send(res, { status: 400, body: { error: 'the admin body must be JSON' } });
    }
    return send(res, { status: 404, body: { error: `no admin route ${req.method} ${path}` } });
  };

  const handle = async (req: http.IncomingMessage, res: http.ServerResponse, raw: Buffer): Promise<void> => {
    const u = new URL(req.url ?? '/', 'http://emulator');
    const adminAt = /^\/__admin\/(?:zoho\/)?(.*)$/.exec(u.pathname);
    if (adminAt) return admin(req, res, adminAt[1] ?? '', raw);
    stats.requests++;
    if (opts.logRequests) log.push({ method: req.method ?? '', path: u.pathname, query: u.search });
    // An API request is in flight from its arrival to its answer: counted before any wait, released as the answer
    // is written (the token endpoint is the accounts server's, outside the cap).
    const api = u.pathname.startsWith('/crm/');
    if (api) inFlight++;
    stats.peakInFlight = Math.max(stats.peakInFlight, inFlight);
    let released = !api;
    const done = (): void => {
      if (!released) inFlight--;
      released = true;
    };
    res.once('close', done);
    try {
      const fault = drawFault(faults, random);
      if (faults.latencyMs) await delay(faults.latencyMs);
      const retryAfter: Record<string, string> =
        faults.retryAfter !== undefined ? { 'retry-after': faults.retryAfter } : {};
      switch (fault) {
        case 'hang':
          stats.hangs++;
          return;
        case 'reset':
          stats.drops++;
          done();
          req.socket.destroy();
          return;
        case '503':
          done();
          return send(res, {
            status: 503,
            body: zohoError('INTERNAL_ERROR', 'Service Unavailable (emulated)'),
            headers: retryAfter,
          });
        case '429':
          done();
          return send(res, {
            status: 429,
            body: zohoError('TOO_MANY_REQUESTS', 'too many requests (emulated)', { retry_after: 1 }),
            headers: { 'retry-after': '1', ...retryAfter },
          });
        default:
          break;
      }
      const path = u.pathname.replace(/\/+$/, '');
      if (path === '/oauth/v2/token' && req.method === 'POST') {
        done();
        return send(res, token(u.searchParams, req.headers['content-type'], raw));
      }
      if (!path.startsWith('/crm/')) {
        done();
        return send(res, {
          status: 404,
          body: zohoError('INVALID_URL_PATTERN', 'Please check if the URL trying to access is a correct one'),
        });
      }
      if (!authorized(req.headers.authorization)) {
        done();
        return send(res, { status: 401, body: zohoError('INVALID_TOKEN', 'invalid oauth token') });
      }
      if (inFlight > cap) {
        stats.concurrencyRefused++;
        done();
        return send(res, {
          status: 429,
          body: zohoError('TOO_MANY_REQUESTS', `concurrency limit exceeded: at most ${cap} requests at once`, {
            retry_after: 1,
          }),
          headers: { 'retry-after': '1', ...creditHeaders() },
        });
      }
      const left = creditLimit - spent();
      if (left <= 0) {
        stats.creditsRefused++;
        done();
        return send(res, {
          status: 429,
          body: zohoError('TOO_MANY_REQUESTS', 'the API credits of the rolling 24 hour window are used up', {
            retry_after: Math.ceil((spends[0] ? spends[0].at + DAY_MS - now() : DAY_MS) / 1000),
          }),
          headers: creditHeaders(),
        });
      }
      const { reply, cost } = route(req, u, raw);
      if (cost > 0) {
        spends.push({ at: now(), n: cost });
        stats.creditsSpent += cost;
      }
      done();
      if (fault === 'commit-then-drop') {
        stats.commitThenDrops++;
        stats.drops++;
        res.socket?.destroy();
        return;
      }
      send(res, { ...reply, headers: { ...reply.headers, ...creditHeaders() } });
    } finally {
      if (res.writableEnded || res.destroyed) done();
    }
  };

  const listener: http.RequestListener = (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      void handle(req, res, Buffer.concat(chunks)).catch((err: unknown) => {
        if (!res.headersSent)
          send(res, { status: 500, body: zohoError('INTERNAL_ERROR', `emulator error: ${String(err)}`) });
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
  url = `http://${host}:${address.port}`;

  const emulator: ZohoEmulator = {
    url,
    port: address.port,
    listener,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
    leads: () => leads.map((l) => ({ ...l, fields: { ...l.fields } })),
    seed: (list) => list.map((f) => store(f).id),
    stats: () => ({ ...structuredClone(stats), creditsSpent: spent() }),
    requests: () => log.map((r) => ({ ...r })),
    setFaults: (f) => {
      faults = { ...f, ...(f.script ? { script: [...f.script] } : {}) };
    },
    expireAccessTokens: () => {
      for (const k of accessTokens.keys()) accessTokens.set(k, now() - 1);
      expireIn = undefined;
    },
    expireTokensAfter: (n) => {
      expireIn = n;
    },
    grant: (t = `1000.${randomUUID().replaceAll('-', '')}`) => {
      refreshTokens.add(t);
      return t;
    },
    grantCode: () => {
      const c = `1000.${randomUUID().replaceAll('-', '')}`;
      codes.add(c);
      return c;
    },
    revoke: () => refreshTokens.clear(),
    setCreditsLeft: (n) => {
      spends = [];
      spentBefore = Math.max(0, creditLimit - n);
    },
    setApiDomain: (d) => {
      apiDomain = d;
    },
    reset: () => {
      leads = [];
      byEmail = new Map();
      nextId = 1;
      refreshTokens = new Set(opts.refreshTokens ?? []);
      accessTokens = new Map((opts.accessTokens ?? []).map((t) => [t, Infinity]));
      codes = new Set();
      expireIn = undefined;
      spends = [];
      spentBefore = 0;
      // The faults it was started with (the bench's latency) come back; those set since are forgotten.
      faults = { ...(opts.faults ?? {}), ...(opts.faults?.script ? { script: [...opts.faults.script] } : {}) };
      random = seededRandom(opts.seed ?? 1);
      log = [];
      stats = emptyStats();
    },
  };
  return emulator;
}
