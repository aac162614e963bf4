// Pipedrive persons sink (API v2), optionally with a Pipedrive lead (API v1) for each person it creates.
//
// Pipedrive does not keep person emails unique and has no idempotency key, so exactly-once rests on searching first:
// each lead's person is looked for by email (`GET /api/v2/persons/search?term=<email>&fields=email&exact_match=true`,
// by phone where the lead has no email) before a create. A person found settles as `exists` with its id, or is
// updated (`PATCH /api/v2/persons/{id}`) for an item that asks (`--existing update`). A create is never re-sent
// blindly: when its answer is lost after it may have been applied (a timeout, a reset), the sink searches again; a
// person found is the one it created, and none found leaves the lead in doubt (Pipedrive's search index may lag
// behind a create), which the next run settles by the same search (lookup).
//
// Limits: a token budget per company and day, spent at each operation's cost (budget.ts), is followed from the
// answers' headers, and the run stops before it runs out (DailyBudgetError, the leads not sent released); the 2 s
// burst window paces every request (the transport's limiter, told the window from the headers), and the search
// endpoint's own tighter window (10 per 2 s) paces searches.
//
// The token goes in the `x-api-token` header only, never in a URL, so no message or report can carry it.
import { CredentialsError } from '../../errors.js';
import {
  RequestNotSent,
  type HttpClient,
  type HttpMethod,
  type HttpResponse,
  type HttpResult,
} from '../transport/http.js';
import { RateLimiter, realSleep, type Sleep } from '../transport/rate-limiter.js';
import { checkSinkUrl, redactUrl, urlSecrets } from '../transport/secure-url.js';
import type { FieldNotHeld, LookupResult, SendItem, Sink, SinkCapabilities, SinkCheck, SinkOutcome } from '../types.js';
import { checkAnswer } from '../transport/check.js';
import {
  DailyBudget,
  DailyBudgetError,
  PIPEDRIVE_WINDOW_MS,
  TOKEN_COST,
  readBurstHeaders,
  type PipedriveOperation,
} from './budget.js';
import { classifyPipedriveStatus, describePipedriveError } from './errors.js';
import { leadTitle, pipedrivePerson, type PersonBody, type PipedriveFieldMap } from './person.js';

/** A Pipedrive lead created with each person the sink creates. */
export interface PipedriveLeadOptions {
  /** Title template: {name}, {email}, {phone}, {company}, {source} (default "{name} ({source})"). */
  title?: string;
  /** Lead label ids (UUIDs). */
  labelIds?: string[];
  /** owner_id of the leads. */
  ownerId?: number;
}

/** What the Pipedrive sink is built from (the registry's open() reads it with readPipedriveOptions). */
export interface PipedriveSinkOptions extends Omit<PipedriveFieldMap, 'leadTitle'> {
  http: HttpClient;
  /** API token, sent as the x-api-token header. */
  token: string;
  /** The company's API base: https://<company>.pipedrive.com (or a proxy, a sandbox). */
  baseUrl: string;
  allowInsecure?: boolean;
  /** Create a Pipedrive lead with each person created (none when unset). */
  lead?: PipedriveLeadOptions;
  /** Daily budget tokens kept unspent (default 5% of the budget). */
  dailyReserve?: number;
  /** Requests per 2 s assumed until Pipedrive's headers tell (default 20, the lowest api_token plan). */
  burst?: number;
  /** Search requests per 2 s (default 10). */
  searchBurst?: number;
  /** Clock and sleep of the search pacing (tests share the transport's). */
  now?: () => number;
  sleep?: Sleep;
}

/** Leads per send(): each is a search and a create of its own (Pipedrive has no batch create of persons). */
export const PIPEDRIVE_MAX_BATCH = 10;
const PERSONS = '/api/v2/persons';
const LEADS = '/v1/leads';
const DEFAULT_LEAD_TITLE = '{name} ({source})';

type Call =
  | { kind: 'answer'; response: HttpResponse }
  | { kind: 'failure'; inDoubt: boolean; reason: string }
  /** The daily budget refused it: nothing left. */
  | { kind: 'budget' };

type Found =
  { kind: 'found'; id: string; phones: string[] } | { kind: 'none' } | { kind: 'error'; outcome: SinkOutcome };

