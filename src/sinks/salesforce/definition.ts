// The salesforce sink's definition: its flags, its config section, how it opens, and `leadledger auth salesforce`
// (registry.ts lists it). Light: zod, the HTTP client and the sink are loaded only when a run or auth needs them.
import { join } from 'node:path';
import { userConfigDir } from '../../config-dir.js';
import { defineSink, type SinkFlag, type SinkOpenContext, type SinkSetupLine } from '../definition.js';
import type { HttpClient } from '../transport/http.js';
import type { SalesforceSink } from './sink.js';
import { CREDENTIALS_FLAG } from '../transport/credentials-flag.js';
import { redactUrl } from '../transport/secure-url.js';
import { salesforceConfigSchemaWith, type SalesforceConfig } from './config.js';

const DEFAULT_LOGIN_URL = 'https://login.salesforce.com';
const DEFAULT_VERSION = 'v62.0';
const DEFAULT_FIELD = 'Leadledger_Key__c';
// ExitCode.usage (errors.ts, not imported: a definition stays light): what is missing, not what was refused.
const USAGE_EXIT = 2;

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
  open: (o, ctx) => openWith(o, ctx),
  async setup(o, ctx) {
    if (o.externalId === false)
      return [
        {
          status: 'ok',
          message:
            'sinks.salesforce.externalIdField is false: leads are created after a lookup by email; nothing to create in Salesforce',
        },
      ];
    const name = o.externalId ?? DEFAULT_FIELD;
    const label = name.replace(/__c$/i, '');
    const lines: SinkSetupLine[] = [
      {
        status: 'todo',
        message: `leadledger upserts Leads by its key in the Lead field ${name}; create it once: Setup → Object Manager → Lead → Fields & Relationships → New → Text, length 64, Field Name ${label} (API name ${name}), with External ID and Unique (case sensitive) checked, and give the user leadledger runs as Edit access to it`,
      },
    ];
    // Opened without the field check (externalId false): an error here is about credentials or the org, not the field.
    let opened: { sink: SalesforceSink; http: HttpClient };
    try {
      opened = await openWith({ ...o, externalId: false }, ctx);
    } catch (e) {
      const code = (e as { exitCode?: unknown }).exitCode;
      if (code === USAGE_EXIT)
        return [
          ...lines,
          {
            status: 'warn',
            message: `not checked: ${(e as Error).message}. Once credentials are in place, \`leadledger doctor --sink salesforce\` says whether Lead has ${name}`,
          },
        ];
      return [
        ...lines,
        { status: 'fail', message: (e as Error).message, exitCode: typeof code === 'number' ? code : 1 },
      ];
    }
    try {
      const fields = await opened.sink.describeLead();
      const f = fields.find((x) => x.name.toLowerCase() === name.toLowerCase());
      if (!f) lines.push({ status: 'fail', message: `Lead has no field ${name} (describe): create it as above` });
      else if (!f.externalId)
        lines.push({
          status: 'fail',
          message: `Lead.${f.name} is there but not External ID: edit it, check External ID and Unique`,
        });
      else if (!f.unique)
        lines.push({ status: 'fail', message: `Lead.${f.name} is External ID but not Unique: edit it, check Unique` });
      else
        lines.push({
          status: 'ok',
          message: `Lead.${f.name} is there, External ID and Unique (describe): leads will be upserted by leadledger's key`,
        });
    } catch (e) {
      lines.push({ status: 'fail', message: (e as Error).message, exitCode: 1 });
    } finally {
      await opened.sink.close();
    }
    return lines;
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

/** Opens the sink (options.ts, loaded only now) with a fresh HTTP client, closed again if opening fails. */
async function openWith(
  o: SalesforceDefinitionOptions,
  ctx: SinkOpenContext,
): Promise<{ sink: SalesforceSink; http: HttpClient }> {
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
}

function str(v: unknown): string | undefined {
  return typeof v === 'string' ? v : undefined;
}
