// A real HTTP server on 127.0.0.1 that behaves like Salesforce's REST API for what leadledger uses, so the
// Salesforce sink is tested against sockets rather than mocks: the OAuth token endpoint (refresh token, with optional
// rotation, and the JWT bearer flow, whose RS256 signature is verified with the configured public key), Lead's
// describe, SOQL queries of Lead by Email, Phone or the external id, and the sObject Collections create, update and
// upsert by external id, with Salesforce's error shapes, duplicate rules, daily API allowance and fault injection
// (faults.ts).
//
// Rules, and where each comes from (crm-apis.md is ../shared/reference/crm-apis.md, section 3; request shapes from
// the Postman collection in ../shared/specs/salesforce/):
// - Auth: `Authorization: Bearer <token>`; a missing, unknown or expired token is 401
//   [{"message":"Session expired or invalid","errorCode":"INVALID_SESSION_ID"}].
// - Token endpoint `POST /services/oauth2/token`, form-encoded (Postman auth/refresh_token.json and
//   jwt_bearer_token_flow.json): answers {access_token, instance_url, id, token_type, issued_at, signature}; no
//   expires_in (Salesforce sends none). A bad grant is 400 {"error":"invalid_grant","error_description":...}.
// - Request-level errors are arrays [{"message","errorCode","fields"?}]; in a collection each result is
//   {"id","success","errors":[{"statusCode","message","fields"}]} in input order (crm-apis.md "sObject Collections").
// - LastName and Company are required on Lead (REQUIRED_FIELD_MISSING); an Email that is not one is
//   INVALID_EMAIL_ADDRESS; a field Lead does not have fails the request (400 INVALID_FIELD).
// - Duplicate rule (the standard Lead rule, matching on Email or Phone here): a create of a Lead whose email or phone
//   another Lead holds is refused DUPLICATES_DETECTED with a duplicateResult naming the matches (omitDuplicateResult
//   leaves it out, as some answers do: crm-apis.md "Missing IDs"), unless the rule is an alert and
//   `Sforce-Duplicate-Rule-Header: allowSave=true` is sent.
// - Collections take at most 200 records (400 EXCEEDED_ID_LIMIT); upsert needs an External ID field (else 404
//   NOT_FOUND), updates the record holding the value (created false) or inserts one (created true).
// - Every API answer carries `Sforce-Limit-Info: api-usage=N/MAX`; past MAX requests in the day, 403
//   [{"message":"TotalRequests Limit exceeded.","errorCode":"REQUEST_LIMIT_EXCEEDED"}]. More requests in flight than
//   the concurrency cap: 403 REQUEST_LIMIT_EXCEEDED "ConcurrentPerOrgLongTxn Limit exceeded.".
//
// The clock is injectable (`now`): the daily window reads it, so no test waits for time.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createPublicKey, randomBytes, verify, type KeyObject } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { drawFault, seededRandom, type FaultKind, type Faults } from './faults.js';

/** A Lead as the emulated org holds it: its fields by API name. */
export type StoredLead = Record<string, string> & { Id: string; CreatedDate: string };

export interface SalesforceEmulatorOptions {
  port?: number;
  host?: string;
  /** The connected app. Any client is accepted when unset. */
  clientId?: string;
  clientSecret?: string;
  /** Refresh tokens the app holds (default: any non-empty one when clientId is unset). */
  refreshTokens?: string[];
  /** Access tokens accepted from the start (a bare SALESFORCE_ACCESS_TOKEN). */
  accessTokens?: string[];
  /** Answer each refresh with a new refresh token, the old one refused from then on (refresh token rotation). */
  rotateRefreshTokens?: boolean;
  /** JWT bearer flow: the public key (PEM) of the connected app's certificate, and the users it may act as. */
  jwtPublicKey?: string;
  jwtUsers?: string[];
  /** External ID fields on Lead (default ['Leadledger_Key__c']); [] for an org without one. */
  externalIdFields?: string[];
  /** Other custom fields on Lead. */
  customFields?: string[];
  /** The duplicate rule on Lead email: block (default), alert (allowSave header passes) or off. */
  duplicateRule?: 'block' | 'alert' | 'off';
  /** Leave duplicateResult out of DUPLICATES_DETECTED (some answers carry none: crm-apis.md). */
  omitDuplicateResult?: boolean;
  /** Daily API requests (default 100,000). */
  dailyLimit?: number;
  /** Requests in flight at once before 403 ConcurrentPerOrgLongTxn (default 25). */
  concurrency?: number;
  /** Added to a collection's answer per record (ms): a 200-record write takes longer than a query. */
  perRecordMs?: number;
  faults?: Faults;
  seed?: number;
  now?: () => number;
  logRequests?: boolean;
}