/** The Pipedrive destination: persons by API v2, searched before created, and optionally a lead each. */
export class PipedriveSink implements Sink {
  readonly name = 'pipedrive';
  readonly capabilities: SinkCapabilities = {
    maxBatch: PIPEDRIVE_MAX_BATCH,
    honoursIdempotencyKey: false,
  };
  private readonly base: URL;
  /** The base URL's path without trailing slashes ('' for a bare host): API paths go after it. */
  private readonly basePath: string;
  private readonly http: HttpClient;
  private readonly token: string;
  private readonly map: PipedriveFieldMap;
  private readonly lead: PipedriveLeadOptions | undefined;
  private readonly budget: DailyBudget;
  private readonly searchLimiter: RateLimiter;
  /** Persons this sink created, by search term: Pipedrive's search may not find a person created a moment ago. */
  private readonly created = new Map<string, string>();
  private stop: DailyBudgetError | undefined;

  constructor(opts: PipedriveSinkOptions) {
    const url = checkSinkUrl(opts.baseUrl, 'Pipedrive', opts.allowInsecure);
    this.basePath = url.pathname.replace(/\/+$/, '');
    this.base = url;
    this.http = opts.http;
    this.token = opts.token;
    this.http.addSecret(opts.token);
    for (const secret of urlSecrets(url)) this.http.addSecret(secret);
    this.lead = opts.lead;
    this.map = {
      ...(opts.emailLabel !== undefined ? { emailLabel: opts.emailLabel } : {}),
      ...(opts.phoneLabel !== undefined ? { phoneLabel: opts.phoneLabel } : {}),
      ...(opts.ownerId !== undefined ? { ownerId: opts.ownerId } : {}),
      ...(opts.visibleTo !== undefined ? { visibleTo: opts.visibleTo } : {}),
      ...(opts.sourceField !== undefined ? { sourceField: opts.sourceField } : {}),
      ...(opts.companyField !== undefined ? { companyField: opts.companyField } : {}),
      ...(opts.customFields !== undefined ? { customFields: opts.customFields } : {}),
      ...(opts.lead ? { leadTitle: opts.lead.title ?? DEFAULT_LEAD_TITLE } : {}),
    };
    this.budget = new DailyBudget(opts.dailyReserve !== undefined ? { reserve: opts.dailyReserve } : {});
    // Until the first answer tells the plan's window, assume the lowest plan's: no burst of 429s at the start.
    this.http.limiter.observe({ max: opts.burst ?? 20, intervalMs: PIPEDRIVE_WINDOW_MS });
    this.searchLimiter = new RateLimiter({ now: opts.now ?? Date.now, sleep: opts.sleep ?? realSleep });
    this.searchLimiter.observe({ max: opts.searchBurst ?? 10, intervalMs: PIPEDRIVE_WINDOW_MS });
  }

  /**
   * doctor: the user the token belongs to (GET /v1/users/me, 2 of the day's API tokens): the API answers and takes
   * the token. Pipedrive's API token carries its user's permissions: a user who may add persons may push.
   */
  async check(signal?: AbortSignal): Promise<SinkCheck> {
    const url = new URL(this.base.href);
    url.pathname = `${this.basePath}/v1/users/me`;
    const r = await this.http.request({
      method: 'GET',
      url: url.href,
      headers: { 'x-api-token': this.token },
      ...(signal ? { signal } : {}),
    });
    return checkAnswer(this.describe(), r, {
      ok: "the token is accepted (it acts with its user's permissions)",
      credentialsHint:
        'give the API token of a user who may add persons (Pipedrive: Personal preferences → API) in PIPEDRIVE_TOKEN or --token-file',
      said: (text) => this.http.redact(describePipedriveError(401, text)),
    });
  }

  /** "Pipedrive at https://acme.pipedrive.com" (a query string shown as ?redacted). */
  describe(): string {
    return `Pipedrive at ${redactUrl(this.base)}`;
  }

  /** The daily budget is nearly spent: the error the run stops with (exit 7); else none. */
  stopped(): DailyBudgetError | undefined {
    return this.stop;
  }

  /** The lead's fields the person is written without (see pipedrivePerson). */
  fieldsNotHeld(item: SendItem): readonly FieldNotHeld[] {
    return pipedrivePerson(item.lead, this.map).notHeld;
  }

