// A real HTTP server on 127.0.0.1 that behaves like Pipedrive's API for what leadledger uses: persons through API v2
// (create, search, get, patch) and leads through API v1 (create), with Pipedrive's auth, error envelopes, rate-limit
// headers and limits, and the fault injection of the HubSpot emulator (faults.ts), so the Pipedrive sink is tested
// against sockets rather than mocks. Its requests and answers are checked against Pipedrive's OpenAPI documents in
// the tests (test/sinks/pipedrive-contract.ts runs them through a validating proxy).
//
// Rules, and where each comes from (crm-apis.md is ../shared/reference/crm-apis.md, section 2; the specs are
// ../shared/specs/pipedrive/openapi-v1.yaml and openapi-v2.yaml):
// - Auth: header `x-api-token` (the legacy `?api_token=` query and an OAuth `Authorization: Bearer` are accepted too);
//   a missing or wrong token is 401 {"success":false,"error":"unauthorized access","errorCode":401,"error_info":
//   "Please check developers.pipedrive.com"} (crm-apis.md, observed).
// - Emails are not unique: a second create with the same email makes a second person (crm-apis.md "Duplicates").
// - `name` is required on create: the spec's addPerson schema requires nothing (SOURCE.md notes it), the live API
//   refuses a person without one; this emulator answers 400 in Pipedrive's error envelope.
// - Search (`GET /api/v2/persons/search`): `term` required (min 2 characters, 1 with exact_match), exact_match is
//   case-insensitive equality on a whole email, `limit` at most 500 (spec searchPersons).
// - Responses are {"success":true,"data":...}; errors {"success":false,"error":...,"error_info":...,"data":null,
//   "additional_data":null} (crm-apis.md "Error envelope"). A field with no value is left out rather than sent as
//   null: the spec types such fields (org_id, organization, next_cursor) as non-nullable.
// - Rate limits (pipedrive.readme.io/docs/core-api-concepts-rate-limiting): a burst window of 2 s per token
//   (20 requests on the lowest api_token plan), the search endpoint its own tighter window (10 per 2 s), both sent as
//   `x-ratelimit-limit`, `x-ratelimit-remaining` and `x-ratelimit-reset` (seconds until the window frees a place);
//   a daily token budget for the company, spent by each request at the spec's `x-token-cost` (addPerson 5,
//   updatePerson 5, getPerson 1, searchPersons 20, addLead 10), sent as `x-daily-ratelimit-token-limit` and
//   `x-daily-ratelimit-token-remaining` (seen live, crm-apis.md), reset at midnight UTC of the emulator's clock.
//   Over a limit: 429 {"success":false,"error":"Request over limit","errorCode":429,...} with Retry-After (a
//   429 body is unverified in crm-apis.md; Retry-After was seen live on a search 429, devcommunity.pipedrive.com
//   thread 7462).
// - Leads (`POST /v1/leads` or `/api/v1/leads`): title required, person_id or organization_id required, the person
//   must exist; answered 201 with a UUID id, source_name "API" (spec addLead).
//
// The clock is injectable (`now`): rate windows, the daily budget and timestamps read it, so no test waits for time.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { drawFault, seededRandom, type FaultKind, type Faults } from './faults.js';
import { RollingWindow } from './rolling-window.js';

/** One email or phone of a person, as API v2 holds it. */
export interface PipedriveContactValue {
  value: string;
  primary: boolean;
  label: string;
}

/** A person as the emulated company holds it. */
export interface StoredPerson {
  id: number;
  name: string;
  emails: PipedriveContactValue[];
  phones: PipedriveContactValue[];
  org_id?: number;
  owner_id: number;
  visible_to: number;
  label_ids: number[];
  custom_fields: Record<string, unknown>;
  add_time: string;
  update_time: string;
}

/** A lead as the emulated company holds it. */
export interface StoredLead {
  id: string;
  title: string;
  person_id: number | null;
  organization_id: number | null;
  owner_id: number;
  label_ids: string[];
  origin_id: string | null;
  add_time: string;
}

