// The emulator's RD Station Marketing behaviour: OAuth 2 (/auth/dialog, /auth/token), conversion events, contacts by
// email, and the documented limits, on a clock the tests can move. RD Station publishes no machine-readable spec:
// fixtures/rdstation-api/README.md says which reference page each rule here comes from, and which are assumptions.
//
// What matters most to leadledger: every POST /platform/events is a NEW conversion, even for the same person and
// the same payload (RD keys the contact on email, and records the event "sempre que ocorre uma conversão"), so a
// blind re-send duplicates the conversion in the funnel; conversions() shows each one, for exactly-once checks.
import { randomUUID } from 'node:crypto';
import { RollingWindow } from './rolling-window.js';

/** One conversion event as RD Station keeps it (and as GET /platform/contacts/{uuid}/events returns it). */
export interface RdConversion {
  event_uuid: string;
  event_type: 'CONVERSION';
  event_family: 'CDP';
  event_identifier: string;
  event_timestamp: string;
  payload: Record<string, unknown>;
}

/** One contact as stored: the documented contact fields, custom fields (cf_*), and its conversions. */
export interface RdContact {
  uuid: string;
  email: string;
  fields: Record<string, unknown>;
  tags: string[];
  legal_bases: Array<{ category: string; type: string; status: string }>;
  conversions: RdConversion[];
  created_at: string;
  updated_at: string;
}

export interface RdReply {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
}

export interface RdStationApiOptions {
  /** The OAuth client the account authorized (default leadledger-test-client / leadledger-test-secret). */
  clientId?: string;
  clientSecret?: string;
  /** Refresh tokens valid from the start (the grant the user already gave). */
  refreshTokens?: string[];
  /** Access tokens valid from the start (a bare RDSTATION_ACCESS_TOKEN). */
  accessTokens?: string[];
  /** Access token lifetime (default 86400 s, RD's). */
  accessTokenTtlSec?: number;
  /** A refresh hands out a new refresh token and revokes the one used (default true: the hard case for clients). */
  rotateRefreshTokens?: boolean;
  /** Custom fields the account has (default cf_leadledger_key); others in a conversion are not kept on the contact. */
  customFields?: string[];
  /** Conversions (POST) per contact per rolling 24 h (default 24). */
  postsPerContact?: number;
  /** Contact updates (PATCH) per contact per rolling 24 h (default 24). */
  patchesPerContact?: number;
  now?: () => number;
}

/** Request fields of the conversion event (reference page "Evento de conversão"). */
const CONVERSION_FIELDS = new Set([
  'conversion_identifier',
  'name',
  'email',
  'job_title',
  'state',
  'city',
  'country',
  'personal_phone',
  'mobile_phone',
  'twitter',
  'facebook',
  'linkedin',
  'website',
  'company_name',
  'company_site',
  'company_address',
  'client_tracking_id',
  'traffic_source',
  'traffic_medium',
  'traffic_campaign',
  'traffic_value',
  'tags',
  'available_for_mailing',
  'legal_bases',
]);

/** Fields of a contact (reference page "Contatos"), which PATCH may set. */
const CONTACT_FIELDS = new Set([
  'name',
  'email',
  'bio',
  'website',
  'job_title',
  'personal_phone',
  'mobile_phone',
  'city',
  'state',
  'country',
  'twitter',
  'facebook',
  'linkedin',
  'tags',
  'extra_emails',
  'legal_bases',
]);

/** The valid event types the events page lists in its INVALID_OPTION example. */
const EVENT_TYPES = ['CONVERSION', 'OPPORTUNITY', 'OPPORTUNITY_LOST', 'SALE', 'ORDER_PLACED', 'ORDER_PLACED_ITEM'];
const LEGAL_BASIS_TYPES = [
  'consent',
  'legitimate_interest',
  'judicial_process',
  'vital_interest',
  'public_interest',
  'pre_existent_contract',
];
const EMAIL_RE = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
const DAY_MS = 24 * 60 * 60 * 1000;
/** The conversion route's documented body limit (0,2 MB). */
export const RD_MAX_BODY_BYTES = 200 * 1024;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** RD's validation error list: {"errors": [{error_type, error_message, path}]}. */
export function rdErrors(errors: Array<{ type: string; message: string; path?: string }>): unknown {
  return {
    errors: errors.map((e) => ({
      error_type: e.type,
      error_message: e.message,
      ...(e.path !== undefined ? { path: e.path } : {}),
    })),
  };
}