  /**
   * Each lead in turn: search, then create (or update, or settle as `exists`). Once the daily budget is nearly spent,
   * the leads not yet sent are released with the reason; budgetStop tells the run why.
   */
  async send(items: SendItem[], signal?: AbortSignal): Promise<SinkOutcome[]> {
    const outcomes: SinkOutcome[] = [];
    for (const item of items) {
      if (this.stop) {
        outcomes.push({ kind: 'released', reason: this.stop.message });
        continue;
      }
      try {
        outcomes.push(await this.one(item, signal));
      } catch (e) {
        if (e instanceof CredentialsError) throw e;
        if (!(e instanceof RequestNotSent)) throw e;
        // Stopped while this lead's request had not left: it and the rest were never sent.
        while (outcomes.length < items.length) outcomes.push({ kind: 'released', reason: e.message });
        break;
      }
    }
    return outcomes;
  }

  /** Look a person up by email (or E.164 phone) as send() does; throws when Pipedrive could not answer. */
  async lookup(naturalKey: string, signal?: AbortSignal): Promise<LookupResult> {
    const found = await this.search(naturalKey, signal);
    if (found.kind === 'found') return { found: true, crmId: found.id };
    if (found.kind === 'none') return { found: false };
    const o = found.outcome;
    throw new Error(o.kind === 'failed' || o.kind === 'released' || o.kind === 'unknown' ? o.reason : 'lookup failed');
  }

  /** Release sockets. */
  async close(): Promise<void> {
    this.http.close();
  }

  private async one(item: SendItem, signal?: AbortSignal): Promise<SinkOutcome> {
    const term = item.lead.email ?? item.lead.phone;
    if (term === undefined)
      return {
        kind: 'failed',
        permanent: true,
        reason: 'a lead without email or phone cannot be searched for in Pipedrive, so it is not created',
      };
    const found = await this.search(term, signal);
    if (found.kind === 'error') return found.outcome;
    if (found.kind === 'found') {
      if (item.mode === 'update' || item.ifExists === 'update') return this.update(item, found, signal);
      return { kind: 'exists', crmId: found.id };
    }
    return this.create(item, term, signal);
  }

  private async create(item: SendItem, term: string, signal?: AbortSignal): Promise<SinkOutcome> {
    const { body } = pipedrivePerson(item.lead, this.map);
    const call = await this.call('addPerson', 'POST', PERSONS, undefined, body, signal);
    if (call.kind === 'budget') return this.budgetReleased();
    let id: string | undefined;
    if (call.kind === 'failure') {
      if (!call.inDoubt) return { kind: 'failed', permanent: false, reason: call.reason };
      // The create may have been applied: search, never re-send (Pipedrive would make a second person).
      const again = await this.search(term, signal).catch((e: unknown) => {
        if (e instanceof CredentialsError) throw e;
        return undefined;
      });
      if (again?.kind === 'found') id = again.id;
      else
        return {
          kind: 'unknown',
          reason: `${call.reason}; the person was not found by a search right after (Pipedrive's search can lag): the next run looks again`,
        };
    } else {
      const res = call.response;
      if (res.status !== 200 && res.status !== 201) return this.failure(res);
      id = dataId(res.text);
      if (id === undefined)
        return { kind: 'unknown', reason: `Pipedrive answered ${res.status} without the person's id` };
    }
    this.created.set(term.toLowerCase(), id);
    if (!this.lead) return { kind: 'created', crmId: id };
    return this.createLead(item, id, signal);
  }

