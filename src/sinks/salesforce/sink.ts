// Salesforce sink: leads as Lead records through the REST API's sObject Collections, 200 a request
// (../shared/reference/crm-apis.md section 3).
//
// Exactly once by construction where the org has an External ID (Unique) field on Lead for leadledger's key (default
// Leadledger_Key__c): each batch is upserted by that field (PATCH /composite/sobjects/Lead/<field>, allOrNone false)
// with the downstream key as its value, so a batch whose answer was lost is simply sent again: Salesforce updates the
// record it created instead of making another (honoursIdempotencyKey). Without such a field, a Lead is created
// (POST /composite/sobjects) and a batch in doubt is looked up by email before anything is sent again.
//
// Either way each batch first asks who the org already holds by email (one SOQL query, SELECT Id ... WHERE Email IN):
// a person held under another key (a form, another tool) is `exists` with that Lead's id (or is updated with
// --existing update), never made twice; a duplicate rule that still refuses a create (DUPLICATES_DETECTED) settles it
// as `exists` with the id the rule matched. Each record of a collection succeeds or fails alone: a lead without
// LastName or Company gets the configured placeholder or fails alone, never the batch.
//
// Limits: every answer's Sforce-Limit-Info tells the org's daily API usage; the run stops before the allowance runs
// out (limits.ts), and a 403 REQUEST_LIMIT_EXCEEDED ("TotalRequests") stops it too, nothing of that request done.
import { CredentialsError } from '../../errors.js';
import { RequestNotSent, type HttpClient, type HttpMethod, type HttpResponse } from '../transport/http.js';
import { checkSinkUrl, redactUrl } from '../transport/secure-url.js';
import { TokenUnavailable } from '../transport/oauth2.js';
import type { FieldNotHeld, LookupResult, SendItem, Sink, SinkCapabilities, SinkCheck, SinkOutcome } from '../types.js';
import type { SalesforceConfig } from './config.js';
import {
  describeSalesforceErrors,
  isTransient,
  parseSalesforceErrors,
  readError,
  type SalesforceError,
} from './errors.js';
import { salesforceLead, salesforceNotHeld, DEFAULT_PLACEHOLDER } from './fields.js';
import type { TokenSession } from './jwt.js';
import { ApiAllowance, ApiAllowanceError } from './limits.js';

export const SALESFORCE_LOGIN_URL = 'https://login.salesforce.com';
export const DEFAULT_API_VERSION = 'v62.0';
export const DEFAULT_EXTERNAL_ID = 'Leadledger_Key__c';
/** sObject Collections take at most 200 records a request. */
export const COLLECTION_MAX = 200;
/** Emails per SOQL lookup (a batch's): some 8,000 characters of URL, under the 16,384 Salesforce reads. */
const EMAILS_PER_QUERY = 200;

export interface SalesforceSinkOptions {
  http: HttpClient;
  session: TokenSession;
  /** The org's instance URL (https://acme.my.salesforce.com): from the token answer, or --salesforce-url. */
  instanceUrl: string;
  apiVersion?: string;
  /** The External ID field upserts are keyed on, when the org has it; absent: lookup by email, then create. */
  externalId?: string;
  config?: SalesforceConfig;
  allowInsecure?: boolean;
  /** Daily API requests kept unspent (default 5% of the allowance). */
  reserve?: number;
}

/** A Lead the org holds, as the lookup reads it. */
interface HeldLead {
  id: string;
  key?: string;
}

type Call =
  | { kind: 'answer'; response: HttpResponse }
  | { kind: 'failure'; inDoubt: boolean; reason: string }
  | { kind: 'budget' }
  | { kind: 'released'; reason: string };

/** Whether a 401 says the session is no longer good (Salesforce's INVALID_SESSION_ID): refresh once and retry. */
export function isExpiredSession(res: HttpResponse): boolean {
  return res.status === 401 && parseSalesforceErrors(res.text).some((e) => e.code === 'INVALID_SESSION_ID');
}

/** The version as the URL takes it: v62.0. */
export function normalizeApiVersion(v: string): string {
  return v.startsWith('v') ? v : `v${v}`;
}