/** One API request as received (logRequests): enough to check its shape. */
export interface SalesforceLoggedRequest {
  method: string;
  path: string;
  query: string;
  contentType?: string;
  authorization?: string;
  body?: unknown;
}

export interface SalesforceEmulatorStats {
  requests: number;
  byStatus: Record<string, number>;
  tokenRequests: number;
  refreshes: number;
  jwtGrants: number;
  apiUsed: number;
  limitRefused: number;
  concurrencyRefused: number;
  duplicatesRefused: number;
  commitThenDrops: number;
  sent5xx: number;
  resets: number;
  hangs: number;
  expiredSessions: number;
}

/** An operation of the emulated API, to aim a fault at. */
export type SalesforceOperation = 'token' | 'describe' | 'query' | 'create' | 'update' | 'upsert';

export interface SalesforceEmulator {
  url: string;
  port: number;
  close(): Promise<void>;
  leads(): StoredLead[];
  /** Store leads as if the org already had them (no limits, no faults); returns their ids. */
  seed(leads: Array<Record<string, string>>): string[];
  stats(): SalesforceEmulatorStats;
  requests(): SalesforceLoggedRequest[];
  /** The refresh tokens now good (rotation replaces them). */
  refreshTokens(): string[];
  /** Access tokens handed out from now on (only the next `tokens` of them, if given) expire after n API requests. */
  expireTokensAfter(n: number | undefined, tokens?: number): void;
  /** Every grant and token refused from now on. */
  revokeGrant(): void;
  /** Set the API requests used today. */
  setApiUsed(n: number): void;
  setFaults(faults: Faults): void;
  failNext(op: SalesforceOperation, fault: FaultKind, opts?: { skip?: number; times?: number }): void;
  reset(): void;
  /** Answers one request as the server does: the sandbox serves it beside the other CRMs on one port. */
  handle(req: http.IncomingMessage, res: http.ServerResponse, raw: Buffer): Promise<void>;
}

const STANDARD_FIELDS = [
  'Id',
  'FirstName',
  'LastName',
  'Company',
  'Email',
  'Phone',
  'MobilePhone',
  'LeadSource',
  'Title',
  'Status',
  'Description',
  'Website',
  'City',
  'State',
  'Country',
  'CreatedDate',
  'IsConverted',
];
const DAY_MS = 86_400_000;
const MAX_RECORDS = 200;

interface Reply {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
}

const err = (errorCode: string, message: string, fields?: string[]) => [
  { message, errorCode, ...(fields ? { fields } : {}) },
];
const recErr = (statusCode: string, message: string, fields: string[] = []) => ({ statusCode, message, fields });

// A SOQL string list or literal: 'a', 'b\'c'.
function soqlStrings(text: string): string[] | undefined {
  const out: string[] = [];
  const re = /\s*'((?:[^'\\]|\\.)*)'\s*(,|$)/y;
  let m: RegExpExecArray | null;
  while (re.lastIndex < text.length && (m = re.exec(text))) {
    out.push(m[1]!.replace(/\\(.)/g, '$1'));
    if (m[2] === '') break;
  }
  return re.lastIndex >= text.length || out.length ? out : undefined;
}