  /**
   * POST /v1/leads for a person just created. A lead has no key Pipedrive could find it by, so a lead whose answer
   * was lost is not re-sent: the person is created, and the outcome says what became of the lead.
   */
  private async createLead(item: SendItem, personId: string, signal?: AbortSignal): Promise<SinkOutcome> {
    const opts = this.lead ?? {};
    const body: Record<string, unknown> = {
      title: leadTitle(opts.title ?? DEFAULT_LEAD_TITLE, item.lead),
      person_id: Number(personId),
    };
    if (opts.labelIds?.length) body.label_ids = opts.labelIds;
    if (opts.ownerId !== undefined) body.owner_id = opts.ownerId;
    const notMade = (why: string): SinkOutcome => ({
      kind: 'failed',
      permanent: true,
      reason: `person ${personId} created, but not its Pipedrive lead: ${why} (a retry finds the person and adds no lead)`,
    });
    let call: Call;
    try {
      call = await this.call('addLead', 'POST', LEADS, undefined, body, signal);
    } catch (e) {
      if (e instanceof RequestNotSent) return notMade('the run stopped before the lead was sent');
      throw e;
    }
    if (call.kind === 'budget') return notMade(this.stop?.message ?? 'the daily budget is nearly spent');
    if (call.kind === 'failure')
      return call.inDoubt
        ? {
            kind: 'unknown',
            reason: `person ${personId} created; whether its Pipedrive lead was is not known (${call.reason}): look at the person in Pipedrive`,
          }
        : notMade(call.reason);
    const res = call.response;
    if (res.status === 200 || res.status === 201) return { kind: 'created', crmId: personId };
    const f = this.failure(res);
    return notMade(f.kind === 'failed' ? f.reason : `Pipedrive answered ${res.status}`);
  }

  /** PATCH the person found: name, custom fields, and the phone when the person has none (lists are replaced whole). */
  private async update(
    item: SendItem,
    found: { id: string; phones: string[] },
    signal?: AbortSignal,
  ): Promise<SinkOutcome> {
    const { body } = pipedrivePerson(item.lead, this.map);
    // The person was found by this email: it stays as Pipedrive has it, with any other address it holds.
    const patch: Partial<PersonBody> = { ...body };
    delete patch.emails;
    if (found.phones.length) delete patch.phones;
    delete patch.owner_id;
    delete patch.visible_to;
    const call = await this.call(
      'updatePerson',
      'PATCH',
      `${PERSONS}/${encodeURIComponent(found.id)}`,
      undefined,
      patch,
      signal,
    );
    if (call.kind === 'budget') return this.budgetReleased();
    // An update applied twice is the same update: the transport retried an in-doubt PATCH already.
    if (call.kind === 'failure')
      return call.inDoubt
        ? { kind: 'unknown', reason: call.reason }
        : { kind: 'failed', permanent: false, reason: call.reason };
    const res = call.response;
    if (res.status === 200) return { kind: 'updated', crmId: found.id };
    return this.failure(res);
  }

  /**
   * GET /api/v2/persons/search?term=..&fields=email|phone&exact_match=true: the lowest id found (the oldest person),
   * or none. Persons this sink created are known without asking. A search has no effect in Pipedrive, so a stop
   * before it answered throws RequestNotSent (the lead was not sent).
   */
  private async search(term: string, signal?: AbortSignal): Promise<Found> {
    const known = this.created.get(term.toLowerCase());
    if (known !== undefined) return { kind: 'found', id: known, phones: [] };
    const field = term.includes('@') ? 'email' : 'phone';
    const query = new URLSearchParams({ term, fields: field, exact_match: 'true', limit: '100' });
    let call: Call;
    try {
      call = await this.call('searchPersons', 'GET', `${PERSONS}/search`, query, undefined, signal);
    } catch (e) {
      if (e instanceof CredentialsError || e instanceof RequestNotSent) throw e;
      throw new RequestNotSent((e as Error).message);
    }
    if (call.kind === 'budget') return { kind: 'error', outcome: this.budgetReleased() };
    // Nothing was written by a search: a search that got no answer is a retryable failure of the lead.
    if (call.kind === 'failure')
      return { kind: 'error', outcome: { kind: 'failed', permanent: false, reason: call.reason } };
    const res = call.response;
    if (res.status !== 200) return { kind: 'error', outcome: this.failure(res) };
    let items: Array<{ item?: { id?: unknown; emails?: unknown; phones?: unknown } }>;
    try {
      const parsed = JSON.parse(res.text) as { data?: { items?: typeof items } | null };
      items = parsed.data?.items ?? [];
    } catch {
      return {
        kind: 'error',
        outcome: {
          kind: 'failed',
          permanent: false,
          reason: 'Pipedrive answered a search with a body that is not JSON',
        },
      };
    }
    const want = term.toLowerCase();
    let best: { id: number; phones: string[] } | undefined;
    for (const { item } of items) {
      if (typeof item?.id !== 'number') continue;
      // exact_match is Pipedrive's; checking the value too keeps a looser match from ever passing as this person.
      const values = field === 'email' ? item.emails : item.phones;
      const matches = Array.isArray(values) && values.some((v) => typeof v === 'string' && v.toLowerCase() === want);
      if (!matches) continue;
      if (!best || item.id < best.id)
        best = {
          id: item.id,
          phones: Array.isArray(item.phones) ? item.phones.filter((p) => typeof p === 'string') : [],
        };
    }
    return best ? { kind: 'found', id: String(best.id), phones: best.phones } : { kind: 'none' };
  }

