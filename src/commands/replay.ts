// `leadledger replay`: send again, from the ledger, exactly what did not get through (failed, in doubt), or
// with --force what did; every send follows the same claim / settle rules as push, with the first downstream key.
import { readFileSync } from 'node:fs';
import type { Decision } from '../decide/types.js';
import {
  conflictReason,
  knownInLedgerReason,
  knownInRunReason,
  knownRetryReason,
  RESEND_IN_DOUBT,
} from '../decide/decide.js';
import { differingFields } from '../mapping/keys.js';
import { Deliverer, type SettledItem } from '../deliver/deliver.js';
import { UsageError } from '../errors.js';
import { ledgerFailure } from '../ledger/failure.js';
import { ledgerName } from '../ledger/open.js';
import { EVENT_COLUMNS, likeOp, whereClause } from '../ledger/queries.js';
import { mayStillSend, stopKeepAlive, type LedgerStore } from '../ledger/store.js';
import type { EventStatus, LedgerEventRow } from '../ledger/types.js';
import { loadConfig } from '../mapping/config.js';
import type { MapOptions } from '../mapping/map-record.js';
import { resolvePreset } from '../presets/catalog.js';
import { mapInputs } from '../presets/read-as.js';
import type { SourceDef } from '../presets/types.js';
import { resolveDefaultCountry } from '../mapping/default-country.js';
import type { DecideStats } from '../engine/decide-inputs.js';
import type { Lead } from '../mapping/types.js';
import { ReportFile } from '../report/report-file.js';
import { reportRow } from '../report/report-row.js';
import {
  datesRead,
  phoneCountry,
  reportFileError,
  ReportCollector,
  runExitCode,
  unreadPart,
  type RunReport,
  type Unread,
} from '../report/run-report.js';
import type { CircuitBreaker } from '../sinks/transport/breaker.js';
import type { HttpClient } from '../sinks/transport/http.js';
import type { ConfiguredSink } from '../sinks/definition.js';
import { canFindWritten, canLookUp, type Sink } from '../sinks/types.js';
import type { InputRead, ReadOptions } from '../sources/types.js';
import type { CommandContext } from './context.js';
import { openExistingLedger, resolveLedger } from './ledger/access.js';
import { resolveDates } from './dates.js';
import type { DateOrder } from '../mapping/times.js';
import { configureSink, httpSummary, openSink, type SinkFlags } from '../deliver/open-sink.js';
import { inDoubtResolution } from '../deliver/resolve-command.js';
import { ledgerPath } from '../ledger/ledger.js';
import { recordedSink } from './recorded-sink.js';

/** Options of `replay`. */
export interface ReplayOptions extends SinkFlags {
  dryRun: boolean;
  ledger?: string;
  config?: string;
  /** Retryable failures (the default when no status flag is given). */
  failed?: boolean;
  /** Permanent (4xx) failures too, after a mapping fix. */
  permanent?: boolean;
  /** In-doubt events: looked up in the CRM first where the sink can. */
  inDoubt?: boolean;
  /** Events `serve` acknowledged and did not deliver (its inbox), sent from here instead. */
  queued?: boolean;
  /**
   * With inDoubt: re-send in-doubt events the sink can neither look up nor have dropped as a repeat, accepting that
   * the CRM may get them twice. Touches no other status: re-sending sent events is `force`'s, and asks first.
   */
  resend?: boolean;
  /** Re-send events already sent (with their first downstream key); needs confirmation. */
  force?: boolean;
  keys?: string[];
  keysFrom?: string;
  since?: Date;
  until?: Date;
  source?: string;
  run?: number;
  limit?: number;
  /** Input files to match against the ledger instead of the stored leads. */
  from?: string[];
  read?: ReadOptions;
  /** For --from: --preset, the source every input is read as ('generic': by field names only). */
  preset?: string;
  /** For --from: --default-country, and where it came from; else the config's, then the locale's. */
  defaultCountry?: string;
  defaultCountryFrom?: string;
  /** For --from: --timezone and --date-order, as push reads them. */
  timezone?: string;
  dateOrder?: DateOrder;
  report?: string;
  wait?: number;
  noLock?: boolean;
}

