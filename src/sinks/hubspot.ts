// HubSpot contacts v3 sink: batch create with one objectWriteTraceId per input (so partial success is reported per
// input), batch upsert by email for `--existing update`, and lookup by email for in-doubt recovery.
//
// HubSpot has no Idempotency-Key. Exactly-once comes from email being unique in HubSpot: a retry of a create that
// was committed but whose answer was lost gets a 409 naming the existing contact, reported as `exists` with its id.
// Only that answer ("Contact already exists. Existing ID: N") is `exists`; any other 409 or CONFLICT is a failure
// with the CRM's message, permanent, since the same request gets the same answer.
import { CredentialsError } from '../errors.js';
import type { Lead } from '../mapping/types.js';
import { contextValue, describeHubSpotError, duplicateContactId, parseHubSpotError } from './hubspot-errors.js';
import type { HttpClient, HttpResponse, HttpResult } from './http.js';
import { checkSinkUrl, redactUrl, urlSecrets } from './secure-url.js';
import type { LookupResult, SendItem, Sink, SinkCapabilities, SinkOutcome } from './types.js';

export interface HubSpotSinkOptions {
  http: HttpClient;
  token: string;
  /** Default https://api.hubapi.com */
  baseUrl?: string;
  /** The contact property that receives lead.source; source is not sent when unset (unknown properties fail). */
  sourceProperty?: string;
  allowInsecure?: boolean;
}

/** HubSpot takes at most 100 inputs per batch call. */
export const HUBSPOT_MAX_BATCH = 100;
const CONTACTS = '/crm/v3/objects/contacts';

/** Map a lead to HubSpot contact properties: standard ones, the configured source property, then custom as given. */
export function leadToHubSpotProperties(lead: Lead, sourceProperty?: string): Record<string, string> {
  const props: Record<string, string> = {};
  const set = (name: string, value: string | undefined): void => {
    if (value !== undefined && value !== '') props[name] = value;
  };
  set('email', lead.email);
  let first = lead.firstName;
  let last = lead.lastName;
  if (first === undefined && last === undefined && lead.name) {
    // "Ana Maria Souza" → firstname "Ana", lastname "Maria Souza": HubSpot has no full-name property.
    const parts = lead.name.trim().split(/\s+/);
    first = parts[0];
    last = parts.length > 1 ? parts.slice(1).join(' ') : undefined;
  }
  set('firstname', first);
  set('lastname', last);
  set('phone', lead.phone);
  set('company', lead.company);
  if (sourceProperty) set(sourceProperty, lead.source);
  for (const [k, v] of Object.entries(lead.custom ?? {})) set(k, v);
  return props;
}

interface ResultObject {
  id?: unknown;
  new?: unknown;
  objectWriteTraceId?: unknown;
  properties?: Record<string, unknown>;
}

/** The HubSpot contacts destination. */
export class HubSpotSink implements Sink {
  readonly name = 'hubspot';
  readonly capabilities: SinkCapabilities = {
    maxBatch: HUBSPOT_MAX_BATCH,
    lookupByNaturalKey: true,
    honoursIdempotencyKey: false,
    upsertByNaturalKey: true,
  };
  /** The base URL, its path without trailing slashes; its query string (a key, say) goes on every request. */
  private readonly base: URL;
  private readonly http: HttpClient;
  private readonly token: string;
  private readonly sourceProperty: string | undefined;

  constructor(opts: HubSpotSinkOptions) {
    const url = checkSinkUrl(opts.baseUrl ?? 'https://api.hubapi.com', 'HubSpot', opts.allowInsecure);
    url.pathname = url.pathname.replace(/\/+$/, '');
    this.base = url;
    this.http = opts.http;
    this.token = opts.token;
    this.sourceProperty = opts.sourceProperty;
    this.http.addSecret(opts.token);
    // ?hapikey=... is a credential too: an error body that echoes the request must not carry it into a message.
    for (const secret of urlSecrets(url)) this.http.addSecret(secret);
  }

  /** "HubSpot at https://api.hubapi.com" (a query string shown as ?redacted). */
  describe(): string {
    return `HubSpot at ${redactUrl(this.base)}`;
  }

  /** Create (mode create) or upsert by email (mode update) up to 100 leads; one outcome per item, same order. */
  async send(items: SendItem[], signal?: AbortSignal): Promise<SinkOutcome[]> {
    const outcomes = new Array<SinkOutcome | undefined>(items.length).fill(undefined);
    const creates: number[] = [];
    const updates: number[] = [];
    items.forEach((item, i) => {
      if (item.mode === 'create') creates.push(i);
      else if (item.lead.email) updates.push(i);
      else
        outcomes[i] = {
          kind: 'failed',
          permanent: true,
          reason: 'a HubSpot contact can only be updated by email, and this lead has none',
        };
    });
    if (creates.length) await this.run(items, creates, outcomes, 'create', signal);
    if (updates.length) await this.run(items, updates, outcomes, 'upsert', signal);
    return outcomes.map((o) => o ?? { kind: 'unknown', reason: "HubSpot's answer did not mention this lead" });
  }

