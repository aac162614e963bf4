// Salesforce's OAuth 2.0 JWT bearer flow, for unattended runs with no refresh token: a connected app holds the
// certificate of an RSA key the run has in a file; each access token is asked for with an assertion
// {iss: consumer key, sub: username, aud: login URL, exp: in 3 minutes}, signed RS256 with that key
// (help.salesforce.com "OAuth 2.0 JWT Bearer Flow for Server-to-Server Integration"). The answer carries
// access_token and instance_url, no refresh token and no expiry: a token is used until Salesforce answers 401
// INVALID_SESSION_ID, then a new one is asked for once and the request sent again (a 401 means nothing was done).
import { createPrivateKey, sign, type KeyObject } from 'node:crypto';
import { CredentialsError } from '../../errors.js';
import type { HttpClient, HttpRequest, HttpResult } from '../transport/http.js';
import { GrantRefused, exchangeToken, type OAuth2Provider, type TokenResponse } from '../transport/oauth2.js';

/** What the sink asks of its access tokens: the OAuth2Session of transport/ (refresh token) or a JwtSession. */
export interface TokenSession {
  token(signal?: AbortSignal): Promise<string>;
  request(build: (token: string) => HttpRequest, signal?: AbortSignal): Promise<HttpResult>;
  readonly refreshes: number;
}

/** The assertion's grant type (RFC 7523). */
export const JWT_GRANT = 'urn:ietf:params:oauth:grant-type:jwt-bearer';

const b64url = (b: Buffer | string): string => Buffer.from(b).toString('base64url');

/** A JWT signed RS256 with the key: header.claims.signature, base64url. */
export function signJwt(claims: Record<string, unknown>, key: KeyObject): string {
  const head = b64url(JSON.stringify({ alg: 'RS256', typ: 'JWT' }));
  const body = b64url(JSON.stringify(claims));
  const sig = sign('RSA-SHA256', Buffer.from(`${head}.${body}`), key);
  return `${head}.${body}.${b64url(sig)}`;
}

/** The private key of a PEM file's text; a UsageError-worthy Error naming the file when it is not one. */
export function readPrivateKey(pem: string, file: string): KeyObject {
  try {
    return createPrivateKey(pem);
  } catch (e) {
    throw new Error(`${file} holds no private key leadledger can read (PEM, unencrypted): ${(e as Error).message}`, {
      cause: e,
    });
  }
}

export interface JwtSessionOptions {
  http: HttpClient;
  provider: OAuth2Provider;
  /** The connected app's consumer key (iss). */
  clientId: string;
  /** The Salesforce username the app acts as (sub). */
  username: string;
  /** The token endpoint's origin (aud): https://login.salesforce.com, test.salesforce.com, or the instance's. */
  audience: string;
  key: KeyObject;
  onToken?: (got: TokenResponse) => void;
  now?: () => number;
}

/** Access tokens minted from a signed assertion: cached until refused, minted again once on an expired 401. */
export class JwtSession implements TokenSession {
  private cached: string | undefined;
  private inflight: Promise<string> | undefined;
  refreshes = 0;

  constructor(private readonly o: JwtSessionOptions) {}

  /** The cached access token, or a new one. */
  async token(signal?: AbortSignal): Promise<string> {
    return this.cached ?? this.mint(undefined, signal);
  }

  /** Send with the token; on a 401 that says the session expired, mint once and send again. */
  async request(build: (token: string) => HttpRequest, signal?: AbortSignal): Promise<HttpResult> {
    const token = await this.token(signal);
    const first = await this.o.http.request(build(token));
    if (first.kind !== 'response' || first.response.status !== 401) return first;
    if (!(this.o.provider.isExpiredToken?.(first.response) ?? false)) return first;
    const renewed = await this.mint(token, signal);
    return this.o.http.request(build(renewed));
  }

  // One mint at a time; a caller whose refused token was already replaced takes the new one.
  private mint(rejected: string | undefined, signal?: AbortSignal): Promise<string> {
    if (this.cached && this.cached !== rejected) return Promise.resolve(this.cached);
    this.inflight ??= this.doMint(signal).finally(() => (this.inflight = undefined));
    return this.inflight;
  }

  private async doMint(signal?: AbortSignal): Promise<string> {
    const now = (this.o.now ?? Date.now)();
    const assertion = signJwt(
      { iss: this.o.clientId, sub: this.o.username, aud: this.o.audience, exp: Math.floor(now / 1000) + 180 },
      this.o.key,
    );
    let got: TokenResponse;
    try {
      got = await exchangeToken({
        http: this.o.http,
        provider: this.o.provider,
        params: { grant_type: JWT_GRANT, assertion },
        ...(this.o.now ? { now: this.o.now } : {}),
        ...(signal ? { signal } : {}),
      });
    } catch (e) {
      if (e instanceof GrantRefused)
        throw new CredentialsError(
          `Salesforce refused the signed assertion (${e.message}): check SALESFORCE_CLIENT_ID (the connected app's consumer key), ` +
            'the username, that the app holds the certificate of this key, and that the user is pre-authorized for the app',
        );
      throw e;
    }
    this.o.http.addSecret(got.accessToken);
    this.refreshes++;
    this.o.onToken?.(got);
    this.cached = got.accessToken;
    return got.accessToken;
  }
}