/** Asks a person to confirm (on a TTY), or answers from --yes; refuses when nobody can be asked. */
export type Confirm = (question: string) => Promise<boolean>;

interface Selected {
  row: LedgerEventRow;
  lead?: Lead;
  /** The person of the lead re-mapped from the input (--from), which may differ from the stored one. */
  naturalKey?: string;
  from: EventStatus;
}

/**
 * Whether the person of a failed event a replay would send again is already delivered by another event: one this
 * replay sends before it, or one the ledger holds as sent, pending or in doubt. (An in-doubt event is looked up in the
 * CRM, or re-sent with its own key or by --resend's explicit choice: the rule is for failures, as push's is.)
 */
class PersonRule {
  private readonly seen = new Map<string, string>();

  constructor(private readonly ledger: LedgerStore) {}

  /** The reason the person is known (naming the event), or undefined: the event may go out, and now holds the person. */
  async knownBy(key: string, naturalKey: string | undefined): Promise<string | undefined> {
    if (naturalKey === undefined) return undefined;
    const earlier = this.seen.get(naturalKey);
    if (earlier !== undefined) return knownInRunReason(`event ${earlier}`);
    const other = await this.ledger.sql.get<{ key: string }>(
      "SELECT key FROM events WHERE natural_key = ? AND key <> ? AND status IN ('sent', 'pending', 'in_doubt', 'queued') LIMIT 1",
      [naturalKey, key],
    );
    if (other) return knownInLedgerReason(other.key);
    this.seen.set(naturalKey, key);
    return undefined;
  }

  /** An event this replay sends that holds its person (an in-doubt one re-sent): later failures of theirs are known. */
  holds(key: string, naturalKey: string | undefined): void {
    if (naturalKey !== undefined && !this.seen.has(naturalKey)) this.seen.set(naturalKey, key);
  }
}

/** Re-sends selected ledger events and returns what happened as data. */
export async function replay(o: ReplayOptions, ctx: CommandContext & { confirm?: Confirm }): Promise<RunReport> {
  // The ledger's path once the config is read (the config may name it).
  const at: { ledger?: string } = {};
  try {
    return await replayOnce(o, ctx, at);
  } catch (e) {
    // The ledger is the only SQLite here: a SQLite error that got this far is the ledger's (damaged: exit 5).
    throw ledgerFailure(e, ledgerName(at.ledger ?? resolveLedger(o.ledger, ctx, null)));
  }
}

