// The zoho sink's definition: its flags, its config section, how it opens, and `leadledger auth zoho` (registry.ts
// lists it). Light: zod, the HTTP client and the sink are loaded only when a run or auth needs them.
import { join } from 'node:path';
import { userConfigDir } from '../../config-dir.js';
import { defineSink, type SinkFlag } from '../definition.js';
import { CREDENTIALS_FLAG } from '../transport/credentials-flag.js';
import { redactUrl } from '../transport/secure-url.js';
import { zohoConfigSchemaOf, type ZohoConfig } from './config.js';
import { costLine } from './credits.js';

const URL_FLAG: SinkFlag = {
  flags: '--zoho-url <url>',
  // No commander default: a flag's default would hide the config's sinks.zoho.url and the data centre.
  description:
    "Zoho CRM API base URL, instead of the data centre's (a proxy, the sandbox); its OAuth token endpoint is /oauth/v2/token under it",
  env: 'LEADLEDGER_ZOHO_URL',
};

const DC_FLAG: SinkFlag = {
  flags: '--zoho-dc <dc>',
  description:
    "Zoho data centre of the account: com, eu, in, com.au, jp, ca or com.cn (default: the config's dataCentre, the one `leadledger auth zoho` used, else com)",
  env: 'LEADLEDGER_ZOHO_DC',
};

interface ZohoDefinitionOptions {
  url?: string;
  dc?: string;
  credentials?: string;
  config?: ZohoConfig;
}

/** Zoho CRM Leads: inserted 100 a call (duplicates by email settle as already there), upserted by email on update. */
export const zoho = defineSink({
  name: 'zoho',
  summary:
    'Zoho CRM leads (API v8, 100 a call; a duplicate email settles as already there, upsert by email with --existing update); OAuth credentials from `leadledger auth zoho` or ZOHO_* variables',
  docs: {
    sends:
      'leads through API v8, 100 a call (`POST /crm/v8/Leads`): Zoho\'s duplicate check on Email answers DUPLICATE_DATA for a person the account holds, which settles as already in the CRM with its id; `--existing update` upserts (`POST /crm/v8/Leads/upsert`, `duplicate_check_fields: ["Email"]`). Batch answers (207) are read per record. Last_Name and Company, required by Zoho, get `[not provided]` when a lead lacks them (or fail alone: `sinks.zoho.missingRequired`). 1 API credit per 10 leads, told before a push and in a dry-run; stops before the 24 h credits run out (exit 7); keeps the edition\'s concurrency cap',
    batch: '100',
    inDoubt:
      'looked up by email, or phone without one (`GET /crm/v8/Leads/search`, a credit each), and sent again when not found: Zoho drops a repeated email (a duplicate, or the same update)',
  },
  examples: ['leadledger auth zoho && leadledger push events.jsonl --sink zoho --zoho-dc eu'],
  flags: [URL_FLAG, DC_FLAG, CREDENTIALS_FLAG],
  configSchema: (z) => zohoConfigSchemaOf(z),
  read: ({ flags, config }): ZohoDefinitionOptions => ({
    url: str(flags.zohoUrl),
    dc: str(flags.zohoDc),
    credentials: str(flags.credentials),
    config,
  }),
  shown: (o) => ({
    zohoUrl: o.url ? redactUrl(o.url) : o.config?.url ? redactUrl(o.config.url) : undefined,
    zohoDc: o.dc ?? o.config?.dataCentre,
  }),
  replayArgs: (o) => [
    ...(o.url ? ['--zoho-url', redactUrl(o.url)] : []),
    ...(o.dc !== undefined ? ['--zoho-dc', o.dc] : []),
    ...(o.credentials !== undefined ? ['--credentials', o.credentials] : []),
  ],
  spend: (_o, leads) => costLine(leads),
  credentialFiles: (o, env) => [{ path: o.credentials ?? join(userConfigDir(env), 'credentials.json'), named: false }],
  async open(o, ctx) {
    const [{ zohoOptions, openZohoSink }, { httpClientFor }] = await Promise.all([
      import('./options.js'),
      import('../transport/http.js'),
    ]);
    const options = zohoOptions({
      env: ctx.env,
      ...(o.url !== undefined ? { url: o.url } : {}),
      ...(o.dc !== undefined ? { dc: o.dc } : {}),
      ...(o.credentials !== undefined ? { credentials: o.credentials } : {}),
      ...(o.config !== undefined ? { config: o.config } : {}),
      ...(ctx.transport.allowInsecure !== undefined ? { allowInsecure: ctx.transport.allowInsecure } : {}),
    });
    const http = httpClientFor(ctx);
    const sink = await openZohoSink(options, { http, ...(ctx.warn ? { warn: ctx.warn } : {}) });
    return { sink, http };
  },
  authorizeHelp:
    'client id and secret from ZOHO_CLIENT_ID and ZOHO_CLIENT_SECRET (a Self Client of the Zoho API console); a grant code from ZOHO_GRANT_CODE (scope ZohoCRM.modules.leads.ALL), or a refresh token from ZOHO_REFRESH_TOKEN',
  authorizeFlags: [URL_FLAG, DC_FLAG, CREDENTIALS_FLAG],
  async authorize(args, ctx) {
    const [{ authorizeZoho }, { parseDataCentre }, { UsageError }] = await Promise.all([
      import('./auth.js'),
      import('./options.js'),
      import('../../errors.js'),
    ]);
    const secret = (name: string): string | undefined => ctx.env[name]?.trim() || undefined;
    const clientId = secret('ZOHO_CLIENT_ID');
    const clientSecret = secret('ZOHO_CLIENT_SECRET');
    if (!clientId || !clientSecret)
      throw new UsageError(
        'leadledger auth zoho needs ZOHO_CLIENT_ID and ZOHO_CLIENT_SECRET in the environment (a Self Client in the Zoho API console)',
      );
    const refreshToken = secret('ZOHO_REFRESH_TOKEN');
    const grantCode = secret('ZOHO_GRANT_CODE');
    const url = str(args.zohoUrl) ?? secret('LEADLEDGER_ZOHO_URL');
    const dc = str(args.zohoDc) ?? secret('LEADLEDGER_ZOHO_DC');
    const r = await authorizeZoho({
      clientId,
      clientSecret,
      env: ctx.env,
      ...(refreshToken ? { refreshToken } : grantCode ? { grantCode } : {}),
      ...(url ? { url } : {}),
      ...(dc ? { dc: parseDataCentre(dc) } : {}),
      ...(str(args.credentials) !== undefined ? { credentialsPath: str(args.credentials) } : {}),
      ...(ctx.allowInsecure ? { allowInsecure: true } : {}),
      ...(ctx.signal ? { signal: ctx.signal } : {}),
    });
    return {
      path: r.path,
      message: `Zoho CRM credentials written to ${r.path}${r.apiDomain ? ` (API domain ${r.apiDomain})` : ''}`,
    };
  },
});

function str(v: unknown): string | undefined {
  return typeof v === 'string' ? v : undefined;
}