  /** Find a contact by email (or E.164 phone) for in-doubt recovery. */
  async lookup(naturalKey: string, signal?: AbortSignal): Promise<LookupResult> {
    if (naturalKey.includes('@')) {
      // GET by idProperty=email reads the store itself; search is eventually consistent and can miss a contact
      // created seconds ago, which would make recovery re-send it.
      const url = this.url(`${CONTACTS}/${encodeURIComponent(naturalKey)}`, 'idProperty=email&properties=email');
      const res = this.expectResponse(
        await this.http.request({ method: 'GET', url, headers: this.headers(), ...(signal ? { signal } : {}) }),
        'look up a contact',
      );
      if (res.status === 404) return { found: false };
      if (res.status !== 200)
        throw new Error(
          this.http.redact(`HubSpot lookup failed: ${describeHubSpotError(parseHubSpotError(res.text), res.status)}`),
        );
      const id = (JSON.parse(res.text) as { id?: unknown }).id;
      return typeof id === 'string' ? { found: true, crmId: id } : { found: true };
    }
    const body = {
      filterGroups: [{ filters: [{ propertyName: 'phone', operator: 'EQ', value: naturalKey }] }],
      properties: ['email', 'phone'],
      limit: 1,
      after: '0',
      sorts: [],
    };
    const res = this.expectResponse(await this.post(`${CONTACTS}/search`, body, signal), 'search contacts');
    if (res.status !== 200)
      throw new Error(
        this.http.redact(`HubSpot search failed: ${describeHubSpotError(parseHubSpotError(res.text), res.status)}`),
      );
    const first = (JSON.parse(res.text) as { results?: Array<{ id?: unknown }> }).results?.[0];
    if (!first) return { found: false };
    return typeof first.id === 'string' ? { found: true, crmId: first.id } : { found: true };
  }

  /** Release sockets. */
  async close(): Promise<void> {
    this.http.close();
  }

  /**
   * Work through groups of item indices until each has an outcome. A group is one batch call; a whole-batch
   * duplicate 409 settles the one named input and re-queues the rest; a whole-batch 400, or a 409 that is not the
   * duplicate answer, is split in halves, so one bad lead ends up alone, failed with the CRM's message, and the good
   * ones still go through (log2(100) ≈ 7 extra calls instead of 100).
   */
  private async run(
    items: SendItem[],
    indices: number[],
    outcomes: Array<SinkOutcome | undefined>,
    op: 'create' | 'upsert',
    signal?: AbortSignal,
  ): Promise<void> {
    const queue: number[][] = [];
    for (let i = 0; i < indices.length; i += HUBSPOT_MAX_BATCH) queue.push(indices.slice(i, i + HUBSPOT_MAX_BATCH));
    while (queue.length > 0) {
      const group = queue.shift() ?? [];
      // Two leads with one email in one call would be refused as a batch; the later ones go in a later call,
      // where they meet the contact the first one created (409 → exists).
      const seen = new Set<string>();
      const now: number[] = [];
      const later: number[] = [];
      for (const i of group) {
        const email = items[i]?.lead.email?.toLowerCase();
        if (email !== undefined && seen.has(email)) later.push(i);
        else {
          if (email !== undefined) seen.add(email);
          now.push(i);
        }
      }
      if (later.length) queue.push(later);

      const inputs = now.map((i) => this.input(items[i] as SendItem, op));
      const result = await this.post(`${CONTACTS}/batch/${op}`, { inputs }, signal);
      if (result.kind === 'failure') {
        const f = result.failure;
        for (const i of now)
          outcomes[i] = f.inDoubt
            ? { kind: 'unknown', reason: f.reason }
            : { kind: 'failed', permanent: false, reason: f.reason };
        continue;
      }
      const res = result.response;
      this.throwOnCredentials(res);
      if (res.status === 200 || res.status === 201 || res.status === 207) {
        this.applyBatch(items, now, outcomes, res, op);
        continue;
      }
      const err = parseHubSpotError(res.text);
      const id = res.status === 409 && op === 'create' ? duplicateContactId(err) : undefined;
      if (id !== undefined) {
        const who = now.length === 1 ? now[0] : await this.whoConflicts(items, now, id, signal);
        if (who !== undefined) {
          outcomes[who] = { kind: 'exists', crmId: id };
          const rest = now.filter((i) => i !== who);
          if (rest.length) queue.unshift(rest);
        } else {
          // Cannot tell which input collided: send each alone, so every 409 names its own input.
          queue.unshift(...now.map((i) => [i]));
        }
        continue;
      }
      if ((res.status === 400 || res.status === 409) && now.length > 1) {
        const mid = Math.ceil(now.length / 2);
        queue.unshift(now.slice(0, mid), now.slice(mid));
        continue;
      }
      const reason = this.http.redact(describeHubSpotError(err, res.status));
      for (const i of now) outcomes[i] = this.failureFor(res, reason);
    }
  }