/** RD's single error: {"errors": {error_type, error_message}} (401 and 404 answers). */
export function rdError(type: string, message: string): unknown {
  return { errors: { error_type: type, error_message: message } };
}

/** The 401 an unknown or expired token gets; an expired one also says so in WWW-Authenticate. */
export function rdUnauthorized(expired: boolean): RdReply {
  return {
    status: 401,
    body: rdError('UNAUTHORIZED', 'Invalid token.'),
    headers: {
      'www-authenticate': expired
        ? 'Bearer realm="https://api.rd.services/", error="expired_token", error_description="The access token expired"'
        : 'Bearer realm="https://api.rd.services/"',
    },
  };
}

/** Tokens, contacts and conversions of one emulated RD Station Marketing account, with the endpoint handlers. */
export class RdStationApi {
  readonly clientId: string;
  readonly clientSecret: string;
  private readonly ttlMs: number;
  private readonly rotate: boolean;
  private readonly customFields: Set<string>;
  private readonly postsPerContact: number;
  private readonly patchesPerContact: number;
  readonly now: () => number;
  private refreshTokens = new Set<string>();
  private accessTokens = new Map<string, number>();
  private codes = new Map<string, { expiresAt: number; redirect: string }>();
  private contacts = new Map<string, RdContact>();
  private byUuid = new Map<string, RdContact>();
  private postWindows = new Map<string, RollingWindow>();
  private patchWindows = new Map<string, RollingWindow>();
  private log: Array<RdConversion & { email: string }> = [];
  private readonly initial: { refresh: string[]; access: string[] };
  /** Authorized /platform requests left before every access token expires (expireTokensAfter). */
  private expireIn: number | undefined;
  readonly counters = { refreshes: 0, codeExchanges: 0, refused: 0, contactLimited: 0 };

  constructor(opts: RdStationApiOptions = {}) {
    this.clientId = opts.clientId ?? 'leadledger-test-client';
    this.clientSecret = opts.clientSecret ?? 'leadledger-test-secret';
    this.ttlMs = (opts.accessTokenTtlSec ?? 86_400) * 1000;
    this.rotate = opts.rotateRefreshTokens ?? true;
    this.customFields = new Set(opts.customFields ?? ['cf_leadledger_key']);
    this.postsPerContact = opts.postsPerContact ?? 24;
    this.patchesPerContact = opts.patchesPerContact ?? 24;
    this.now = opts.now ?? Date.now;
    this.initial = { refresh: opts.refreshTokens ?? [], access: opts.accessTokens ?? [] };
    this.reset();
  }

  /** Forget contacts, conversions, windows and issued tokens; the initial grant is valid again. */
  reset(): void {
    this.refreshTokens = new Set(this.initial.refresh);
    this.accessTokens = new Map(this.initial.access.map((t) => [t, this.now() + this.ttlMs]));
    this.codes.clear();
    this.contacts.clear();
    this.byUuid.clear();
    this.postWindows.clear();
    this.patchWindows.clear();
    this.log = [];
    this.expireIn = undefined;
    this.counters.refreshes = 0;
    this.counters.codeExchanges = 0;
    this.counters.refused = 0;
    this.counters.contactLimited = 0;
  }

  /** Every conversion received, oldest first (a re-sent one appears twice). */
  conversions(): Array<RdConversion & { email: string }> {
    return this.log.map((c) => structuredClone(c));
  }

  /** Every contact, oldest first, as GET returns it. */
  contactViews(): Array<Record<string, unknown>> {
    return [...this.contacts.values()].map((c) => this.view(c));
  }

