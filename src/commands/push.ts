// `leadledger push`: read inputs, map, decide against the ledger, and either report the plan (--dry-run) or
// deliver it exactly once.
import { hostname } from 'node:os';
import { resolve } from 'node:path';
import type { Decision } from '../decide/types.js';
import type { Deliverer, SettledItem } from '../deliver/deliver.js';
import { ledgerFailure } from '../ledger/failure.js';
import { ledgerPath } from '../ledger/ledger.js';
import { ledgerName, openLedgerStore } from '../ledger/open.js';
import { isPostgresUrl, mayStillSend, stopKeepAlive, type LedgerStore } from '../ledger/store.js';
import { loadConfig } from '../mapping/config.js';
import { mapsWithoutConfig } from './config-fit.js';
import { resolveDates } from './dates.js';
import type { DateOrder } from '../mapping/times.js';
import type { ReportFile } from '../report/report-file.js';
import { reportRow } from '../report/report-row.js';
import { resolveDefaultCountry } from '../mapping/default-country.js';
import {
  configMismatch,
  datesRead,
  phoneCountry,
  reportFileError,
  ReportCollector,
  runExitCode,
  unreadPart,
  type RunReport,
} from '../report/run-report.js';
import { configureSink, httpSummary, openSink, type SinkFlags } from '../deliver/open-sink.js';
import { inDoubtResolution } from '../deliver/resolve-command.js';
import type { CircuitBreaker } from '../sinks/transport/breaker.js';
import type { HttpClient } from '../sinks/transport/http.js';
import type { Sink } from '../sinks/types.js';
import { decideInputs, type DecideStats } from '../engine/decide-inputs.js';
import { resolvePreset } from '../presets/catalog.js';
import type { InputFormat, InputRead } from '../sources/types.js';
import type { CommandContext, Progress } from './context.js';

/** Options of `push`, as the CLI builds them. */
export interface PushOptions extends SinkFlags {
  inputs: string[];
  /** --require-input: a glob that matches no file is an error (exit 3), not "nothing to do". */
  requireInput?: boolean;
  dryRun: boolean;
  ledger?: string;
  config?: string;
  format?: InputFormat;
  encoding?: string;
  delimiter?: string;
  select?: string;
  /** --preset: the source every input is read as ('generic': by field names only). */
  preset?: string;
  /** --default-country, and where it came from (the flag, or its environment variable); else config, then locale. */
  defaultCountry?: string;
  defaultCountryFrom?: string;
  /** --timezone (checked): the zone of times without one; else the config's, else UTC. */
  timezone?: string;
  /** --date-order: day and month of dates with the year last, where a field's dates do not show it. */
  dateOrder?: DateOrder;
  types?: string[];
  since?: Date;
  until?: Date;
  report?: string;
  existing?: 'skip' | 'update';
  wait?: number;
  /** Hidden: skip the run lock (tests prove that claims alone prevent double sends). */
  noLock?: boolean;
}

/** Runs a push (or its dry-run) and returns what happened as data. */
export async function push(opts: PushOptions, ctx: CommandContext): Promise<RunReport> {
  // The ledger's path once the config is read (the config may name it).
  const at: { ledger?: string } = {};
  try {
    return await pushOnce(opts, ctx, at);
  } catch (e) {
    // The ledger is the only SQLite here: a SQLite error that got this far is the ledger's (damaged: exit 5).
    const l = at.ledger ?? ledgerPath(opts.ledger, ctx.env);
    throw ledgerFailure(e, isPostgresUrl(l) ? ledgerName(l) : resolve(l));
  }
}