async function replayOnce(
  o: ReplayOptions,
  ctx: CommandContext & { confirm?: Confirm },
  at: { ledger?: string },
): Promise<RunReport> {
  const started = Date.now();
  const loaded = loadConfig(o.config, ctx.cwd, ctx.env);
  const { config } = loaded;
  const path = (at.ledger = resolveLedger(o.ledger, ctx, config.ledger ?? null));
  if (o.resend && !o.inDoubt)
    throw new UsageError(
      '--resend re-sends in-doubt events only: give it with --in-doubt (--force re-sends sent ones)',
    );
  const statuses = chooseStatuses(o);
  const country = resolveDefaultCountry({
    flag: o.defaultCountry,
    flagFrom: o.defaultCountryFrom,
    config: config.defaultCountry,
    env: ctx.env,
  });
  const stats = { nationalPhones: 0 };
  // The inputs of --from are read as push reads them: the same zone and order of day and month.
  const dates = resolveDates(o, config);

  const ledger = await openExistingLedger(path, { readonly: o.dryRun, env: ctx.env, stop: ctx.stop });
  let chosen: ConfiguredSink | undefined;
  let params: Record<string, unknown>;
  try {
    // Without --sink (LEADLEDGER_SINK), the events go where they were sent, with the settings their run recorded
    // (a flag or its variable still wins over them); only where the ledger records no sink, the config's "sink".
    const recorded = o.sink
      ? undefined
      : await recordedSink(ledger, {
          statuses: selectedStatuses(statuses),
          keys: o.keys,
          since: o.since,
          until: o.until,
          source: o.source,
          run: o.run,
        });
    const to: ReplayOptions = recorded
      ? { ...o, sink: recorded.name, sinkFlags: { ...recorded.flags, ...o.sinkFlags } }
      : o;
    chosen = configureSink(to, config);
    params = publicReplayParams({ ...o, sink: chosen?.name }, chosen?.shown());
  } catch (e) {
    await ledger.close();
    throw e;
  }
  let sink: Sink | undefined;
  let http: HttpClient | undefined;
  let breaker: CircuitBreaker | undefined;
  const collector = new ReportCollector();
  // The globs of --from that matched no file: nothing to do for them (a note).
  const noMatch: string[] = [];
  let reportFile: ReportFile | undefined;
  let deliverer: Deliverer | undefined;
  let runId: number | undefined;
  let runStatus: 'done' | 'failed' | 'interrupted' = 'done';
  let heartbeat: ReturnType<LedgerStore['keepAlive']> | undefined;
  let report!: RunReport;
  try {
    if (config.retention?.sentPayloads === 'drop') ledger.dropSentPayloads = true;
    if (!o.dryRun) {
      ({ sink, http, breaker } = await openSink('replay', o, config, ctx, chosen));
      // From the first Ctrl-C on, no request leaves: those still waiting are abandoned and their events released.
      http?.abandonUnsentOn(ctx.stop);
      // The run takes the ledger before anything is selected: the claims of a run that died mid-send are marked in
      // doubt only once that run is marked crashed (startRun does it), and --in-doubt must find them among the rest.
      // Selected before, they were left behind, in doubt, by a replay that ended 0.
      runId = await ledger.startRun('replay', params, { exclusive: !o.noLock, waitMs: o.wait });
      heartbeat = ledger.keepAlive(runId);
      await ledger.markOrphansInDoubt();
    }
    const selected = await select(
      ledger,
      { ...o, read: { ...o.read, onNoMatch: (p: string) => noMatch.push(p) } },
      statuses,
      {
        config,
        defaultCountry: country.country,
        timezone: dates.timezone,
        dateOrder: { order: dates.order, from: dates.orderFrom },
      },
      o.from?.length
        ? o.preset
          ? resolvePreset(o.preset)
          : resolvePreset(config.preset, 'the config\'s "preset"')
        : undefined,
      stats,
      ctx,
      (u) => collector.addUnread(u),
      (r) => collector.readAs.push(r),
      (d) => collector.add(d),
    );
    const decisions = new Map<string, Decision>();
    const decide = (s: Selected): Decision => {
      const lead = s.lead ?? (s.row.lead_json ? (JSON.parse(s.row.lead_json) as Lead) : undefined);
      const base = {
        source: s.row.source ?? '(ledger)',
        line: s.row.source_line ?? 0,
        key: s.row.key,
        naturalKey: s.naturalKey ?? s.row.natural_key ?? undefined,
      };
      if (!lead)
        return {
          ...base,
          kind: 'invalid',
          reason: 'no stored lead (pruned by retention): replay --from <the input file>',
        };
      const why =
        s.from === 'failed'
          ? `failed earlier: ${s.row.last_error ?? s.row.failure}`
          : s.from === 'in_doubt'
            ? `in doubt: looked up first where the sink can${o.resend ? ', else re-sent (--resend)' : ''}`
            : s.from === 'queued'
              ? 'received by leadledger serve, not delivered yet'
              : 'sent earlier: re-sent with --force';
      return {
        ...base,
        kind: 'new',
        reason: `replay: ${why}`,
        event: {
          kind: 'event',
          source: base.source,
          line: base.line,
          key: s.row.key,
          keyKind: 'id',
          payloadHash: s.row.payload_hash ?? '',
          naturalKey: base.naturalKey,
          lead,
        },
      };
    };
    // The person rule, as push applies it: a failed event whose person another event delivered (earlier in this
    // replay, or in the ledger) is a known lead, skipped or updated by --existing, never a second create.
    const people = new PersonRule(ledger);
    for (const s of selected) {
      const d = decide(s);
      if (d.kind === 'new' && s.from === 'failed') {
        const by = await people.knownBy(s.row.key, d.naturalKey);
        if (by !== undefined) {
          d.kind = 'known_lead';
          d.reason = `replay: ${knownRetryReason(by)}`;
        }
      } else if (d.kind === 'new') people.holds(s.row.key, d.naturalKey);
      decisions.set(s.row.key, d);
    }
    const update = o.existing === 'update';
    const resending = selected.filter((s) => s.from === 'sent' && decisions.get(s.row.key)!.kind === 'new');

    if (sink && resending.length) {
      const q = `Re-send ${resending.length} event(s) that were already delivered to ${sink.describe()}? They keep their first downstream keys.`;
      if (!ctx.confirm || !(await ctx.confirm(q)))
        throw new UsageError(`not confirmed: ${q} (pass --yes when not on a terminal)`);
    }
    reportFile = o.report ? ReportFile.open(o.report) : undefined;
    const writeRow = (d: Decision, result = '', crmId = '') => reportFile?.write(reportRow(d, result, crmId), d);

    if (sink && runId !== undefined) {
      deliverer = new Deliverer({
        breaker,
        ledger,
        sink,
        runId,
        namespace: config.namespace ?? 'leadledger',
        concurrency: o.concurrency ?? 4,
        existing: o.existing ?? 'skip',
        stop: ctx.stop,
        hardStop: ctx.hardStop,
        mayStillSend: () => mayStillSend(heartbeat),
        onSettled: (s: SettledItem) => {
          const d = s.decision ?? decisions.get(s.key);
          if (d) writeRow(d, s.result, s.crmId ?? '');
        },
      });
    }

    // Like push, a replay first settles what earlier runs left in doubt on this sink (looked up, or re-sent with
    // the same downstream key where that is safe); --in-doubt selects them itself, with --resend for the rest.
    // Without this, the claims of a killed replay stayed in doubt behind a rerun that ended 0.
    if (deliverer && !o.inDoubt) await deliverer.recoverInDoubt();
    const inDoubt: Selected[] = [];
    for (const s of selected) {
      const d = decisions.get(s.row.key)!;
      if (d.kind === 'new' && s.from === 'in_doubt' && deliverer) {
        const checkable =
          sink!.capabilities.honoursIdempotencyKey ||
          (canLookUp(sink!) && !!s.row.natural_key) ||
          // A file read back: what it holds is settled; the rest stays in doubt without --resend.
          canFindWritten(sink!);
        if (!checkable && !o.resend) {
          d.kind = 'filtered';
          d.reason = `in doubt, and ${sink!.name} can neither look it up nor drop a repeat: ${RESEND_IN_DOUBT} re-sends it`;
          // Still in doubt after this run: it counts there, so the run does not end 0 on it.
          deliverer.keepInDoubt(d.reason);
        } else {
          inDoubt.push(s);
          collector.add(d);
          continue;
        }
      }
      collector.add(d);
      const sends = d.kind === 'new' || (d.kind === 'known_lead' && update);
      if (!sends || !deliverer) {
        writeRow(d);
        continue;
      }
      if (s.lead) await ledger.storeLead(s.row.key, JSON.stringify(s.lead), s.row.payload_hash ?? '');
      await deliverer.enqueueExisting(s.row, d.event!.lead, [s.from], d, d.kind === 'new' ? 'create' : 'update');
    }
    if (deliverer) {
      await deliverer.finish();
      if (inDoubt.length) {
        await deliverer.recoverInDoubt({
          rows: inDoubt.map((s) => s.row),
          blind: !!o.resend,
          leads: new Map(inDoubt.filter((s) => s.lead).map((s) => [s.row.key, s.lead!])),
          onDecision: (row) => decisions.get(row.key),
        });
      }
    }
    if (ctx.stop.aborted) runStatus = 'interrupted';
  } catch (e) {
    runStatus = 'failed';
    // Sends already on the wire settle before the ledger closes: their outcome is recorded, not left pending.
    await deliverer?.drain();
    throw e;
  } finally {
    stopKeepAlive(heartbeat);
    const delivery = deliverer?.counts;
    const interrupted = ctx.stop.aborted;
    const build = (): RunReport => ({
      command: 'replay',
      dryRun: o.dryRun,
      ledger: ledgerName(path),
      config: loaded.path ?? null,
      runId,
      sink: sink?.describe(),
      inputs: o.from ?? [],
      options: params,
      counts: collector.counts,
      perSource: collector.perSource,
      examples: collector.examples,
      readAs: collector.readAs,
      unread: collector.unread,
      ...(noMatch.length ? { noMatch } : {}),
      warnings: collector.warnings,
      // Phones are read only from the inputs of --from: the ledger's leads are stored read.
      phones: o.from?.length ? phoneCountry(country, stats.nationalPhones) : undefined,
      dates: o.from?.length ? datesRead(dates, collector.readAs) : undefined,
      delivery,
      failures: deliverer?.failures,
      fieldsNotHeld: deliverer?.fieldsNotHeld(),
      inDoubtReasons: deliverer?.inDoubtReasons,
      sharedTransactions: deliverer?.sharedBatches,
      http: http ? httpSummary(http) : undefined,
      interrupted: interrupted || undefined,
      stopped: interrupted && deliverer ? { ...deliverer.stopped } : undefined,
      inDoubtResolution:
        delivery?.inDoubt && sink && chosen
          ? inDoubtResolution({ ledger: o.ledger ?? ledgerPath(undefined, ctx.env, config.ledger) }, chosen, sink)
          : undefined,
      reportError: reportFileError(reportFile),
      startedAt: new Date(started).toISOString(),
      durationMs: Date.now() - started,
      exitCode: runExitCode(delivery, interrupted, collector.unread, !!reportFile?.error, 0, collector.counts.conflict),
    });
    // An HTML report ends with the run's summary: the report as it stands (its own write error aside).
    reportFile?.close(build);
    report = build();
    if (runId !== undefined) await ledger.finishRun(runId, runStatus, { counts: report.counts, delivery });
    await ledger.close();
    await sink?.close?.();
  }
  return report;
}

