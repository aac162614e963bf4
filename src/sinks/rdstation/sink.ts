// RD Station Marketing sink: each new lead is a conversion (POST /platform/events?event_type=conversion) with
// leadledger's conversion identifier; `--existing update` (mode update, or ifExists update) updates the contact
// instead (PATCH /platform/contacts/email:{email}, which creates or updates it and records no conversion).
//
// RD records every conversion it receives as a new event, also for the same person and payload: RD has no
// idempotency key and never answers "duplicate". The ledger is the only dedup, so a conversion is never retried
// after a failure that may have reached RD (retryInDoubt false); such a lead is in doubt, and settled by lookup().
//
// How a conversion whose answer was lost is recognized. RD's conversion answer is only an event_uuid; a contact
// read (GET /platform/contacts/email:{email}) returns the contact's fields, custom fields included, not its
// conversions; its conversions, with each payload as sent, come from GET /platform/contacts/{uuid}/events
// ?event_type=CONVERSION (each with event_identifier and event_timestamp). RD keeps no field of ours on the event
// itself but what the payload carries, so every conversion carries leadledger's downstream key in a custom field
// (default cf_leadledger_key, which the user creates in RD): the contact's field then holds the key of its latest
// leadledger conversion, and each event's payload its own. The lookup reads the contact (one GET, enough in the
// usual case where ours is its latest conversion), then its conversion events. Time + identifier was the other
// choice; the clock of the run that was cut is not known to the next one, and a person converts on forms too, so a
// key is exact where time is a guess. Where RD kept no key at all (keyField false, or the field does not exist in the
// account), the conversion identifier alone decides: leadledger sends one conversion per person (a known person is
// skipped or updated, never converted again), so a conversion with our identifier is this one.
import { CredentialsError } from '../../errors.js';
import { RequestNotSent, type HttpClient, type HttpResponse, type HttpResult } from '../transport/http.js';
import { checkSinkUrl, redactUrl } from '../transport/secure-url.js';
import { TokenUnavailable, type OAuth2Session } from '../transport/oauth2.js';
import type { FieldNotHeld, LookupResult, SendItem, Sink, SinkCapabilities, SinkCheck, SinkOutcome } from '../types.js';
import { checkAnswer } from '../transport/check.js';
import { describeRdErrors, isContactQuota, parseRdErrors } from './errors.js';
import { DEFAULT_KEY_FIELD, rdstationFields, type RdStationConfig } from './fields.js';

export const RDSTATION_DEFAULT_URL = 'https://api.rd.services';
export const DEFAULT_CONVERSION_IDENTIFIER = 'leadledger';

export interface RdStationSinkOptions {
  /** The HTTP policy (its rate should keep under the account's limit: see rdstationOptions().rate). */
  http: HttpClient;
  /** Access tokens for the account (transport/oauth2.ts). */
  session: OAuth2Session;
  /** Default https://api.rd.services */
  baseUrl?: string;
  /** Default `leadledger` (or the config's). */
  conversionIdentifier?: string;
  config?: RdStationConfig;
  allowInsecure?: boolean;
  now?: () => number;
}

interface RdConversionEvent {
  event_identifier?: unknown;
  event_timestamp?: unknown;
  payload?: Record<string, unknown>;
}

/** The RD Station Marketing destination. */
export class RdStationSink implements Sink {
  readonly name = 'rdstation';
  readonly capabilities: SinkCapabilities = {
    // RD takes one conversion per request.
    maxBatch: 1,
    honoursIdempotencyKey: false,
  };
  private readonly base: URL;
  private readonly http: HttpClient;
  private readonly session: OAuth2Session;
  private readonly config: RdStationConfig;
  private readonly identifier: string;
  private readonly keyField: string | undefined;
  private readonly now: () => number;

  constructor(opts: RdStationSinkOptions) {
    const url = checkSinkUrl(opts.baseUrl ?? RDSTATION_DEFAULT_URL, 'RD Station', opts.allowInsecure);
    url.pathname = url.pathname.replace(/\/+$/, '');
    this.base = url;
    this.http = opts.http;
    this.session = opts.session;
    this.config = opts.config ?? {};
    this.identifier = opts.conversionIdentifier ?? this.config.conversionIdentifier ?? DEFAULT_CONVERSION_IDENTIFIER;
    this.keyField = this.config.keyField === false ? undefined : (this.config.keyField ?? DEFAULT_KEY_FIELD);
    this.now = opts.now ?? Date.now;
  }

