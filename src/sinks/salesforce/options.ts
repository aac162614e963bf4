// Opening the Salesforce sink from its definition's options and the environment: which credentials (JWT key file,
// refresh token from the environment or the credentials file, a bare access token), where the token endpoint and the
// instance are, and whether Lead has leadledger's External ID field (describe, before the first lead is sent).
// Secrets come from the environment or files only, never from a flag.
import { readFile } from 'node:fs/promises';
import { LeadledgerError, UnreachableError, UsageError } from '../../errors.js';
import type { HttpClient } from '../transport/http.js';
import { CredentialsFile, defaultCredentialsPath } from '../transport/credentials.js';
import { OAuth2Session, type OAuth2Provider, type TokenResponse } from '../transport/oauth2.js';
import { checkSinkUrl } from '../transport/secure-url.js';
import type { SalesforceConfig } from './config.js';
import { JwtSession, readPrivateKey, type TokenSession } from './jwt.js';
import {
  DEFAULT_API_VERSION,
  DEFAULT_EXTERNAL_ID,
  SALESFORCE_LOGIN_URL,
  SalesforceSink,
  isExpiredSession,
  normalizeApiVersion,
} from './sink.js';

/** The options the definition read (no secret among them). */
export interface SalesforceOpenOptions {
  /** --salesforce-url / LEADLEDGER_SALESFORCE_URL / sinks.salesforce.url: the instance, and its token endpoint. */
  url?: string;
  apiVersion?: string;
  /** --salesforce-external-id, or the config's externalIdField (false: none). */
  externalId?: string | false;
  /** Whether the user named the field (flag or config): its absence is then an error, not a fallback. */
  externalIdNamed: boolean;
  jwtKey?: string;
  credentials?: string;
  config?: SalesforceConfig;
  allowInsecure?: boolean;
}

/** Salesforce's OAuth as transport/oauth2.ts sees it: form-encoded, INVALID_SESSION_ID is an expired session. */
export function salesforceOAuthProvider(tokenBase: string): OAuth2Provider {
  return {
    name: 'Salesforce',
    section: 'salesforce',
    tokenUrl: `${tokenBase.replace(/\/+$/, '')}/services/oauth2/token`,
    reauthCommand: 'leadledger auth salesforce',
    bodyFormat: 'form',
    isExpiredToken: isExpiredSession,
  };
}

/**
 * Opens the sink: credentials read, an access token obtained (its answer names the instance), Lead described to
 * learn whether the External ID field is there. UsageError for what is missing, CredentialsError for what is refused.
 */
