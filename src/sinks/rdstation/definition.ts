// The rdstation sink's definition: its flags, its config section, how it opens, and `leadledger auth rdstation`
// (registry.ts lists it). Light: zod, the HTTP client and the sink are loaded only when a run or auth needs them.
import { join } from 'node:path';
import { userConfigDir } from '../../config-dir.js';
import { defineSink, type SinkFlag } from '../definition.js';
import { CREDENTIALS_FLAG } from '../transport/credentials-flag.js';
import { redactUrl } from '../transport/secure-url.js';
import { rdstationConfigSchemaWith } from './config.js';
import type { RdStationConfig } from './fields.js';

const DEFAULT_URL = 'https://api.rd.services';
const DEFAULT_CONVERSION = 'leadledger';

const URL_FLAG: SinkFlag = {
  flags: '--rdstation-url <url>',
  // No commander default: a flag's default would hide the config's sinks.rdstation.url.
  description: `RD Station Marketing API base URL (its OAuth token endpoint is /auth/token under it; default: the config's sinks.rdstation.url, else ${DEFAULT_URL})`,
  env: 'LEADLEDGER_RDSTATION_URL',
};

interface RdStationDefinitionOptions {
  rdstationUrl: string;
  conversion?: string;
  credentials?: string;
  config: RdStationConfig | undefined;
}

/** RD Station Marketing: one conversion per new lead, OAuth 2 credentials refreshed unattended. */
export const rdstation = defineSink({
  name: 'rdstation',
  summary:
    'RD Station Marketing conversions (contact patched with --existing update); OAuth credentials from `leadledger auth rdstation` or RDSTATION_* variables',
  docs: {
    sends:
      'a conversion per new lead (`POST /platform/events?event_type=conversion`, identifier from `--conversion`, default `leadledger`), carrying its key in `cf_leadledger_key`; `--existing update` patches the contact (`PATCH /platform/contacts/email:{email}`). RD records every conversion it receives, so the ledger is the only dedup; 24 conversions per contact per 24 h: one past it fails alone',
    batch: '1',
    inDoubt:
      'looked up by email (`GET /platform/contacts/email:{email}`, then its conversions), recognized by the key it was sent with: never re-sent blindly',
  },
  examples: ['leadledger auth rdstation && leadledger push events.jsonl --sink rdstation'],
  flags: [
    URL_FLAG,
    {
      flags: '--conversion <identifier>',
      description: "RD Station conversion identifier (default: the config's conversionIdentifier, else leadledger)",
    },
    CREDENTIALS_FLAG,
  ],
  configSchema: (z) => rdstationConfigSchemaWith(z),
  read: ({ flags, config }): RdStationDefinitionOptions => ({
    rdstationUrl: str(flags.rdstationUrl) ?? config?.url ?? DEFAULT_URL,
    conversion: str(flags.conversion),
    credentials: str(flags.credentials),
    config,
  }),
  shown: (o) => ({
    rdstationUrl: redactUrl(o.rdstationUrl),
    conversion: o.conversion ?? o.config?.conversionIdentifier ?? DEFAULT_CONVERSION,
  }),
  replayArgs: (o) => [
    '--rdstation-url',
    redactUrl(o.rdstationUrl),
    ...(o.conversion !== undefined ? ['--conversion', o.conversion] : []),
    ...(o.credentials !== undefined ? ['--credentials', o.credentials] : []),
  ],
  // The credentials file `leadledger auth rdstation` writes: absent where the environment gives the credentials
  // (opening the sink says what is missing), so never required here.
  credentialFiles: (o, env) => [{ path: o.credentials ?? join(userConfigDir(env), 'credentials.json'), named: false }],
  async open(o, ctx) {
    const [{ rdstationOptions, openRdStationSink }, { httpClientFor }] = await Promise.all([
      import('./options.js'),
      import('../transport/http.js'),
    ]);
    const options = rdstationOptions(
      {
        rdstationUrl: o.rdstationUrl,
        ...(o.conversion !== undefined ? { conversion: o.conversion } : {}),
        ...(o.credentials !== undefined ? { credentials: o.credentials } : {}),
        ...(ctx.transport.allowInsecure !== undefined ? { allowInsecure: ctx.transport.allowInsecure } : {}),
      },
      ctx.env,
      o.config,
    );
    // The account's per-minute limit is the ceiling; a lower --rate is kept.
    const rate = Math.min(options.rate, ctx.transport.rate ?? Infinity);
    const http = httpClientFor({ ...ctx, transport: { ...ctx.transport, rate } });
    const sink = await openRdStationSink(options, { http, ...(ctx.warn ? { warn: ctx.warn } : {}) });
    return { sink, http };
  },
  authorizeHelp:
    'client id and secret from RDSTATION_CLIENT_ID and RDSTATION_CLIENT_SECRET (an app of your own in RD Station App Store); a refresh token from RDSTATION_REFRESH_TOKEN, else the consent page is opened with a redirect to 127.0.0.1',
  authorizeFlags: [
    URL_FLAG,
    CREDENTIALS_FLAG,
    {
      flags: '--redirect-port <n>',
      description: "port of the 127.0.0.1 redirect listener (your RD app's callback URL must name it; default: any)",
      parse: (v) => {
        const n = Number(v);
        if (!Number.isInteger(n) || n < 0 || n > 65535) throw new Error(`--redirect-port takes a port, not '${v}'`);
        return n;
      },
    },
  ],
  async authorize(args, ctx) {
    const [{ authorize }, { UsageError }] = await Promise.all([import('./auth.js'), import('../../errors.js')]);
    const secret = (name: string): string | undefined => ctx.env[name]?.trim() || undefined;
    const clientId = secret('RDSTATION_CLIENT_ID');
    const clientSecret = secret('RDSTATION_CLIENT_SECRET');
    if (!clientId || !clientSecret)
      throw new UsageError(
        'leadledger auth rdstation needs RDSTATION_CLIENT_ID and RDSTATION_CLIENT_SECRET in the environment (the app you created in RD Station App Store)',
      );
    const refreshToken = secret('RDSTATION_REFRESH_TOKEN');
    const port = args.redirectPort;
    const result = await authorize({
      clientId,
      clientSecret,
      baseUrl: str(args.rdstationUrl) ?? ctx.env.LEADLEDGER_RDSTATION_URL ?? DEFAULT_URL,
      env: ctx.env,
      ...(refreshToken ? { refreshToken } : {}),
      ...(str(args.credentials) !== undefined ? { credentialsPath: str(args.credentials) } : {}),
      ...(typeof port === 'number' ? { port } : {}),
      ...(ctx.allowInsecure ? { allowInsecure: true } : {}),
      ...(ctx.signal ? { signal: ctx.signal } : {}),
      onUrl: (url, redirectUri) => {
        ctx.log(`Open this address in a browser and allow leadledger access to RD Station:\n  ${url}`);
        ctx.log(`(waiting for RD Station to redirect to ${redirectUri})`);
      },
    });
    return { path: result.path, message: `RD Station credentials written to ${result.path}` };
  },
});

function str(v: unknown): string | undefined {
  return typeof v === 'string' ? v : undefined;
}