export interface PipedriveEmulatorOptions {
  /** Default 0: any free port. */
  port?: number;
  /** Default 127.0.0.1. */
  host?: string;
  /** The API token accepted; when unset any non-empty token is accepted. */
  token?: string;
  /** Requests per 2 s window per token (default 20, the lowest api_token plan). */
  burst?: number;
  /** Search requests per 2 s window (default 10). */
  searchBurst?: number;
  /** Window length (default 2000 ms). */
  windowMs?: number;
  /** The company's daily token budget (default 30,000: one seat on the lowest plan). */
  dailyBudget?: number;
  faults?: Faults;
  /** Seed of the fault RNG (default 1). */
  seed?: number;
  /** The clock (ms since the epoch); default Date.now. */
  now?: () => number;
  /** Keep every API request's method, path and query string (default false). */
  logRequests?: boolean;
  /** Persons younger than this are not found by search yet (Pipedrive's search index follows writes). */
  searchLagMs?: number;
}

export interface PipedriveEmulatorStats {
  requests: number;
  byStatus: Record<string, number>;
  /** 429s sent, injected or from a limit. */
  sent429: number;
  /** 429s because the burst window (or the search window) was full. */
  rateLimited: number;
  /** 429s because the daily budget was spent. */
  budgetRefused: number;
  sent5xx: number;
  commitThenDrops: number;
  resets: number;
  hangs: number;
  /** Tokens spent today. */
  tokensSpent: number;
}

/** One request as the emulator received it (logRequests). */
export interface PipedriveLoggedRequest {
  method: string;
  path: string;
  query: string;
}

export interface PipedriveEmulator {
  /** Base URL, e.g. http://127.0.0.1:41234 (no path: the API paths are /api/v2/... and /v1/...). */
  url: string;
  port: number;
  close(): Promise<void>;
  persons(): StoredPerson[];
  leads(): StoredLead[];
  /** Store persons as if the company already had them (no limits, no faults); returns their ids. */
  seed(persons: Array<{ name: string; email?: string | string[]; phone?: string }>): number[];
  stats(): PipedriveEmulatorStats;
  requests(): PipedriveLoggedRequest[];
  /** Tokens left in today's budget. */
  budgetLeft(): number;
  /** Set the tokens left today (a company whose users spent the rest). */
  setBudgetLeft(tokens: number): void;
  setFaults(faults: Faults): void;
  /**
   * The next request of one operation (after `skip` others of it) gets this fault, `times` times in a row: a fault
   * aimed at the create rather than at the search before it.
   */
  failNext(op: PipedriveOperation, fault: FaultKind, opts?: { skip?: number; times?: number }): void;
  /** Change the search index lag (reset() restores the option's). */
  setSearchLag(ms: number): void;
  /** Forget persons, leads, stats, faults, windows and the budget spent. */
  reset(): void;
  /** Answers one request as the server does: the sandbox serves it beside HubSpot's on one port. */
  handle(req: http.IncomingMessage, res: http.ServerResponse, raw: Buffer): Promise<void>;
}

interface Reply {
  status: number;
  body: unknown;
}

/** The token cost of each operation, from the spec's x-token-cost. */
export const PIPEDRIVE_TOKEN_COST = {
  addPerson: 5,
  updatePerson: 5,
  getPerson: 1,
  searchPersons: 20,
  addLead: 10,
  getCurrentUser: 2,
} as const;

/** An operation of the emulated API. */
export type PipedriveOperation = keyof typeof PIPEDRIVE_TOKEN_COST;

const OWNER_ID = 1;
const DAY_MS = 86_400_000;

/** Pipedrive's error envelope. */
export function pipedriveError(error: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    success: false,
    error,
    error_info: 'Please check developers.pipedrive.com',
    data: null,
    additional_data: null,
    ...extra,
  };
}

const UNAUTHORIZED = {
  success: false,
  error: 'unauthorized access',
  errorCode: 401,
  error_info: 'Please check developers.pipedrive.com',
};

const overLimit = (why: string): Record<string, unknown> =>
  pipedriveError(`Request over limit${why ? `: ${why}` : ''}`, { errorCode: 429 });

/** The persons and leads of one emulated company, one handler per operation. */
export class PipedriveApi {
  private people = new Map<number, StoredPerson>();
  private leadStore: StoredLead[] = [];
  private nextId = 1;

  constructor(
    private readonly now: () => number = Date.now,
    /** Persons younger than this are not found by search yet. */
    public searchLagMs = 0,
  ) {}

  persons(): StoredPerson[] {
    return [...this.people.values()].map((p) => structuredClone(p));
  }

  leads(): StoredLead[] {
    return this.leadStore.map((l) => ({ ...l }));
  }

  reset(): void {
    this.people.clear();
    this.leadStore = [];
    this.nextId = 1;
  }

