// HubSpot contacts v3 sink: batch create with one objectWriteTraceId per input (so partial success is reported per
// input), batch upsert by email for `--existing update`, and lookup by email for in-doubt recovery.
//
// A CRM that already holds the people: HubSpot's batch create refuses a whole batch with one 409 when any of its
// contacts exists, naming only the first. Instead of working through such a batch one collision at a time, the
// sink reads the batch's people by email (batch read with idProperty email, up to 100 inputs) on that 409, settles
// those it holds as `exists` with their id (or updates them by id under `--existing update`), and creates the rest
// in one more call. While recent batches keep meeting existing people, it reads before creating, so a batch of
// people the CRM holds costs one request. In-doubt recovery looks people up the same way, a batch at a time.
//
// HubSpot has no Idempotency-Key. Exactly-once comes from email being unique in HubSpot: a retry of a create that
// was committed but whose answer was lost gets a 409 naming the existing contact, reported as `exists` with its id.
// Only that answer ("Contact already exists. Existing ID: N") is `exists`; any other 409 or CONFLICT is a failure
// with the CRM's message, permanent, since the same request gets the same answer.
import { CredentialsError } from '../../errors.js';
import type { Lead } from '../../mapping/types.js';
import { contextValue, describeHubSpotError, duplicateContactId, parseHubSpotError } from './errors.js';
import { RequestNotSent, type HttpClient, type HttpResponse, type HttpResult } from '../transport/http.js';
import { checkSinkUrl, redactUrl, urlSecrets } from '../transport/secure-url.js';
import type { FieldNotHeld, LookupResult, SendItem, Sink, SinkCapabilities, SinkCheck, SinkOutcome } from '../types.js';
import { checkAnswer } from '../transport/check.js';

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
  return hubspotContact(lead, sourceProperty).properties;
}

/**
 * A lead as a HubSpot contact: its properties, and the fields it has no place for. HubSpot has no full-name
 * property: firstname and lastname are the lead's first and last names, and where one of them is missing it comes
 * from the full name (nameParts). The source goes to the configured property only. A custom field goes to the
 * property of its name, unless a standard field already fills that property (a custom `email` never replaces the
 * lead's email).
 */
export function hubspotContact(
  lead: Lead,
  sourceProperty?: string,
): { properties: Record<string, string>; notHeld: FieldNotHeld[] } {
  const props: Record<string, string> = {};
  const notHeld: FieldNotHeld[] = [];
  const set = (name: string, value: string | undefined): void => {
    if (value !== undefined && value !== '') props[name] = value;
  };
  set('email', lead.email);
  const { first, last, nameHeld } = nameParts(lead);
  set('firstname', first);
  set('lastname', last);
  if (!nameHeld) notHeld.push(NAME_NOT_HELD);
  set('phone', lead.phone);
  set('company', lead.company);
  if (sourceProperty) set(sourceProperty, lead.source);
  else if (lead.source) notHeld.push(SOURCE_NOT_HELD);
  for (const [k, v] of Object.entries(lead.custom ?? {})) {
    if (v === '') continue;
    if (props[k] !== undefined) notHeld.push(shadowedCustom(k));
    else props[k] = v;
  }
  return { properties: props, notHeld };
}

const NAME_NOT_HELD: FieldNotHeld = {
  field: 'name',
  why: 'HubSpot has no full-name property, and this one is not the first name followed by the last name',
};
const SOURCE_NOT_HELD: FieldNotHeld = {
  field: 'source',
  why: 'HubSpot has no standard property for it: name one in sinks.hubspot.sourceProperty',
};
const shadowed = new Map<string, FieldNotHeld>();
function shadowedCustom(k: string): FieldNotHeld {
  let f = shadowed.get(k);
  if (!f) {
    f = { field: `custom.${k}`, why: `the property ${k} holds a standard field of the lead: rename the custom field` };
    shadowed.set(k, f);
  }
  return f;
}

/**
 * HubSpot's firstname and lastname of a lead, and whether they hold its full name too. Its own first and last names
 * first; a missing one from the full name: "Ana Maria Souza" alone is Ana / Maria Souza; a full name that ends with
 * the last name gives the first name before it, and one that does not is the first name itself (an export's "Nome"
 * beside its "Sobrenome": Ana / Souza); a full name that starts with the first name gives the last name after it.
 */