  /** Match a 200/201/207 body back to inputs: by objectWriteTraceId, else by email. */
  private applyBatch(
    items: SendItem[],
    group: number[],
    outcomes: Array<SinkOutcome | undefined>,
    res: HttpResponse,
    op: 'create' | 'upsert',
  ): void {
    const byTrace = new Map<string, number>();
    const byEmail = new Map<string, number>();
    for (const i of group) {
      const item = items[i] as SendItem;
      byTrace.set(item.downstreamKey, i);
      if (item.lead.email) byEmail.set(item.lead.email.toLowerCase(), i);
    }
    const find = (trace: unknown, email: unknown): number | undefined =>
      (typeof trace === 'string' ? byTrace.get(trace) : undefined) ??
      (typeof email === 'string' ? byEmail.get(email.toLowerCase()) : undefined);
    let body: {
      results?: ResultObject[];
      errors?: Array<{ category?: string; message?: string; context?: Record<string, unknown> }>;
    };
    try {
      body = JSON.parse(res.text) as typeof body;
    } catch {
      for (const i of group)
        outcomes[i] = { kind: 'unknown', reason: `HubSpot answered ${res.status} with a body that is not JSON` };
      return;
    }
    for (const r of body.results ?? []) {
      const i = find(r.objectWriteTraceId, r.properties?.email);
      if (i === undefined || outcomes[i] !== undefined) continue;
      const crmId = typeof r.id === 'string' ? { crmId: r.id } : {};
      outcomes[i] = op === 'upsert' && r.new !== true ? { kind: 'updated', ...crmId } : { kind: 'created', ...crmId };
    }
    for (const e of body.errors ?? []) {
      const i = find(contextValue(e.context, 'objectWriteTraceId'), contextValue(e.context, 'email'));
      if (i === undefined || outcomes[i] !== undefined) continue;
      const id = duplicateContactId(e);
      outcomes[i] =
        id !== undefined
          ? { kind: 'exists', crmId: id }
          : { kind: 'failed', permanent: true, reason: this.http.redact(describeHubSpotError(e)) };
    }
  }

  /** A batch 409 names an id but not the input: read that contact's email to find which input collided. */
  private async whoConflicts(
    items: SendItem[],
    group: number[],
    id: string,
    signal?: AbortSignal,
  ): Promise<number | undefined> {
    const url = this.url(`${CONTACTS}/${encodeURIComponent(id)}`, 'properties=email');
    const result = await this.http.request({
      method: 'GET',
      url,
      headers: this.headers(),
      ...(signal ? { signal } : {}),
    });
    if (result.kind !== 'response') return undefined;
    this.throwOnCredentials(result.response);
    if (result.response.status !== 200) return undefined;
    try {
      const email = (JSON.parse(result.response.text) as ResultObject).properties?.email;
      if (typeof email !== 'string') return undefined;
      return group.find((i) => items[i]?.lead.email?.toLowerCase() === email.toLowerCase());
    } catch {
      return undefined;
    }
  }

  private input(item: SendItem, op: 'create' | 'upsert'): Record<string, unknown> {
    const properties = leadToHubSpotProperties(item.lead, this.sourceProperty);
    if (op === 'create') return { properties, associations: [], objectWriteTraceId: item.downstreamKey };
    // The id carries the email; properties.email stays too so the contact keeps it when the upsert creates.
    return { id: item.lead.email, idProperty: 'email', properties, objectWriteTraceId: item.downstreamKey };
  }

  private failureFor(res: HttpResponse, reason: string): SinkOutcome {
    const retryable = res.status === 408 || res.status === 429 || res.status >= 500;
    if (retryable && res.maybeCommitted)
      return { kind: 'unknown', reason: `${reason} (an earlier attempt may have been applied)` };
    return { kind: 'failed', permanent: !retryable, reason, status: res.status };
  }

  private throwOnCredentials(res: HttpResponse): void {
    if (res.status !== 401 && res.status !== 403) return;
    const err = parseHubSpotError(res.text);
    const what = res.status === 401 ? 'rejected the token' : 'refused access (missing scopes?)';
    throw new CredentialsError(this.http.redact(`HubSpot ${what}: ${describeHubSpotError(err, res.status)}`));
  }

  private expectResponse(result: HttpResult, what: string): HttpResponse {
    if (result.kind === 'failure') throw new Error(`could not ${what} in HubSpot: ${result.failure.reason}`);
    this.throwOnCredentials(result.response);
    return result.response;
  }

  private headers(): Record<string, string> {
    return { authorization: `Bearer ${this.token}`, 'content-type': 'application/json' };
  }

  /** The request URL: the API path appended to the base path, the base's query string and then `query` after it. */
  private url(path: string, query = ''): string {
    const url = new URL(this.base);
    url.pathname = `${this.base.pathname.replace(/\/+$/, '')}${path}`;
    url.search = [this.base.search.slice(1), query].filter((q) => q !== '').join('&');
    return url.href;
  }

  private post(path: string, body: unknown, signal?: AbortSignal): Promise<HttpResult> {
    return this.http.request({
      method: 'POST',
      url: this.url(path),
      headers: this.headers(),
      body: JSON.stringify(body),
      ...(signal ? { signal } : {}),
    });
  }
}
