// OAuth 2 access tokens for the CRMs that use them (RD Station now; Salesforce and Zoho next): the refresh-token
// grant, the access token cached with its expiry and refreshed a margin before it, and a request refused with a 401
// "expired token" answered by one refresh and one retry (a 401 means nothing was done, so the retry is safe).
//
// Refresh tokens that the CRM rotates are written back to the credentials file (credentials.ts) atomically, under
// its lock, together with the new access token: a second run waiting on the lock then finds a fresh access token and
// uses it instead of refreshing again with a refresh token that the first run's refresh has just made invalid. When
// a refresh is refused anyway, the file is read again and the token another run rotated is tried, once. A grant
// that stays refused (revoked, expired, wrong client) is a CredentialsError (exit 4) naming the command that fixes it.
import { CredentialsError } from '../../errors.js';
import type { HttpClient, HttpRequest, HttpResponse, HttpResult } from './http.js';
import type { CredentialsFile, StoredCredentials } from './credentials.js';

/** What a CRM's OAuth looks like to leadledger. */
export interface OAuth2Provider {
  /** In messages: "RD Station". */
  name: string;
  /** The credentials file's section: "rdstation". */
  section: string;
  tokenUrl: string;
  /** The command that authorizes leadledger again: "leadledger auth rdstation". */
  reauthCommand: string;
  /** How the token endpoint takes its parameters: JSON (RD Station) or form-encoded (RFC 6749, Salesforce, Zoho). */
  bodyFormat: 'json' | 'form';
  /** Whether a 401 says the access token expired (refresh once, retry once). Default: WWW-Authenticate's error. */
  isExpiredToken?(response: HttpResponse): boolean;
}

/** A token endpoint's successful answer. */
export interface TokenResponse {
  accessToken: string;
  /** ms since the epoch, when the endpoint said (expires_in). */
  expiresAt?: number;
  /** A rotated refresh token, when the endpoint sent one. */
  refreshToken?: string;
  /** The answer's other string fields (Zoho's api_domain, Salesforce's instance_url), by their names. */
  extra?: Record<string, string>;
}

/** The token endpoint could not be reached or kept failing (network, 5xx, 429): nothing was sent with a token. */
export class TokenUnavailable extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TokenUnavailable';
  }
}

/** The token endpoint refused the grant (4xx): revoked, expired or not this client's. */
export class GrantRefused extends Error {
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message);
    this.name = 'GrantRefused';
  }
}

export interface OAuth2SessionOptions {
  http: HttpClient;
  provider: OAuth2Provider;
  clientId?: string;
  clientSecret?: string;
  /** From the environment; the credentials file's (newer, when rotated) is tried first. */
  refreshToken?: string;
  /** A bare access token (short jobs): used until it expires; renewable only with a refresh token. */
  accessToken?: string;
  /** Where rotated refresh tokens and access tokens are kept between runs. */
  store?: CredentialsFile;
  /** Refresh this long before the access token expires (default 5 min, at most a tenth of its lifetime). */
  refreshMarginMs?: number;
  now?: () => number;
  /** Told when a rotated refresh token could not be kept anywhere (no credentials file). */
  warn?: (message: string) => void;
  /** Told each token the endpoint hands out (a CRM whose API host comes with the token reads it here). */
  onToken?: (got: TokenResponse) => void;
}

interface CachedToken {
  token: string;
  expiresAt?: number;
  /** When it was obtained: the margin is taken from its lifetime. */
  obtainedAt: number;
}

/** Default: RFC 6750's WWW-Authenticate error, also under the name an AWS gateway remaps it to (RD Station). */
export function wwwAuthenticateSaysExpired(response: HttpResponse): boolean {
  const h = response.headers['www-authenticate'] ?? response.headers['x-amzn-remapped-www-authenticate'] ?? '';
  return /error="?(expired_token|invalid_token)"?/i.test(h);
}

