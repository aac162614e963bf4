// The pipedrive sink's definition: its flags, its config section, and how it opens (registry.ts lists it).
import { defineSink } from '../definition.js';
import { redactUrl } from '../transport/secure-url.js';
import { TOKEN_FILE_FLAG } from '../transport/token.js';
import { pipedriveConfigSchemaOf, type PipedriveConfig } from './config.js';

interface PipedriveDefinitionOptions {
  /** --pipedrive-domain */
  domain?: string;
  /** --pipedrive-url or LEADLEDGER_PIPEDRIVE_URL */
  url?: string;
  tokenFile?: string;
  config?: PipedriveConfig;
}

/** Pipedrive persons (API v2), searched by email before each create; optionally a Pipedrive lead with each. */
export const pipedrive = defineSink({
  name: 'pipedrive',
  summary:
    'Pipedrive persons (API v2, searched by email before each create; optionally a lead each); token from PIPEDRIVE_TOKEN or --token-file',
  docs: {
    sends:
      'persons through API v2 (`POST /api/v2/persons`), each searched by email (by phone without one) first, since Pipedrive keeps no email unique: a person found settles as already in the CRM with its id (patched with `--existing update`); with `sinks.pipedrive.lead` in the config, a lead (`POST /v1/leads`) with each person created. Paced at the 2 s burst window and the search endpoint’s own; stops before the daily token budget runs out (exit 7)',
    batch: '10 (one search and one create per person: Pipedrive has no batch create)',
    inDoubt: 'looked up by email (`GET /api/v2/persons/search?fields=email&exact_match=true`), as before a create',
  },
  examples: ['PIPEDRIVE_TOKEN=... leadledger push events.jsonl --sink pipedrive --pipedrive-domain acme'],
  flags: [
    {
      flags: '--pipedrive-domain <company>',
      description: 'Pipedrive company domain: acme for https://acme.pipedrive.com',
    },
    {
      flags: '--pipedrive-url <url>',
      description: 'Pipedrive API base URL, instead of --pipedrive-domain (a proxy, the sandbox)',
      env: 'LEADLEDGER_PIPEDRIVE_URL',
    },
    TOKEN_FILE_FLAG,
  ],
  tokenEnv: 'PIPEDRIVE_TOKEN',
  configSchema: (z) => pipedriveConfigSchemaOf(z),
  read: ({ flags, fromEnv, config }): PipedriveDefinitionOptions => ({
    domain: str(flags.pipedriveDomain),
    // --pipedrive-domain given on the command line wins over LEADLEDGER_PIPEDRIVE_URL from the environment.
    url: fromEnv.pipedriveUrl && str(flags.pipedriveDomain) ? undefined : str(flags.pipedriveUrl),
    tokenFile: str(flags.tokenFile),
    config,
  }),
  shown: (o) => ({
    pipedriveDomain: o.domain,
    pipedriveUrl: o.url ? redactUrl(o.url) : undefined,
  }),
  replayArgs: (o) => [
    ...(o.url ? ['--pipedrive-url', redactUrl(o.url)] : []),
    ...(o.domain !== undefined && !o.url ? ['--pipedrive-domain', o.domain] : []),
    ...(o.tokenFile ? ['--token-file', o.tokenFile] : []),
  ],
  credentialFiles: (o) => (o.tokenFile ? [{ path: o.tokenFile, named: true }] : []),
  async open(o, ctx) {
    const [{ readPipedriveOptions }, { httpClientFor }, { PipedriveSink }] = await Promise.all([
      import('./options.js'),
      import('../transport/http.js'),
      import('./pipedrive.js'),
    ]);
    const options = await readPipedriveOptions({
      env: ctx.env,
      ...(o.domain !== undefined ? { domain: o.domain } : {}),
      ...(o.url !== undefined ? { url: o.url } : {}),
      ...(o.tokenFile !== undefined ? { tokenFile: o.tokenFile } : {}),
      ...(o.config !== undefined ? { config: o.config } : {}),
      ...(ctx.transport.allowInsecure !== undefined ? { allowInsecure: ctx.transport.allowInsecure } : {}),
      ...(ctx.warn ? { warn: ctx.warn } : {}),
    });
    const http = httpClientFor(ctx);
    return { sink: new PipedriveSink({ ...options, http }), http };
  },
});

function str(v: unknown): string | undefined {
  return typeof v === 'string' ? v : undefined;
}