  /**
   * doctor: the account the credentials belong to (GET /marketing/account_info), through the OAuth session: the
   * access token is refreshed first where it must be, so the refresh token is checked too.
   */
  async check(signal?: AbortSignal): Promise<SinkCheck> {
    let r: HttpResult;
    try {
      r = await this.session.request(
        (token) => ({
          method: 'GET',
          url: this.url('/marketing/account_info'),
          headers: { authorization: `Bearer ${token}` },
          ...(signal ? { signal } : {}),
        }),
        signal,
      );
    } catch (e) {
      // A refresh the token endpoint refused: the credentials are no longer good.
      return {
        status: 'fail',
        message: `${this.describe()}: ${this.http.redact((e as Error).message)}`,
        hint: 'run `leadledger auth rdstation` to authorize leadledger again',
        exitCode: e instanceof CredentialsError ? 4 : 1,
      };
    }
    return checkAnswer(this.describe(), r, {
      ok: 'the credentials are accepted (the account answers)',
      credentialsHint:
        'run `leadledger auth rdstation` to authorize leadledger again (the app needs contacts and events)',
      said: (text) => this.http.redact(describeRdErrors(parseRdErrors(text), 401)),
    });
  }

  /** "RD Station Marketing at https://api.rd.services": no token, no query string. */
  describe(): string {
    return `RD Station Marketing at ${redactUrl(this.base)}`;
  }

  /** The lead's fields RD Station has no place for (see rdstationFields). */
  fieldsNotHeld(item: SendItem): readonly FieldNotHeld[] {
    return rdstationFields(item.lead, this.config, this.patches(item) ? 'update' : 'conversion').notHeld;
  }

  /** One conversion (or contact update) per item, in order. Throws CredentialsError when RD refuses the grant. */
  async send(items: SendItem[], signal?: AbortSignal): Promise<SinkOutcome[]> {
    const out: SinkOutcome[] = [];
    for (const item of items) {
      if (signal?.aborted) {
        out.push({ kind: 'released', reason: 'not sent: the run stopped' });
        continue;
      }
      out.push(await this.sendOne(item, signal));
    }
    return out;
  }

  /**
   * Whether RD Station holds this event's conversion (see the header comment). `downstreamKey` is the key the event
   * was sent with; without it, a conversion of this person carrying any leadledger key, or with leadledger's
   * identifier, counts. Throws when RD could not answer: the event then stays in doubt.
   */
  async lookup(naturalKey: string, signal?: AbortSignal, downstreamKey?: string): Promise<LookupResult> {
    // RD keys contacts on email: a lead without one was never sent (it fails before any request).
    if (!naturalKey.includes('@')) return { found: false };
    const res = await this.read(`/platform/contacts/email:${encodeURIComponent(naturalKey)}`, signal);
    if (res.status === 404) return { found: false };
    const contact = this.json<Record<string, unknown>>(res, 'the contact');
    const uuid = typeof contact.uuid === 'string' ? contact.uuid : undefined;
    const found: LookupResult = { found: true, ...(uuid ? { crmId: uuid } : {}) };
    const key = this.keyField;
    if (key && downstreamKey !== undefined && contact[key] === downstreamKey) return found;
    if (!uuid) throw new Error('RD Station answered a contact without its uuid: its conversions cannot be read');
    const evRes = await this.read(
      `/platform/contacts/${encodeURIComponent(uuid)}/events`,
      signal,
      'event_type=CONVERSION',
    );
    const events = evRes.status === 404 ? [] : this.json<RdConversionEvent[]>(evRes, "the contact's conversions");
    if (!Array.isArray(events)) throw new Error("RD Station's list of the contact's conversions is not a list");
    const ours = events.filter((e) => e.event_identifier === this.identifier);
    if (key) {
      if (downstreamKey !== undefined && ours.some((e) => e.payload?.[key] === downstreamKey)) return found;
      const keyKept = contact[key] !== undefined || events.some((e) => e.payload?.[key] !== undefined);
      if (keyKept) {
        // RD keeps leadledger's keys for this person: a key is exact, so only this event's own counts.
        if (downstreamKey !== undefined) return { found: false };
        return ours.length ? found : { found: false };
      }
    }
    return ours.length ? found : { found: false };
  }

  /** Release the keep-alive sockets. */
  async close(): Promise<void> {
    this.http.close();
  }

  private patches(item: SendItem): boolean {
    return item.mode === 'update' || item.ifExists === 'update';
  }

