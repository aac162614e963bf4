// The Zoho CRM sink's options from plain values (flags, environment, the config's sinks.zoho section) and opening the
// sink from them. Where the account is: --zoho-url (or LEADLEDGER_ZOHO_URL, or the config's url) names the API base,
// and its OAuth token endpoint is /oauth/v2/token under it; else the data centre (--zoho-dc, the config's dataCentre,
// the credentials file's, default com) names the accounts server, and the API domain comes with each token
// (api_domain). Secrets come from the environment or the credentials file only, never from a flag.
import { z } from 'zod';
import { UsageError } from '../../errors.js';
import { CredentialsFile, defaultCredentialsPath } from '../transport/credentials.js';
import type { HttpClient } from '../transport/http.js';
import { OAuth2Session, type OAuth2Provider } from '../transport/oauth2.js';
import { checkSinkUrl } from '../transport/secure-url.js';
import { ZOHO_DATA_CENTRES, zohoConfigSchemaOf, type ZohoConfig, type ZohoDataCentre } from './config.js';
import { ZohoSink } from './sink.js';

/** The config file's sinks.zoho section; unknown keys are errors. */
export const zohoConfigSchema = zohoConfigSchemaOf(z);

/** The accounts server (OAuth) and default API domain of a data centre. */
export function zohoDataCentre(dc: ZohoDataCentre): { accounts: string; api: string } {
  // Canada's accounts server is on zohocloud.ca; every other data centre's is accounts.zoho.<dc>.
  const accounts = dc === 'ca' ? 'https://accounts.zohocloud.ca' : `https://accounts.zoho.${dc}`;
  return { accounts, api: `https://www.zohoapis.${dc}` };
}

/** A data centre as a user writes it (".eu", "EU", "zoho.eu"), or UsageError naming the ones there are. */
export function parseDataCentre(v: string): ZohoDataCentre {
  const d = v
    .trim()
    .toLowerCase()
    .replace(/^(https?:\/\/)?(accounts\.)?(zoho\.)?\.?/, '');
  if ((ZOHO_DATA_CENTRES as readonly string[]).includes(d)) return d as ZohoDataCentre;
  throw new UsageError(
    `--zoho-dc takes one of ${ZOHO_DATA_CENTRES.join(', ')} (the end of your Zoho address), not '${v}'`,
  );
}

/** Zoho's OAuth as leadledger sees it, for a token endpoint. */
export function zohoOAuthProvider(tokenUrl: string): OAuth2Provider {
  return {
    name: 'Zoho CRM',
    section: 'zoho',
    tokenUrl,
    reauthCommand: 'leadledger auth zoho',
    bodyFormat: 'form',
    // Zoho's 401 for an expired access token is {"code":"INVALID_TOKEN"}, without WWW-Authenticate.
    isExpiredToken: (res) => /"code"\s*:\s*"INVALID_TOKEN"/.test(res.text),
  };
}

/** The plain values the options come from. */
export interface ZohoOptionValues {
  /** --zoho-url, or LEADLEDGER_ZOHO_URL. */
  url?: string;
  /** --zoho-dc */
  dc?: string;
  /** --credentials */
  credentials?: string;
  config?: unknown;
  env: Record<string, string | undefined>;
  allowInsecure?: boolean;
}

/** Everything the sink needs but its HTTP client. Holds secrets: never print or store it whole. */
export interface ZohoOptions {
  /** The API base when a URL named it (then fixed), else undefined (the token's api_domain, or the data centre's). */
  url?: string;
  dc?: ZohoDataCentre;
  credentialsPath: string;
  clientId?: string;
  clientSecret?: string;
  refreshToken?: string;
  accessToken?: string;
  config: ZohoConfig;
  allowInsecure: boolean;
}

/** Parse the config section; UsageError naming the key at fault. */
export function parseZohoConfig(config: unknown): ZohoConfig {
  if (config === undefined) return {};
  const r = zohoConfigSchema.safeParse(config);
  if (r.success) return r.data;
  const issue = r.error.issues[0];
  const at = issue?.path.length ? `sinks.zoho.${issue.path.join('.')}` : 'sinks.zoho';
  throw new UsageError(`config ${at}: ${issue?.message ?? 'invalid'}`);
}