export async function openSalesforceSink(
  o: SalesforceOpenOptions,
  deps: { http: HttpClient; env: Record<string, string | undefined>; warn?: (m: string) => void },
): Promise<SalesforceSink> {
  const { http, env } = deps;
  const secret = (name: string): string | undefined => env[name]?.trim() || undefined;
  const url = o.url?.trim().replace(/\/+$/, '') || undefined;
  if (url) checkSinkUrl(url, 'Salesforce', o.allowInsecure);
  const loginUrl = (o.config?.loginUrl ?? SALESFORCE_LOGIN_URL).replace(/\/+$/, '');
  checkSinkUrl(loginUrl, 'Salesforce login', o.allowInsecure);
  const tokenBase = url ?? loginUrl;
  const provider = salesforceOAuthProvider(tokenBase);
  const credentialsPath = o.credentials ?? defaultCredentialsPath(env);
  const store = new CredentialsFile(credentialsPath);
  const clientId = secret('SALESFORCE_CLIENT_ID');
  let instance: string | undefined = url;
  const onToken = (got: TokenResponse): void => {
    const i = got.extra?.instance_url;
    if (i && !url) instance = i.replace(/\/+$/, '');
  };
  let session: TokenSession;
  if (o.jwtKey) {
    const username = secret('SALESFORCE_USERNAME') ?? o.config?.username;
    if (!clientId || !username)
      throw new UsageError(
        "the JWT bearer flow (--salesforce-jwt-key) needs SALESFORCE_CLIENT_ID (the connected app's consumer key) and SALESFORCE_USERNAME (or sinks.salesforce.username)",
      );
    let pem: string;
    try {
      pem = await readFile(o.jwtKey, 'utf8');
    } catch (e) {
      throw new UsageError(
        `--salesforce-jwt-key ${o.jwtKey}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`,
      );
    }
    let key;
    try {
      key = readPrivateKey(pem, o.jwtKey);
    } catch (e) {
      throw new UsageError((e as Error).message);
    }
    session = new JwtSession({ http, provider, clientId, username, audience: tokenBase, key, onToken });
  } else {
    const stored = await store.read('salesforce');
    const mine = stored && (!clientId || !stored.client_id || stored.client_id === clientId) ? stored : undefined;
    const id = clientId ?? mine?.client_id;
    const clientSecret = secret('SALESFORCE_CLIENT_SECRET') ?? mine?.client_secret;
    const refreshToken = secret('SALESFORCE_REFRESH_TOKEN');
    const accessToken = secret('SALESFORCE_ACCESS_TOKEN');
    const renewable = !!id && !!clientSecret && !!(refreshToken ?? mine?.refresh_token);
    if (!accessToken && !renewable)
      throw new UsageError(
        `Salesforce needs credentials: run \`leadledger auth salesforce\` (it writes ${credentialsPath}), set ` +
          'SALESFORCE_CLIENT_ID, SALESFORCE_CLIENT_SECRET and SALESFORCE_REFRESH_TOKEN, use the JWT bearer flow ' +
          '(--salesforce-jwt-key with SALESFORCE_CLIENT_ID and SALESFORCE_USERNAME), or SALESFORCE_ACCESS_TOKEN for a short job',
      );
    if (await store.readableByOthers())
      deps.warn?.(`${credentialsPath} can be read by other users: chmod 600 it (it holds Salesforce's tokens)`);
    if (!url && typeof mine?.instance_url === 'string') instance = mine.instance_url.replace(/\/+$/, '');
    session = new OAuth2Session({
      http,
      provider,
      ...(id ? { clientId: id } : {}),
      ...(clientSecret ? { clientSecret } : {}),
      ...(refreshToken ? { refreshToken } : {}),
      ...(accessToken ? { accessToken } : {}),
      store,
      onToken,
      ...(deps.warn ? { warn: deps.warn } : {}),
    });
  }
  // The instance comes with the token: ask for one now, unless a flag or the credentials file named it.
  try {
    if (!instance) await session.token();
  } catch (e) {
    if (e instanceof LeadledgerError) throw e;
    throw new UnreachableError(`could not obtain a Salesforce access token: ${http.redact((e as Error).message)}`);
  }
  if (!instance)
    throw new UsageError(
      'Salesforce did not say which instance the org is on: give its URL with --salesforce-url (https://<my-domain>.my.salesforce.com)',
    );
  const apiVersion = normalizeApiVersion(o.apiVersion ?? o.config?.apiVersion ?? DEFAULT_API_VERSION);
  const base = {
    http,
    session,
    instanceUrl: instance,
    apiVersion,
    ...(o.config ? { config: o.config } : {}),
    ...(o.allowInsecure !== undefined ? { allowInsecure: o.allowInsecure } : {}),
  };
  const wanted = o.externalId === undefined ? DEFAULT_EXTERNAL_ID : o.externalId;
  if (wanted === false) return new SalesforceSink(base);
  // Before the first lead: is the External ID field there? describe Lead (one request).
  let fields;
  try {
    fields = await new SalesforceSink(base).describeLead();
  } catch (e) {
    if (e instanceof LeadledgerError) throw e;
    throw new UnreachableError(
      `Salesforce at ${instance} could not tell whether Lead has the field ${wanted}: ${http.redact((e as Error).message)}`,
    );
  }
  const field = fields.find((f) => f.name.toLowerCase() === wanted.toLowerCase());
  if (field?.externalId) {
    if (!field.unique)
      deps.warn?.(
        `Lead.${field.name} is an External ID but not Unique: mark it Unique, or two leads could hold one key (Salesforce then answers 300)`,
      );
    return new SalesforceSink({ ...base, externalId: field.name });
  }
  const what = field ? `Lead.${field.name} is not marked External ID` : `Lead has no field ${wanted}`;
  if (o.externalIdNamed)
    throw new UsageError(
      `${what}: create it (Text(64), External ID, Unique: the README's Salesforce section says how), or set sinks.salesforce.externalIdField to false to create leads after a lookup by email`,
    );
  deps.warn?.(
    `${what} (External ID, Unique): leads are created after a lookup by email, and a batch whose answer is lost is looked up before anything is sent again. With the field (the README's Salesforce section says how to create it), leads are upserted by leadledger's key`,
  );
  return new SalesforceSink(base);
}
