// What `leadledger auth rdstation` does: obtain a grant for RD Station Marketing and write it to the credentials
// file (0600), so that unattended runs refresh their access tokens from it. Either a refresh token the user already
// has is checked by one refresh, or the authorization-code flow runs: the user opens RD Station's consent page, RD
// redirects the browser to a listener of ours on 127.0.0.1, and the code it carries is exchanged for tokens.
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { CredentialsError, UsageError } from '../../errors.js';
import { HttpClient } from '../transport/http.js';
import { checkSinkUrl } from '../transport/secure-url.js';
import { CredentialsFile, defaultCredentialsPath } from '../transport/credentials.js';
import { GrantRefused, exchangeToken, type TokenResponse } from '../transport/oauth2.js';
import { rdstationOAuthProvider } from './options.js';
import { RDSTATION_DEFAULT_URL } from './sink.js';

export interface AuthorizeOptions {
  clientId: string;
  clientSecret: string;
  /** A refresh token the user has: checked by one refresh, then stored. Absent: the authorization-code flow. */
  refreshToken?: string;
  /** Default https://api.rd.services */
  baseUrl?: string;
  /** Default: the user's config directory (defaultCredentialsPath). */
  credentialsPath?: string;
  env?: Record<string, string | undefined>;
  /** Port of the redirect listener on 127.0.0.1 (default 0: any; the RD app's callback URL must match it). */
  port?: number;
  /** Told the consent page's URL, for the user to open (the command prints it to stderr). */
  onUrl?: (url: string, redirectUri: string) => void;
  /** How long to wait for the redirect (default 5 min). */
  timeoutMs?: number;
  allowInsecure?: boolean;
  http?: HttpClient;
  signal?: AbortSignal;
}

export interface AuthorizeResult {
  /** Where the credentials were written. */
  path: string;
  /** When the access token obtained expires (ms since the epoch), if RD said. */
  expiresAt?: number;
}

/** Obtain RD Station credentials (refresh token given, or the code flow) and write them to the credentials file. */
export async function authorize(opts: AuthorizeOptions): Promise<AuthorizeResult> {
  const baseUrl = (opts.baseUrl ?? RDSTATION_DEFAULT_URL).replace(/\/+$/, '');
  checkSinkUrl(baseUrl, 'RD Station', opts.allowInsecure);
  const provider = rdstationOAuthProvider(baseUrl);
  const client = opts.http ?? new HttpClient({ secrets: [opts.clientSecret] });
  client.addSecret(opts.clientSecret);
  const path = opts.credentialsPath ?? defaultCredentialsPath(opts.env ?? process.env);
  let got: TokenResponse;
  try {
    if (opts.refreshToken) {
      client.addSecret(opts.refreshToken);
      got = await exchangeToken({
        http: client,
        provider,
        params: {
          client_id: opts.clientId,
          client_secret: opts.clientSecret,
          refresh_token: opts.refreshToken,
        },
        ...(opts.signal ? { signal: opts.signal } : {}),
      });
      got.refreshToken ??= opts.refreshToken;
    } else {
      const code = await receiveCode(baseUrl, opts);
      client.addSecret(code);
      got = await exchangeToken({
        http: client,
        provider,
        params: { client_id: opts.clientId, client_secret: opts.clientSecret, code },
        ...(opts.signal ? { signal: opts.signal } : {}),
      });
    }
  } catch (e) {
    if (e instanceof GrantRefused)
      throw new CredentialsError(
        `RD Station refused the authorization (${e.message}): check the client id and secret${opts.refreshToken ? ' and the refresh token' : ''}`,
      );
    throw e;
  } finally {
    if (!opts.http) client.close();
  }
  if (!got.refreshToken)
    throw new CredentialsError('RD Station answered without a refresh token: unattended runs could not renew access');
  const store = new CredentialsFile(path);
  await store.withLock(() =>
    store.write('rdstation', {
      client_id: opts.clientId,
      client_secret: opts.clientSecret,
      refresh_token: got.refreshToken,
      access_token: got.accessToken,
      obtained_at: new Date().toISOString(),
      ...(got.expiresAt !== undefined ? { expires_at: new Date(got.expiresAt).toISOString() } : {}),
    }),
  );
  return { path, ...(got.expiresAt !== undefined ? { expiresAt: got.expiresAt } : {}) };
}

// Listen on 127.0.0.1, hand out the consent page's URL, and wait for RD's redirect with ?code= (and our state).
async function receiveCode(baseUrl: string, opts: AuthorizeOptions): Promise<string> {
  const state = randomBytes(16).toString('hex');
  let settle: { resolve: (code: string) => void; reject: (e: Error) => void } | undefined;
  const got = new Promise<string>((resolve, reject) => (settle = { resolve, reject }));
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    if (url.pathname !== '/callback') {
      res.writeHead(404).end();
      return;
    }
    const code = url.searchParams.get('code');
    // A redirect that does not carry the state we sent did not come from our consent request.
    if (url.searchParams.get('state') !== state || !code) {
      res.writeHead(400, { 'content-type': 'text/plain; charset=utf-8' }).end('leadledger: unexpected callback\n');
      return;
    }
    res
      .writeHead(200, { 'content-type': 'text/plain; charset=utf-8' })
      .end('leadledger is authorized for RD Station. You can close this tab.\n');
    settle?.resolve(code);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, '127.0.0.1', () => resolve());
  });
  const redirectUri = `http://127.0.0.1:${(server.address() as AddressInfo).port}/callback`;
  const consent = new URL(`${baseUrl}/auth/dialog`);
  consent.searchParams.set('client_id', opts.clientId);
  consent.searchParams.set('redirect_uri', redirectUri);
  consent.searchParams.set('state', state);
  const timer = setTimeout(
    () => settle?.reject(new UsageError('no authorization arrived from RD Station in time: run the command again')),
    opts.timeoutMs ?? 5 * 60_000,
  );
  const onAbort = (): void => settle?.reject(new UsageError('authorization stopped'));
  opts.signal?.addEventListener('abort', onAbort, { once: true });
  try {
    opts.onUrl?.(consent.href, redirectUri);
    return await got;
  } finally {
    clearTimeout(timer);
    opts.signal?.removeEventListener('abort', onAbort);
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}
