// What `leadledger auth salesforce` does: checks a refresh token of the user's connected app by one refresh and
// writes the grant, with the org's instance URL from the answer, to the credentials file (0600), so that unattended
// runs refresh their access tokens from it. The connected app and its refresh token come from the environment
// (SALESFORCE_CLIENT_ID, SALESFORCE_CLIENT_SECRET, SALESFORCE_REFRESH_TOKEN): Salesforce's web-server flow hands the
// refresh token out once, in whatever tool the user authorized the app with (the Salesforce CLI, Postman).
import { CredentialsError } from '../../errors.js';
import { CredentialsFile, defaultCredentialsPath } from '../transport/credentials.js';
import { HttpClient } from '../transport/http.js';
import { GrantRefused, exchangeToken } from '../transport/oauth2.js';
import { checkSinkUrl } from '../transport/secure-url.js';
import { salesforceOAuthProvider } from './options.js';

export interface SalesforceAuthorizeOptions {
  clientId: string;
  clientSecret: string;
  refreshToken: string;
  /** Where the token endpoint is: the instance (--salesforce-url) or the login URL. */
  tokenBase: string;
  credentialsPath?: string;
  env?: Record<string, string | undefined>;
  allowInsecure?: boolean;
  signal?: AbortSignal;
}

/** One refresh with the given grant; the grant and the instance URL written to the credentials file. */
export async function authorize(opts: SalesforceAuthorizeOptions): Promise<{ path: string; instanceUrl?: string }> {
  checkSinkUrl(opts.tokenBase, 'Salesforce', opts.allowInsecure);
  const client = new HttpClient({ secrets: [opts.clientSecret, opts.refreshToken] });
  const path = opts.credentialsPath ?? defaultCredentialsPath(opts.env ?? process.env);
  try {
    const got = await exchangeToken({
      http: client,
      provider: salesforceOAuthProvider(opts.tokenBase),
      params: {
        grant_type: 'refresh_token',
        client_id: opts.clientId,
        client_secret: opts.clientSecret,
        refresh_token: opts.refreshToken,
      },
      ...(opts.signal ? { signal: opts.signal } : {}),
    });
    const instanceUrl = got.extra?.instance_url;
    const store = new CredentialsFile(path);
    await store.withLock(() =>
      store.write('salesforce', {
        client_id: opts.clientId,
        client_secret: opts.clientSecret,
        refresh_token: got.refreshToken ?? opts.refreshToken,
        access_token: got.accessToken,
        obtained_at: new Date().toISOString(),
        ...(got.expiresAt !== undefined ? { expires_at: new Date(got.expiresAt).toISOString() } : {}),
        ...(instanceUrl ? { instance_url: instanceUrl } : {}),
      }),
    );
    return { path, ...(instanceUrl ? { instanceUrl } : {}) };
  } catch (e) {
    if (e instanceof GrantRefused)
      throw new CredentialsError(
        `Salesforce refused the refresh token (${e.message}): check SALESFORCE_CLIENT_ID, SALESFORCE_CLIENT_SECRET and SALESFORCE_REFRESH_TOKEN`,
      );
    throw e;
  } finally {
    client.close();
  }
}