  /** Store persons without limits or faults; returns their ids. */
  seed(persons: Array<{ name: string; email?: string | string[]; phone?: string }>): number[] {
    return persons.map((p) => {
      const emails = p.email === undefined ? [] : Array.isArray(p.email) ? p.email : [p.email];
      return this.store({
        name: p.name,
        emails: emails.map((value, i) => ({ value, primary: i === 0, label: 'work' })),
        phones: p.phone ? [{ value: p.phone, primary: true, label: 'mobile' }] : [],
      }).id;
    });
  }

  /** POST /api/v2/persons */
  addPerson(body: unknown): Reply {
    const b = asObject(body);
    if (!b) return { status: 400, body: pipedriveError('Request body must be a JSON object') };
    const bad = checkPersonBody(b);
    if (bad) return { status: 400, body: pipedriveError(bad) };
    if (typeof b.name !== 'string' || b.name.trim() === '')
      return { status: 400, body: pipedriveError('Name must be given') };
    const person = this.store(b);
    return { status: 200, body: { success: true, data: personView(person) } };
  }

  /** PATCH /api/v2/persons/{id} */
  updatePerson(id: number, body: unknown): Reply {
    const person = this.people.get(id);
    if (!person) return { status: 404, body: pipedriveError('Person not found') };
    const b = asObject(body);
    if (!b) return { status: 400, body: pipedriveError('Request body must be a JSON object') };
    const bad = checkPersonBody(b);
    if (bad) return { status: 400, body: pipedriveError(bad) };
    if (b.name !== undefined) {
      if (typeof b.name !== 'string' || b.name.trim() === '')
        return { status: 400, body: pipedriveError('Name must not be empty') };
      person.name = b.name;
    }
    if (b.emails !== undefined) person.emails = contactValues(b.emails);
    if (b.phones !== undefined) person.phones = contactValues(b.phones);
    if (typeof b.org_id === 'number') person.org_id = b.org_id;
    if (typeof b.owner_id === 'number') person.owner_id = b.owner_id;
    if (typeof b.visible_to === 'number') person.visible_to = b.visible_to;
    if (Array.isArray(b.label_ids)) person.label_ids = b.label_ids as number[];
    const custom = asObject(b.custom_fields);
    if (custom) Object.assign(person.custom_fields, custom);
    person.update_time = this.stamp();
    return { status: 200, body: { success: true, data: personView(person) } };
  }

  /** GET /api/v2/persons/{id} */
  getPerson(id: number): Reply {
    const person = this.people.get(id);
    if (!person) return { status: 404, body: pipedriveError('Person not found') };
    return { status: 200, body: { success: true, data: personView(person) } };
  }

  /**
   * GET /v1/users/me: the user the token belongs to (Pipedrive's "Get current user data"): its id, name, email, the
   * company's id, name and domain, and whether the user is an admin.
   */
  currentUser(): Reply {
    return {
      status: 200,
      body: {
        success: true,
        data: {
          id: OWNER_ID,
          name: 'Sandbox User',
          email: 'owner@sandbox.example',
          company_id: 1,
          company_name: 'Sandbox',
          company_domain: 'sandbox',
          is_admin: 1,
          active_flag: true,
        },
      },
    };
  }

  /** GET /api/v2/persons/search */
  searchPersons(query: URLSearchParams): Reply {
    const term = query.get('term');
    const exact = query.get('exact_match') === 'true';
    if (term === null || term.length < (exact ? 1 : 2))
      return {
        status: 400,
        body: pipedriveError('term must be at least 2 characters long (1 with exact_match)'),
      };
    const fields = (query.get('fields') ?? 'custom_fields,email,notes,phone,name').split(',');
    const limitRaw = query.get('limit');
    const limit = limitRaw === null ? 100 : Number(limitRaw);
    if (!Number.isInteger(limit) || limit < 1 || limit > 500)
      return { status: 400, body: pipedriveError('limit must be an integer from 1 to 500') };
    const t = term.toLowerCase();
    const hit = (v: string): boolean => (exact ? v.toLowerCase() === t : v.toLowerCase().includes(t));
    const indexed = this.now() - this.searchLagMs;
    const items = [...this.people.values()]
      .filter((p) => this.searchLagMs === 0 || Date.parse(p.add_time) <= indexed)
      .filter(
        (p) =>
          (fields.includes('email') && p.emails.some((e) => hit(e.value))) ||
          (fields.includes('phone') && p.phones.some((ph) => hit(ph.value))) ||
          (fields.includes('name') && hit(p.name)),
      )
      .slice(0, limit)
      .map((p) => ({
        result_score: 1,
        item: {
          id: p.id,
          type: 'person',
          name: p.name,
          phones: p.phones.map((ph) => ph.value),
          emails: p.emails.map((e) => e.value),
          visible_to: p.visible_to,
          owner: { id: p.owner_id },
          ...(p.org_id !== undefined ? { organization: { id: p.org_id, name: `Organization ${p.org_id}` } } : {}),
          custom_fields: [],
          notes: [],
        },
      }));
    return { status: 200, body: { success: true, data: { items }, additional_data: {} } };
  }

