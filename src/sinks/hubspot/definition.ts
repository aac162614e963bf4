// The hubspot sink's definition: its flags, its config section, and how it opens (registry.ts lists it).
import { defineSink } from '../definition.js';
import { redactUrl } from '../transport/secure-url.js';
import { TOKEN_FILE_FLAG } from '../transport/token.js';

interface HubSpotOptions {
  baseUrl?: string;
  tokenFile?: string;
  sourceProperty?: string;
}

/** HubSpot contacts, through their v3 batch API. */
export const hubspot = defineSink({
  name: 'hubspot',
  summary:
    'HubSpot contacts (v3 batch create, upsert by email with --existing update); token from HUBSPOT_TOKEN or --token-file',
  docs: {
    sends:
      "contacts v3 batch create (≤100), batch upsert by email with `--existing update`; only HubSpot's duplicate answer (CONFLICT \"Contact already exists. Existing ID: N\") counts as already in the CRM, any other 409 fails with the CRM's message. On that answer the batch's people are read by email (batch read, ≤100), those the CRM holds settle as already in the CRM with their id (updated by id with `--existing update`) and the rest are created in one call; while batches keep meeting people the CRM holds, they are read before they are created: a batch of people the CRM holds costs one request",
    batch: '100',
    inDoubt: 'looked up by email, a batch at a time (`POST /contacts/batch/read`, `idProperty: email`)',
  },
  examples: ['HUBSPOT_TOKEN=... leadledger push events.jsonl --sink hubspot'],
  flags: [
    {
      flags: '--hubspot-url <url>',
      // No commander default: a flag's default would hide the config's sinks.hubspot.url.
      description: "HubSpot API base URL (default: the config's sinks.hubspot.url, else https://api.hubapi.com)",
      env: 'LEADLEDGER_HUBSPOT_URL',
    },
    TOKEN_FILE_FLAG,
  ],
  tokenEnv: 'HUBSPOT_TOKEN',
  // The contact property that receives the lead's source (HubSpot has no standard one).
  // url: the API base URL when neither --hubspot-url nor LEADLEDGER_HUBSPOT_URL gives one.
  configSchema: (z) =>
    z.object({ sourceProperty: z.string().min(1).optional(), url: z.string().min(1).optional() }).strict(),
  read: ({ flags, config }): HubSpotOptions => ({
    baseUrl: str(flags.hubspotUrl) ?? config?.url,
    tokenFile: str(flags.tokenFile),
    sourceProperty: config?.sourceProperty,
  }),
  shown: (o) => ({ hubspotUrl: o.baseUrl ? redactUrl(o.baseUrl) : undefined }),
  replayArgs: (o) => [
    ...(o.baseUrl ? ['--hubspot-url', redactUrl(o.baseUrl)] : []),
    ...(o.tokenFile ? ['--token-file', o.tokenFile] : []),
  ],
  credentialFiles: (o) => (o.tokenFile ? [{ path: o.tokenFile, named: true }] : []),
  async open(o, ctx) {
    const [{ readToken }, { httpClientFor }, { HubSpotSink }] = await Promise.all([
      import('../transport/token.js'),
      import('../transport/http.js'),
      import('./sink.js'),
    ]);
    const token = await readToken({
      env: ctx.env,
      envName: 'HUBSPOT_TOKEN',
      what: 'HubSpot',
      ...(o.tokenFile !== undefined ? { tokenFile: o.tokenFile } : {}),
      ...(ctx.warn ? { warn: ctx.warn } : {}),
    });
    const http = httpClientFor(ctx);
    const sink = new HubSpotSink({
      http,
      token,
      ...(o.baseUrl !== undefined ? { baseUrl: o.baseUrl } : {}),
      ...(o.sourceProperty !== undefined ? { sourceProperty: o.sourceProperty } : {}),
      ...(ctx.transport.allowInsecure !== undefined ? { allowInsecure: ctx.transport.allowInsecure } : {}),
    });
    return { sink, http };
  },
});

function str(v: unknown): string | undefined {
  return typeof v === 'string' ? v : undefined;
}