/** SOQL string literal: backslash and quote escaped. */
function soql(v: string): string {
  return `'${v.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
}

/** The Salesforce destination. */
export class SalesforceSink implements Sink {
  readonly name = 'salesforce';
  readonly capabilities: SinkCapabilities;
  /** Which downstream keys the org holds (upsert mode only: the key is a field of the record). */
  readonly findWritten?: (downstreamKeys: string[], signal?: AbortSignal) => Promise<Set<string>>;
  private readonly http: HttpClient;
  private readonly session: TokenSession;
  private readonly base: URL;
  private readonly version: string;
  private readonly externalId: string | undefined;
  private readonly config: SalesforceConfig;
  private readonly allowance: ApiAllowance;
  private stop: ApiAllowanceError | undefined;

  constructor(opts: SalesforceSinkOptions) {
    const url = checkSinkUrl(opts.instanceUrl, 'Salesforce', opts.allowInsecure);
    url.pathname = url.pathname.replace(/\/+$/, '');
    url.search = '';
    this.base = url;
    this.http = opts.http;
    this.session = opts.session;
    this.version = normalizeApiVersion(opts.apiVersion ?? DEFAULT_API_VERSION);
    this.externalId = opts.externalId;
    this.config = opts.config ?? {};
    this.allowance = new ApiAllowance(opts.reserve ?? this.config.reserve);
    this.capabilities = { maxBatch: COLLECTION_MAX, honoursIdempotencyKey: this.externalId !== undefined };
    if (this.externalId) this.findWritten = (keys, signal) => this.findKeys(keys, signal);
  }

  /** "Salesforce at https://acme.my.salesforce.com": no token. */
  describe(): string {
    return `Salesforce at ${redactUrl(this.base)}`;
  }

  /** How leads are written: "upsert by Leadledger_Key__c" or "create after a lookup by email". */
  mode(): string {
    return this.externalId ? `upsert by ${this.externalId}` : 'create after a lookup by email';
  }

  /** The daily API allowance is nearly spent: the error the run stops with (exit 7); else none. */
  stopped(): ApiAllowanceError | undefined {
    return this.stop;
  }

  /** The lead's fields a Lead record has no place for. */
  fieldsNotHeld(item: SendItem): readonly FieldNotHeld[] {
    return salesforceNotHeld(item.lead, this.config);
  }

  /** doctor: Lead's describe (the credentials read Lead, and the key field is there or not). */
  async check(signal?: AbortSignal): Promise<SinkCheck> {
    try {
      const fields = await this.describeLead(signal);
      const f = this.externalId ? fields.find((x) => x.name === this.externalId) : undefined;
      return {
        status: 'ok',
        message: `${this.describe()} answered: Lead is readable; leads are written by ${this.mode()}${f && !f.unique ? ` (${f.name} is not Unique: make it so)` : ''}`,
      };
    } catch (e) {
      return {
        status: 'fail',
        message: `${this.describe()}: ${this.http.redact((e as Error).message)}`,
        hint: 'run `leadledger auth salesforce`, and check that the user may read and create Leads',
        exitCode: e instanceof CredentialsError ? 4 : 1,
      };
    }
  }

  /** Lead's fields as describe lists them (name, externalId, unique); throws when Salesforce did not answer. */
  async describeLead(signal?: AbortSignal): Promise<Array<{ name: string; externalId: boolean; unique: boolean }>> {
    const call = await this.call('GET', '/sobjects/Lead/describe', undefined, undefined, true, signal);
    const res = this.answered(call, 'describe Lead');
    if (res.status !== 200) throw new Error(`Salesforce answered ${res.status} to describe Lead: ${this.said(res)}`);
    const body = JSON.parse(res.text) as { fields?: Array<Record<string, unknown>> };
    return (body.fields ?? []).map((f) => ({
      name: String(f.name),
      externalId: f.externalId === true,
      unique: f.unique === true,
    }));
  }

  /** Each batch: who the org holds by email, then one upsert (or create) and one update request. */
  async send(items: SendItem[], signal?: AbortSignal): Promise<SinkOutcome[]> {
    const out: Array<SinkOutcome | undefined> = items.map(() => undefined);
    const records: Array<Record<string, string> | undefined> = [];
    items.forEach((item, i) => {
      const r = salesforceLead(item.lead, this.config);
      if (r.ok) records[i] = r.fields;
      else out[i] = { kind: 'failed', permanent: true, reason: r.reason };
    });
    const pending = (): number[] => items.map((_, i) => i).filter((i) => out[i] === undefined);
    const fill = (idx: number[], o: SinkOutcome): void => {
      for (const i of idx) out[i] ??= o;
    };
    if (this.stop) {
      fill(pending(), { kind: 'released', reason: this.stop.message });
      return out as SinkOutcome[];
    }
    // Who the org already holds, by email: one query per batch.
    const emails = [...new Set(pending().flatMap((i) => (items[i]!.lead.email ? [items[i]!.lead.email] : [])))];
    let held = new Map<string, HeldLead>();
    if (emails.length) {
      const q = await this.heldByEmail(emails, signal);
      if (!(q instanceof Map)) {
        fill(pending(), q);
        return out as SinkOutcome[];
      }
      held = q;
    }
    const write: number[] = [];
    const update: Array<{ i: number; id: string }> = [];
    for (const i of pending()) {
      const item = items[i]!;
      const h = item.lead.email ? held.get(item.lead.email) : undefined;
      // Its key on the record: leadledger wrote it in an earlier attempt; the upsert repeats that write, harmlessly.
      if (!h || (this.externalId && h.key === item.downstreamKey)) write.push(i);
      else if (item.mode === 'update' || item.ifExists === 'update') update.push({ i, id: h.id });
      else out[i] = { kind: 'exists', crmId: h.id };
    }
    if (write.length) await this.write(items, records, write, out, signal);
    if (update.length) await this.update(items, records, update, out, signal);
    // Duplicate rules that matched without naming the record: found by email, as before a create.
    const dupes = items
      .map((_, i) => i)
      .filter((i) => {
        const o = out[i];
        return o?.kind === 'exists' && !o.crmId;
      });
    const dupEmails = [...new Set(dupes.flatMap((i) => (items[i]!.lead.email ? [items[i]!.lead.email] : [])))];
    if (dupEmails.length && !this.stopped()) {
      const q = await this.heldByEmail(dupEmails, signal);
      if (q instanceof Map)
        for (const i of dupes) {
          const id = q.get(items[i]!.lead.email ?? '')?.id;
          if (id) out[i] = { kind: 'exists', crmId: id };
        }
    }
    fill(pending(), { kind: 'released', reason: this.stopped()?.message ?? 'not sent' });
    return out as SinkOutcome[];
  }

  /** By email (or E.164 phone): the Lead the org holds. Throws when Salesforce could not answer. */
  async lookupMany(naturalKeys: string[], signal?: AbortSignal): Promise<LookupResult[]> {
    const emails = naturalKeys.filter((k) => k.includes('@'));
    const phones = naturalKeys.filter((k) => !k.includes('@'));
    const byEmail = emails.length ? await this.heldByEmail([...new Set(emails)], signal) : new Map<string, HeldLead>();
    if (!(byEmail instanceof Map)) throw new Error(`could not look leads up in Salesforce: ${reasonOf(byEmail)}`);
    const byPhone = new Map<string, HeldLead>();
    for (let i = 0; i < phones.length; i += EMAILS_PER_QUERY) {
      const chunk = [...new Set(phones.slice(i, i + EMAILS_PER_QUERY))];
      const got = await this.query(`SELECT Id, Phone FROM Lead WHERE Phone IN (${chunk.map(soql).join(',')})`, signal);
      if (!Array.isArray(got)) throw new Error(`could not look leads up in Salesforce: ${reasonOf(got)}`);
      for (const r of got)
        if (typeof r.Phone === 'string' && !byPhone.has(r.Phone)) byPhone.set(r.Phone, { id: String(r.Id) });
    }
    return naturalKeys.map((k) => {
      const h = k.includes('@') ? byEmail.get(k.toLowerCase()) : byPhone.get(k);
      return h ? { found: true, crmId: h.id } : { found: false };
    });
  }

  /** Release the keep-alive sockets. */
  async close(): Promise<void> {
    this.http.close();
  }

  // Upsert by the external id (or create) of the records at these indexes, 200 a request at most (send's batch).
  private async write(
    items: SendItem[],
    records: Array<Record<string, string> | undefined>,
    idx: number[],
    out: Array<SinkOutcome | undefined>,
    signal?: AbortSignal,
  ): Promise<void> {
    const ext = this.externalId;
    const body = {
      allOrNone: false,
      records: idx.map((i) => ({
        attributes: { type: 'Lead' },
        ...records[i],
        ...(ext ? { [ext]: items[i]!.downstreamKey } : {}),
      })),
    };
    const call = ext
      ? // Keyed by leadledger's key: a repeat updates the record the first attempt made, so retrying is safe.
        await this.call('PATCH', `/composite/sobjects/Lead/${encodeURIComponent(ext)}`, undefined, body, true, signal)
      : // A create repeated would make a second Lead: never retried once it may have reached Salesforce.
        await this.call('POST', '/composite/sobjects', undefined, body, false, signal);
    const results = this.results(call, idx, out);
    if (!results) return;
    idx.forEach((i, j) => {
      const r = results[j];
      if (!r) {
        out[i] = { kind: 'unknown', reason: 'Salesforce answered without a result for this record' };
        return;
      }
      if (r.success === true) {
        const crmId = typeof r.id === 'string' ? { crmId: r.id } : {};
        // created false: the record holding this key was there (an earlier attempt of this event made it).
        if (!ext || r.created !== false) out[i] = { kind: 'created', ...crmId };
        else out[i] = items[i]!.mode === 'update' ? { kind: 'updated', ...crmId } : { kind: 'exists', ...crmId };
        return;
      }
      out[i] = this.refused(r.errors);
    });
  }

  // Update these held Leads by id (PATCH /composite/sobjects): --existing update.
  private async update(
    items: SendItem[],
    records: Array<Record<string, string> | undefined>,
    list: Array<{ i: number; id: string }>,
    out: Array<SinkOutcome | undefined>,
    signal?: AbortSignal,
  ): Promise<void> {
    const placeholder = this.config.placeholder ?? DEFAULT_PLACEHOLDER;
    const body = {
      allOrNone: false,
      records: list.map(({ i, id }) => {
        // A placeholder never overwrites what the org holds.
        const fields = Object.fromEntries(Object.entries(records[i] ?? {}).filter(([, v]) => v !== placeholder));
        return { attributes: { type: 'Lead' }, id, ...fields };
      }),
    };
    const idx = list.map((l) => l.i);
    const call = await this.call('PATCH', '/composite/sobjects', undefined, body, true, signal);
    const results = this.results(call, idx, out);
    if (!results) return;
    list.forEach(({ i, id }, j) => {
      const r = results[j];
      if (r?.success === true) out[i] = { kind: 'updated', crmId: id };
      else if (!r) out[i] = { kind: 'unknown', reason: 'Salesforce answered without a result for this record' };
      else out[i] = this.refused(r.errors);
    });
  }

  // A collection's answer: its results, or (having filled these indexes' outcomes) undefined.
  private results(
    call: Call,
    idx: number[],
    out: Array<SinkOutcome | undefined>,
  ): Array<{ id?: unknown; success?: unknown; created?: unknown; errors?: unknown }> | undefined {
    const fill = (o: SinkOutcome): undefined => {
      for (const i of idx) out[i] = o;
      return undefined;
    };
    if (call.kind === 'budget') return fill({ kind: 'released', reason: this.stop?.message ?? 'not sent' });
    if (call.kind === 'released') return fill({ kind: 'released', reason: call.reason });
    if (call.kind === 'failure')
      return fill(
        call.inDoubt
          ? { kind: 'unknown', reason: call.reason }
          : { kind: 'failed', permanent: false, reason: call.reason },
      );
    const res = call.response;
    if (res.status === 200) {
      try {
        const parsed = JSON.parse(res.text) as unknown;
        if (Array.isArray(parsed)) return parsed as Array<Record<string, unknown>>;
      } catch {
        // Below: an answer that is not a list of results.
      }
      return fill({ kind: 'unknown', reason: 'Salesforce answered 200 with a body that is not a list of results' });
    }
    const reason = this.said(res);
    const retryable = res.status === 408 || res.status === 429 || res.status >= 500 || res.status === 403;
    if (retryable && res.maybeCommitted)
      return fill({ kind: 'unknown', reason: `${reason} (an earlier attempt may have been applied)` });
    return fill({ kind: 'failed', permanent: !retryable, reason, status: res.status });
  }

  // A record's errors as its outcome: a duplicate rule's match is `exists`; a lock is retried; the rest fail alone.
  private refused(errorsRaw: unknown): SinkOutcome {
    const errors = (Array.isArray(errorsRaw) ? errorsRaw : []).map(readError).filter((e): e is SalesforceError => !!e);
    const dup = errors.find((e) => e.code === 'DUPLICATES_DETECTED');
    if (dup) return { kind: 'exists', ...(dup.matchedIds?.[0] ? { crmId: dup.matchedIds[0] } : {}) };
    const reason = this.http.redact(describeSalesforceErrors(errors, 400));
    return { kind: 'failed', permanent: !errors.some((e) => isTransient(e.code)), reason };
  }

  // email (lower-case) -> the first Lead holding it, with its key; or the outcome every pending lead gets.
  private async heldByEmail(emails: string[], signal?: AbortSignal): Promise<Map<string, HeldLead> | SinkOutcome> {
    const held = new Map<string, HeldLead>();
    const ext = this.externalId;
    for (let i = 0; i < emails.length; i += EMAILS_PER_QUERY) {
      const chunk = emails.slice(i, i + EMAILS_PER_QUERY);
      const got = await this.query(
        `SELECT Id, Email${ext ? `, ${ext}` : ''} FROM Lead WHERE Email IN (${chunk.map(soql).join(',')}) ORDER BY CreatedDate`,
        signal,
      );
      if (!Array.isArray(got)) return got;
      for (const r of got) {
        const email = typeof r.Email === 'string' ? r.Email.toLowerCase() : undefined;
        if (!email || held.has(email)) continue;
        const key = ext ? r[ext] : undefined;
        held.set(email, { id: String(r.Id), ...(typeof key === 'string' ? { key } : {}) });
      }
    }
    return held;
  }

  // The upsert mode's findWritten: the keys the org holds in the external id field.
  private async findKeys(keys: string[], signal?: AbortSignal): Promise<Set<string>> {
    const ext = this.externalId!;
    const found = new Set<string>();
    for (let i = 0; i < keys.length; i += EMAILS_PER_QUERY) {
      const chunk = keys.slice(i, i + EMAILS_PER_QUERY);
      const got = await this.query(
        `SELECT Id, ${ext} FROM Lead WHERE ${ext} IN (${chunk.map(soql).join(',')})`,
        signal,
      );
      if (!Array.isArray(got)) throw new Error(`could not read Salesforce: ${reasonOf(got)}`);
      for (const r of got) if (typeof r[ext] === 'string') found.add(r[ext]);
    }
    return found;
  }

  // A SOQL query, every page of it; or the outcome the leads waiting on it get (nothing was written).
  private async query(q: string, signal?: AbortSignal): Promise<Array<Record<string, unknown>> | SinkOutcome> {
    const rows: Array<Record<string, unknown>> = [];
    let next: string | undefined;
    let first = true;
    while (first || next) {
      const call = first
        ? await this.call('GET', '/query', new URLSearchParams({ q }), undefined, true, signal)
        : await this.call('GET', next!, undefined, undefined, true, signal, true);
      first = false;
      if (call.kind === 'budget') return { kind: 'released', reason: this.stop?.message ?? 'not sent' };
      if (call.kind === 'released') return { kind: 'released', reason: call.reason };
      // A lookup changes nothing: a lookup that failed leaves its leads unsent, to be retried.
      if (call.kind === 'failure')
        return { kind: 'failed', permanent: false, reason: `lookup before sending: ${call.reason}` };
      const res = call.response;
      if (res.status !== 200)
        return {
          kind: 'failed',
          permanent: res.status === 400,
          reason: `lookup before sending: ${this.said(res)}`,
          status: res.status,
        };
      const body = JSON.parse(res.text) as {
        records?: Array<Record<string, unknown>>;
        done?: boolean;
        nextRecordsUrl?: string;
      };
      rows.push(...(body.records ?? []));
      next = body.done === false && typeof body.nextRecordsUrl === 'string' ? body.nextRecordsUrl : undefined;
    }
    return rows;
  }

  /**
   * One request under the daily allowance: refused (nothing sent) when it could leave less than the reserve. 401s
   * (after one refresh) and 403s other than the allowance's throw CredentialsError.
   */
  private async call(
    method: HttpMethod,
    path: string,
    query: URLSearchParams | undefined,
    body: unknown,
    retryInDoubt: boolean,
    signal?: AbortSignal,
    absolute = false,
  ): Promise<Call> {
    if (this.stop) return { kind: 'budget' };
    if (!this.allowance.admit()) {
      this.stop = new ApiAllowanceError(this.allowance.describe());
      return { kind: 'budget' };
    }
    let answered: Record<string, string | undefined> | undefined;
    try {
      const url = new URL(this.base.href);
      url.pathname = absolute
        ? path.split('?')[0]!
        : `${this.base.pathname.replace(/\/+$/, '')}/services/data/${this.version}${path}`;
      if (absolute && path.includes('?')) url.search = path.slice(path.indexOf('?'));
      if (query) for (const [k, v] of query) url.searchParams.append(k, v);
      let result;
      try {
        result = await this.session.request(
          (token) => ({
            method,
            url: url.href,
            headers: {
              authorization: `Bearer ${token}`,
              accept: 'application/json',
              ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
            },
            ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
            retryInDoubt,
            ...(signal ? { signal } : {}),
          }),
          signal,
        );
      } catch (e) {
        if (e instanceof CredentialsError) throw e;
        if (e instanceof RequestNotSent) return { kind: 'released', reason: e.message };
        // No token to send with: nothing reached Salesforce.
        if (e instanceof TokenUnavailable)
          return { kind: 'failure', inDoubt: false, reason: this.http.redact(e.message) };
        const why = e instanceof Error && e.message ? ` (${this.http.redact(e.message)})` : '';
        return { kind: 'failure', inDoubt: true, reason: `cut by the stop while Salesforce had the request${why}` };
      }
      if (result.kind === 'failure')
        return { kind: 'failure', inDoubt: result.failure.inDoubt, reason: this.http.redact(result.failure.reason) };
      const res = result.response;
      answered = res.headers;
      if (res.status === 401)
        throw new CredentialsError(
          `Salesforce rejected the session: ${this.said(res)}; run \`leadledger auth salesforce\` (or check the JWT key and user) to authorize leadledger again`,
        );
      if (res.status === 403) {
        const errors = parseSalesforceErrors(res.text);
        const limit = errors.find((e) => e.code === 'REQUEST_LIMIT_EXCEEDED');
        // The concurrent-request cap is over in seconds: the batch fails, retryable; the daily allowance stops the run.
        if (limit && /concurrent/i.test(limit.message)) return { kind: 'answer', response: res };
        if (limit) {
          this.allowance.exhausted();
          this.stop = new ApiAllowanceError(this.allowance.describe());
          return { kind: 'budget' };
        }
        throw new CredentialsError(
          `Salesforce refused access: ${this.said(res)}; the user needs API Enabled and Read, Create and Edit on Lead (and on ${this.externalId ?? 'the Lead fields sent'})`,
        );
      }
      return { kind: 'answer', response: res };
    } finally {
      this.allowance.settle(answered);
    }
  }

  private answered(call: Call, what: string): HttpResponse {
    if (call.kind === 'answer') return call.response;
    if (call.kind === 'budget') throw this.stop ?? new Error('the API allowance is spent');
    throw new Error(`could not ${what} in Salesforce: ${call.reason}`);
  }

  private said(res: HttpResponse): string {
    return this.http.redact(describeSalesforceErrors(parseSalesforceErrors(res.text), res.status));
  }
}

function reasonOf(o: SinkOutcome): string {
  return 'reason' in o ? o.reason : o.kind;
}
