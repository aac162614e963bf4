// Zoho CRM Leads sink (API v8). A new lead is inserted (`POST /crm/v8/Leads`, 100 records a call): Zoho's duplicate
// check on Email refuses a lead whose email the account holds with DUPLICATE_DATA naming the record, which settles as
// `exists` with that id, so a person is never created twice and the default `--existing skip` changes nothing Zoho
// holds. A lead to update (`--existing update`) is upserted (`POST /crm/v8/Leads/upsert`, duplicate_check_fields
// ["Email"]): Zoho updates the record of that email or inserts one. Both are idempotent by email: a call whose answer
// was lost is sent again (a record already written comes back as a duplicate or an update). A batch answer (200, 201,
// 207 or 400 with data[]) is read record by record, in the order sent.
//
// Leads without an email have no natural key Zoho checks: their calls are never repeated blindly, and one whose
// answer was lost is in doubt, settled by lookup() (search by phone) on the next run.
//
// Limits: API credits (credits.ts), a rolling 24 h allowance, followed from the answers and never run out; the
// edition's concurrency cap (requests in flight at once) is kept by the sink whatever --concurrency asks; a 429 is
// retried by the transport (Retry-After honoured) unless it says the credits ran out.
//
// Auth: `Authorization: Zoho-oauthtoken <access token>`, from the OAuth session (transport/oauth2.ts); an
// INVALID_TOKEN 401 is answered by one refresh and one retry.
import { CredentialsError } from '../../errors.js';
import { RequestNotSent, type HttpClient, type HttpResponse, type HttpResult } from '../transport/http.js';
import { TokenUnavailable, type OAuth2Session } from '../transport/oauth2.js';
import { checkSinkUrl, redactUrl } from '../transport/secure-url.js';
import { checkAnswer } from '../transport/check.js';
import type { FieldNotHeld, LookupResult, SendItem, Sink, SinkCapabilities, SinkCheck, SinkOutcome } from '../types.js';
import type { ZohoConfig } from './config.js';
import { CreditBudget, CreditsError, writeCredits } from './credits.js';
import { describeZohoError, duplicateId, parseZoho, type ZohoEntry } from './errors.js';
import { zohoRecord } from './record.js';

/** Zoho takes at most 100 records a write call. */
export const ZOHO_MAX_BATCH = 100;
const LEADS = '/crm/v8/Leads';

export interface ZohoSinkOptions {
  http: HttpClient;
  session: OAuth2Session;
  /** The API domain (https://www.zohoapis.com, a proxy, the sandbox). */
  apiBase: string;
  /** The API domain may move with a token's api_domain (false where --zoho-url named the base). */
  followApiDomain?: boolean;
  config?: ZohoConfig;
  allowInsecure?: boolean;
}

type Op = 'insert' | 'upsert';

/** The Zoho CRM Leads destination. */
export class ZohoSink implements Sink {
  readonly name = 'zoho';
  readonly capabilities: SinkCapabilities = { maxBatch: ZOHO_MAX_BATCH, honoursIdempotencyKey: false };
  private base: URL;
  private readonly http: HttpClient;
  private readonly session: OAuth2Session;
  private readonly config: ZohoConfig;
  private readonly allowInsecure: boolean | undefined;
  readonly budget: CreditBudget;
  private stop: CreditsError | undefined;
  private readonly cap: number;
  private inFlight = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(opts: ZohoSinkOptions) {
    this.allowInsecure = opts.allowInsecure;
    this.base = this.checkedBase(opts.apiBase);
    this.http = opts.http;
    this.session = opts.session;
    this.config = opts.config ?? {};
    this.budget = new CreditBudget(this.config.creditsReserve);
    this.cap = this.config.concurrency ?? 10;
  }

  /** A token's api_domain: where this account's API is (its data centre). */
  useApiDomain(domain: string): void {
    this.base = this.checkedBase(domain);
  }

  /** "Zoho CRM at https://www.zohoapis.com": no token, no query string. */
  describe(): string {
    return `Zoho CRM at ${redactUrl(this.base)}`;
  }

  /** The credits are nearly spent: the error the run stops with (exit 7); else none. */
  stopped(): CreditsError | undefined {
    return this.stop;
  }

  /** The lead's fields the record is written without (see zohoRecord). */
  fieldsNotHeld(item: SendItem): readonly FieldNotHeld[] {
    return zohoRecord(item.lead, this.config).notHeld;
  }

  /** doctor: one lead read (GET /crm/v8/Leads?fields=Email&per_page=1, 1 credit): the token reads Leads. */
  async check(signal?: AbortSignal): Promise<SinkCheck> {
    let r: HttpResult;
    try {
      r = await this.session.request(
        (token) => this.req('GET', LEADS, 'fields=Email&per_page=1', token, signal),
        signal,
      );
    } catch (e) {
      return {
        status: 'fail',
        message: `${this.describe()}: ${this.http.redact((e as Error).message)}`,
        hint: 'run `leadledger auth zoho` to authorize leadledger again',
        exitCode: e instanceof CredentialsError ? 4 : 1,
      };
    }
    return checkAnswer(this.describe(), r, {
      ok: 'the credentials read Leads (writing needs the ZohoCRM.modules.leads.CREATE scope too)',
      credentialsHint: 'run `leadledger auth zoho` with a grant of scope ZohoCRM.modules.leads.ALL',
      said: (text) => this.http.redact(describeZohoError(parseZoho(text))),
    });
  }