  /** Store contacts as if the account already had them (no limits, no conversion). */
  seed(contacts: Array<Record<string, unknown>>): number {
    let n = 0;
    for (const c of contacts) {
      if (typeof c.email !== 'string' || this.contacts.has(c.email.toLowerCase())) continue;
      const contact = this.contactFor(c.email);
      this.apply(contact, c);
      n++;
    }
    return n;
  }

  /** Make every access token handed out so far expire now (a token expiring mid-run). */
  expireAccessTokens(): void {
    for (const t of this.accessTokens.keys()) this.accessTokens.set(t, this.now() - 1);
    this.expireIn = undefined;
  }

  /** Let n more authorized API requests through, then expire every access token (deterministic mid-run expiry). */
  expireTokensAfter(n: number): void {
    this.expireIn = n;
  }

  /** Revoke every refresh token: the user removed the app's access (invalid grant from now on). */
  revokeGrant(): void {
    this.refreshTokens.clear();
  }

  /** A valid refresh token (as `leadledger auth` would have obtained one). */
  grant(token: string = `rt-${randomUUID()}`): string {
    this.refreshTokens.add(token);
    return token;
  }

  /** GET /auth/dialog?client_id&redirect_uri: the user consents at once; redirected with a code (valid 1 h). */
  dialog(query: URLSearchParams): RdReply {
    const redirect = query.get('redirect_uri') ?? query.get('redirect_url');
    if (query.get('client_id') !== this.clientId || !redirect)
      return { status: 400, body: rdError('INVALID_REQUEST', 'Unknown client_id or missing redirect_uri.') };
    const code = `code-${randomUUID()}`;
    this.codes.set(code, { expiresAt: this.now() + 60 * 60 * 1000, redirect });
    const to = new URL(redirect);
    to.searchParams.set('code', code);
    const state = query.get('state');
    if (state !== null) to.searchParams.set('state', state);
    return { status: 302, body: {}, headers: { location: to.href } };
  }

  /** POST /auth/token: an authorization code's exchange or a refresh, JSON or form-encoded. */
  token(contentType: string | undefined, raw: Buffer): RdReply {
    let p: Record<string, unknown>;
    try {
      p = contentType?.includes('application/x-www-form-urlencoded')
        ? Object.fromEntries(new URLSearchParams(raw.toString('utf8')))
        : (JSON.parse(raw.toString('utf8') || '{}') as Record<string, unknown>);
    } catch {
      return { status: 400, body: rdError('BAD_REQUEST', 'Invalid JSON.') };
    }
    if (p.client_id !== this.clientId || p.client_secret !== this.clientSecret) {
      this.counters.refused++;
      return { status: 401, body: { error_type: 'ACCESS_DENIED', error_message: 'Wrong credentials provided.' } };
    }
    if (typeof p.code === 'string') {
      const code = this.codes.get(p.code);
      this.codes.delete(p.code);
      if (!code) {
        this.counters.refused++;
        return { status: 401, body: { error_type: 'ACCESS_DENIED', error_message: 'Wrong credentials provided.' } };
      }
      if (code.expiresAt <= this.now()) {
        this.counters.refused++;
        return {
          status: 401,
          body: { error_type: 'EXPIRED_CODE_GRANT', error_message: 'The authorization code grant has expired.' },
        };
      }
      this.counters.codeExchanges++;
      return { status: 200, body: this.issue(this.grant()) };
    }
    if (typeof p.refresh_token === 'string') {
      if (!this.refreshTokens.has(p.refresh_token)) {
        this.counters.refused++;
        return {
          status: 401,
          body: { error_type: 'INVALID_REFRESH_TOKEN', error_message: 'The refresh token is invalid or was revoked.' },
        };
      }
      this.counters.refreshes++;
      let refresh = p.refresh_token;
      if (this.rotate) {
        this.refreshTokens.delete(refresh);
        refresh = this.grant();
      }
      return { status: 200, body: this.issue(refresh) };
    }
    return { status: 400, body: rdError('BAD_REQUEST', 'Send code or refresh_token.') };
  }

