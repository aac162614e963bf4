// The webhook sink's definition: its flag, its config section (checked against the config's custom fields), and how
// it opens (registry.ts lists it).
import { UsageError } from '../../errors.js';
import { defineSink } from '../definition.js';
import { redactUrl } from '../transport/secure-url.js';
import { templateIssues } from './placeholders.js';
import type { WebhookConfig } from './sink.js';

interface WebhookOptions {
  url?: string;
  config?: WebhookConfig;
}

/** One POST of JSON per lead to a receiver of the user's. */
export const webhook = defineSink({
  name: 'webhook',
  summary: 'POST one JSON body per lead to --url, with Idempotency-Key and an optional HMAC-SHA256 signature',
  docs: {
    sends:
      'one POST per lead, `Idempotency-Key` header, optional `X-Leadledger-Signature: sha256=<hmac>`; created id from a response path; only a 2xx is a delivery (a 409 below)',
    batch: '1',
    inDoubt:
      're-sent with the same key if the config says the receiver honours it, else left for `replay --in-doubt --resend`',
  },
  examples: ['leadledger push events.jsonl --sink webhook --url https://example.com/hooks/leads'],
  flags: [{ flags: '--url <url>', description: 'webhook URL (webhook sink)', env: 'LEADLEDGER_WEBHOOK_URL' }],
  // The keys of WebhookConfig (sink.ts), which says what each does.
  configSchema: (z) =>
    z
      .object({
        // The receiver when neither --url nor LEADLEDGER_WEBHOOK_URL gives one (a secret in it belongs in secretEnv).
        url: z.string().min(1).optional(),
        // A JSON value with {{placeholders}}, checked against the lead's fields by checkConfig.
        template: z.unknown().optional(),
        headers: z.record(z.string(), z.string()).optional(),
        sign: z.boolean().optional(),
        secretEnv: z.string().min(1).optional(),
        signatureHeader: z.string().min(1).optional(),
        idPath: z.string().min(1).optional(),
        honoursIdempotencyKey: z.boolean().optional(),
        conflictMeans: z.enum(['failure', 'duplicate']).optional(),
      })
      .strict(),
  checkConfig: (section, { customFields }) =>
    section.template === undefined ? [] : templateIssues(section.template, customFields),
  read: ({ flags, config }): WebhookOptions => ({
    url: typeof flags.url === 'string' ? flags.url : config?.url,
    config,
  }),
  shown: (o) => ({ url: o.url ? redactUrl(o.url) : undefined }),
  replayArgs: (o) => (o.url ? ['--url', redactUrl(o.url)] : []),
  async open(o, ctx) {
    if (!o.url) throw new UsageError("the webhook sink needs --url (or the config's sinks.webhook.url)");
    const [{ httpClientFor }, { WebhookSink }] = await Promise.all([
      import('../transport/http.js'),
      import('./sink.js'),
    ]);
    const http = httpClientFor(ctx);
    const sink = new WebhookSink({
      url: o.url,
      http,
      env: ctx.env,
      ...(o.config ? { config: o.config } : {}),
      ...(ctx.transport.allowInsecure !== undefined ? { allowInsecure: ctx.transport.allowInsecure } : {}),
    });
    return { sink, http };
  },
});
