// Shared test helpers: items, and an HttpClient whose sleeps are instant but recorded.
import type { Lead } from '../../src/mapping/types.js';
import { HttpClient, type HttpClientOptions } from '../../src/sinks/transport/http.js';
import type { SinkOpenContext } from '../../src/sinks/definition.js';
import { findSink, type SinkName } from '../../src/sinks/registry.js';
import type { SendItem, Sink } from '../../src/sinks/types.js';

export const CANARY = 'canary-tok-7f3a9c2e51d84b06';

export function item(n: number | string, lead: Lead, mode: 'create' | 'update' = 'create'): SendItem {
  return {
    key: `ev-${n}`,
    downstreamKey: `dk-${n}`.padEnd(16, '0'),
    lead,
    mode,
    ...(lead.email ? { naturalKey: lead.email } : {}),
  };
}

/**
 * Opens a sink as push does, through its definition in the registry: its flags by attribute name (as commander
 * gives them), its config section, and the run's settings.
 */
export async function openSinkFor(
  name: SinkName,
  flags: Record<string, unknown>,
  ctx: Partial<SinkOpenContext> & { config?: unknown; fromEnv?: Record<string, string> } = {},
): Promise<Sink> {
  const def = findSink(name)!;
  const { config, fromEnv, ...open } = ctx;
  const { sink } = await def.configure({ flags, fromEnv: fromEnv ?? {}, config }).open({
    env: {},
    transport: {},
    existing: 'skip',
    concurrency: 4,
    customFields: [],
    ...open,
  });
  return sink;
}

export function fastClient(extra: HttpClientOptions = {}): { client: HttpClient; sleeps: number[] } {
  const sleeps: number[] = [];
  // Virtual time: sleeps return at once but move the clock, so the rate limiter sees its waits as elapsed.
  let offset = 0;
  const client = new HttpClient({
    now: () => Date.now() + offset,
    timeoutMs: 2000,
    maxRetries: 3,
    baseDelayMs: 100,
    random: () => 1,
    sleep: async (ms) => {
      sleeps.push(ms);
      offset += ms;
    },
    ...extra,
  });
  return { client, sleeps };
}