  /** Whether a bearer token may call the API now: undefined when it may, else the 401 to send. */
  authorize(authorization: string | undefined): RdReply | undefined {
    const bearer = authorization?.startsWith('Bearer ') ? authorization.slice(7).trim() : '';
    const expiresAt = bearer ? this.accessTokens.get(bearer) : undefined;
    if (expiresAt === undefined) return rdUnauthorized(false);
    if (expiresAt <= this.now()) return rdUnauthorized(true);
    if (this.expireIn !== undefined && this.expireIn-- <= 0) {
      this.expireAccessTokens();
      return rdUnauthorized(true);
    }
    return undefined;
  }

  /** POST /platform/events (?event_type=conversion): a new conversion every time, the contact created or updated. */
  conversion(query: URLSearchParams, raw: Buffer): RdReply {
    if (raw.length > RD_MAX_BODY_BYTES)
      return {
        status: 413,
        body: rdError('REQUEST_ENTITY_TOO_LARGE', `The request body is larger than ${RD_MAX_BODY_BYTES} bytes.`),
      };
    let body: unknown;
    try {
      body = JSON.parse(raw.toString('utf8'));
    } catch {
      return { status: 400, body: rdErrors([{ type: 'BAD_REQUEST', message: 'Invalid JSON.', path: '$.body' }]) };
    }
    if (!isObject(body)) return { status: 400, body: rdErrors([{ type: 'BAD_REQUEST', message: 'Invalid body.' }]) };
    const type = body.event_type ?? query.get('event_type')?.toUpperCase();
    if (typeof type !== 'string' || !EVENT_TYPES.includes(type))
      return {
        status: 400,
        body: {
          errors: [
            {
              error_type: 'INVALID_OPTION',
              error_message: 'Must be one of the valid options.',
              validation_rules: { valid_options: EVENT_TYPES },
              path: '$.body.event_type',
            },
          ],
        },
      };
    if (type !== 'CONVERSION')
      return {
        status: 400,
        body: rdErrors([{ type: 'UNSUPPORTED', message: 'The emulator takes conversions only.' }]),
      };
    if (body.event_family !== 'CDP')
      return {
        status: 400,
        body: {
          errors: [
            {
              error_type: 'INVALID_OPTION',
              error_message: 'Must be one of the valid options.',
              validation_rules: { valid_options: ['CDP'] },
              path: '$.body.event_family',
            },
          ],
        },
      };
    const payload = body.payload;
    if (!isObject(payload))
      return {
        status: 400,
        body: rdErrors([{ type: 'CANNOT_BE_NULL', message: 'Cannot be null.', path: '$.payload' }]),
      };
    const errors = this.validate(payload, CONVERSION_FIELDS, '$.payload');
    for (const required of ['conversion_identifier', 'email'])
      if (typeof payload[required] !== 'string' || payload[required] === '')
        errors.unshift({ type: 'CANNOT_BE_NULL', message: 'Cannot be null.', path: `$.payload.${required}` });
    if (errors.length) return { status: 400, body: rdErrors(errors) };
    const email = (payload.email as string).toLowerCase();
    const window = this.windowFor(this.postWindows, email, this.postsPerContact);
    const admitted = window.admit();
    if (!admitted.ok) return this.contactLimit(window, 'POST', this.postsPerContact);
    const contact = this.contactFor(email);
    this.apply(contact, payload);
    const conversion: RdConversion = {
      event_uuid: randomUUID(),
      event_type: 'CONVERSION',
      event_family: 'CDP',
      event_identifier: payload.conversion_identifier as string,
      event_timestamp: new Date(this.now()).toISOString(),
      payload: structuredClone(payload),
    };
    contact.conversions.push(conversion);
    this.log.push({ ...conversion, email });
    return { status: 200, body: { event_uuid: conversion.event_uuid } };
  }

  /** GET /platform/contacts/email:{email} or /platform/contacts/{uuid}. */
  getContact(identifier: string): RdReply {
    const c = this.find(identifier);
    if (!c) return notFound();
    return { status: 200, body: this.view(c) };
  }