  /** POST /v1/leads */
  addLead(body: unknown): Reply {
    const b = asObject(body);
    if (!b) return { status: 400, body: pipedriveError('Request body must be a JSON object') };
    if (typeof b.title !== 'string' || b.title === '')
      return { status: 400, body: pipedriveError('Validation failed: title: Required') };
    const personId = typeof b.person_id === 'number' ? b.person_id : null;
    const orgId = typeof b.organization_id === 'number' ? b.organization_id : null;
    if (personId === null && orgId === null)
      return {
        status: 400,
        body: pipedriveError('A lead must always be linked to a person or an organization or both'),
      };
    if (personId !== null && !this.people.has(personId))
      return { status: 400, body: pipedriveError(`Person with id ${personId} does not exist`) };
    const labels = b.label_ids === undefined ? [] : b.label_ids;
    if (!Array.isArray(labels) || labels.some((l) => typeof l !== 'string'))
      return { status: 400, body: pipedriveError('Validation failed: label_ids: Expected array of strings') };
    const now = this.stamp();
    const lead: StoredLead = {
      id: randomUUID(),
      title: b.title,
      person_id: personId,
      organization_id: orgId,
      owner_id: typeof b.owner_id === 'number' ? b.owner_id : OWNER_ID,
      label_ids: labels as string[],
      origin_id: typeof b.origin_id === 'string' ? b.origin_id : null,
      add_time: now,
    };
    this.leadStore.push(lead);
    return {
      status: 201,
      body: {
        success: true,
        data: {
          id: lead.id,
          title: lead.title,
          owner_id: lead.owner_id,
          creator_id: OWNER_ID,
          label_ids: lead.label_ids,
          person_id: lead.person_id,
          organization_id: lead.organization_id,
          source_name: 'API',
          origin: 'API',
          origin_id: lead.origin_id,
          channel: null,
          channel_id: null,
          source_deal_id: null,
          is_archived: false,
          was_seen: false,
          value: null,
          expected_close_date: null,
          next_activity_id: null,
          add_time: now,
          update_time: now,
          visible_to: '3',
          cc_email: `company+1+lead${lead.id.slice(0, 8)}@emulator.pipedrivemail.com`,
        },
      },
    };
  }

  private store(b: Record<string, unknown>): StoredPerson {
    const now = this.stamp();
    const person: StoredPerson = {
      id: this.nextId++,
      name: String(b.name),
      emails: contactValues(b.emails),
      phones: contactValues(b.phones),
      ...(typeof b.org_id === 'number' ? { org_id: b.org_id } : {}),
      owner_id: typeof b.owner_id === 'number' ? b.owner_id : OWNER_ID,
      visible_to: typeof b.visible_to === 'number' ? b.visible_to : 3,
      label_ids: Array.isArray(b.label_ids) ? (b.label_ids as number[]) : [],
      custom_fields: { ...(asObject(b.custom_fields) ?? {}) },
      add_time: now,
      update_time: now,
    };
    this.people.set(person.id, person);
    return person;
  }

  private stamp(): string {
    return new Date(this.now()).toISOString().replace(/\.\d{3}Z$/, 'Z');
  }
}

function asObject(v: unknown): Record<string, unknown> | undefined {
  return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
}

/** What the live API refuses in a person body (types), in its words; undefined when acceptable. */
function checkPersonBody(b: Record<string, unknown>): string | undefined {
  for (const key of ['emails', 'phones'] as const) {
    const v = b[key];
    if (v === undefined) continue;
    if (!Array.isArray(v)) return `${key} must be an array`;
    for (const e of v) {
      const o = asObject(e);
      if (!o || typeof o.value !== 'string') return `${key}[].value must be a string`;
    }
  }
  for (const key of ['org_id', 'owner_id', 'visible_to'] as const)
    if (b[key] !== undefined && !Number.isInteger(b[key])) return `${key} must be an integer`;
  return undefined;
}