/** Start the emulator on a free port of 127.0.0.1 (or the given one). */
export async function startSalesforceEmulator(opts: SalesforceEmulatorOptions = {}): Promise<SalesforceEmulator> {
  const now = opts.now ?? Date.now;
  const extFields = opts.externalIdFields ?? ['Leadledger_Key__c'];
  const leadFields = new Set([...STANDARD_FIELDS, ...extFields, ...(opts.customFields ?? [])]);
  const lower = new Map([...leadFields].map((f) => [f.toLowerCase(), f]));
  const jwtKey: KeyObject | undefined = opts.jwtPublicKey ? createPublicKey(opts.jwtPublicKey) : undefined;
  const dailyLimit = opts.dailyLimit ?? 100_000;
  const cap = opts.concurrency ?? 25;

  let leads = new Map<string, StoredLead>();
  let byEmail = new Map<string, string[]>();
  let byExt = new Map<string, Map<string, string>>();
  let nextId = 1;
  let refresh = new Set(opts.refreshTokens ?? []);
  let access = new Map<string, { left?: number }>((opts.accessTokens ?? []).map((t) => [t, {}]));
  let expireAfter: number | undefined;
  let expiringTokens: number | undefined;
  let revoked = false;
  let apiUsed = 0;
  let apiDay = Math.floor(now() / DAY_MS);
  let inFlight = 0;
  let faults: Faults = { ...(opts.faults ?? {}) };
  let random = seededRandom(opts.seed ?? 1);
  let aimed: Array<{ op: SalesforceOperation; fault: FaultKind; skip: number }> = [];
  let log: SalesforceLoggedRequest[] = [];
  const emptyStats = (): SalesforceEmulatorStats => ({
    requests: 0,
    byStatus: {},
    tokenRequests: 0,
    refreshes: 0,
    jwtGrants: 0,
    apiUsed: 0,
    limitRefused: 0,
    concurrencyRefused: 0,
    duplicatesRefused: 0,
    commitThenDrops: 0,
    sent5xx: 0,
    resets: 0,
    hangs: 0,
    expiredSessions: 0,
  });
  let stats = emptyStats();
  let base = '';

  const newId = (): string => `00Q${String(nextId++).padStart(12, '0')}AAA`;

  const index = (lead: StoredLead): void => {
    const e = lead.Email?.toLowerCase();
    if (e) byEmail.set(e, [...(byEmail.get(e) ?? []), lead.Id]);
    for (const f of extFields) {
      const v = lead[f];
      if (v !== undefined) {
        const m = byExt.get(f) ?? new Map<string, string>();
        m.set(v, lead.Id);
        byExt.set(f, m);
      }
    }
  };
  const unindex = (lead: StoredLead): void => {
    const e = lead.Email?.toLowerCase();
    if (e)
      byEmail.set(
        e,
        (byEmail.get(e) ?? []).filter((id) => id !== lead.Id),
      );
    for (const f of extFields) if (lead[f] !== undefined) byExt.get(f)?.delete(lead[f]);
  };

  const rollDay = (): void => {
    const d = Math.floor(now() / DAY_MS);
    if (d !== apiDay) {
      apiDay = d;
      apiUsed = 0;
    }
  };

  const send = (res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
    stats.byStatus[status] = (stats.byStatus[status] ?? 0) + 1;
    if (status >= 500) stats.sent5xx++;
    const text = body === undefined ? '' : JSON.stringify(body);
    res.writeHead(status, {
      'content-type': 'application/json;charset=UTF-8',
      'content-length': Buffer.byteLength(text),
      ...headers,
    });
    res.end(text);
  };
  const limitHeader = (): Record<string, string> => ({ 'sforce-limit-info': `api-usage=${apiUsed}/${dailyLimit}` });

  const aimedAt = (op: SalesforceOperation): FaultKind | undefined => {
    const i = aimed.findIndex((a) => a.op === op);
    const a = aimed[i];
    if (!a) return undefined;
    if (a.skip > 0) {
      a.skip--;
      for (const b of aimed.slice(i + 1)) if (b.op === op && b.skip > 0) b.skip--;
      return undefined;
    }
    aimed.splice(i, 1);
    return a.fault;
  };

  // Faults answered before the request is processed; true when one was.
  const early = (fault: FaultKind | undefined, req: http.IncomingMessage, res: http.ServerResponse): boolean => {
    switch (fault) {
      case 'hang':
        stats.hangs++;
        return true;
      case 'reset':
        stats.resets++;
        req.socket.destroy();
        return true;
      case '503':
        send(res, 503, err('SERVER_UNAVAILABLE', 'Service Unavailable (emulated)'), {
          ...(faults.retryAfter !== undefined ? { 'retry-after': faults.retryAfter } : {}),
        });
        return true;
      case '429':
        // Salesforce's REST API sends no 429; the fault stands for a proxy in front of it.
        send(res, 429, err('REQUEST_LIMIT_EXCEEDED', 'Too many requests (emulated)'), { 'retry-after': '1' });
        return true;
      default:
        return false;
    }
  };

  // ---- the token endpoint ----
  const token = (form: URLSearchParams): Reply => {
    stats.tokenRequests++;
    const bad = (d: string): Reply => ({ status: 400, body: { error: 'invalid_grant', error_description: d } });
    const grant = form.get('grant_type');
    if (revoked) return bad('expired access/refresh token');
    const issue = (): Reply => {
      const t = `00D!${randomBytes(24).toString('base64url')}`;
      access.set(t, expireAfter !== undefined ? { left: expireAfter } : {});
      if (expiringTokens !== undefined && --expiringTokens <= 0) {
        expireAfter = undefined;
        expiringTokens = undefined;
      }
      return {
        status: 200,
        body: {
          access_token: t,
          instance_url: base,
          id: `${base}/id/00D000000000001EAA/005000000000001AAA`,
          token_type: 'Bearer',
          issued_at: String(now()),
          signature: randomBytes(32).toString('base64'),
        },
      };
    };
    if (grant === 'refresh_token') {
      if (opts.clientId !== undefined && form.get('client_id') !== opts.clientId)
        return { status: 400, body: { error: 'invalid_client_id', error_description: 'client identifier invalid' } };
      if (opts.clientSecret !== undefined && form.get('client_secret') !== opts.clientSecret)
        return { status: 400, body: { error: 'invalid_client', error_description: 'invalid client credentials' } };
      const rt = form.get('refresh_token') ?? '';
      const known = opts.refreshTokens === undefined && opts.clientId === undefined ? rt !== '' : refresh.has(rt);
      if (!known) return bad('expired access/refresh token');
      stats.refreshes++;
      const r = issue();
      if (opts.rotateRefreshTokens) {
        const next = `5Aep${randomBytes(24).toString('base64url')}`;
        refresh.delete(rt);
        refresh.add(next);
        (r.body as Record<string, string>).refresh_token = next;
      }
      return r;
    }
    if (grant === 'urn:ietf:params:oauth:grant-type:jwt-bearer') {
      if (!jwtKey) return bad('invalid assertion: no certificate for this app');
      const parts = (form.get('assertion') ?? '').split('.');
      if (parts.length !== 3) return bad('invalid assertion');
      const [h, p, s] = parts as [string, string, string];
      let header: { alg?: string };
      let claims: { iss?: string; sub?: string; aud?: string; exp?: number };
      try {
        header = JSON.parse(Buffer.from(h, 'base64url').toString('utf8')) as typeof header;
        claims = JSON.parse(Buffer.from(p, 'base64url').toString('utf8')) as typeof claims;
      } catch {
        return bad('invalid assertion');
      }
      if (header.alg !== 'RS256') return bad('invalid assertion: alg must be RS256');
      if (!verify('RSA-SHA256', Buffer.from(`${h}.${p}`), jwtKey, Buffer.from(s, 'base64url')))
        return bad('invalid assertion: signature does not verify');
      if (opts.clientId !== undefined && claims.iss !== opts.clientId)
        return { status: 400, body: { error: 'invalid_client_id', error_description: 'client identifier invalid' } };
      if (opts.jwtUsers && !opts.jwtUsers.includes(claims.sub ?? '')) return bad("user hasn't approved this consumer");
      const auds = [base, 'https://login.salesforce.com', 'https://test.salesforce.com'];
      if (!auds.includes(claims.aud ?? '')) return bad('audience is invalid');
      if (typeof claims.exp !== 'number' || claims.exp * 1000 <= now()) return bad('expired authorization code');
      stats.jwtGrants++;
      return issue();
    }
    return { status: 400, body: { error: 'unsupported_grant_type', error_description: 'grant type not supported' } };
  };

  // ---- the API ----
  const describe = (): Reply => ({
    status: 200,
    body: {
      name: 'Lead',
      label: 'Lead',
      createable: true,
      updateable: true,
      fields: [...leadFields].map((name) => ({
        name,
        label: name,
        type: name === 'Id' ? 'id' : name === 'Email' ? 'email' : 'string',
        externalId: extFields.includes(name),
        unique: extFields.includes(name),
        nillable: !['Id', 'LastName', 'Company'].includes(name),
        createable: name !== 'Id' && name !== 'CreatedDate',
        updateable: name !== 'Id' && name !== 'CreatedDate',
      })),
    },
  });

  const recordOut = (l: StoredLead, fields: string[]): Record<string, unknown> => {
    const out: Record<string, unknown> = {
      attributes: { type: 'Lead', url: `/services/data/v62.0/sobjects/Lead/${l.Id}` },
    };
    for (const f of fields) out[f] = l[f] ?? null;
    return out;
  };

  const query = (q: string): Reply => {
    const m =
      /^\s*SELECT\s+(.+?)\s+FROM\s+Lead\s+WHERE\s+(\w+)\s+(=|IN)\s+(\(.*\)|'(?:[^'\\]|\\.)*')(?:\s+ORDER\s+BY\s+(\w+)(?:\s+(ASC|DESC))?)?(?:\s+LIMIT\s+(\d+))?\s*$/is.exec(
        q,
      );
    if (!m) return { status: 400, body: err('MALFORMED_QUERY', `unexpected token in: ${q.slice(0, 80)}`) };
    const fields = m[1]!.split(',').map((f) => f.trim());
    for (const f of [...fields, m[2]!])
      if (!lower.has(f.toLowerCase()))
        return { status: 400, body: err('INVALID_FIELD', `No such column '${f}' on entity 'Lead'.`) };
    const names = fields.map((f) => lower.get(f.toLowerCase())!);
    const where = lower.get(m[2]!.toLowerCase())!;
    const listText = m[4]!.startsWith('(') ? m[4]!.slice(1, -1) : m[4]!;
    const values = soqlStrings(listText);
    if (!values) return { status: 400, body: err('MALFORMED_QUERY', 'unexpected token in the WHERE clause') };
    let found: StoredLead[];
    if (where === 'Email')
      found = values.flatMap((v) => (byEmail.get(v.toLowerCase()) ?? []).map((id) => leads.get(id)!));
    else if (extFields.includes(where))
      found = values.flatMap((v) => {
        const id = byExt.get(where)?.get(v);
        return id ? [leads.get(id)!] : [];
      });
    else {
      const want = new Set(values.map((v) => v.toLowerCase()));
      found = [...leads.values()].filter((l) => want.has((l[where] ?? '').toLowerCase()));
    }
    found = [...new Map(found.map((l) => [l.Id, l])).values()];
    if (m[5]) {
      const by = lower.get(m[5].toLowerCase()) ?? 'Id';
      found.sort((a, b) => (a[by] ?? '').localeCompare(b[by] ?? '') * (m[6]?.toUpperCase() === 'DESC' ? -1 : 1));
    }
    if (m[7]) found = found.slice(0, Number(m[7]));
    return {
      status: 200,
      body: { totalSize: found.length, done: true, records: found.map((l) => recordOut(l, names)) },
    };
  };

  type Rec = Record<string, unknown>;
  // Checks one record's fields; the request-level error (an unknown field) or the record's errors.
  const validate = (
    r: Rec,
    creating: boolean,
  ): { request?: Reply; errors?: unknown[]; fields?: Record<string, string> } => {
    const fields: Record<string, string> = {};
    for (const [k, v] of Object.entries(r)) {
      if (k === 'attributes' || k === 'id') continue;
      const name = lower.get(k.toLowerCase());
      if (!name || name === 'Id' || name === 'CreatedDate')
        return {
          request: { status: 400, body: err('INVALID_FIELD', `No such column '${k}' on sobject of type Lead`) },
        };
      if (v === null || v === undefined) continue;
      fields[name] = String(v);
    }
    const errors: unknown[] = [];
    if (creating) {
      const missing = ['LastName', 'Company'].filter((f) => !fields[f]?.trim());
      if (missing.length)
        errors.push(recErr('REQUIRED_FIELD_MISSING', `Required fields are missing: [${missing.join(', ')}]`, missing));
    }
    if (fields.Email !== undefined && !/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(fields.Email))
      errors.push(recErr('INVALID_EMAIL_ADDRESS', `Email: invalid email address: ${fields.Email}`, ['Email']));
    return errors.length ? { errors } : { fields };
  };

  // The Leads the duplicate rule matches: the same email, or the same phone (the standard rule's other match).
  const duplicate = (fields: Record<string, string>, allowSave: boolean): string[] => {
    if ((opts.duplicateRule ?? 'block') === 'off') return [];
    if (opts.duplicateRule === 'alert' && allowSave) return [];
    const e = fields.Email?.toLowerCase();
    const ids = new Set(e ? (byEmail.get(e) ?? []) : []);
    if (fields.Phone) for (const l of leads.values()) if (l.Phone === fields.Phone) ids.add(l.Id);
    return [...ids];
  };

  const insert = (fields: Record<string, string>): StoredLead => {
    const lead = { ...fields, Id: newId(), CreatedDate: new Date(now()).toISOString() } as StoredLead;
    leads.set(lead.Id, lead);
    index(lead);
    return lead;
  };

  // DUPLICATES_DETECTED with the duplicateResult that names the matched Leads (crm-apis.md's body), unless the
  // emulator is told to leave it out as some answers do.
  const dupError = (ids: string[]) => {
    stats.duplicatesRefused++;
    const e = recErr('DUPLICATES_DETECTED', 'Use one of these records?');
    if (opts.omitDuplicateResult) return e;
    return {
      duplicateResult: {
        allowSave: false,
        duplicateRule: 'Standard_Lead_Duplicate_Rule',
        duplicateRuleEntityType: 'Lead',
        errorMessage: 'Use one of these records?',
        matchResults: [
          {
            entityType: 'Lead',
            errors: [],
            matchEngine: 'FuzzyMatchEngine',
            matchRecords: ids.map((Id) => ({
              additionalInformation: [],
              fieldDiffs: [],
              matchConfidence: 100.0,
              record: { attributes: { type: 'Lead', url: `/services/data/v62.0/sobjects/Lead/${Id}` }, Id },
            })),
            rule: 'Standard_Lead_Match_Rule_v1_0',
            size: ids.length,
            success: true,
          },
        ],
      },
      ...e,
    };
  };

  // A collection: parsed, checked, its records applied one by one (allOrNone: all or none of them).
  const collection = (
    body: unknown,
    apply: (r: Rec) => { request?: Reply; result: Record<string, unknown> },
  ): Reply => {
    const b = body as { allOrNone?: unknown; records?: unknown } | undefined;
    if (!b || !Array.isArray(b.records))
      return { status: 400, body: err('JSON_PARSER_ERROR', 'records: expected an array of sObjects') };
    if (b.records.length > MAX_RECORDS)
      return {
        status: 400,
        body: err(
          'EXCEEDED_ID_LIMIT',
          `record limit reached. cannot submit more than ${MAX_RECORDS} records into this call`,
        ),
      };
    for (const r of b.records as Rec[]) {
      const type = (r?.attributes as { type?: unknown } | undefined)?.type;
      if (type !== 'Lead')
        return { status: 400, body: err('INVALID_TYPE', 'Must send a concrete entity type (attributes.type: Lead).') };
    }
    const allOrNone = b.allOrNone === true;
    const snapshot = allOrNone
      ? { leads: new Map(leads), byEmail: new Map(byEmail), byExt: cloneExt(byExt), nextId }
      : undefined;
    const results: Array<Record<string, unknown>> = [];
    for (const r of b.records as Rec[]) {
      const a = apply(r);
      if (a.request) {
        if (snapshot) restore(snapshot);
        return a.request;
      }
      results.push(a.result);
    }
    if (snapshot && results.some((r) => r.success !== true)) {
      restore(snapshot);
      return {
        status: 200,
        body: results.map((r) =>
          r.success === true
            ? {
                success: false,
                errors: [
                  recErr(
                    'ALL_OR_NONE_OPERATION_ROLLED_BACK',
                    'Record rolled back because not all records were valid and the request was using AllOrNone header',
                  ),
                ],
              }
            : r,
        ),
      };
    }
    return { status: 200, body: results };
  };
  const cloneExt = (m: Map<string, Map<string, string>>) => new Map([...m].map(([k, v]) => [k, new Map(v)]));
  const restore = (s: {
    leads: Map<string, StoredLead>;
    byEmail: Map<string, string[]>;
    byExt: Map<string, Map<string, string>>;
    nextId: number;
  }) => {
    leads = s.leads;
    byEmail = s.byEmail;
    byExt = s.byExt;
    nextId = s.nextId;
  };

  const create = (body: unknown, allowSave: boolean): Reply =>
    collection(body, (r) => {
      const v = validate(r, true);
      if (v.request) return { request: v.request, result: {} };
      if (v.errors) return { result: { success: false, errors: v.errors } };
      const f = v.fields!;
      for (const x of extFields)
        if (f[x] !== undefined && byExt.get(x)?.has(f[x]))
          return {
            result: {
              success: false,
              errors: [
                recErr(
                  'DUPLICATE_VALUE',
                  `duplicate value found: ${x} duplicates value on record with id: ${byExt.get(x)!.get(f[x])}`,
                  [x],
                ),
              ],
            },
          };
      const dups = duplicate(f, allowSave);
      if (dups.length) return { result: { success: false, errors: [dupError(dups)] } };
      return { result: { id: insert(f).Id, success: true, errors: [] } };
    });

  const update = (body: unknown): Reply =>
    collection(body, (r) => {
      const id = typeof r.id === 'string' ? r.id : typeof r.Id === 'string' ? r.Id : undefined;
      const lead = id ? leads.get(id) : undefined;
      if (!lead) return { result: { success: false, errors: [recErr('ENTITY_IS_DELETED', 'entity is deleted', [])] } };
      const v = validate(r, false);
      if (v.request) return { request: v.request, result: {} };
      if (v.errors) return { result: { id, success: false, errors: v.errors } };
      unindex(lead);
      Object.assign(lead, v.fields);
      index(lead);
      return { result: { id, success: true, errors: [] } };
    });

  const upsert = (field: string, body: unknown, allowSave: boolean): Reply => {
    const ext = extFields.find((f) => f.toLowerCase() === field.toLowerCase());
    if (!ext)
      return {
        status: 404,
        body: err('NOT_FOUND', `Provided external ID field does not exist or is not accessible: ${field}`),
      };
    return collection(body, (r) => {
      const value = Object.entries(r).find(([k]) => k.toLowerCase() === ext.toLowerCase())?.[1];
      if (typeof value !== 'string' || value === '')
        return { result: { success: false, errors: [recErr('MISSING_ARGUMENT', `${ext} not specified`, [ext])] } };
      const id = byExt.get(ext)?.get(value);
      const existing = id ? leads.get(id) : undefined;
      const v = validate(r, !existing);
      if (v.request) return { request: v.request, result: {} };
      if (v.errors) return { result: { success: false, errors: v.errors } };
      if (existing) {
        unindex(existing);
        Object.assign(existing, v.fields);
        index(existing);
        return { result: { id: existing.Id, success: true, errors: [], created: false } };
      }
      const dups = duplicate(v.fields!, allowSave);
      if (dups.length) return { result: { success: false, errors: [dupError(dups)] } };
      return { result: { id: insert(v.fields!).Id, success: true, errors: [], created: true } };
    });
  };

  type Route = { op: SalesforceOperation; field?: string } | { notFound: true };
  const route = (method: string, rest: string): Route => {
    const p = rest.replace(/\/+$/, '');
    if (method === 'GET' && p === '/sobjects/Lead/describe') return { op: 'describe' };
    if (method === 'GET' && p === '/query') return { op: 'query' };
    if (method === 'POST' && p === '/composite/sobjects') return { op: 'create' };
    // The docs' PATCH /composite/sobjects, and the Postman collection's /composite/sobjects/<SObject>.
    if (method === 'PATCH' && (p === '/composite/sobjects' || p === '/composite/sobjects/Lead'))
      return { op: 'update' };
    const m = /^\/composite\/sobjects\/Lead\/([A-Za-z0-9_]+)$/.exec(p);
    if (method === 'PATCH' && m) return { op: 'upsert', field: m[1]! };
    return { notFound: true };
  };

  const handleApi = async (
    req: http.IncomingMessage,
    res: http.ServerResponse,
    url: URL,
    raw: Buffer,
    drawn: FaultKind | undefined,
  ): Promise<void> => {
    const auth = req.headers.authorization ?? '';
    const given = auth.startsWith('Bearer ') ? auth.slice(7).trim() : '';
    const session = access.get(given);
    if (revoked || !session || (session.left !== undefined && session.left <= 0)) {
      if (session) stats.expiredSessions++;
      return send(res, 401, err('INVALID_SESSION_ID', 'Session expired or invalid'), { 'www-authenticate': 'Token' });
    }
    const vm = /^\/services\/data\/v(\d+\.\d)(\/.*)$/.exec(url.pathname);
    if (!vm) return send(res, 404, err('NOT_FOUND', 'The requested resource does not exist'));
    const r = route(req.method ?? '', vm[2]!);
    if ('notFound' in r) return send(res, 404, err('NOT_FOUND', 'The requested resource does not exist'));
    if (session.left !== undefined) session.left--;
    const mine = aimedAt(r.op);
    if (early(mine, req, res)) return;
    const fault = mine ?? drawn;
    rollDay();
    if (apiUsed >= dailyLimit) {
      stats.limitRefused++;
      return send(res, 403, err('REQUEST_LIMIT_EXCEEDED', 'TotalRequests Limit exceeded.'), limitHeader());
    }
    if (inFlight >= cap) {
      stats.concurrencyRefused++;
      return send(res, 403, err('REQUEST_LIMIT_EXCEEDED', 'ConcurrentPerOrgLongTxn Limit exceeded.'), limitHeader());
    }
    apiUsed++;
    stats.apiUsed++;
    inFlight++;
    try {
      let body: unknown;
      if (req.method === 'POST' || req.method === 'PATCH') {
        if (!/application\/json/i.test(req.headers['content-type'] ?? ''))
          return send(res, 415, err('UNSUPPORTED_MEDIA_TYPE', 'Content-Type must be application/json'), limitHeader());
        try {
          body = JSON.parse(raw.toString('utf8'));
        } catch {
          return send(res, 400, err('JSON_PARSER_ERROR', 'The request body is not valid JSON'), limitHeader());
        }
      }
      const allowSave = /allowSave\s*=\s*true/i.test(String(req.headers['sforce-duplicate-rule-header'] ?? ''));
      let reply: Reply;
      switch (r.op) {
        case 'describe':
          reply = describe();
          break;
        case 'query':
          reply = query(url.searchParams.get('q') ?? '');
          break;
        case 'create':
          reply = create(body, allowSave);
          break;
        case 'update':
          reply = update(body);
          break;
        case 'upsert':
          reply = upsert(r.field!, body, allowSave);
          break;
        default:
          reply = { status: 404, body: err('NOT_FOUND', 'The requested resource does not exist') };
      }
      const records = Array.isArray((body as { records?: unknown[] } | undefined)?.records)
        ? (body as { records: unknown[] }).records.length
        : 0;
      if (opts.perRecordMs && records) await delay(opts.perRecordMs * records);
      if (fault === 'commit-then-drop') {
        stats.commitThenDrops++;
        res.socket?.destroy();
        return;
      }
      send(res, reply.status, reply.body, { ...limitHeader(), ...reply.headers });
    } finally {
      inFlight--;
    }
  };

  const admin = (req: http.IncomingMessage, res: http.ServerResponse, path: string, raw: Buffer): void => {
    const p = path.replace(/^\/__admin\/salesforce/, '') || '/';
    if (req.method === 'GET' && p === '/leads') return send(res, 200, [...leads.values()]);
    if (req.method === 'POST' && p === '/leads') {
      try {
        const list = JSON.parse(raw.toString('utf8') || '[]') as Array<Record<string, string>>;
        return send(res, 200, { ids: emulator.seed(list) });
      } catch {
        return send(res, 400, { error: 'leads must be a JSON array of Lead fields' });
      }
    }
    if (req.method === 'GET' && p === '/stats') return send(res, 200, stats);
    if (req.method === 'POST' && p === '/reset') {
      emulator.reset();
      return send(res, 200, { ok: true });
    }
    if (req.method === 'POST' && p === '/faults') {
      try {
        emulator.setFaults(JSON.parse(raw.toString('utf8') || '{}') as Faults);
        return send(res, 200, { ok: true });
      } catch {
        return send(res, 400, { error: 'faults must be a JSON object' });
      }
    }
    return send(res, 404, { error: `no admin route ${req.method} ${path}` });
  };

  const handle = async (req: http.IncomingMessage, res: http.ServerResponse, raw: Buffer): Promise<void> => {
    const url = new URL(req.url ?? '/', 'http://emulator');
    if (url.pathname.startsWith('/__admin/')) return admin(req, res, url.pathname, raw);
    stats.requests++;
    const contentType = req.headers['content-type'];
    const isToken = url.pathname.replace(/\/+$/, '') === '/services/oauth2/token';
    if (opts.logRequests) {
      let body: unknown;
      const text = raw.toString('utf8');
      if (text) {
        try {
          body = isToken ? Object.fromEntries(new URLSearchParams(text)) : JSON.parse(text);
        } catch {
          body = text;
        }
      }
      log.push({
        method: req.method ?? '',
        path: url.pathname,
        query: url.search,
        ...(contentType ? { contentType } : {}),
        ...(req.headers.authorization ? { authorization: req.headers.authorization } : {}),
        ...(body !== undefined ? { body } : {}),
      });
    }
    const fault = drawFault(faults, random);
    if (faults.latencyMs) await delay(faults.latencyMs);
    if (early(fault, req, res)) return;
    if (isToken) {
      if (req.method !== 'POST')
        return send(res, 405, { error: 'invalid_request', error_description: 'must use HTTP POST' });
      if (early(aimedAt('token'), req, res)) return;
      if (!/application\/x-www-form-urlencoded/i.test(contentType ?? ''))
        return send(res, 400, { error: 'invalid_request', error_description: 'unsupported content type' });
      const r = token(new URLSearchParams(raw.toString('utf8')));
      return send(res, r.status, r.body);
    }
    return handleApi(req, res, url, raw, fault);
  };

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      void handle(req, res, Buffer.concat(chunks)).catch((e: unknown) => {
        if (!res.headersSent) send(res, 500, err('UNKNOWN_EXCEPTION', `emulator error: ${String(e)}`));
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
  base = `http://${host}:${address.port}`;

  const emulator: SalesforceEmulator = {
    url: base,
    port: address.port,
    handle,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
    leads: () => [...leads.values()].map((l) => ({ ...l })),
    seed: (list) =>
      list.map((f) => {
        const fields: Record<string, string> = { LastName: '[seeded]', Company: '[seeded]' };
        for (const [k, v] of Object.entries(f)) fields[lower.get(k.toLowerCase()) ?? k] = String(v);
        return insert(fields).Id;
      }),
    stats: () => structuredClone(stats),
    requests: () => log.map((r) => ({ ...r })),
    refreshTokens: () => [...refresh],
    expireTokensAfter: (n, tokens) => {
      expireAfter = n;
      expiringTokens = tokens;
    },
    revokeGrant: () => {
      revoked = true;
    },
    setApiUsed: (n) => {
      rollDay();
      apiUsed = n;
    },
    setFaults: (f) => {
      faults = { ...f, ...(f.script ? { script: [...f.script] } : {}) };
    },
    failNext: (op, fault, o = {}) => {
      for (let i = 0; i < (o.times ?? 1); i++) aimed.push({ op, fault, skip: o.skip ?? 0 });
    },
    reset: () => {
      leads = new Map();
      byEmail = new Map();
      byExt = new Map();
      nextId = 1;
      refresh = new Set(opts.refreshTokens ?? []);
      access = new Map((opts.accessTokens ?? []).map((t) => [t, {}]));
      expireAfter = undefined;
      expiringTokens = undefined;
      revoked = false;
      apiUsed = 0;
      aimed = [];
      log = [];
      stats = emptyStats();
      faults = { ...(opts.faults ?? {}) };
      random = seededRandom(opts.seed ?? 1);
    },
  };
  return emulator;
}