/** The statuses a replay takes, from its flags: retryable failures unless told otherwise. */
function chooseStatuses(o: ReplayOptions): {
  failed: boolean;
  permanent: boolean;
  inDoubt: boolean;
  sent: boolean;
  queued: boolean;
} {
  const any = o.failed || o.permanent || o.inDoubt || o.queued;
  return {
    failed: !any || !!o.failed || !!o.permanent,
    permanent: !!o.permanent,
    inDoubt: !!o.inDoubt,
    sent: !!o.force,
    queued: !!o.queued,
  };
}

// The ledger statuses a replay's choice selects rows in.
function selectedStatuses(st: ReturnType<typeof chooseStatuses>): EventStatus[] {
  const statuses: EventStatus[] = [];
  if (st.failed || st.permanent) statuses.push('failed');
  if (st.inDoubt) statuses.push('in_doubt');
  if (st.sent) statuses.push('sent');
  if (st.queued) statuses.push('queued');
  return statuses;
}

async function select(
  ledger: LedgerStore,
  o: ReplayOptions,
  st: ReturnType<typeof chooseStatuses>,
  mapOptions: MapOptions,
  preset: SourceDef | 'generic' | undefined,
  stats: DecideStats,
  ctx: CommandContext,
  onUnread: (u: Unread) => void,
  onRead: (r: InputRead) => void,
  onConflict: (d: Decision) => void,
): Promise<Selected[]> {
  const wanted = (r: LedgerEventRow): EventStatus | undefined => {
    if (
      r.status === 'failed' &&
      ((r.failure === 'permanent' && st.permanent) || (r.failure !== 'permanent' && st.failed))
    )
      return 'failed';
    if (r.status === 'in_doubt' && st.inDoubt) return 'in_doubt';
    if (r.status === 'sent' && st.sent && r.outcome !== 'imported') return 'sent';
    if (r.status === 'queued' && st.queued) return 'queued';
    return undefined;
  };
  let keys = o.keys ? [...o.keys] : undefined;
  if (o.keysFrom) {
    const text = readFileSync(o.keysFrom === '-' ? 0 : o.keysFrom, 'utf8');
    keys = [
      ...(keys ?? []),
      ...text
        .split(/\r?\n/)
        .map((l) => l.trim())
        .filter(Boolean),
    ];
  }
  // A key named twice (--keys e1,e1, or in --keys and the file) is one event: replayed once.
  if (keys) keys = [...new Set(keys)];
  const out: Selected[] = [];
  const limit = o.limit && o.limit > 0 ? o.limit : Infinity;
  if (o.from?.length) {
    // Match input events to the ledger by key; the input's (re-mapped) lead is what gets sent.
    const keySet = keys ? new Set(keys) : undefined;
    // Keys already selected, with where and the lead they were read with: an input may repeat an event (a retried
    // delivery, skipped) or give its key another lead (a conflict, never sent silently: reported, and the run ends 6).
    const chosen = new Map<string, { where: string; lead: Lead }>();
    // Read as push reads them (the same sources recognized), so that each event has the key push gave it.
    const read = { ...o.read, stdin: ctx.stdin, onInputRead: onRead, signal: ctx.stop };
    for await (const batch of mapInputs(o.from, read, mapOptions, preset)) {
      for (const it of batch) if (it.kind === 'unread') onUnread(unreadPart(it));
      for (const m of batch)
        if ((m.kind === 'event' || m.kind === 'invalid') && m.nationalPhone) stats.nationalPhones++;
      const events = batch.flatMap((m) => (m.kind === 'event' ? [m] : []));
      const rows = new Map((await ledger.rowsByKeys([...new Set(events.map((e) => e.key))])).map((r) => [r.key, r]));
      for (const e of events) {
        const r = rows.get(e.key);
        if (!r || (keySet && !keySet.has(e.key))) continue;
        const from = wanted(r);
        if (!from) continue;
        const earlier = chosen.get(e.key);
        if (earlier) {
          const fields = differingFields(earlier.lead, e.lead);
          if (fields.length)
            onConflict({
              kind: 'conflict',
              source: e.source,
              line: e.line,
              key: e.key,
              fields,
              reason: conflictReason(`same key as ${earlier.where}`, fields),
            });
          continue;
        }
        chosen.set(e.key, { where: `${e.source} line ${e.line}`, lead: e.lead });
        out.push({ row: r, lead: e.lead, naturalKey: e.naturalKey, from });
        if (out.length >= limit) return out;
      }
    }
    return out;
  }
  const statuses = selectedStatuses(st);
  const like = likeOp(ledger.sql);
  // The filters besides the status: on the query when no keys are given, checked key by key when they are.
  const filters = { since: o.since, until: o.until, source: o.source, runId: o.run, timeField: 'first_seen' } as const;
  const w = whereClause({ status: statuses, ...filters }, like);
  const rows = keys
    ? (await ledger.rowsByKeys(keys)).filter((r) => statuses.includes(r.status))
    : await ledger.sql.all<LedgerEventRow>(
        `SELECT ${EVENT_COLUMNS} FROM events ${w.sql} ORDER BY first_seen_at, key`,
        w.params,
      );
  const one = whereClause(filters, like);
  for (const r of rows) {
    if (keys && (o.since || o.until || o.source || o.run)) {
      if (
        !(await ledger.sql.get(`SELECT 1 AS one FROM events ${one.sql ? one.sql + ' AND' : 'WHERE'} key = ?`, [
          ...one.params,
          r.key,
        ]))
      )
        continue;
    }
    const from = wanted(r);
    if (from) out.push({ row: r, from });
    if (out.length >= limit) break;
  }
  return out;
}

// The replay's parameters as the ledger's run record keeps them; of the sink flags, only its sink's, as shown.
function publicReplayParams(o: ReplayOptions, sink: Record<string, unknown> = {}): Record<string, unknown> {
  const p: Record<string, unknown> = {
    dryRun: o.dryRun,
    sink: o.sink,
    failed: o.failed,
    permanent: o.permanent,
    inDoubt: o.inDoubt,
    resend: o.resend,
    force: o.force,
    keys: o.keys?.length,
    keysFrom: o.keysFrom,
    since: o.since?.toISOString(),
    until: o.until?.toISOString(),
    source: o.source,
    run: o.run,
    limit: o.limit,
    from: o.from,
    ...sink,
  };
  for (const k of Object.keys(p)) if (p[k] === undefined || p[k] === false) delete p[k];
  return p;
}