  private async sendOne(item: SendItem, signal?: AbortSignal): Promise<SinkOutcome> {
    const email = item.lead.email;
    if (!email)
      return {
        kind: 'failed',
        permanent: true,
        reason: 'RD Station keys contacts on email, and this lead has none',
      };
    const patch = this.patches(item);
    const { values } = rdstationFields(item.lead, this.config, patch ? 'update' : 'conversion');
    let path: string;
    let query = '';
    let body: unknown;
    if (patch) {
      path = `/platform/contacts/email:${encodeURIComponent(email)}`;
      body = values;
    } else {
      path = '/platform/events';
      query = 'event_type=conversion';
      body = {
        event_type: 'CONVERSION',
        event_family: 'CDP',
        payload: {
          conversion_identifier: this.identifier,
          email,
          ...values,
          ...(this.keyField ? { [this.keyField]: item.downstreamKey } : {}),
        },
      };
    }
    let result: HttpResult;
    try {
      result = await this.session.request(
        (token) => ({
          method: patch ? 'PATCH' : 'POST',
          url: this.url(path, query),
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          body: JSON.stringify(body),
          // A PATCH sets the same values again; a conversion would be recorded twice.
          retryInDoubt: patch,
          quota429: (res) => isContactQuota(res, this.now()),
          ...(signal ? { signal } : {}),
        }),
        signal,
      );
    } catch (e) {
      if (e instanceof CredentialsError) throw e;
      if (e instanceof RequestNotSent) return { kind: 'released', reason: e.message };
      // No token to send with: nothing reached RD.
      if (e instanceof TokenUnavailable)
        return { kind: 'failed', permanent: false, reason: this.http.redact(e.message) };
      const why = e instanceof Error && e.message ? ` (${this.http.redact(e.message)})` : '';
      return { kind: 'unknown', reason: `cut by the stop while RD Station had the request${why}` };
    }
    if (result.kind === 'failure') {
      const f = result.failure;
      return f.inDoubt ? { kind: 'unknown', reason: f.reason } : { kind: 'failed', permanent: false, reason: f.reason };
    }
    const res = result.response;
    this.throwOnCredentials(res);
    if (res.status >= 200 && res.status < 300) {
      let parsed: Record<string, unknown> = {};
      try {
        parsed = JSON.parse(res.text) as Record<string, unknown>;
      } catch {
        // The status is what counts; the id is a nicety.
      }
      const id = patch ? parsed.uuid : parsed.event_uuid;
      const crmId = typeof id === 'string' ? { crmId: id } : {};
      return patch ? { kind: 'updated', ...crmId } : { kind: 'created', ...crmId };
    }
    const reason = this.http.redact(describeRdErrors(parseRdErrors(res.text), res.status));
    if (res.status === 429 && isContactQuota(res, this.now())) {
      const what = patch ? 'updates' : 'conversions';
      return {
        kind: 'failed',
        permanent: true,
        status: 429,
        reason: `RD Station takes at most 24 ${what} per contact in 24 hours, and this person has had them: not sent (${reason}); replay --permanent sends it once RD allows`,
      };
    }
    const retryable = res.status === 408 || res.status === 429 || res.status >= 500;
    if (retryable && res.maybeCommitted)
      return { kind: 'unknown', reason: `${reason} (an earlier attempt may have been applied)` };
    return { kind: 'failed', permanent: !retryable, reason, status: res.status };
  }

  // A read through the session (token refreshed as needed); throws when RD could not answer or refused.
  private async read(path: string, signal?: AbortSignal, query = ''): Promise<HttpResponse> {
    const result = await this.session.request(
      (token) => ({
        method: 'GET',
        url: this.url(path, query),
        headers: { authorization: `Bearer ${token}` },
        ...(signal ? { signal } : {}),
      }),
      signal,
    );
    if (result.kind === 'failure') throw new Error(`could not read from RD Station: ${result.failure.reason}`);
    const res = result.response;
    this.throwOnCredentials(res);
    if (res.status !== 200 && res.status !== 404)
      throw new Error(
        `RD Station answered ${res.status} to a read: ${this.http.redact(describeRdErrors(parseRdErrors(res.text), res.status))}`,
      );
    return res;
  }

  private json<T>(res: HttpResponse, what: string): T {
    try {
      return JSON.parse(res.text) as T;
    } catch {
      throw new Error(`RD Station answered ${what} with a body that is not JSON`);
    }
  }

  private throwOnCredentials(res: HttpResponse): void {
    if (res.status !== 401 && res.status !== 403) return;
    const detail = describeRdErrors(parseRdErrors(res.text), res.status);
    const what =
      res.status === 401
        ? 'rejected the access token'
        : 'refused access (does the app have the permission for contacts and events?)';
    throw new CredentialsError(
      this.http.redact(
        `RD Station ${what}: ${detail}; run \`leadledger auth rdstation\` to authorize leadledger again`,
      ),
    );
  }

  /** The request URL: the API path after the base path, the base's query string, then `query`. */
  private url(path: string, query = ''): string {
    const url = new URL(this.base);
    url.pathname = `${this.base.pathname.replace(/\/+$/, '')}${path}`;
    url.search = [this.base.search.slice(1), query].filter((q) => q !== '').join('&');
    return url.href;
  }
}