/** Access tokens for one CRM account: cached, refreshed before expiry and once on an expired-token 401. */
export class OAuth2Session {
  private readonly http: HttpClient;
  private readonly provider: OAuth2Provider;
  private readonly clientId: string | undefined;
  private readonly clientSecret: string | undefined;
  private refreshToken: string | undefined;
  private readonly store: CredentialsFile | undefined;
  private readonly marginMs: number;
  private readonly now: () => number;
  private readonly warn: ((message: string) => void) | undefined;
  private readonly onToken: ((got: TokenResponse) => void) | undefined;
  private cached: CachedToken | undefined;
  private loaded = false;
  /** One refresh at a time in this process: concurrent 401s share it. */
  private inflight: Promise<string> | undefined;
  /** Refreshes done by this session (for reports and tests). */
  refreshes = 0;

  constructor(opts: OAuth2SessionOptions) {
    this.http = opts.http;
    this.provider = opts.provider;
    this.clientId = opts.clientId;
    this.clientSecret = opts.clientSecret;
    this.refreshToken = opts.refreshToken;
    this.store = opts.store;
    this.marginMs = opts.refreshMarginMs ?? 5 * 60_000;
    this.now = opts.now ?? Date.now;
    this.warn = opts.warn;
    this.onToken = opts.onToken;
    for (const s of [opts.clientSecret, opts.refreshToken, opts.accessToken]) if (s) this.http.addSecret(s);
    if (opts.accessToken) this.cached = { token: opts.accessToken, obtainedAt: this.now() };
  }

  /** Whether this session can get a new access token (client credentials and a refresh token somewhere). */
  get canRefresh(): boolean {
    return this.clientId !== undefined && this.clientSecret !== undefined;
  }

  /** A valid access token: the cached one, the credentials file's, or a refreshed one. */
  async token(signal?: AbortSignal): Promise<string> {
    if (!this.loaded) await this.load();
    if (this.cached && (this.fresh(this.cached) || !this.canRefresh)) return this.cached.token;
    return this.refresh(this.cached?.token, signal);
  }

  /**
   * Send a request built with the access token; on a 401 that says the token expired, refresh once and send it again
   * (the 401 means nothing was done). Other answers are returned as they are, for the sink to read.
   */
  async request(build: (token: string) => HttpRequest, signal?: AbortSignal): Promise<HttpResult> {
    const token = await this.token(signal);
    const first = await this.http.request(build(token));
    if (first.kind !== 'response' || first.response.status !== 401) return first;
    const expired = (this.provider.isExpiredToken ?? wwwAuthenticateSaysExpired)(first.response);
    if (!expired) return first;
    if (!this.canRefresh)
      throw new CredentialsError(
        `${this.provider.name} says the access token expired, and leadledger has no refresh token to renew it: ` +
          `run \`${this.provider.reauthCommand}\` (or set the client id, secret and refresh token)`,
      );
    const renewed = await this.refresh(token, signal);
    return this.http.request(build(renewed));
  }

  /** Refresh now, unless another caller already replaced `rejected` (the token a 401 refused). */
  refresh(rejected?: string, signal?: AbortSignal): Promise<string> {
    this.inflight ??= this.doRefresh(rejected, signal).finally(() => (this.inflight = undefined));
    return this.inflight;
  }

  private fresh(t: CachedToken): boolean {
    if (t.expiresAt === undefined) return true;
    const margin = Math.min(this.marginMs, Math.max(0, (t.expiresAt - t.obtainedAt) / 10));
    return this.now() < t.expiresAt - margin;
  }

  // The credentials file's access token, when it is this client's and still good: no refresh at start.
  private async load(): Promise<void> {
    this.loaded = true;
    if (!this.store || (this.cached && !this.canRefresh)) return;
    const stored = this.mine(await this.store.read(this.provider.section));
    if (stored?.refresh_token) this.http.addSecret(stored.refresh_token);
    const t = storedToken(stored, this.now());
    if (t && this.fresh(t) && !this.cached) this.adopt(t);
  }

