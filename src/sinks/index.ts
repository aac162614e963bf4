// Choosing and building a sink from options; the CLI describes the sinks in --help from SINKS.
import type { Writable } from 'node:stream';
import { UsageError } from '../errors.js';
import { HttpClient, type HttpEvent } from './transport/http.js';
import { HubSpotSink } from './hubspot/sink.js';
import { JsonlSink } from './jsonl/sink.js';
import type { RateLimiter } from './transport/rate-limiter.js';
import { readToken } from './transport/token.js';
import type { PostgresSinkConfig } from './postgres/sink.js';
import type { Sink } from './types.js';
import { WebhookSink, type WebhookConfig } from './webhook/sink.js';
import { SINK_NAMES, type SinkName } from './names.js';

export { SINK_NAMES, type SinkName } from './names.js';

/** One line per sink for --help. */
export const SINKS: ReadonlyArray<{ name: SinkName; description: string }> = [
  {
    name: 'hubspot',
    description:
      'HubSpot contacts (v3 batch create, upsert by email with --existing update); token from HUBSPOT_TOKEN or --token-file',
  },
  {
    name: 'webhook',
    description: 'POST one JSON body per lead to --url, with Idempotency-Key and an optional HMAC-SHA256 signature',
  },
  { name: 'jsonl', description: "append one JSON line per lead to --output (a file, or '-' for stdout)" },
  {
    name: 'postgres',
    description:
      'upsert into a table of yours (--pg-url, --table) by its unique email index; password from PGPASSWORD, ~/.pgpass or LEADLEDGER_PG_URL',
  },
];

export interface SinkOptions {
  sink: SinkName;
  /** Environment to read tokens and secrets from (default process.env). */
  env?: Record<string, string | undefined>;
  /** webhook: the receiving URL. */
  url?: string;
  /** jsonl: a file path or '-'. */
  output?: string;
  /** hubspot: API base URL (default https://api.hubapi.com; the sandbox URL for tests). */
  hubspotUrl?: string;
  /** hubspot: file holding the token (takes precedence over HUBSPOT_TOKEN). */
  tokenFile?: string;
  /** hubspot: contact property that receives lead.source (not sent when unset). */
  hubspotSourceProperty?: string;
  /** webhook: the config file's webhook section. */
  webhook?: WebhookConfig;
  /** Allow plain http to non-loopback hosts. */
  allowInsecure?: boolean;
  /** HTTP policy: per-attempt timeout (ms). */
  timeoutMs?: number;
  /** HTTP policy: retries after the first attempt. */
  maxRetries?: number;
  /** HTTP policy: requests per second. */
  rate?: number;
  /** HTTP policy: first backoff step (ms). */
  baseDelayMs?: number;
  /** HTTP policy: share a limiter (e.g. one per CRM account across sinks). */
  limiter?: RateLimiter;
  onHttpEvent?: (event: HttpEvent) => void;
  /** For jsonl '-' (default process.stdout). */
  stdout?: Writable;
  /** postgres: --pg-url, and the environment variable it was read from (undefined: argv). */
  pgUrl?: string;
  pgUrlFrom?: string;
  /** postgres: --table. */
  table?: string;
  /** postgres: --create-table. */
  createTable?: boolean;
  /** postgres: the config file's sinks.postgres section. */
  postgres?: PostgresSinkConfig;
  /** postgres: the custom fields of the config, which fill the columns of their names. */
  customFields?: string[];
  /** --existing: postgres updates the rows of known people with update. */
  existing?: 'skip' | 'update';
  /** Batches in flight at once (the postgres sink sizes its pool from it). */
  concurrency?: number;
  /** Messages a person should read (stderr). */
  warn?: (message: string) => void;
}

/** Build the sink named in opts, reading its credentials by reference; UsageError when something is missing. */
export async function createSink(opts: SinkOptions): Promise<Sink & { http?: HttpClient }> {
  const env = opts.env ?? process.env;
  const http = (): HttpClient =>
    new HttpClient({
      ...(opts.timeoutMs !== undefined ? { timeoutMs: opts.timeoutMs } : {}),
      ...(opts.maxRetries !== undefined ? { maxRetries: opts.maxRetries } : {}),
      ...(opts.rate !== undefined ? { rate: opts.rate } : {}),
      ...(opts.baseDelayMs !== undefined ? { baseDelayMs: opts.baseDelayMs } : {}),
      ...(opts.limiter ? { limiter: opts.limiter } : {}),
      ...(opts.onHttpEvent ? { onEvent: opts.onHttpEvent } : {}),
    });
  switch (opts.sink) {
    case 'hubspot': {
      const token = await readToken({
        env,
        envName: 'HUBSPOT_TOKEN',
        what: 'HubSpot',
        ...(opts.tokenFile !== undefined ? { tokenFile: opts.tokenFile } : {}),
      });
      const client = http();
      const sink = new HubSpotSink({
        http: client,
        token,
        ...(opts.hubspotUrl !== undefined ? { baseUrl: opts.hubspotUrl } : {}),
        ...(opts.hubspotSourceProperty !== undefined ? { sourceProperty: opts.hubspotSourceProperty } : {}),
        ...(opts.allowInsecure !== undefined ? { allowInsecure: opts.allowInsecure } : {}),
      });
      return Object.assign(sink, { http: client });
    }
    case 'webhook': {
      if (!opts.url) throw new UsageError('the webhook sink needs --url');
      const client = http();
      const sink = new WebhookSink({
        url: opts.url,
        http: client,
        env,
        ...(opts.webhook ? { config: opts.webhook } : {}),
        ...(opts.allowInsecure !== undefined ? { allowInsecure: opts.allowInsecure } : {}),
      });
      return Object.assign(sink, { http: client });
    }
    case 'jsonl': {
      if (!opts.output) throw new UsageError("the jsonl sink needs --output (a file path, or '-' for stdout)");
      const sink = new JsonlSink({ output: opts.output, ...(opts.stdout ? { stdout: opts.stdout } : {}) });
      await sink.open();
      return sink;
    }
    case 'postgres': {
      // Loaded only for this sink: the driver costs the other sinks' start nothing.
      const { PostgresSink } = await import('./postgres/sink.js');
      return PostgresSink.open({
        url: opts.pgUrl,
        urlFrom: opts.pgUrlFrom,
        env,
        table: opts.table,
        createTable: opts.createTable,
        existing: opts.existing,
        config: opts.postgres,
        customFields: opts.customFields,
        poolSize: opts.concurrency,
        timeoutMs: opts.timeoutMs,
        maxRetries: opts.maxRetries,
        baseDelayMs: opts.baseDelayMs,
        warn: opts.warn,
      });
    }
    default:
      throw new UsageError(`unknown sink "${String(opts.sink)}"; choose one of ${SINK_NAMES.join(', ')}`);
  }
}
