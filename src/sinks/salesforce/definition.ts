// The salesforce sink's definition: its flags, its config section, how it opens, and `leadledger auth salesforce`
// (registry.ts lists it). Light: zod, the HTTP client and the sink are loaded only when a run or auth needs them.
import { join } from 'node:path';
import { userConfigDir } from '../../config-dir.js';
import { defineSink, type SinkFlag } from '../definition.js';
import { CREDENTIALS_FLAG } from '../transport/credentials-flag.js';
import { redactUrl } from '../transport/secure-url.js';
import { salesforceConfigSchemaWith, type SalesforceConfig } from './config.js';

const DEFAULT_LOGIN_URL = 'https://login.salesforce.com';
const DEFAULT_VERSION = 'v62.0';
const DEFAULT_FIELD = 'Leadledger_Key__c';

const URL_FLAG: SinkFlag = {
  flags: '--salesforce-url <url>',
  // No commander default: a flag's default would hide the config's sinks.salesforce.url.
  description: `Salesforce instance URL (https://<my-domain>.my.salesforce.com); its token endpoint is /services/oauth2/token under it (default: the config's sinks.salesforce.url, else the instance the token answer names, tokens from ${DEFAULT_LOGIN_URL})`,
  env: 'LEADLEDGER_SALESFORCE_URL',
};

interface SalesforceDefinitionOptions {
  url?: string;
  apiVersion?: string;
  externalId?: string | false;
  externalIdNamed: boolean;
  jwtKey?: string;
  credentials?: string;
  config: SalesforceConfig | undefined;
}