  private async doRefresh(rejected: string | undefined, signal?: AbortSignal): Promise<string> {
    if (this.cached && this.cached.token !== rejected && this.fresh(this.cached)) return this.cached.token;
    if (!this.canRefresh)
      throw new CredentialsError(
        `${this.provider.name} needs credentials: run \`${this.provider.reauthCommand}\`, or set the client id, secret and refresh token`,
      );
    if (!this.store) {
      if (!this.refreshToken)
        throw new CredentialsError(
          `${this.provider.name} has no refresh token: run \`${this.provider.reauthCommand}\` or set the refresh token`,
        );
      const got = await this.exchangeRefresh(this.refreshToken, signal);
      if (got.refreshToken && got.refreshToken !== this.refreshToken)
        this.warn?.(
          `${this.provider.name} rotated the refresh token and there is no credentials file to keep it: the next run needs \`${this.provider.reauthCommand}\``,
        );
      return this.accept(got);
    }
    const store = this.store;
    return store.withLock(async () => {
      const stored = this.mine(await store.read(this.provider.section));
      // Another run refreshed while this one waited for the lock: its access token serves this run too.
      const theirs = storedToken(stored, this.now());
      if (theirs && theirs.token !== rejected && this.fresh(theirs)) return this.adopt(theirs, stored);
      const tried = new Set<string>();
      const candidates = [stored?.refresh_token, this.refreshToken].filter((t): t is string => !!t);
      let refused: GrantRefused | undefined;
      while (candidates.length) {
        const rt = candidates.shift()!;
        if (tried.has(rt)) continue;
        tried.add(rt);
        try {
          const got = await this.exchangeRefresh(rt, signal);
          await store.write(this.provider.section, {
            ...(stored ?? {}),
            ...(this.clientId ? { client_id: this.clientId } : {}),
            refresh_token: got.refreshToken ?? rt,
            access_token: got.accessToken,
            obtained_at: new Date(this.now()).toISOString(),
            ...(got.expiresAt !== undefined ? { expires_at: new Date(got.expiresAt).toISOString() } : {}),
          });
          this.refreshToken = got.refreshToken ?? rt;
          return this.accept(got);
        } catch (e) {
          if (!(e instanceof GrantRefused)) throw e;
          refused = e;
          // Another run (another host, past the lock) may have rotated the token meanwhile: read the file again.
          const again = this.mine(await store.read(this.provider.section));
          const t = storedToken(again, this.now());
          if (t && t.token !== rejected && this.fresh(t)) return this.adopt(t, again);
          if (again?.refresh_token && !tried.has(again.refresh_token)) candidates.unshift(again.refresh_token);
        }
      }
      throw this.revoked(refused);
    });
  }

  private revoked(e: GrantRefused | undefined): CredentialsError {
    const why = e ? ` (${e.message})` : '';
    return new CredentialsError(
      `${this.provider.name} refused the refresh token${why}: the authorization was revoked or has expired; ` +
        `run \`${this.provider.reauthCommand}\` to authorize leadledger again`,
    );
  }

  // The file's section when it belongs to this client (another client id's tokens are not ours to use).
  private mine(s: StoredCredentials | undefined): StoredCredentials | undefined {
    if (!s) return undefined;
    if (s.client_id !== undefined && this.clientId !== undefined && s.client_id !== this.clientId) return undefined;
    return s;
  }

  private adopt(t: CachedToken, stored?: StoredCredentials): string {
    this.http.addSecret(t.token);
    this.cached = t;
    if (stored?.refresh_token) {
      this.http.addSecret(stored.refresh_token);
      this.refreshToken = stored.refresh_token;
    }
    return t.token;
  }

  private accept(got: TokenResponse): string {
    this.refreshes++;
    this.onToken?.(got);
    return this.adopt({
      token: got.accessToken,
      obtainedAt: this.now(),
      ...(got.expiresAt !== undefined ? { expiresAt: got.expiresAt } : {}),
    });
  }

  private async exchangeRefresh(refreshToken: string, signal?: AbortSignal): Promise<TokenResponse> {
    const got = await exchangeToken({
      http: this.http,
      provider: this.provider,
      params: {
        grant_type: 'refresh_token',
        client_id: this.clientId ?? '',
        client_secret: this.clientSecret ?? '',
        refresh_token: refreshToken,
      },
      now: this.now,
      ...(signal ? { signal } : {}),
    });
    if (got.refreshToken) this.http.addSecret(got.refreshToken);
    return got;
  }
}