async function pushOnce(opts: PushOptions, ctx: CommandContext, at: { ledger?: string }): Promise<RunReport> {
  const started = Date.now();
  const loaded = loadConfig(opts.config, ctx.cwd, ctx.env);
  const { config } = loaded;
  const preset = opts.preset ? resolvePreset(opts.preset) : resolvePreset(config.preset, 'the config\'s "preset"');
  const country = resolveDefaultCountry({
    flag: opts.defaultCountry,
    flagFrom: opts.defaultCountryFrom,
    config: config.defaultCountry,
    env: ctx.env,
  });
  const dates = resolveDates(opts, config);
  const path = (at.ledger = ledgerPath(opts.ledger, ctx.env, config.ledger));
  // The sink's options, read by its definition: recorded by a dry-run too, which opens nothing.
  const chosen = configureSink(opts, config);
  // The sink recorded is the one used, named by --sink or by the config: replay defaults to it.
  const params = publicParams({ ...opts, sink: chosen?.name }, chosen?.shown());
  const stats: DecideStats = { nationalPhones: 0 };

  let sink: Sink | undefined;
  let http: HttpClient | undefined;
  let breaker: CircuitBreaker | undefined;
  // A sink's own module (its driver, its HTTP client) is loaded by its definition's open(), only when sending.
  if (!opts.dryRun) ({ sink, http, breaker } = await openSink('push', opts, config, ctx, chosen));
  // From the first Ctrl-C on, no request leaves: those still waiting are abandoned and their events released.
  http?.abandonUnsentOn(ctx.stop);
  // Dry-run: a read-only ledger (or none when the file does not exist yet) and no sink, enforced here once.
  const ledger: LedgerStore | undefined = await openLedgerStore(path, {
    readonly: opts.dryRun,
    env: ctx.env,
    writeThread: true,
    stop: ctx.stop,
  });
  if (ledger && config.retention?.sentPayloads === 'drop') ledger.dropSentPayloads = true;
  // The namespace of the downstream keys: the map workers take them with it, and the sender with it where they did not.
  const namespace = config.namespace ?? 'leadledger';
  const collector = new ReportCollector();
  // The globs that matched no file: nothing to do for them (a note).
  const noMatch: string[] = [];
  let reportFile: ReportFile | undefined;
  try {
    // Opened before the run starts: a path that cannot be written is a usage error, and nothing is claimed.
    reportFile = opts.report ? (await import('../report/report-file.js')).ReportFile.open(opts.report) : undefined;
  } catch (e) {
    await ledger?.close();
    await sink?.close?.();
    throw e;
  }
  let runId: number | undefined;
  let deliverer: Deliverer | undefined;
  let interrupted = false;
  // Events of this input the ledger holds in doubt since an earlier run on another sink: not sent again, not done
  // (those in doubt on this run's sink, inDoubtHere, are the deliverer's to count).
  let inDoubtInLedger = 0;
  const inDoubtHere = new Set<string>();
  let runStatus: 'done' | 'failed' | 'interrupted' = 'done';
  const progress: Progress = { phase: 'reading', read: 0, toSend: 0, settled: 0, startedAt: started, bytesRead: 0 };
  let heartbeat: ReturnType<LedgerStore['keepAlive']> | undefined;
  let bytesDecided = 0;
  let finalReport!: RunReport;
  // Why every record was invalid because of the config, when it was (the run then ends 2).
  let mismatch: string | undefined;
  let progressTimer: NodeJS.Timeout | undefined;
  if (ctx.onProgress) progressTimer = setInterval(() => ctx.onProgress!({ ...progress }), 250);

  const writeRow = (d: Decision, result = '', crmId = '') => reportFile?.write(reportRow(d, result, crmId), d);

  try {
    if (sink && ledger) {
      runId = await ledger.startRun('push', params, { exclusive: !opts.noLock, waitMs: opts.wait });
      heartbeat = ledger.keepAlive(runId);
      const lease = heartbeat;
      const { Deliverer } = await import('../deliver/deliver.js');
      deliverer = new Deliverer({
        breaker,
        ledger,
        sink,
        runId,
        namespace,
        concurrency: opts.concurrency ?? 4,
        existing: opts.existing ?? 'skip',
        stop: ctx.stop,
        hardStop: ctx.hardStop,
        mayStillSend: () => mayStillSend(lease),
        onSettled: (s: SettledItem) => {
          progress.settled++;
          if (s.decision) writeRow(s.decision, s.result, s.crmId ?? '');
        },
      });
      await ledger.markOrphansInDoubt();
      await deliverer.recoverInDoubt();
      // What recovery left in doubt on this sink is counted by the deliverer (delivery.inDoubt); the input's events
      // in doubt on other sinks are counted as they are decided (inDoubtInLedger), these not among them.
      for (const r of await ledger.rowsInStatus('in_doubt', deliverer.sinkId)) inDoubtHere.add(r.key);
    }

    const read = {
      onInputRead: (r: InputRead) => collector.readAs.push(r),
      requireInput: opts.requireInput,
      onNoMatch: (pattern: string) => noMatch.push(pattern),
      format: opts.format,
      encoding: opts.encoding,
      delimiter: opts.delimiter,
      select: opts.select,
      stdin: ctx.stdin,
      // A wait on a quiet stdin or a FIFO nobody writes ends with the first Ctrl-C / SIGTERM, not with more input.
      signal: ctx.stop,
      onTotalBytes: (n: number | undefined) => {
        if (n !== undefined) progress.bytesTotal = n;
      },
    };
    const map = {
      config,
      defaultCountry: country.country,
      types: opts.types,
      since: opts.since,
      until: opts.until,
      timezone: dates.timezone,
      dateOrder: { order: dates.order, from: dates.orderFrom },
    };
    // A CRM that charges by the record (Zoho's API credits): what this push will spend, said before it sends, from a
    // counting pass as a dry-run's (stdin can be read only once: then the summary's dry-run is the way to know).
    if (deliverer && ledger && chosen?.spend && !opts.inputs.includes('-')) {
      const count = new ReportCollector();
      const quiet = {
        ...read,
        onInputRead: () => undefined,
        onNoMatch: () => undefined,
        onTotalBytes: () => undefined,
      };
      for await (const slice of decideInputs({
        inputs: opts.inputs,
        read: quiet,
        map,
        ledger,
        stop: ctx.stop,
        tally: count,
        stats: { nationalPhones: 0 },
        onUnread: () => undefined,
        preset,
        hashPayloads: false,
        downstreamNamespace: undefined,
      }))
        for (const d of slice) count.add(d);
      const leads = count.counts.new + (opts.existing === 'update' ? count.counts.known_lead : 0);
      ctx.warn(chosen.spend(leads));
    }
    // A dry-run that writes no report rows wants only counts and examples: the decider counts, making few objects.
    const tally = opts.dryRun && !reportFile ? collector : undefined;
    for await (const decisions of decideInputs({
      inputs: opts.inputs,
      read,
      map,
      ledger,
      stop: ctx.stop,
      tally,
      stats,
      onUnread: (u) => collector.addUnread(unreadPart(u)),
      preset,
      exclusiveRun: opts.noLock ? undefined : runId,
      hashPayloads: !opts.dryRun,
      downstreamNamespace: opts.dryRun ? undefined : namespace,
    })) {
      // The slice's input bytes count as its decisions are taken, one share at a time (progress: the share read).
      const sliceBytes = decisions.bytes ?? 0;
      const before = bytesDecided;
      bytesDecided += sliceBytes;
      if (decisions.length === 0) progress.bytesRead = bytesDecided;
      if (tally) progress.read = collector.counts.read;
      // An empty batch: the input went idle. What is queued goes out now instead of waiting for a full batch.
      if (decisions.length === 0) await deliverer?.flush();
      for (let i = 0; i < decisions.length; i++) {
        const d = decisions[i]!;
        collector.add(d);
        if (d.inDoubt && !opts.dryRun && !inDoubtHere.has(d.key!)) inDoubtInLedger++;
        progress.read++;
        progress.bytesRead = before + (sliceBytes * (i + 1)) / decisions.length;
        if (deliverer?.wants(d)) {
          progress.toSend++;
          progress.sendingSince ??= Date.now();
          // The send outlives this batch of decisions: its event stops reading the block's buffers.
          d.event?.detach?.();
          await deliverer.enqueue(d);
        } else writeRow(d);
      }
    }
    if (deliverer) await deliverer.finish();
    if (ctx.stop.aborted) interrupted = true;
    // Every record invalid under a config that maps fields: the config's fault only where they map without it.
    const suspect = interrupted ? undefined : configMismatch(loaded, collector.counts, collector.unread);
    if (suspect && (await mapsWithoutConfig(opts.inputs, read, { ...map, config }))) mismatch = suspect;
    if (interrupted) runStatus = 'interrupted';
  } catch (e) {
    runStatus = 'failed';
    // Sends already on the wire settle before the ledger closes: their outcome is recorded, not left pending.
    await deliverer?.drain();
    throw e;
  } finally {
    clearInterval(progressTimer);
    stopKeepAlive(heartbeat);
    // An HTML report ends with the run's summary: the report as it stands (its own write error aside).
    reportFile?.close(buildReport);
    const report = buildReport();
    if (ledger && runId !== undefined)
      await ledger.finishRun(runId, runStatus, {
        counts: report.counts,
        delivery: report.delivery,
        ...(report.inDoubtInLedger ? { inDoubtInLedger: report.inDoubtInLedger } : {}),
      });
    await ledger?.close();
    await sink?.close?.();
    finalReport = report;
  }
  return finalReport;

  function buildReport(): RunReport {
    const delivery = deliverer?.counts;
    return {
      command: 'push',
      dryRun: opts.dryRun,
      ledger: ledgerName(path),
      config: loaded.path ?? null,
      ...(mismatch ? { configMismatch: mismatch } : {}),
      runId,
      sink: sink?.describe(),
      inputs: opts.inputs,
      options: params,
      counts: collector.counts,
      perSource: collector.perSource,
      examples: collector.examples,
      readAs: collector.readAs,
      unread: collector.unread,
      ...(noMatch.length ? { noMatch } : {}),
      warnings: collector.warnings,
      phones: phoneCountry(country, stats.nationalPhones),
      dates: datesRead(dates, collector.readAs),
      delivery,
      failures: deliverer?.failures,
      inDoubtReasons: deliverer?.inDoubtReasons,
      sharedTransactions: deliverer?.sharedBatches,
      fieldsNotHeld: deliverer?.fieldsNotHeld(),
      http: http ? httpSummary(http) : undefined,
      interrupted: interrupted || undefined,
      stopped: interrupted && deliverer ? { ...deliverer.stopped } : undefined,
      inDoubtResolution:
        (delivery?.inDoubt || inDoubtInLedger) && sink && chosen
          ? inDoubtResolution({ ledger: opts.ledger ?? path }, chosen, sink)
          : undefined,
      inDoubtInLedger: inDoubtInLedger || undefined,
      ...(opts.dryRun && chosen?.spend
        ? {
            spend: chosen.spend(collector.counts.new + (opts.existing === 'update' ? collector.counts.known_lead : 0)),
          }
        : {}),
      reportError: reportFileError(reportFile),
      startedAt: new Date(started).toISOString(),
      durationMs: Date.now() - started,
      exitCode: runExitCode(
        delivery,
        interrupted,
        collector.unread,
        !!reportFile?.error,
        inDoubtInLedger,
        collector.counts.conflict,
        !!mismatch,
      ),
    };
  }
}

/**
 * The run's parameters as recorded in the ledger and the JSON report: never a token or secret. Of the sink flags,
 * only those of the run's sink, as its definition shows them (a flag with a default, --hubspot-url, is no target of
 * a push elsewhere).
 */
function publicParams(o: PushOptions, sink: Record<string, unknown> = {}): Record<string, unknown> {
  const p: Record<string, unknown> = {
    inputs: o.inputs,
    dryRun: o.dryRun,
    sink: o.sink,
    ...sink,
    format: o.format,
    encoding: o.encoding,
    delimiter: o.delimiter,
    select: o.select,
    preset: o.preset,
    defaultCountry: o.defaultCountry,
    timezone: o.timezone,
    dateOrder: o.dateOrder,
    types: o.types,
    since: o.since?.toISOString(),
    until: o.until?.toISOString(),
    existing: o.existing,
    concurrency: o.concurrency,
    rate: o.rate,
    maxRetries: o.maxRetries,
    backoffMs: o.backoffMs,
    timeoutMs: o.timeoutMs,
    host: hostname(),
  };
  for (const k of Object.keys(p)) if (p[k] === undefined) delete p[k];
  return p;
}