function contactValues(v: unknown): PipedriveContactValue[] {
  if (!Array.isArray(v)) return [];
  return v.map((e, i) => {
    const o = e as Record<string, unknown>;
    return {
      value: String(o.value),
      primary: typeof o.primary === 'boolean' ? o.primary : i === 0,
      label: typeof o.label === 'string' ? o.label : 'work',
    };
  });
}

function personView(p: StoredPerson): Record<string, unknown> {
  const [first, ...rest] = p.name.split(/\s+/);
  return {
    id: p.id,
    name: p.name,
    first_name: first ?? '',
    last_name: rest.join(' '),
    owner_id: p.owner_id,
    ...(p.org_id !== undefined ? { org_id: p.org_id } : {}),
    add_time: p.add_time,
    update_time: p.update_time,
    emails: p.emails,
    phones: p.phones,
    is_deleted: false,
    visible_to: p.visible_to,
    label_ids: p.label_ids,
    custom_fields: p.custom_fields,
  };
}

const emptyStats = (): PipedriveEmulatorStats => ({
  requests: 0,
  byStatus: {},
  sent429: 0,
  rateLimited: 0,
  budgetRefused: 0,
  sent5xx: 0,
  commitThenDrops: 0,
  resets: 0,
  hangs: 0,
  tokensSpent: 0,
});