// The file's access token as a cached token, when it has one and an expiry.
function storedToken(s: StoredCredentials | undefined, now: number): CachedToken | undefined {
  if (!s?.access_token) return undefined;
  const expiresAt = s.expires_at ? Date.parse(s.expires_at) : NaN;
  // Without a readable expiry the token's age is unknown: refresh rather than use it.
  if (Number.isNaN(expiresAt)) return undefined;
  const obtained = typeof s.obtained_at === 'string' ? Date.parse(s.obtained_at) : NaN;
  // Unknown age: the whole margin applies (obtained long ago).
  return { token: s.access_token, expiresAt, obtainedAt: Number.isNaN(obtained) ? -Infinity : Math.min(now, obtained) };
}

/**
 * One call to a token endpoint (a refresh, or an authorization code's exchange). GrantRefused on a 4xx (the grant is
 * not good), TokenUnavailable when the endpoint could not answer; secrets never appear in either message.
 */
export async function exchangeToken(opts: {
  http: HttpClient;
  provider: OAuth2Provider;
  params: Record<string, string>;
  now?: () => number;
  signal?: AbortSignal;
}): Promise<TokenResponse> {
  const { http, provider } = opts;
  for (const [k, v] of Object.entries(opts.params)) if (k !== 'grant_type' && k !== 'client_id') http.addSecret(v);
  const body =
    provider.bodyFormat === 'json' ? JSON.stringify(opts.params) : new URLSearchParams(opts.params).toString();
  const result = await http.request({
    method: 'POST',
    url: provider.tokenUrl,
    headers: {
      'content-type': provider.bodyFormat === 'json' ? 'application/json' : 'application/x-www-form-urlencoded',
    },
    body,
    ...(opts.signal ? { signal: opts.signal } : {}),
  });
  if (result.kind === 'failure')
    throw new TokenUnavailable(`could not reach the ${provider.name} token endpoint: ${result.failure.reason}`);
  const res = result.response;
  if (res.status >= 400 && res.status < 500 && res.status !== 408 && res.status !== 429)
    throw new GrantRefused(http.redact(describeTokenError(res)), res.status);
  if (res.status < 200 || res.status >= 300)
    throw new TokenUnavailable(`the ${provider.name} token endpoint answered ${res.status}`);
  let parsed: { access_token?: unknown; expires_in?: unknown; refresh_token?: unknown };
  try {
    parsed = JSON.parse(res.text) as typeof parsed;
  } catch {
    throw new TokenUnavailable(
      `the ${provider.name} token endpoint answered ${res.status} with a body that is not JSON`,
    );
  }
  if (typeof parsed.access_token !== 'string' || parsed.access_token === '')
    throw new TokenUnavailable(`the ${provider.name} token endpoint answered without an access_token`);
  const expiresIn = Number(parsed.expires_in);
  const now = (opts.now ?? Date.now)();
  const extra: Record<string, string> = {};
  for (const [k, v] of Object.entries(parsed))
    if (typeof v === 'string' && !['access_token', 'refresh_token', 'id_token'].includes(k)) extra[k] = v;
  return {
    extra,
    accessToken: parsed.access_token,
    ...(Number.isFinite(expiresIn) && expiresIn > 0 ? { expiresAt: now + expiresIn * 1000 } : {}),
    ...(typeof parsed.refresh_token === 'string' && parsed.refresh_token !== ''
      ? { refreshToken: parsed.refresh_token }
      : {}),
  };
}

// "INVALID_REFRESH_TOKEN: ..." from RD Station's body, "invalid_grant: ..." from RFC 6749's, else the status.
function describeTokenError(res: HttpResponse): string {
  try {
    const b = JSON.parse(res.text) as Record<string, unknown>;
    const inner = Array.isArray(b.errors) ? (b.errors[0] as Record<string, unknown>) : (b.errors ?? b);
    const e = inner as Record<string, unknown>;
    const code = e.error_type ?? e.error;
    const text = e.error_message ?? e.error_description;
    if (typeof code === 'string') return typeof text === 'string' ? `${code}: ${text}` : code;
  } catch {
    // Not JSON: the status says enough.
  }
  return `HTTP ${res.status}`;
}