/** Resolve the options from flags, environment (ZOHO_CLIENT_ID, ZOHO_CLIENT_SECRET, ZOHO_REFRESH_TOKEN, ZOHO_ACCESS_TOKEN) and config. */
export function zohoOptions(v: ZohoOptionValues): ZohoOptions {
  const config = parseZohoConfig(v.config);
  const url = (v.url ?? v.env.LEADLEDGER_ZOHO_URL ?? config.url)?.trim() || undefined;
  const allowInsecure = v.allowInsecure ?? false;
  if (url) checkSinkUrl(url, 'Zoho CRM', allowInsecure);
  const dc = v.dc !== undefined ? parseDataCentre(v.dc) : config.dataCentre;
  const secret = (name: string): string | undefined => v.env[name]?.trim() || undefined;
  const o: ZohoOptions = {
    credentialsPath: v.credentials ?? defaultCredentialsPath(v.env),
    config,
    allowInsecure,
  };
  if (url) o.url = url;
  if (dc) o.dc = dc;
  const set = (k: 'clientId' | 'clientSecret' | 'refreshToken' | 'accessToken', name: string): void => {
    const s = secret(name);
    if (s !== undefined) o[k] = s;
  };
  set('clientId', 'ZOHO_CLIENT_ID');
  set('clientSecret', 'ZOHO_CLIENT_SECRET');
  set('refreshToken', 'ZOHO_REFRESH_TOKEN');
  set('accessToken', 'ZOHO_ACCESS_TOKEN');
  return o;
}

/** The token endpoint and API base of the options, given the credentials file's section (its dc and api_domain). */
export function zohoEndpoints(
  o: Pick<ZohoOptions, 'url' | 'dc'>,
  stored?: Record<string, unknown>,
): { tokenUrl: string; apiBase: string; fixed: boolean } {
  if (o.url) return { tokenUrl: `${o.url.replace(/\/+$/, '')}/oauth/v2/token`, apiBase: o.url, fixed: true };
  const storedDc = typeof stored?.dc === 'string' && (ZOHO_DATA_CENTRES as readonly string[]).includes(stored.dc);
  const dc = o.dc ?? (storedDc ? (stored.dc as ZohoDataCentre) : 'com');
  const { accounts, api } = zohoDataCentre(dc);
  // The api_domain a token of this data centre came with (auth wrote it), when the data centre is the same.
  const apiDomain = typeof stored?.api_domain === 'string' && (!o.dc || o.dc === stored.dc) ? stored.api_domain : api;
  return { tokenUrl: `${accounts}/oauth/v2/token`, apiBase: apiDomain, fixed: false };
}

/**
 * Open the Zoho sink: read the credentials file for what the environment does not give, check that some credentials
 * exist, and build the OAuth session and the sink. UsageError, saying how to authorize, when none do.
 */
export async function openZohoSink(
  o: ZohoOptions,
  deps: { http: HttpClient; warn?: (message: string) => void; now?: () => number },
): Promise<ZohoSink> {
  const store = new CredentialsFile(o.credentialsPath);
  const stored = await store.read('zoho');
  const clientId = o.clientId ?? stored?.client_id;
  const clientSecret = o.clientSecret ?? stored?.client_secret;
  const renewable = !!clientId && !!clientSecret && !!(o.refreshToken ?? stored?.refresh_token);
  if (!o.accessToken && !renewable) {
    if ((clientId === undefined) !== (clientSecret === undefined))
      throw new UsageError('Zoho CRM needs both ZOHO_CLIENT_ID and ZOHO_CLIENT_SECRET');
    throw new UsageError(
      `Zoho CRM needs credentials: run \`leadledger auth zoho\` (it writes ${o.credentialsPath}), or set ` +
        'ZOHO_CLIENT_ID, ZOHO_CLIENT_SECRET and ZOHO_REFRESH_TOKEN (ZOHO_ACCESS_TOKEN alone for a short job)',
    );
  }
  if (await store.readableByOthers())
    deps.warn?.(`${o.credentialsPath} can be read by other users: chmod 600 it (it holds Zoho CRM's tokens)`);
  const { tokenUrl, apiBase, fixed } = zohoEndpoints(o, stored);
  const holder: { sink?: ZohoSink } = {};
  const session = new OAuth2Session({
    http: deps.http,
    provider: zohoOAuthProvider(tokenUrl),
    ...(clientId ? { clientId } : {}),
    ...(clientSecret ? { clientSecret } : {}),
    ...(o.refreshToken ? { refreshToken: o.refreshToken } : {}),
    ...(o.accessToken ? { accessToken: o.accessToken } : {}),
    store,
    ...(deps.warn ? { warn: deps.warn } : {}),
    ...(deps.now ? { now: deps.now } : {}),
    // The API domain comes with each token (the account's data centre), unless a URL named the base.
    onToken: (got) => {
      const domain = got.extra?.api_domain;
      if (!fixed && domain) holder.sink?.useApiDomain(domain);
    },
  });
  const sink = new ZohoSink({
    http: deps.http,
    session,
    apiBase,
    followApiDomain: !fixed,
    config: o.config,
    allowInsecure: o.allowInsecure,
  });
  holder.sink = sink;
  return sink;
}