/** Salesforce Leads, upserted 200 a request by leadledger's key in an External ID field (or created after a lookup). */
export const salesforce = defineSink({
  name: 'salesforce',
  summary:
    'Salesforce Leads (sObject Collections, 200 a request, upserted by leadledger’s key in an External ID field); OAuth from `leadledger auth salesforce`, SALESFORCE_* variables or a JWT key file',
  docs: {
    sends:
      'Leads through sObject Collections, 200 a request (`allOrNone: false`): upserted by leadledger’s key in the External ID field `Leadledger_Key__c` (`PATCH /composite/sobjects/Lead/Leadledger_Key__c`; `--salesforce-external-id` names another), else created (`POST /composite/sobjects`); people the org holds are found by email first (SOQL) and settle as already in the CRM, as do `DUPLICATES_DETECTED` refusals. LastName and Company get `[not provided]` when missing (or fail alone, by config). Stops before the daily API allowance (`Sforce-Limit-Info`) runs out (exit 7)',
    batch: '200',
    inDoubt:
      'with the External ID field, simply re-sent (the upsert updates the Lead its first attempt made); without it, looked up by email (SOQL) before a re-send',
  },
  examples: [
    'leadledger auth salesforce && leadledger push events.jsonl --sink salesforce',
    'SALESFORCE_CLIENT_ID=... SALESFORCE_USERNAME=ops@acme.com leadledger push events.jsonl --sink salesforce --salesforce-jwt-key key.pem',
  ],
  flags: [
    URL_FLAG,
    {
      flags: '--salesforce-api-version <version>',
      description: `Salesforce REST API version (default: the config's sinks.salesforce.apiVersion, else ${DEFAULT_VERSION})`,
    },
    {
      flags: '--salesforce-external-id <field>',
      description: `Lead field (External ID, Unique) that holds leadledger's key; leads are upserted by it (default: the config's sinks.salesforce.externalIdField, else ${DEFAULT_FIELD} when Lead has it)`,
    },
    {
      flags: '--salesforce-jwt-key <file>',
      description:
        "private key (PEM) of the connected app's certificate: the JWT bearer flow, with SALESFORCE_CLIENT_ID and SALESFORCE_USERNAME",
      env: 'SALESFORCE_JWT_KEY_FILE',
    },
    CREDENTIALS_FLAG,
  ],
  configSchema: (z) => salesforceConfigSchemaWith(z),
  read: ({ flags, config }): SalesforceDefinitionOptions => {
    const named = str(flags.salesforceExternalId);
    return {
      url: str(flags.salesforceUrl) ?? config?.url,
      apiVersion: str(flags.salesforceApiVersion) ?? config?.apiVersion,
      externalId: named ?? config?.externalIdField,
      externalIdNamed: named !== undefined || typeof config?.externalIdField === 'string',
      jwtKey: str(flags.salesforceJwtKey),
      credentials: str(flags.credentials),
      config,
    };
  },
  shown: (o) => ({
    salesforceUrl: o.url ? redactUrl(o.url) : undefined,
    salesforceApiVersion: o.apiVersion ?? DEFAULT_VERSION,
    salesforceExternalId: o.externalId ?? DEFAULT_FIELD,
  }),
  replayArgs: (o) => [
    ...(o.url ? ['--salesforce-url', redactUrl(o.url)] : []),
    ...(o.apiVersion ? ['--salesforce-api-version', o.apiVersion] : []),
    ...(typeof o.externalId === 'string' && o.externalIdNamed ? ['--salesforce-external-id', o.externalId] : []),
    ...(o.jwtKey ? ['--salesforce-jwt-key', o.jwtKey] : []),
    ...(o.credentials !== undefined ? ['--credentials', o.credentials] : []),
  ],
  credentialFiles: (o, env) => [
    { path: o.credentials ?? join(userConfigDir(env), 'credentials.json'), named: false },
    ...(o.jwtKey ? [{ path: o.jwtKey, named: true }] : []),
  ],
  async open(o, ctx) {
    const [{ openSalesforceSink }, { httpClientFor }] = await Promise.all([
      import('./options.js'),
      import('../transport/http.js'),
    ]);
    const http = httpClientFor(ctx);
    const sink = await openSalesforceSink(
      {
        ...(o.url !== undefined ? { url: o.url } : {}),
        ...(o.apiVersion !== undefined ? { apiVersion: o.apiVersion } : {}),
        ...(o.externalId !== undefined ? { externalId: o.externalId } : {}),
        externalIdNamed: o.externalIdNamed,
        ...(o.jwtKey !== undefined ? { jwtKey: o.jwtKey } : {}),
        ...(o.credentials !== undefined ? { credentials: o.credentials } : {}),
        ...(o.config !== undefined ? { config: o.config } : {}),
        ...(ctx.transport.allowInsecure !== undefined ? { allowInsecure: ctx.transport.allowInsecure } : {}),
      },
      { http, env: ctx.env, ...(ctx.warn ? { warn: ctx.warn } : {}) },
    ).catch((e: unknown) => {
      http.close();
      throw e;
    });
    return { sink, http };
  },
  authorizeHelp:
    "your connected app's consumer key and secret from SALESFORCE_CLIENT_ID and SALESFORCE_CLIENT_SECRET, and a refresh token of it from SALESFORCE_REFRESH_TOKEN: checked by one refresh, then kept with the org's instance URL (the JWT bearer flow needs no auth: --salesforce-jwt-key)",
  authorizeFlags: [URL_FLAG, CREDENTIALS_FLAG],
  async authorize(args, ctx) {
    const [{ authorize }, { UsageError }] = await Promise.all([import('./auth.js'), import('../../errors.js')]);
    const secret = (name: string): string | undefined => ctx.env[name]?.trim() || undefined;
    const clientId = secret('SALESFORCE_CLIENT_ID');
    const clientSecret = secret('SALESFORCE_CLIENT_SECRET');
    const refreshToken = secret('SALESFORCE_REFRESH_TOKEN');
    if (!clientId || !clientSecret || !refreshToken)
      throw new UsageError(
        'leadledger auth salesforce needs SALESFORCE_CLIENT_ID, SALESFORCE_CLIENT_SECRET (your connected app) and SALESFORCE_REFRESH_TOKEN in the environment',
      );
    const base = str(args.salesforceUrl) ?? ctx.env.LEADLEDGER_SALESFORCE_URL ?? DEFAULT_LOGIN_URL;
    const result = await authorize({
      clientId,
      clientSecret,
      refreshToken,
      tokenBase: base.replace(/\/+$/, ''),
      env: ctx.env,
      ...(str(args.credentials) !== undefined ? { credentialsPath: str(args.credentials)! } : {}),
      ...(ctx.allowInsecure ? { allowInsecure: true } : {}),
      ...(ctx.signal ? { signal: ctx.signal } : {}),
    });
    return {
      path: result.path,
      message: `Salesforce credentials written to ${result.path}${result.instanceUrl ? ` (instance ${redactUrl(result.instanceUrl)})` : ''}`,
    };
  },
});

function str(v: unknown): string | undefined {
  return typeof v === 'string' ? v : undefined;
}