export function nameParts(lead: Lead): { first?: string; last?: string; nameHeld: boolean } {
  let first = lead.firstName || undefined;
  let last = lead.lastName || undefined;
  const name = lead.name?.trim() || undefined;
  if (name === undefined) return { first, last, nameHeld: true };
  if (first === undefined && last === undefined) {
    const parts = name.split(/\s+/);
    first = parts[0];
    last = parts.length > 1 ? parts.slice(1).join(' ') : undefined;
  } else if (first === undefined) {
    const before = withoutEnd(name, last!);
    first = before === undefined ? name : before || undefined;
  } else if (last === undefined) {
    const after = withoutStart(name, first);
    if (after) last = after;
  }
  const spelled = [first, last].filter(Boolean).join(' ');
  const same = (a: string | undefined) => a !== undefined && a.toLowerCase() === name.toLowerCase();
  return { first, last, nameHeld: same(spelled) || same(first) };
}

// The full name without the last name at its end ('' when it is only that); undefined when it does not end with it.
function withoutEnd(name: string, last: string): string | undefined {
  const n = name.toLowerCase();
  const l = last.toLowerCase();
  if (n === l) return '';
  return n.endsWith(` ${l}`) ? name.slice(0, name.length - last.length).trim() : undefined;
}

// The full name without the first name at its start; undefined when it does not start with it.
function withoutStart(name: string, first: string): string | undefined {
  const n = name.toLowerCase();
  const f = first.toLowerCase();
  if (n === f) return '';
  return n.startsWith(`${f} `) ? name.slice(first.length).trim() : undefined;
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
    honoursIdempotencyKey: false,
  };
  /** The base URL, its path without trailing slashes; its query string (a key, say) goes on every request. */
  private readonly base: URL;
  private readonly http: HttpClient;
  private readonly token: string;
  private readonly sourceProperty: string | undefined;
  /** Whether each of the last few batches met people the CRM already holds (newest last): see readFirst(). */
  private readonly metExisting: boolean[] = [];

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

  /** The lead's fields no property receives (see hubspotContact). */
  fieldsNotHeld(item: SendItem): readonly FieldNotHeld[] {
    return hubspotContact(item.lead, this.sourceProperty).notHeld;
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
    if (creates.length) await this.create(items, creates, outcomes, signal);
    if (updates.length) await this.run(items, updates, outcomes, 'upsert', signal);
    return outcomes.map((o) => o ?? { kind: 'unknown', reason: "HubSpot's answer did not mention this lead" });
  }

  /**
   * Look people up a batch at a time: emails by one batch read of up to 100 (idProperty email), phones by search one
   * at a time. One result per key, in their order. Throws when HubSpot could not answer: the events stay in doubt.
   */
  async lookupMany(naturalKeys: string[], signal?: AbortSignal): Promise<LookupResult[]> {
    const out: LookupResult[] = [];
    const emails = [...new Set(naturalKeys.filter((k) => k.includes('@')).map((k) => k.toLowerCase()))];
    const found = new Map<string, string>();
    for (let i = 0; i < emails.length; i += HUBSPOT_MAX_BATCH) {
      const read = await this.readEmails(emails.slice(i, i + HUBSPOT_MAX_BATCH), signal);
      if ('error' in read) throw new Error(this.http.redact(`HubSpot batch read failed: ${read.error}`));
      for (const [email, id] of read.found) found.set(email, id);
    }
    for (const key of naturalKeys) {
      if (!key.includes('@')) out.push(await this.lookup(key, signal));
      else {
        const id = found.get(key.toLowerCase());
        out.push(id !== undefined ? { found: true, crmId: id } : { found: false });
      }
    }
    return out;
  }

  /** doctor: one contact listed (GET /crm/v3/objects/contacts?limit=1): the API answers and the token reads contacts. */
  async check(signal?: AbortSignal): Promise<SinkCheck> {
    const r = await this.http.request({
      method: 'GET',
      url: this.url(CONTACTS, 'limit=1'),
      headers: this.headers(),
      ...(signal ? { signal } : {}),
    });
    return checkAnswer(this.describe(), r, {
      ok: 'the token reads contacts (its write scope, crm.objects.contacts.write, shows only on a send)',
      credentialsHint:
        'give a private app token with the crm.objects.contacts.read and .write scopes in HUBSPOT_TOKEN or --token-file',
      said: (text) => this.http.redact(describeHubSpotError(parseHubSpotError(text))),
    });
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
   * Creates, knowing which people the CRM holds: read first while recent batches met existing people (one request
   * for a batch the CRM holds whole), else create and read only on a duplicate 409. Existing people settle as
   * `exists` with their id, or, for items that ask (`--existing update`), are updated by that id.
   */
  private async create(
    items: SendItem[],
    indices: number[],
    outcomes: Array<SinkOutcome | undefined>,
    signal?: AbortSignal,
  ): Promise<void> {
    const read = new Set<number>();
    let rest: number[] | undefined = indices;
    if (this.readFirst()) {
      for (const i of indices) read.add(i);
      rest = await this.settleExisting(items, indices, outcomes, signal);
      if (rest === undefined) return;
    }
    if (rest.length) await this.run(items, rest, outcomes, 'create', signal, read);
    if (indices.some((i) => outcomes[i]?.kind === 'released')) return;
    const existing = indices.filter((i) => outcomes[i]?.kind === 'exists');
    this.noteExisting(existing.length > 0);
    const ids = new Map<number, string>();
    for (const i of existing) {
      const o = outcomes[i] as { crmId?: string };
      if (items[i]?.ifExists === 'update' && o.crmId !== undefined) ids.set(i, o.crmId);
    }
    if (ids.size === 0) return;
    for (const i of ids.keys()) outcomes[i] = undefined;
    await this.run(items, [...ids.keys()], outcomes, 'update', signal, undefined, ids);
  }

  /**
   * Read a batch more often than not meets people the CRM holds (two of the last four batches did): reading first
   * then costs a request for a batch the CRM holds whole, where create-then-read costs two, and three for a mixed
   * batch instead of two. A push into a CRM that holds nobody never reads.
   */
  private readFirst(): boolean {
    const met = this.metExisting.filter(Boolean).length;
    return met > 0 && 2 * met >= this.metExisting.length;
  }

  private noteExisting(met: boolean): void {
    this.metExisting.push(met);
    if (this.metExisting.length > 4) this.metExisting.shift();
  }

  /**
   * Reads a group's people by email: those the CRM holds settle as `exists` with their id; returns the others (the
   * whole group when the read got no usable answer: the create's own 409 still tells). A read has no effect in the
   * CRM, so a stop during it releases the group: undefined.
   */
  private async settleExisting(
    items: SendItem[],
    group: number[],
    outcomes: Array<SinkOutcome | undefined>,
    signal?: AbortSignal,
  ): Promise<number[] | undefined> {
    const emails = [...new Set(group.map((i) => items[i]?.lead.email?.toLowerCase()).filter((e) => e !== undefined))];
    if (emails.length === 0) return group;
    let read: Awaited<ReturnType<HubSpotSink['readEmails']>>;
    try {
      read = await this.readEmails(emails, signal);
    } catch (e) {
      if (e instanceof CredentialsError) throw e;
      for (const i of group) outcomes[i] = released(e);
      return undefined;
    }
    if ('error' in read) return group;
    const rest: number[] = [];
    for (const i of group) {
      const id = read.found.get(items[i]?.lead.email?.toLowerCase() ?? '');
      if (id !== undefined) outcomes[i] = { kind: 'exists', crmId: id };
      else rest.push(i);
    }
    return rest;
  }

  /**
   * POST /crm/v3/objects/contacts/batch/read with idProperty email (HubSpot's contacts v3 OpenAPI document,
   * BatchReadInputSimplePublicObjectId: inputs [{id}], properties and propertiesWithHistory required). HubSpot
   * answers 200 when it holds every input, 207 (BatchResponseSimplePublicObjectWithErrors) when some are not found,
   * those listed in an OBJECT_NOT_FOUND error: found people are exactly the results, each with its id and email.
   */
  private async readEmails(
    emails: string[],
    signal?: AbortSignal,
  ): Promise<{ found: Map<string, string> } | { error: string }> {
    const body = {
      inputs: emails.map((id) => ({ id })),
      idProperty: 'email',
      properties: ['email'],
      propertiesWithHistory: [],
    };
    const result = await this.post(`${CONTACTS}/batch/read`, body, signal);
    if (result.kind === 'failure') return { error: result.failure.reason };
    const res = result.response;
    this.throwOnCredentials(res);
    if (res.status !== 200 && res.status !== 207)
      return { error: this.http.redact(describeHubSpotError(parseHubSpotError(res.text), res.status)) };
    const found = new Map<string, string>();
    try {
      const parsed = JSON.parse(res.text) as { results?: ResultObject[] };
      for (const r of parsed.results ?? []) {
        const email = r.properties?.email;
        if (typeof email === 'string' && typeof r.id === 'string') found.set(email.toLowerCase(), r.id);
      }
    } catch {
      return { error: `HubSpot answered ${res.status} with a body that is not JSON` };
    }
    return { found };
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
    op: 'create' | 'upsert' | 'update',
    signal?: AbortSignal,
    /** create: the items whose people were already read by email (a 409 among them is not read again). */
    read?: Set<number>,
    /** update: each item's contact id. */
    ids?: Map<number, string>,
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

      const inputs = now.map((i) => this.input(items[i] as SendItem, op, ids?.get(i)));
      let result: HttpResult;
      try {
        result = await this.post(`${CONTACTS}/batch/${op}`, { inputs }, signal);
      } catch (e) {
        // Stopped: this call never left (released), or was cut while HubSpot had it (in doubt); the calls still
        // queued never left.
        for (const i of now) outcomes[i] = e instanceof RequestNotSent ? released(e) : cut(e);
        for (const g of queue) for (const i of g) outcomes[i] = released(e);
        return;
      }
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
        this.applyBatch(items, now, outcomes, res, op, ids);
        continue;
      }
      const err = parseHubSpotError(res.text);
      const id = res.status === 409 && op === 'create' ? duplicateContactId(err) : undefined;
      if (id !== undefined && read && now.length > 1 && now.some((i) => !read.has(i))) {
        // Which of them does the CRM hold? One read tells for the whole group, then the rest is created at once.
        for (const i of now) read.add(i);
        const rest = await this.settleExisting(items, now, outcomes, signal);
        if (rest === undefined) {
          for (const g of queue) for (const i of g) outcomes[i] = released(new RequestNotSent());
          return;
        }
        if (rest.length < now.length) {
          if (rest.length) queue.unshift(rest);
          continue;
        }
        // The read found none of them (the 409 is about an address a read by email does not see): as below.
      }
      if (id !== undefined) {
        let who: number | undefined;
        try {
          who = now.length === 1 ? now[0] : await this.whoConflicts(items, now, id, signal);
        } catch (e) {
          if (e instanceof CredentialsError) throw e;
          // Stopped while asking which input collided: the 409 created nothing, so nothing of the group was sent.
          for (const i of now) outcomes[i] = released(e);
          for (const g of queue) for (const i of g) outcomes[i] = released(e);
          return;
        }
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

  /** Match a 200/201/207 body back to inputs: by objectWriteTraceId, else by contact id (update), else by email. */
  private applyBatch(
    items: SendItem[],
    group: number[],
    outcomes: Array<SinkOutcome | undefined>,
    res: HttpResponse,
    op: 'create' | 'upsert' | 'update',
    ids?: Map<number, string>,
  ): void {
    const byTrace = new Map<string, number>();
    const byEmail = new Map<string, number>();
    const byId = new Map<string, number>();
    for (const i of group) {
      const item = items[i] as SendItem;
      byTrace.set(item.downstreamKey, i);
      if (item.lead.email) byEmail.set(item.lead.email.toLowerCase(), i);
      const id = ids?.get(i);
      if (id !== undefined) byId.set(id, i);
    }
    const find = (trace: unknown, email: unknown, id?: unknown): number | undefined =>
      (typeof trace === 'string' ? byTrace.get(trace) : undefined) ??
      (typeof id === 'string' ? byId.get(id) : undefined) ??
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
      const i = find(r.objectWriteTraceId, r.properties?.email, op === 'update' ? r.id : undefined);
      if (i === undefined || outcomes[i] !== undefined) continue;
      const crmId = typeof r.id === 'string' ? { crmId: r.id } : {};
      outcomes[i] =
        op === 'update' || (op === 'upsert' && r.new !== true)
          ? { kind: 'updated', ...crmId }
          : { kind: 'created', ...crmId };
    }
    for (const e of body.errors ?? []) {
      if (op === 'update' && e.category === 'OBJECT_NOT_FOUND') {
        // The contact the read found is gone (merged, deleted): the next run reads again and creates it if need be.
        const gone = e.context?.ids;
        for (const id of Array.isArray(gone) ? gone : []) {
          const i = typeof id === 'string' ? byId.get(id) : undefined;
          if (i !== undefined && outcomes[i] === undefined)
            outcomes[i] = {
              kind: 'failed',
              permanent: false,
              reason: `HubSpot no longer holds contact ${id} (merged or deleted?): not updated`,
            };
        }
        continue;
      }
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

  private input(item: SendItem, op: 'create' | 'upsert' | 'update', id?: string): Record<string, unknown> {
    const properties = leadToHubSpotProperties(item.lead, this.sourceProperty);
    if (op === 'create') return { properties, associations: [], objectWriteTraceId: item.downstreamKey };
    if (op === 'update') {
      // The contact was found by this email: it stays as HubSpot has it (an address it also knows the person by).
      const { email: _email, ...rest } = properties;
      return { id, properties: rest, objectWriteTraceId: item.downstreamKey };
    }
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

/** The outcome of an item whose request never left, or whose only request was a read: nothing reached the CRM. */
function released(e: unknown): SinkOutcome {
  return { kind: 'released', reason: e instanceof RequestNotSent ? e.message : 'not sent: the run stopped' };
}

/** The outcome of an item whose request HubSpot had when the run cut it: it may have been applied. */
function cut(e: unknown): SinkOutcome {
  const why = e instanceof Error && e.message ? ` (${e.message})` : '';
  return { kind: 'unknown', reason: `cut by the stop while HubSpot had the request: its answer was not awaited${why}` };
}