/** Start the Pipedrive emulator; resolves once it listens. */
export async function startPipedriveEmulator(opts: PipedriveEmulatorOptions = {}): Promise<PipedriveEmulator> {
  const now = opts.now ?? Date.now;
  const windowMs = opts.windowMs ?? 2000;
  const api = new PipedriveApi(now, opts.searchLagMs ?? 0);
  let burst = new RollingWindow(opts.burst ?? 20, windowMs, now);
  let searchWindow = new RollingWindow(opts.searchBurst ?? 10, windowMs, now);
  const dailyBudget = opts.dailyBudget ?? 30_000;
  let budgetDay = Math.floor(now() / DAY_MS);
  let budgetLeft = dailyBudget;
  let faults: Faults = cloneFaults(opts.faults ?? {});
  let random = seededRandom(opts.seed ?? 1);
  let stats = emptyStats();
  let log: PipedriveLoggedRequest[] = [];
  // When each window frees its oldest place: for x-ratelimit-reset.
  const stampsOf = new Map<RollingWindow, number[]>();

  const send = (res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
    stats.byStatus[status] = (stats.byStatus[status] ?? 0) + 1;
    if (status === 429) stats.sent429++;
    if (status >= 500) stats.sent5xx++;
    const text = JSON.stringify(body);
    res.writeHead(status, {
      'content-type': 'application/json; charset=utf-8',
      'content-length': Buffer.byteLength(text),
      ...headers,
    });
    res.end(text);
  };

  const rollBudget = (): void => {
    const day = Math.floor(now() / DAY_MS);
    if (day !== budgetDay) {
      budgetDay = day;
      budgetLeft = dailyBudget;
      stats.tokensSpent = 0;
    }
  };

  // Seconds until the window frees a place (at least 1 while it is full, as Pipedrive rounds up).
  const resetSeconds = (w: RollingWindow): number => {
    const stamps = stampsOf.get(w) ?? [];
    const edge = now() - windowMs;
    while (stamps.length && (stamps[0] ?? Infinity) <= edge) stamps.shift();
    const oldest = stamps[0];
    return oldest === undefined ? 0 : Math.max(1, Math.ceil((oldest + windowMs - now()) / 1000));
  };

  const limitHeaders = (w: RollingWindow, remaining: number): Record<string, string> => ({
    'x-ratelimit-limit': String(w.max),
    'x-ratelimit-remaining': String(remaining),
    'x-ratelimit-reset': String(resetSeconds(w)),
    'x-daily-ratelimit-token-limit': String(dailyBudget),
    'x-daily-ratelimit-token-remaining': String(budgetLeft),
  });

  const admin = (req: http.IncomingMessage, res: http.ServerResponse, path: string, raw: Buffer): void => {
    if (req.method === 'GET' && path === '/__admin/persons') return send(res, 200, api.persons());
    if (req.method === 'GET' && path === '/__admin/leads') return send(res, 200, api.leads());
    if (req.method === 'GET' && path === '/__admin/stats') return send(res, 200, stats);
    if (req.method === 'POST' && path === '/__admin/persons') {
      try {
        const body = JSON.parse(raw.toString('utf8') || '[]') as unknown;
        if (!Array.isArray(body)) throw new Error('not an array');
        return send(res, 200, { ok: true, ids: api.seed(body as Array<{ name: string; email?: string }>) });
      } catch {
        return send(res, 400, { error: 'persons must be a JSON array of {"name": ..., "email": ...}' });
      }
    }
    if (req.method === 'POST' && path === '/__admin/reset') {
      emulator.reset();
      return send(res, 200, { ok: true });
    }
    if (req.method === 'POST' && path === '/__admin/faults') {
      try {
        faults = cloneFaults(JSON.parse(raw.toString('utf8') || '{}') as Faults);
        return send(res, 200, { ok: true, faults });
      } catch {
        return send(res, 400, { error: 'faults must be a JSON object' });
      }
    }
    return send(res, 404, { error: `no admin route ${req.method} ${path}` });
  };

  let aimed: Array<{ op: PipedriveOperation; fault: FaultKind; skip: number }> = [];
  // The fault aimed at this operation now, if any (consumed).
  const aimedAt = (op: PipedriveOperation): FaultKind | undefined => {
    const i = aimed.findIndex((a) => a.op === op);
    const a = aimed[i];
    if (!a) return undefined;
    if (a.skip > 0) {
      a.skip--;
      // The others aimed at the same operation wait behind it.
      for (const b of aimed.slice(i + 1)) if (b.op === op && b.skip > 0) b.skip--;
      return undefined;
    }
    aimed.splice(i, 1);
    return a.fault;
  };

  // Faults answered before the request is processed; true when one was.
  const early = (
    fault: FaultKind | undefined,
    req: http.IncomingMessage,
    res: http.ServerResponse,
    retryAfter: Record<string, string>,
  ): boolean => {
    switch (fault) {
      case 'hang':
        // Never answered; close() destroys the socket.
        stats.hangs++;
        return true;
      case 'reset':
        stats.resets++;
        req.socket.destroy();
        return true;
      case '503':
        send(res, 503, pipedriveError('Service Unavailable (emulated)', { errorCode: 503 }), retryAfter);
        return true;
      case '429':
        send(res, 429, overLimit(''), { ...limitHeaders(burst, 0), 'retry-after': '1', ...retryAfter });
        return true;
      default:
        return false;
    }
  };

  type Route = { op: PipedriveOperation; id?: number } | { notFound: true };
  const route = (method: string, path: string): Route => {
    const p = path.replace(/\/+$/, '');
    if (p === '/api/v2/persons' && method === 'POST') return { op: 'addPerson' };
    if (p === '/api/v2/persons/search' && method === 'GET') return { op: 'searchPersons' };
    const m = /^\/api\/v2\/persons\/(\d+)$/.exec(p);
    if (m && method === 'GET') return { op: 'getPerson', id: Number(m[1]) };
    if (m && method === 'PATCH') return { op: 'updatePerson', id: Number(m[1]) };
    if ((p === '/v1/leads' || p === '/api/v1/leads') && method === 'POST') return { op: 'addLead' };
    if ((p === '/v1/users/me' || p === '/api/v1/users/me') && method === 'GET') return { op: 'getCurrentUser' };
    return { notFound: true };
  };

  const handleApi = (
    req: http.IncomingMessage,
    res: http.ServerResponse,
    url: URL,
    raw: Buffer,
    drawn: FaultKind | undefined,
  ): void => {
    let fault = drawn;
    const header = req.headers['x-api-token'];
    const auth = req.headers.authorization;
    const given =
      (typeof header === 'string' ? header : undefined) ??
      (auth?.startsWith('Bearer ') ? auth.slice(7).trim() : undefined) ??
      url.searchParams.get('api_token') ??
      '';
    if (!given || (opts.token !== undefined && given !== opts.token)) return send(res, 401, UNAUTHORIZED);
    const r = route(req.method ?? '', url.pathname);
    if ('notFound' in r)
      return send(res, 404, pipedriveError(`Unknown method ${req.method} ${url.pathname}`, { errorCode: 404 }));
    const mine = aimedAt(r.op);
    if (early(mine, req, res, {})) return;
    if (mine === 'commit-then-drop') fault = mine;
    rollBudget();
    const cost = PIPEDRIVE_TOKEN_COST[r.op];
    const w = r.op === 'searchPersons' ? searchWindow : burst;
    if (budgetLeft < cost) {
      stats.budgetRefused++;
      const untilMidnight = Math.ceil(((budgetDay + 1) * DAY_MS - now()) / 1000);
      return send(res, 429, overLimit('the daily API token budget of the company is spent'), {
        ...limitHeaders(w, 0),
        'x-daily-ratelimit-token-remaining': '0',
        'retry-after': String(untilMidnight),
      });
    }
    const admitted = w.admit();
    if (!admitted.ok) {
      stats.rateLimited++;
      const reset = resetSeconds(w);
      return send(res, 429, overLimit(''), { ...limitHeaders(w, 0), 'retry-after': String(reset) });
    }
    stampsOf.set(w, [...(stampsOf.get(w) ?? []), now()]);
    budgetLeft -= cost;
    stats.tokensSpent += cost;
    const headers = limitHeaders(w, admitted.remaining);
    let body: unknown;
    if (req.method === 'POST' || req.method === 'PATCH') {
      try {
        body = raw.length ? JSON.parse(raw.toString('utf8')) : undefined;
      } catch {
        return send(res, 400, pipedriveError('Request body is not valid JSON'), headers);
      }
    }
    let reply: Reply;
    switch (r.op) {
      case 'addPerson':
        reply = api.addPerson(body);
        break;
      case 'updatePerson':
        reply = api.updatePerson(r.id ?? 0, body);
        break;
      case 'getPerson':
        reply = api.getPerson(r.id ?? 0);
        break;
      case 'searchPersons':
        reply = api.searchPersons(url.searchParams);
        break;
      case 'addLead':
        reply = api.addLead(body);
        break;
      case 'getCurrentUser':
        reply = api.currentUser();
        break;
    }
    if (fault === 'commit-then-drop') {
      stats.commitThenDrops++;
      res.socket?.destroy();
      return;
    }
    send(res, reply.status, reply.body, headers);
  };

  const handle = async (req: http.IncomingMessage, res: http.ServerResponse, raw: Buffer): Promise<void> => {
    const url = new URL(req.url ?? '/', 'http://emulator');
    if (url.pathname.startsWith('/__admin/')) return admin(req, res, url.pathname, raw);
    stats.requests++;
    if (opts.logRequests) log.push({ method: req.method ?? '', path: url.pathname, query: url.search });
    const fault = drawFault(faults, random);
    if (faults.latencyMs) await delay(faults.latencyMs);
    const retryAfter: Record<string, string> =
      faults.retryAfter !== undefined ? { 'retry-after': faults.retryAfter } : {};
    if (early(fault, req, res, retryAfter)) return;
    return handleApi(req, res, url, raw, fault);
  };

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      void handle(req, res, Buffer.concat(chunks)).catch((err: unknown) => {
        if (!res.headersSent) send(res, 500, pipedriveError(`emulator error: ${String(err)}`, { errorCode: 500 }));
      });
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, opts.host ?? '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;

  const emulator: PipedriveEmulator = {
    url: `http://${host}:${address.port}`,
    port: address.port,
    handle,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
    persons: () => api.persons(),
    leads: () => api.leads(),
    seed: (persons) => api.seed(persons),
    stats: () => structuredClone(stats),
    requests: () => log.map((r) => ({ ...r })),
    budgetLeft: () => {
      rollBudget();
      return budgetLeft;
    },
    setBudgetLeft: (tokens) => {
      rollBudget();
      budgetLeft = tokens;
    },
    setFaults: (f) => {
      faults = cloneFaults(f);
    },
    failNext: (op, fault, o = {}) => {
      for (let i = 0; i < (o.times ?? 1); i++) aimed.push({ op, fault, skip: o.skip ?? 0 });
    },
    setSearchLag: (ms) => {
      api.searchLagMs = ms;
    },
    reset: () => {
      aimed = [];
      api.searchLagMs = opts.searchLagMs ?? 0;
      api.reset();
      burst = new RollingWindow(opts.burst ?? 20, windowMs, now);
      searchWindow = new RollingWindow(opts.searchBurst ?? 10, windowMs, now);
      stampsOf.clear();
      budgetDay = Math.floor(now() / DAY_MS);
      budgetLeft = dailyBudget;
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
