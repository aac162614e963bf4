// The RD Station sink's options, from flags, the environment and the config file's sinks.rdstation section (plain
// values, as the CLI and the config reader have them), and opening the sink from them. Secrets come from the
// environment or the credentials file only, never from a flag.
import { z } from 'zod';
import { UsageError } from '../../errors.js';
import { HttpClient, type HttpClientOptions } from '../transport/http.js';
import { checkSinkUrl } from '../transport/secure-url.js';
import { CredentialsFile, defaultCredentialsPath } from '../transport/credentials.js';
import { OAuth2Session, type OAuth2Provider } from '../transport/oauth2.js';
import { rdstationConfigSchemaWith } from './config.js';
import type { RdStationConfig } from './fields.js';
import { DEFAULT_CONVERSION_IDENTIFIER, RDSTATION_DEFAULT_URL, RdStationSink } from './sink.js';

/** The flags' values, as given (undefined when absent). */
export interface RdStationFlagValues {
  /** --rdstation-url */
  rdstationUrl?: string;
  /** --conversion */
  conversion?: string;
  /** --credentials <file> */
  credentials?: string;
  /** --allow-insecure */
  allowInsecure?: boolean;
}

/** Everything the RD Station sink needs, resolved. Holds secrets: never print or store it whole. */
export interface RdStationOptions {
  baseUrl: string;
  /** The OAuth token endpoint: /auth/token under the base URL. */
  tokenUrl: string;
  conversionIdentifier: string;
  credentialsPath: string;
  clientId?: string;
  clientSecret?: string;
  refreshToken?: string;
  accessToken?: string;
  config: RdStationConfig;
  /** Requests per second for the HTTP client: the account's per-minute limit, with 5% kept free. */
  rate: number;
  allowInsecure: boolean;
}

/** The config file's sinks.rdstation section (unknown keys are errors). */
export const rdstationConfigSchema = rdstationConfigSchemaWith(z);

/** The token endpoint's and messages' view of RD Station's OAuth, for a base URL. */
export function rdstationOAuthProvider(baseUrl: string): OAuth2Provider {
  return {
    name: 'RD Station',
    section: 'rdstation',
    tokenUrl: `${baseUrl.replace(/\/+$/, '')}/auth/token`,
    reauthCommand: 'leadledger auth rdstation',
    bodyFormat: 'json',
  };
}

/**
 * Resolve the RD Station sink's options from flag values, the environment (LEADLEDGER_RDSTATION_URL,
 * RDSTATION_CLIENT_ID, RDSTATION_CLIENT_SECRET, RDSTATION_REFRESH_TOKEN, RDSTATION_ACCESS_TOKEN, XDG_CONFIG_HOME)
 * and the config's sinks.rdstation section. UsageError on a bad value; credentials are checked by openRdStationSink.
 */
export function rdstationOptions(
  flags: RdStationFlagValues,
  env: Record<string, string | undefined> = process.env,
  configSection?: unknown,
): RdStationOptions {
  const parsed = rdstationConfigSchema.safeParse(configSection ?? {});
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const at = issue?.path.length ? `.${issue.path.join('.')}` : '';
    throw new UsageError(`sinks.rdstation${at}: ${issue?.message ?? 'invalid'}`);
  }
  const config = parsed.data;
  const baseUrl = (flags.rdstationUrl ?? env.LEADLEDGER_RDSTATION_URL ?? RDSTATION_DEFAULT_URL).trim();
  const allowInsecure = flags.allowInsecure ?? false;
  checkSinkUrl(baseUrl, 'RD Station', allowInsecure);
  const conversion = (flags.conversion ?? config.conversionIdentifier ?? DEFAULT_CONVERSION_IDENTIFIER).trim();
  if (!conversion)
    throw new UsageError('--conversion needs a conversion identifier (RD Station names the event by it)');
  const secret = (name: string): string | undefined => env[name]?.trim() || undefined;
  const perMinute = config.requestsPerMinute ?? 120;
  return {
    baseUrl,
    tokenUrl: rdstationOAuthProvider(baseUrl).tokenUrl,
    conversionIdentifier: conversion,
    credentialsPath: flags.credentials ?? defaultCredentialsPath(env),
    ...optional('clientId', secret('RDSTATION_CLIENT_ID')),
    ...optional('clientSecret', secret('RDSTATION_CLIENT_SECRET')),
    ...optional('refreshToken', secret('RDSTATION_REFRESH_TOKEN')),
    ...optional('accessToken', secret('RDSTATION_ACCESS_TOKEN')),
    config,
    rate: (perMinute * 0.95) / 60,
    allowInsecure,
  };
}

function optional<K extends string>(k: K, v: string | undefined): Partial<Record<K, string>> {
  return v === undefined ? {} : ({ [k]: v } as Record<K, string>);
}

/**
 * Open the RD Station sink: read the credentials file for what the environment does not give, check that some
 * credentials exist, and build the OAuth session and the sink. UsageError, saying how to authorize, when none do.
 */
export async function openRdStationSink(
  opts: RdStationOptions,
  deps: {
    http?: HttpClient;
    httpOptions?: HttpClientOptions;
    warn?: (message: string) => void;
    now?: () => number;
  } = {},
): Promise<RdStationSink> {
  const store = new CredentialsFile(opts.credentialsPath);
  const stored = await store.read('rdstation');
  const clientId = opts.clientId ?? stored?.client_id;
  const clientSecret = opts.clientSecret ?? stored?.client_secret;
  const renewable = !!clientId && !!clientSecret && !!(opts.refreshToken ?? stored?.refresh_token);
  if (!opts.accessToken && !renewable) {
    if ((clientId === undefined) !== (clientSecret === undefined))
      throw new UsageError('RD Station needs both RDSTATION_CLIENT_ID and RDSTATION_CLIENT_SECRET');
    throw new UsageError(
      `RD Station needs credentials: run \`leadledger auth rdstation\` (it writes ${opts.credentialsPath}), or set ` +
        'RDSTATION_CLIENT_ID, RDSTATION_CLIENT_SECRET and RDSTATION_REFRESH_TOKEN (RDSTATION_ACCESS_TOKEN alone for a short job)',
    );
  }
  if (await store.readableByOthers())
    deps.warn?.(`${opts.credentialsPath} can be read by other users: chmod 600 it (it holds RD Station's tokens)`);
  const http = deps.http ?? new HttpClient({ rate: opts.rate, ...deps.httpOptions });
  const session = new OAuth2Session({
    http,
    provider: rdstationOAuthProvider(opts.baseUrl),
    ...(clientId ? { clientId } : {}),
    ...(clientSecret ? { clientSecret } : {}),
    ...(opts.refreshToken ? { refreshToken: opts.refreshToken } : {}),
    ...(opts.accessToken ? { accessToken: opts.accessToken } : {}),
    store,
    ...(deps.warn ? { warn: deps.warn } : {}),
    ...(deps.now ? { now: deps.now } : {}),
  });
  return new RdStationSink({
    http,
    session,
    baseUrl: opts.baseUrl,
    conversionIdentifier: opts.conversionIdentifier,
    config: opts.config,
    allowInsecure: opts.allowInsecure,
    ...(deps.now ? { now: deps.now } : {}),
  });
}
