// `leadledger serve`: the live webhook receiver on the same ledger, claims and sinks as push. A request is answered
// 2xx once its events are committed to the ledger as queued; a repeat is answered 200 already_processed; the
// delivery loop sends what is queued, exactly once, and what a killed process acknowledged and did not deliver is
// delivered by the next start, or by another instance on a shared PostgreSQL ledger.
import { hostname } from 'node:os';
import { dirname, resolve } from 'node:path';
import { configureSink, openSink, type SinkFlags } from '../deliver/open-sink.js';
import { UsageError } from '../errors.js';
import { ledgerPath } from '../ledger/ledger.js';
import { Checkpointer, WRITER_CHECKPOINT_PAGES } from '../ledger/checkpointer.js';
import { ledgerName, openLedgerStore } from '../ledger/open.js';
import { SqliteDb } from '../ledger/sql.js';
import { stopKeepAlive, type LedgerStore } from '../ledger/store.js';
import { resolveDefaultCountry } from '../mapping/default-country.js';
import { loadConfig, type Config } from '../mapping/config.js';
import type { MapOptions } from '../mapping/map-record.js';
import { Archive } from '../serve/archive.js';
import { DeliveryLoop, type ServeRun } from '../serve/delivery.js';
import { Endpoint, type EndpointConfig } from '../serve/endpoint.js';
import { Inbox } from '../serve/inbox.js';
import type { ServeLog } from '../serve/log.js';
import { ServeMetrics } from '../serve/metrics.js';
import { DEFAULT_LIMITS, Receiver, type ReceiverLimits } from '../serve/server.js';
import type { HttpEvent } from '../sinks/transport/http.js';
import type { CommandContext } from './context.js';
import { resolveDates } from './dates.js';
import type { DateOrder } from '../mapping/times.js';

/** Options of `serve`, as the CLI builds them. */
export interface ServeOptions extends SinkFlags {
  ledger?: string;
  config?: string;
  port?: number;
  host?: string;
  /** --endpoint: endpoints of the generic source with no signature (loopback only). */
  endpoints?: string[];
  archive?: string;
  maxInbox?: number;
  defaultCountry?: string;
  defaultCountryFrom?: string;
  timezone?: string;
  dateOrder?: DateOrder;
}

/** How the receiver ended. */
export interface ServeResult {
  exitCode: number;
}

const LOOPBACK = /^(127\.\d+\.\d+\.\d+|::1|localhost)$/;