  /** Insert (skip) or upsert by email (update) up to 100 leads; one outcome per item, in order. */
  async send(items: SendItem[], signal?: AbortSignal): Promise<SinkOutcome[]> {
    const out = new Array<SinkOutcome | undefined>(items.length).fill(undefined);
    // A call whose records all carry an email can be repeated safely; one with a record without cannot: apart.
    const groups = new Map<string, number[]>();
    items.forEach((item, i) => {
      const made = zohoRecord(item.lead, this.config);
      if (!made.record) {
        out[i] = { kind: 'failed', permanent: true, reason: made.refused ?? 'not a Zoho lead' };
        return;
      }
      const op: Op = item.mode === 'update' || item.ifExists === 'update' ? 'upsert' : 'insert';
      const k = `${op}/${item.lead.email ? 'email' : 'none'}`;
      groups.set(k, [...(groups.get(k) ?? []), i]);
    });
    for (const [k, idx] of groups) {
      const [op, keyed] = k.split('/') as [Op, string];
      await this.write(op, keyed === 'email', items, idx, out, signal);
    }
    return out.map((o) => o ?? { kind: 'unknown', reason: "Zoho CRM's answer did not mention this lead" });
  }

  /**
   * Whether Zoho holds a lead of this email (or phone): GET /crm/v8/Leads/search?email= (204: none). Throws when Zoho
   * could not answer: the event stays in doubt.
   */
  async lookup(naturalKey: string, signal?: AbortSignal): Promise<LookupResult> {
    const q = new URLSearchParams({
      [naturalKey.includes('@') ? 'email' : 'phone']: naturalKey,
      fields: 'Email,Phone',
    });
    const res = await this.read(`${LEADS}/search`, q.toString(), signal);
    if (res.status === 204 || res.text.trim() === '') return { found: false };
    if (res.status !== 200)
      throw new Error(
        this.http.redact(`Zoho CRM search failed: ${describeZohoError(parseZoho(res.text), res.status)}`),
      );
    const data = parseZoho(res.text)?.data;
    const first = Array.isArray(data) ? (data[0] as { id?: unknown } | undefined) : undefined;
    if (!first) return { found: false };
    return typeof first.id === 'string' || typeof first.id === 'number'
      ? { found: true, crmId: String(first.id) }
      : { found: true };
  }

  /** Release the keep-alive sockets. */
  async close(): Promise<void> {
    this.http.close();
  }

  private async write(
    op: Op,
    keyed: boolean,
    items: SendItem[],
    idx: number[],
    out: Array<SinkOutcome | undefined>,
    signal?: AbortSignal,
  ): Promise<void> {
    const set = (o: SinkOutcome): void => {
      for (const i of idx) out[i] ??= o;
    };
    if (this.stop) return set({ kind: 'released', reason: this.stop.message });
    const cost = writeCredits(idx.length);
    if (!this.budget.admit(cost)) {
      this.stop = new CreditsError(this.budget.describe());
      return set({ kind: 'released', reason: this.stop.message });
    }
    const body: Record<string, unknown> = { data: idx.map((i) => zohoRecord(items[i]!.lead, this.config).record) };
    if (op === 'upsert') body.duplicate_check_fields = ['Email'];
    if (this.config.trigger) body.trigger = this.config.trigger;
    const path = op === 'upsert' ? `${LEADS}/upsert` : LEADS;
    // Made before the wait for a slot: once one frees, the call leaves at once.
    const text = JSON.stringify(body);
    let result: HttpResult;
    let headers: Record<string, string | undefined> | undefined;
    let charged = false;
    try {
      await this.slot(signal);
    } catch {
      this.budget.settle(cost, undefined, false);
      return set({ kind: 'released', reason: new RequestNotSent().message });
    }
    try {
      result = await this.session.request(
        (token) => ({
          ...this.req('POST', path, '', token, signal),
          body: text,
          // Zoho drops a repeat by email (a duplicate, or the same update): only then may a lost answer be re-sent.
          retryInDoubt: keyed,
          quota429: (res) => creditsRanOut(res),
        }),
        signal,
      );
    } catch (e) {
      this.budget.settle(cost, undefined, false);
      if (e instanceof CredentialsError) throw e;
      if (e instanceof RequestNotSent) return set({ kind: 'released', reason: e.message });
      if (e instanceof TokenUnavailable)
        return set({ kind: 'failed', permanent: false, reason: this.http.redact(e.message) });
      const why = e instanceof Error && e.message ? ` (${this.http.redact(e.message)})` : '';
      return set({ kind: 'unknown', reason: `cut by the stop while Zoho CRM had the request${why}` });
    } finally {
      this.release();
    }
    try {
      if (result.kind === 'failure') {
        const f = result.failure;
        return set(
          f.inDoubt ? { kind: 'unknown', reason: f.reason } : { kind: 'failed', permanent: false, reason: f.reason },
        );
      }
      const res = result.response;
      headers = res.headers;
      this.throwOnCredentials(res);
      if (res.status === 429 && creditsRanOut(res)) {
        this.budget.exhausted();
        this.stop = new CreditsError(this.budget.describe());
        return set({ kind: 'released', reason: this.stop.message });
      }
      const parsed = parseZoho(res.text);
      const data = Array.isArray(parsed?.data) ? (parsed.data as ZohoEntry[]) : undefined;
      if (data && data.length === idx.length && [200, 201, 202, 207, 400].includes(res.status)) {
        charged = true;
        idx.forEach((i, n) => (out[i] = this.outcome(op, data[n]!)));
        return;
      }
      const reason = this.http.redact(describeZohoError(parsed, res.status));
      const retryable = res.status === 408 || res.status === 429 || res.status >= 500;
      if (res.status >= 200 && res.status < 300)
        return set({ kind: 'unknown', reason: `Zoho CRM answered ${res.status} without a result per record` });
      if (retryable && res.maybeCommitted)
        return set({ kind: 'unknown', reason: `${reason} (an earlier attempt may have been applied)` });
      return set({ kind: 'failed', permanent: !retryable, reason, status: res.status });
    } finally {
      this.budget.settle(cost, headers, charged);
    }
  }

