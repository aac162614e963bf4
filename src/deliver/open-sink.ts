// Building the sink a push or replay sends to, from flags and the config file. Shared so both send alike.
import { UsageError } from '../errors.js';
import type { Config } from '../mapping/config.js';
import type { HttpClient, HttpEvent } from '../sinks/transport/http.js';
import { createSink, SINK_NAMES, type SinkName } from '../sinks/index.js';
import type { Sink } from '../sinks/types.js';

/** The delivery flags push and replay share. */
export interface SinkFlags {
  sink?: string;
  url?: string;
  output?: string;
  hubspotUrl?: string;
  tokenFile?: string;
  allowInsecure?: boolean;
  concurrency?: number;
  rate?: number;
  maxRetries?: number;
  backoffMs?: number;
  timeoutMs?: number;
  /** postgres sink: --pg-url, and the environment variable it came from (undefined: the command line). */
  pgUrl?: string;
  pgUrlFrom?: string;
  table?: string;
  createTable?: boolean;
  existing?: 'skip' | 'update';
}

/** Creates the sink named by --sink; a usage error names what is missing. */
export async function openSink(
  command: string,
  f: SinkFlags,
  config: Config,
  ctx: {
    env: Record<string, string | undefined>;
    onHttpEvent?: (e: HttpEvent) => void;
    warn?: (message: string) => void;
  },
): Promise<{ sink: Sink; http?: HttpClient }> {
  if (!f.sink)
    throw new UsageError(
      `${command} needs --sink (${SINK_NAMES.join(', ')})${command === 'push' ? ', or --dry-run to audit' : ''}`,
    );
  if (!(SINK_NAMES as readonly string[]).includes(f.sink))
    throw new UsageError(`--sink takes ${SINK_NAMES.join(', ')}, not '${f.sink}'`);
  const sink = await createSink({
    sink: f.sink as SinkName,
    url: f.url,
    output: f.output,
    hubspotUrl: f.hubspotUrl,
    tokenFile: f.tokenFile,
    allowInsecure: f.allowInsecure,
    rate: f.rate,
    maxRetries: f.maxRetries,
    timeoutMs: f.timeoutMs,
    baseDelayMs: f.backoffMs,
    env: ctx.env,
    webhook: config.sinks?.webhook,
    hubspotSourceProperty: config.sinks?.hubspot?.sourceProperty,
    onHttpEvent: ctx.onHttpEvent,
    pgUrl: f.pgUrl,
    pgUrlFrom: f.pgUrlFrom,
    table: f.table,
    createTable: f.createTable,
    existing: f.existing,
    concurrency: f.concurrency,
    postgres: config.sinks?.postgres,
    customFields: Object.keys(config.fields?.custom ?? {}),
    warn: ctx.warn,
  });
  return { sink, http: sink.http };
}

/** The HTTP counters a report shows: requests, retries, 429s, network errors, time waited for the rate limit. */
export function httpSummary(http: HttpClient): Record<string, number> {
  const s = http.stats;
  return {
    requests: s.requests,
    retries: s.retries,
    rateLimited: s.rateLimited,
    networkErrors: s.networkErrors,
    timeouts: s.timeouts,
    rateLimitWaitMs: Math.round(s.rateLimitWaitMs),
  };
}