/** Runs the receiver until stopped (SIGTERM / Ctrl-C); `onListening` gets the URL once it listens. */
export async function serve(
  opts: ServeOptions,
  ctx: CommandContext & { log: ServeLog; onListening: (url: string, paths: string[]) => void },
): Promise<ServeResult> {
  const { log } = ctx;
  const loaded = loadConfig(opts.config, ctx.cwd, ctx.env);
  const { config } = loaded;
  const sc = config.serve ?? {};
  const host = opts.host ?? sc.host ?? '127.0.0.1';
  const port = opts.port ?? sc.port ?? 8080;
  // A secret file named relative to the config is found beside it, wherever the receiver is started from.
  const declared: Array<[string, EndpointConfig]> = Object.entries(sc.endpoints ?? {}).map(([n, e]) => {
    const sig = e.signature;
    if (sig && 'secretFile' in sig && sig.secretFile && loaded.path)
      return [n, { ...e, signature: { ...sig, secretFile: resolve(dirname(loaded.path), sig.secretFile) } }];
    return [n, e];
  });
  for (const name of opts.endpoints ?? []) {
    if (!LOOPBACK.test(host))
      throw new UsageError(
        `--endpoint ${name} takes requests with no signature: only on loopback (--host 127.0.0.1); declare the endpoint with its signature in the config's serve.endpoints to listen on ${host}`,
      );
    if (declared.some(([n]) => n === name)) throw new UsageError(`endpoint "${name}" is declared twice`);
    declared.push([name, { source: 'generic', signature: { scheme: 'none' } }]);
    ctx.warn(`endpoint "${name}" takes requests with no signature check (loopback only; for trying leadledger out)`);
  }
  if (!declared.length)
    throw new UsageError(
      'serve needs an endpoint: declare them in the config (serve.endpoints.<name>: its source and signature), or --endpoint <name> to try it on loopback',
    );
  for (const [name, e] of declared)
    if ((e.signature?.scheme ?? 'none') === 'none' && !LOOPBACK.test(host) && !(opts.endpoints ?? []).includes(name))
      throw new UsageError(
        `endpoint "${name}" has no signature, and the receiver would listen on ${host}: give it a signature scheme, or listen on 127.0.0.1 behind a proxy that checks the senders`,
      );

  const country = resolveDefaultCountry({
    flag: opts.defaultCountry,
    flagFrom: opts.defaultCountryFrom,
    config: config.defaultCountry,
    env: ctx.env,
  });
  const dates = resolveDates(opts, config);
  const map: MapOptions = {
    config,
    defaultCountry: country.country,
    timezone: dates.timezone,
    dateOrder: { order: dates.order, from: dates.orderFrom },
  };
  const namespace = config.namespace ?? 'leadledger';
  const endpoints = declared.map(([n, e]) => new Endpoint(n, e, map, namespace, ctx.env, ctx.warn));
  const limits = receiverLimits(config, opts);

  const chosen = configureSink(opts, config);
  if (!chosen) throw new UsageError('serve needs --sink or "sink" in the config: the CRM it delivers to');
  const metrics = new ServeMetrics();
  const sinkCtx = {
    ...ctx,
    onHttpEvent: (e: HttpEvent) => {
      if (e.type === 'response') metrics.crmLatency.observe(e.durationMs / 1000);
      ctx.onHttpEvent?.(e);
    },
  };
  // The sink is opened once now, so that a missing token or a wrong URL is said before the receiver listens.
  const first = await openSink('serve', opts, config, sinkCtx, chosen);
  const sinkId = first.sink.describe();
  let reuse: typeof first | undefined = first;
  const path = ledgerPath(opts.ledger, ctx.env, config.ledger);
  let ledger: LedgerStore | undefined;
  try {
    ledger = await openLedgerStore(path, { env: ctx.env, stop: ctx.stop });
  } catch (e) {
    await first.sink.close?.();
    throw e;
  }
  if (!ledger) throw new UsageError(`cannot open the ledger ${ledgerName(path)}`);
  if (config.retention?.sentPayloads === 'drop') ledger.dropSentPayloads = true;
  const l = ledger;
  // SQLite: the WAL is copied back into the file on a thread of its own. Left to the connection's autocheckpoint,
  // a whole checkpoint ran inside one of the receiver's commits now and then, and every request waited on it.
  let checkpointer: Checkpointer | undefined;
  if (l.sql instanceof SqliteDb) {
    l.sql.raw.pragma(`wal_autocheckpoint = ${WRITER_CHECKPOINT_PAGES}`);
    checkpointer = Checkpointer.start(l.path);
  }
  const params = {
    sink: chosen.name,
    ...chosen.shown(),
    endpoints: endpoints.map((e) => e.name),
    host: hostname(),
    listen: `${host}:${port}`,
  };
  // The receiver's run takes no lock: a push or replay may run beside it (claims keep every send single).
  const run: ServeRun = { id: await l.startRun('serve', params, { exclusive: false }), lease: undefined };
  run.lease = l.keepAlive(run.id);
  const inbox = new Inbox(l, run.id, sinkId);
  // --archive, else the config's serve.archive (relative to the config file's folder).
  const archiveDir = opts.archive
    ? resolve(ctx.cwd, opts.archive)
    : sc.archive && loaded.path
      ? resolve(dirname(loaded.path), sc.archive)
      : undefined;
  const archive = archiveDir ? new Archive(archiveDir, (m) => log.error(m)) : undefined;
  let ledgerOk = true;

  const delivery = new DeliveryLoop({
    ledger: l,
    inbox,
    openSink: async () => {
      const s = reuse ?? (await openSink('serve', opts, config, sinkCtx, chosen));
      reuse = undefined;
      return { sink: s.sink, close: async () => s.sink.close?.() };
    },
    run,
    renewRun: async () => {
      stopKeepAlive(run.lease);
      await Promise.resolve(l.finishRun(run.id, 'failed', { why: 'lease lost' })).catch(() => undefined);
      run.id = await l.startRun('serve', params, { exclusive: false });
      run.lease = l.keepAlive(run.id);
    },
    namespace,
    concurrency: opts.concurrency ?? 4,
    stop: ctx.stop,
    hardStop: ctx.hardStop,
    metrics,
    log,
    retryAfterMs: msFromEnv(ctx.env.LEADLEDGER_SERVE_RETRY_MS, 30_000),
    inDoubtAfterMs: msFromEnv(ctx.env.LEADLEDGER_SERVE_IN_DOUBT_MS, 60_000),
    maintenanceMs: msFromEnv(ctx.env.LEADLEDGER_SERVE_MAINTENANCE_MS, 5_000),
  });
  const receiver = new Receiver({
    endpoints,
    inbox,
    archive,
    metrics,
    log,
    limits,
    onQueued: () => delivery.wake(),
    ready: () =>
      !ledgerOk
        ? { ok: false, why: 'the ledger does not answer' }
        : delivery.blocked
          ? { ok: true, why: `delivery paused: ${delivery.blocked}` }
          : { ok: true },
  });
  // The inbox is counted now and every second: the backpressure and /metrics read the count.
  const countInbox = async () => {
    try {
      const mark = receiver.acceptedMark();
      await delivery.count();
      receiver.counted(mark);
      ledgerOk = true;
      metrics.ledgerUp = 1;
    } catch (e) {
      if (ledgerOk) log.error('the ledger does not answer', { error: (e as Error).message });
      ledgerOk = false;
      metrics.ledgerUp = 0;
    }
  };
  await countInbox();
  const other = await inbox.otherSinks();
  if (other)
    ctx.warn(
      `${other} events in the inbox were received for another sink than ${sinkId}: serve with that sink to deliver them`,
    );
  const counter = setInterval(() => void countInbox(), 1000);
  counter.unref();

  let url: string;
  try {
    url = await receiver.listen(port, host);
  } catch (e) {
    clearInterval(counter);
    stopKeepAlive(run.lease);
    await l.finishRun(run.id, 'failed', {});
    await checkpointer?.stop();
    await l.close();
    await first.sink.close?.();
    const code = (e as NodeJS.ErrnoException).code;
    throw new UsageError(
      `cannot listen on ${host}:${port}: ${code === 'EADDRINUSE' ? 'the port is in use' : (e as Error).message}`,
    );
  }
  ctx.onListening(
    url,
    endpoints.map((e) => e.path),
  );
  log.info('serving', {
    url,
    endpoints: endpoints.map((e) => e.path).join(' '),
    sink: sinkId,
    ledger: ledgerName(path),
    run: run.id,
    inbox: metrics.inboxEvents,
  });
  delivery.start();

  // Until a stop: then no new request, those under way answered, delivery given the grace period.
  await new Promise<void>((r) =>
    ctx.stop.aborted ? r() : ctx.stop.addEventListener('abort', () => r(), { once: true }),
  );
  log.info('stopping: no new requests; requests under way are answered, deliveries under way settle');
  // Once the grace period is over, connections still open (a slow client) are closed: the stop does not wait on them.
  const cut = () => receiver.server.closeAllConnections();
  if (ctx.hardStop.aborted) cut();
  else ctx.hardStop.addEventListener('abort', cut, { once: true });
  await receiver.close();
  await delivery.done();
  clearInterval(counter);
  await countInbox();
  stopKeepAlive(run.lease);
  await archive?.close();
  const left = metrics.inboxEvents;
  await l.finishRun(run.id, 'done', { inbox: left });
  await checkpointer?.stop();
  await l.close();
  log.info('stopped', { inbox: left, note: left ? 'queued events are delivered by the next start' : undefined });
  return { exitCode: 0 };
}

function receiverLimits(config: Config, opts: ServeOptions): ReceiverLimits {
  const sc = config.serve ?? {};
  return {
    ...DEFAULT_LIMITS,
    ...(sc.bodyLimit ? { bodyLimit: sc.bodyLimit } : {}),
    ...(sc.inbox?.maxEvents ? { maxInboxEvents: sc.inbox.maxEvents } : {}),
    ...(opts.maxInbox ? { maxInboxEvents: opts.maxInbox } : {}),
    ...(sc.inbox?.maxBytes ? { maxInboxBytes: sc.inbox.maxBytes } : {}),
    ...(sc.retryAfter ? { retryAfterSec: sc.retryAfter } : {}),
    ...(sc.headersTimeout ? { headersTimeoutMs: sc.headersTimeout * 1000 } : {}),
    ...(sc.requestTimeout ? { requestTimeoutMs: sc.requestTimeout * 1000 } : {}),
  };
}

// Hidden: tests shorten the receiver's waits (retry backoff, doubt age, housekeeping) to seconds.
function msFromEnv(v: string | undefined, dflt: number): number {
  const n = Number(v);
  return n > 0 ? n : dflt;
}