  private outcome(op: Op, e: ZohoEntry): SinkOutcome {
    const id = e.details?.id;
    const crmId = typeof id === 'string' || typeof id === 'number' ? { crmId: String(id) } : {};
    if (e.code === 'SUCCESS' || e.status === 'success')
      return op === 'upsert' && e.action === 'update' ? { kind: 'updated', ...crmId } : { kind: 'created', ...crmId };
    const dup = duplicateId(e);
    if (dup !== undefined) return { kind: 'exists', crmId: dup };
    return { kind: 'failed', permanent: true, reason: this.http.redact(describeZohoError(e)), status: 400 };
  }

  // A read through the session; throws when Zoho could not answer or refused the credentials.
  private async read(path: string, query: string, signal?: AbortSignal): Promise<HttpResponse> {
    await this.slot(signal);
    let result: HttpResult;
    try {
      result = await this.session.request((token) => this.req('GET', path, query, token, signal), signal);
    } finally {
      this.release();
    }
    if (result.kind === 'failure') throw new Error(`could not read from Zoho CRM: ${result.failure.reason}`);
    this.throwOnCredentials(result.response);
    this.budget.settle(0, result.response.headers, false);
    return result.response;
  }

  private req(method: 'GET' | 'POST', path: string, query: string, token: string, signal?: AbortSignal) {
    const url = new URL(this.base);
    url.pathname = `${this.base.pathname.replace(/\/+$/, '')}${path}`;
    url.search = [this.base.search.slice(1), query].filter((q) => q !== '').join('&');
    return {
      method,
      url: url.href,
      headers: {
        authorization: `Zoho-oauthtoken ${token}`,
        ...(method === 'POST' ? { 'content-type': 'application/json' } : {}),
      },
      ...(signal ? { signal } : {}),
    };
  }

  private throwOnCredentials(res: HttpResponse): void {
    if (res.status !== 401 && res.status !== 403) return;
    const detail = describeZohoError(parseZoho(res.text), res.status);
    const what =
      res.status === 401
        ? 'rejected the access token'
        : 'refused access (does the grant have the ZohoCRM.modules.leads scopes?)';
    throw new CredentialsError(
      this.http.redact(`Zoho CRM ${what}: ${detail}; run \`leadledger auth zoho\` to authorize leadledger again`),
    );
  }

  // The edition's concurrency cap: at most `cap` requests of this sink in flight.
  private async slot(signal?: AbortSignal): Promise<void> {
    while (this.inFlight >= this.cap) {
      signal?.throwIfAborted();
      await new Promise<void>((resolve, reject) => {
        const wake = (): void => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        };
        // A waiter that gives up leaves the queue: a release must wake one that still waits.
        const onAbort = (): void => {
          const at = this.waiting.indexOf(wake);
          if (at >= 0) this.waiting.splice(at, 1);
          reject(new RequestNotSent());
        };
        this.waiting.push(wake);
        signal?.addEventListener('abort', onAbort, { once: true });
      });
    }
    signal?.throwIfAborted();
    this.inFlight++;
  }

  private release(): void {
    this.inFlight--;
    this.waiting.shift()?.();
  }

  private checkedBase(u: string): URL {
    const url = checkSinkUrl(u, 'Zoho CRM', this.allowInsecure);
    url.pathname = url.pathname.replace(/\/+$/, '');
    return url;
  }
}

/** A 429 that says the account's API credits ran out (no wait within a run brings them back). */
export function creditsRanOut(res: HttpResponse): boolean {
  if (res.status !== 429) return false;
  if (res.headers['x-ratelimit-remaining'] === '0') return true;
  return /credit|LIMIT_EXCEEDED/i.test(res.text);
}
