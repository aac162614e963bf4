// What `leadledger auth zoho` does: obtain a grant for Zoho CRM and write it to the credentials file (0600), so that
// unattended runs refresh their access tokens from it. Zoho's way for a server without a browser is the Self Client
// of its API console: the user makes a grant code there (scope ZohoCRM.modules.leads.ALL), and this command exchanges
// it for a refresh token; a refresh token the user already has is checked by one refresh instead.
import { CredentialsError, UsageError } from '../../errors.js';
import { CredentialsFile, defaultCredentialsPath } from '../transport/credentials.js';
import { HttpClient } from '../transport/http.js';
import { GrantRefused, exchangeToken, type TokenResponse } from '../transport/oauth2.js';
import type { ZohoDataCentre } from './config.js';
import { zohoEndpoints, zohoOAuthProvider } from './options.js';

export interface ZohoAuthorizeOptions {
  clientId: string;
  clientSecret: string;
  /** A refresh token the user has (checked by one refresh), or a Self Client grant code (exchanged). */
  refreshToken?: string;
  grantCode?: string;
  url?: string;
  dc?: ZohoDataCentre;
  credentialsPath?: string;
  env?: Record<string, string | undefined>;
  allowInsecure?: boolean;
  signal?: AbortSignal;
}

/** Obtain Zoho CRM credentials and write them to the credentials file; returns where. */
export async function authorizeZoho(opts: ZohoAuthorizeOptions): Promise<{ path: string; apiDomain?: string }> {
  if (!opts.refreshToken && !opts.grantCode)
    throw new UsageError(
      'leadledger auth zoho needs ZOHO_GRANT_CODE (a grant code made in the Zoho API console’s Self Client, scope ZohoCRM.modules.leads.ALL) or ZOHO_REFRESH_TOKEN',
    );
  const { tokenUrl, fixed } = zohoEndpoints({
    ...(opts.url ? { url: opts.url } : {}),
    ...(opts.dc ? { dc: opts.dc } : {}),
  });
  const http = new HttpClient({ secrets: [opts.clientSecret] });
  const provider = zohoOAuthProvider(tokenUrl);
  if (!opts.allowInsecure && !tokenUrl.startsWith('https:') && !/^http:\/\/(127\.|localhost|\[::1\])/.test(tokenUrl))
    throw new UsageError(`${tokenUrl} is plain http: Zoho credentials go over https only (or --allow-insecure)`);
  let got: TokenResponse;
  try {
    got = await exchangeToken({
      http,
      provider,
      params: opts.refreshToken
        ? {
            grant_type: 'refresh_token',
            client_id: opts.clientId,
            client_secret: opts.clientSecret,
            refresh_token: opts.refreshToken,
          }
        : {
            grant_type: 'authorization_code',
            client_id: opts.clientId,
            client_secret: opts.clientSecret,
            code: opts.grantCode!,
          },
      ...(opts.signal ? { signal: opts.signal } : {}),
    });
    if (opts.refreshToken) got.refreshToken ??= opts.refreshToken;
  } catch (e) {
    if (e instanceof GrantRefused)
      throw new CredentialsError(
        `Zoho refused the authorization (${e.message}): check the client id and secret and the ${opts.refreshToken ? 'refresh token' : 'grant code (it lasts minutes, and is good once)'}, and the data centre (--zoho-dc)`,
      );
    throw e;
  } finally {
    http.close();
  }
  if (!got.refreshToken)
    throw new CredentialsError('Zoho answered without a refresh token: unattended runs could not renew access');
  const path = opts.credentialsPath ?? defaultCredentialsPath(opts.env ?? process.env);
  const store = new CredentialsFile(path);
  const apiDomain = got.extra?.api_domain;
  await store.withLock(() =>
    store.write('zoho', {
      client_id: opts.clientId,
      client_secret: opts.clientSecret,
      refresh_token: got.refreshToken,
      access_token: got.accessToken,
      obtained_at: new Date().toISOString(),
      ...(got.expiresAt !== undefined ? { expires_at: new Date(got.expiresAt).toISOString() } : {}),
      ...(!fixed ? { dc: opts.dc ?? 'com' } : {}),
      ...(!fixed && apiDomain ? { api_domain: apiDomain } : {}),
    }),
  );
  return { path, ...(apiDomain ? { apiDomain } : {}) };
}
