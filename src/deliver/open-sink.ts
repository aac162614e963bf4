// Building the sink a push or replay sends to, from flags and the config file, through its definition in the sink
// registry (sinks/registry.ts). Shared so both send alike; no sink is named here.
import { UsageError } from '../errors.js';
import type { Config } from '../mapping/config.js';
import type { ConfiguredSink, SinkOpenContext } from '../sinks/definition.js';
import { findSink, SINK_NAMES } from '../sinks/registry.js';
import { CircuitBreaker } from '../sinks/transport/breaker.js';
import type { HttpClient, HttpEvent } from '../sinks/transport/http.js';
import type { Sink } from '../sinks/types.js';
import { didYouMean } from '../did-you-mean.js';

/** The delivery flags push and replay share. */
export interface SinkFlags {
  sink?: string;
  /** The values of the sinks' own flags by attribute name (sinks/registry.ts sinkFlagValues). */
  sinkFlags?: Readonly<Record<string, unknown>>;
  /** Of those, the ones taken from their environment variable: attribute name → variable. */
  sinkFlagsFromEnv?: Readonly<Record<string, string>>;
  allowInsecure?: boolean;
  concurrency?: number;
  rate?: number;
  maxRetries?: number;
  backoffMs?: number;
  timeoutMs?: number;
  existing?: 'skip' | 'update';
}

/**
 * The sink named by --sink or the config's "sink", with its options read from flags and the config (undefined without either): what a run
 * records and a replay hint repeats of it, before anything is opened. A dry-run reads it too, and opens nothing.
 */
export function configureSink(f: SinkFlags, config: Config): ConfiguredSink | undefined {
  // --sink (LEADLEDGER_SINK), else the config's "sink" (checked against the registry when the config was read).
  const name = f.sink ?? config.sink;
  if (!name) return undefined;
  const def = findSink(name);
  if (!def) throw new UsageError(`--sink takes ${SINK_NAMES.join(', ')}, not '${name}'${didYouMean(name, SINK_NAMES)}`);
  const sections = (config.sinks ?? {}) as Readonly<Record<string, unknown>>;
  return def.configure({ flags: f.sinkFlags ?? {}, fromEnv: f.sinkFlagsFromEnv ?? {}, config: sections[def.name] });
}

/** Opens the sink named by --sink; a usage error names what is missing. */
export async function openSink(
  command: string,
  f: SinkFlags,
  config: Config,
  ctx: {
    env: Record<string, string | undefined>;
    onHttpEvent?: (e: HttpEvent) => void;
    warn?: (message: string) => void;
  },
  chosen = configureSink(f, config),
): Promise<{ sink: Sink; http?: HttpClient; chosen: ConfiguredSink; breaker: CircuitBreaker }> {
  if (!chosen)
    throw new UsageError(
      `${command} needs --sink (${SINK_NAMES.join(', ')}) or "sink" in the config${command === 'push' ? ', or --dry-run to audit' : ''}`,
    );
  // One breaker for the run: what opens it stops every batch of the run, whichever request saw the last failure.
  const breaker = new CircuitBreaker();
  const open: SinkOpenContext = {
    env: ctx.env,
    transport: {
      timeoutMs: f.timeoutMs,
      maxRetries: f.maxRetries,
      baseDelayMs: f.backoffMs,
      rate: f.rate,
      allowInsecure: f.allowInsecure,
      breaker,
    },
    existing: f.existing ?? 'skip',
    concurrency: f.concurrency ?? 4,
    customFields: Object.keys(config.fields?.custom ?? {}),
    ...(ctx.onHttpEvent ? { onHttpEvent: ctx.onHttpEvent } : {}),
    ...(ctx.warn ? { warn: ctx.warn } : {}),
  };
  const { sink, http } = await chosen.open(open);
  return { sink, http, chosen, breaker };
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