  /** GET /platform/contacts/{uuid}/events?event_type=CONVERSION: the contact's conversions, newest first. */
  contactEvents(identifier: string, query: URLSearchParams): RdReply {
    const c = this.find(identifier);
    if (!c) return notFound();
    const type = query.get('event_type')?.toUpperCase();
    if (type !== 'CONVERSION')
      return {
        status: 400,
        body: rdErrors([
          { type: 'INVALID_OPTION', message: 'Must be one of the valid options.', path: '$.query.event_type' },
        ]),
      };
    return { status: 200, body: [...c.conversions].reverse().map((e) => structuredClone(e)) };
  }

  /** PATCH /platform/contacts/email:{email}: creates or updates the contact by email; no conversion. */
  patchContact(identifier: string, raw: Buffer): RdReply {
    let body: unknown;
    try {
      body = JSON.parse(raw.toString('utf8'));
    } catch {
      return { status: 400, body: rdErrors([{ type: 'BAD_REQUEST', message: 'Invalid JSON.', path: '$.body' }]) };
    }
    if (!isObject(body)) return { status: 400, body: rdErrors([{ type: 'BAD_REQUEST', message: 'Invalid body.' }]) };
    if (!identifier.startsWith('email:'))
      return { status: 400, body: rdErrors([{ type: 'BAD_REQUEST', message: 'The emulator updates by email only.' }]) };
    const email = identifier.slice(6).toLowerCase();
    if (!EMAIL_RE.test(email))
      return { status: 400, body: rdErrors([{ type: 'INVALID_FORMAT', message: 'Invalid email.', path: '$.email' }]) };
    // The identifier in the URL must not be repeated in the body (ruby client's CONFLICTING_FIELD).
    if (body.email !== undefined)
      return {
        status: 400,
        body: rdErrors([
          {
            type: 'CONFLICTING_FIELD',
            message: 'The email cannot be changed when it is the identifier.',
            path: '$.email',
          },
        ]),
      };
    const errors = this.validate(body, CONTACT_FIELDS, '$');
    if (errors.length) return { status: 400, body: rdErrors(errors) };
    const window = this.windowFor(this.patchWindows, email, this.patchesPerContact);
    const admitted = window.admit();
    if (!admitted.ok) return this.contactLimit(window, 'PATCH', this.patchesPerContact);
    const contact = this.contactFor(email);
    this.apply(contact, body);
    return { status: 200, body: this.view(contact) };
  }

  private issue(refresh: string): Record<string, unknown> {
    const access = `at-${randomUUID()}`;
    this.accessTokens.set(access, this.now() + this.ttlMs);
    return { access_token: access, expires_in: Math.round(this.ttlMs / 1000), refresh_token: refresh };
  }

  private find(identifier: string): RdContact | undefined {
    if (identifier.startsWith('email:')) return this.contacts.get(identifier.slice(6).toLowerCase());
    if (identifier.startsWith('uuid:')) return this.byUuid.get(identifier.slice(5));
    return this.byUuid.get(identifier);
  }

  private contactFor(email: string): RdContact {
    const key = email.toLowerCase();
    let c = this.contacts.get(key);
    if (!c) {
      const at = new Date(this.now()).toISOString();
      c = {
        uuid: randomUUID(),
        email: key,
        fields: {},
        tags: [],
        legal_bases: [],
        conversions: [],
        created_at: at,
        updated_at: at,
      };
      this.contacts.set(key, c);
      this.byUuid.set(c.uuid, c);
    }
    return c;
  }