  /**
   * One request under the budget and the windows: refused (nothing sent) when it could leave less than the reserve;
   * searches wait for the search window too; 401 (and an enveloped 403) throw CredentialsError.
   */
  private async call(
    op: PipedriveOperation,
    method: HttpMethod,
    path: string,
    query: URLSearchParams | undefined,
    body: unknown,
    signal?: AbortSignal,
  ): Promise<Call> {
    const cost = TOKEN_COST[op];
    const write = method !== 'GET';
    if (this.stop) return { kind: 'budget' };
    if (!this.budget.admit(cost, write)) {
      this.stop = new DailyBudgetError(this.budget.describe());
      return { kind: 'budget' };
    }
    let answered: Record<string, string | undefined> | undefined;
    let settled = false;
    let ticket: { done(): void } | undefined;
    try {
      if (op === 'searchPersons') {
        try {
          ticket = await this.searchLimiter.acquire(signal);
        } catch {
          throw new RequestNotSent();
        }
      }
      const url = new URL(this.base.href);
      url.pathname = `${this.basePath}${path}`;
      if (query) for (const [k, v] of query) url.searchParams.append(k, v);
      const result: HttpResult = await this.http.request({
        method,
        url: url.href,
        headers: {
          'x-api-token': this.token,
          ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
        },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
        ...(signal ? { signal } : {}),
        // A create is never blindly repeated: it would make a second person (or lead). A search or an update may be.
        retryInDoubt: op === 'searchPersons' || op === 'updatePerson',
      });
      if (result.kind === 'failure')
        return { kind: 'failure', inDoubt: result.failure.inDoubt, reason: this.http.redact(result.failure.reason) };
      const res = result.response;
      answered = res.headers;
      const burst = readBurstHeaders(res.headers);
      const limiter = op === 'searchPersons' ? this.searchLimiter : this.http.limiter;
      limiter.observe({ ...burst, intervalMs: PIPEDRIVE_WINDOW_MS });
      const cls = res.status >= 400 ? classifyPipedriveStatus(res.status, res.text) : undefined;
      if (cls === 'credentials')
        throw new CredentialsError(
          `${this.http.redact(describePipedriveError(res.status, res.text))}: check the API token (PIPEDRIVE_TOKEN or --token-file) and its company domain`,
        );
      if (res.status === 429 && res.headers['x-daily-ratelimit-token-remaining'] === '0') {
        // The budget ran out under us (the company's other users spend it too): nothing of this request was done.
        this.budget.settle(cost, write, res.headers);
        settled = true;
        this.stop = new DailyBudgetError(this.budget.describe());
        return { kind: 'budget' };
      }
      return { kind: 'answer', response: res };
    } finally {
      ticket?.done();
      if (!settled) this.budget.settle(cost, write, answered);
    }
  }

  private budgetReleased(): SinkOutcome {
    return { kind: 'released', reason: this.stop?.message ?? 'the daily budget is nearly spent' };
  }

  private failure(res: HttpResponse): SinkOutcome {
    const reason = this.http.redact(describePipedriveError(res.status, res.text));
    const cls = classifyPipedriveStatus(res.status, res.text);
    if (cls !== 'permanent' && res.maybeCommitted)
      return { kind: 'unknown', reason: `${reason} (an earlier attempt may have been applied)` };
    return { kind: 'failed', permanent: cls === 'permanent', reason, status: res.status };
  }
}

/** data.id of a success answer, as a string; undefined when absent. */
function dataId(text: string): string | undefined {
  try {
    const id = (JSON.parse(text) as { data?: { id?: unknown } }).data?.id;
    return typeof id === 'number' || typeof id === 'string' ? String(id) : undefined;
  } catch {
    return undefined;
  }
}