  // A conversion or PATCH's values onto the contact: fields overwrite, tags add up, legal bases by category+type.
  private apply(c: RdContact, values: Record<string, unknown>): void {
    for (const [k, v] of Object.entries(values)) {
      if (k === 'email' || k === 'conversion_identifier') continue;
      if (k === 'tags' && Array.isArray(v)) {
        for (const t of v) if (typeof t === 'string' && !c.tags.includes(t.toLowerCase())) c.tags.push(t.toLowerCase());
      } else if (k === 'legal_bases' && Array.isArray(v)) {
        for (const b of v as Array<{ category: string; type: string; status?: string }>) {
          const i = c.legal_bases.findIndex((x) => x.category === b.category && x.type === b.type);
          const basis = { category: b.category, type: b.type, status: b.status ?? 'granted' };
          if (i >= 0) c.legal_bases[i] = basis;
          else c.legal_bases.push(basis);
        }
      } else if (k.startsWith('cf_')) {
        if (this.customFields.has(k)) c.fields[k] = v;
      } else if (CONTACT_FIELDS.has(k) && v !== null && v !== '') c.fields[k] = v;
    }
    c.updated_at = new Date(this.now()).toISOString();
  }

  private view(c: RdContact): Record<string, unknown> {
    // Empty strings and numbers are left out; arrays are always there (the contacts page's "Empty Fields" rule).
    return {
      uuid: c.uuid,
      email: c.email,
      ...c.fields,
      tags: [...c.tags],
      extra_emails: [],
      legal_bases: c.legal_bases.map((b) => ({ ...b })),
      links: [
        {
          rel: 'SELF',
          href: `https://api.rd.services/platform/contacts/${c.uuid}`,
          media: 'application/json',
          type: 'GET',
        },
      ],
    };
  }

  private validate(
    values: Record<string, unknown>,
    allowed: Set<string>,
    at: string,
  ): Array<{ type: string; message: string; path: string }> {
    const errors: Array<{ type: string; message: string; path: string }> = [];
    for (const [k, v] of Object.entries(values)) {
      const path = `${at}.${k}`;
      if (!allowed.has(k) && !k.startsWith('cf_')) {
        errors.push({ type: 'INVALID_FIELDS', message: `The field ${k} does not exist.`, path });
      } else if (k === 'tags') {
        if (!Array.isArray(v) || v.some((t) => typeof t !== 'string'))
          errors.push({ type: 'INVALID_FORMAT', message: 'Must be an array of strings.', path });
      } else if (k === 'legal_bases') {
        const ok =
          Array.isArray(v) &&
          v.every(
            (b) =>
              isObject(b) &&
              b.category === 'communications' &&
              typeof b.type === 'string' &&
              LEGAL_BASIS_TYPES.includes(b.type) &&
              (b.status === undefined || b.status === 'granted' || b.status === 'declined'),
          );
        if (!ok)
          errors.push({
            type: 'INVALID_FORMAT',
            message: `Each legal basis needs category "communications", a type among ${LEGAL_BASIS_TYPES.join(', ')}, and status granted or declined.`,
            path,
          });
      } else if (k === 'email') {
        if (typeof v !== 'string' || !EMAIL_RE.test(v))
          errors.push({ type: 'INVALID_FORMAT', message: 'Invalid email.', path });
      } else if (k === 'available_for_mailing') {
        if (typeof v !== 'boolean') errors.push({ type: 'INVALID_FORMAT', message: 'Must be a boolean.', path });
      } else if (typeof v !== 'string' && !(k.startsWith('cf_') && (typeof v === 'number' || typeof v === 'boolean')))
        errors.push({ type: 'INVALID_FORMAT', message: 'Must be a string.', path });
    }
    return errors;
  }

  private windowFor(map: Map<string, RollingWindow>, email: string, max: number): RollingWindow {
    let w = map.get(email);
    if (!w) {
      w = new RollingWindow(max, DAY_MS, this.now);
      map.set(email, w);
    }
    return w;
  }

  private contactLimit(window: RollingWindow, method: string, max: number): RdReply {
    this.counters.contactLimited++;
    const wait = Math.max(1, Math.ceil(window.msUntilFree() / 1000));
    return {
      status: 429,
      body: rdError(
        'TOO_MANY_REQUESTS',
        `Contact rate limit exceeded: at most ${max} ${method} requests per contact in 24 hours.`,
      ),
      headers: { 'retry-after': String(wait) },
    };
  }
}

function notFound(): RdReply {
  return { status: 404, body: rdError('RESOURCE_NOT_FOUND', 'The contact was not found.') };
}
