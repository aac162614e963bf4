// The receiver's delivery: a loop that claims what the inbox holds (queued events, of any instance), sends it in the
// sink's batches with push's deliverer (claim before the send, settle after, the rate limiter, the retries), and
// keeps at it: a send that failed for a reason that may pass (a 5xx, a 429 past the retries) is tried again after a
// backoff; events a dead run left pending become in doubt and are looked up (or re-sent with their key) as push
// recovers them; a CRM that refuses every connection pauses delivery, and the inbox fills meanwhile.
import { Deliverer, type SettledItem } from '../deliver/deliver.js';
import { CredentialsError, UnreachableError } from '../errors.js';
import { mayStillSend, type LedgerStore } from '../ledger/store.js';
import type { LedgerEventRow } from '../ledger/types.js';
import type { Lead } from '../mapping/types.js';
import { canLookUp, type Sink } from '../sinks/types.js';
import type { Inbox } from './inbox.js';
import type { ServeLog } from './log.js';
import type { ServeMetrics } from './metrics.js';

/** The run the receiver holds the ledger as (renewed when its lease is lost). */
export interface ServeRun {
  id: number;
  lease: ReturnType<LedgerStore['keepAlive']> | undefined;
}

/** Options of the delivery loop. */
export interface DeliveryOptions {
  ledger: LedgerStore;
  inbox: Inbox;
  /** Opens the sink (again, after it was found unreachable: a fresh circuit breaker). */
  openSink: () => Promise<{ sink: Sink; close: () => Promise<void> }>;
  run: ServeRun;
  /** Takes the ledger again for a new run, once this one's lease was lost. */
  renewRun: () => Promise<void>;
  namespace: string;
  concurrency: number;
  /** Graceful stop: claim nothing more; in-flight sends settle. */
  stop: AbortSignal;
  /** The grace period ran out: in-flight sends are cut (their events end in doubt). */
  hardStop: AbortSignal;
  metrics: ServeMetrics;
  log: ServeLog;
  /** A retryable failure is tried again after this long (doubled per attempt, up to 10 minutes). */
  retryAfterMs: number;
  /** An event in doubt is looked up once its doubt is this old (a send that timed out may still land). */
  inDoubtAfterMs: number;
  /** Housekeeping (orphans, retries, doubts, the inbox's depth) at least this often. */
  maintenanceMs: number;
}

const MAX_RETRY_MS = 600_000;
const MAX_PAUSE_MS = 30_000;
const RETRY_DOUBT_MS = 600_000;

/** Delivers the inbox until stopped. */
export class DeliveryLoop {
  private sink: { sink: Sink; close: () => Promise<void> } | undefined;
  private wakeUp: (() => void) | undefined;
  /** Events in doubt this process looked at and left so, by when (not asked about again before RETRY_DOUBT_MS). */
  private readonly leftInDoubt = new Map<string, number>();
  /** The round's failed and in-doubt events: how many, and the first (logged once the round is over). */
  private roundTrouble: Partial<Record<'failed' | 'in_doubt', { n: number; first: SettledItem }>> = {};
  private woken = false;
  private lastMaintenance = 0;
  private pauseMs = 0;
  /** Why delivery is paused, while it is (readiness says so). */
  blocked: string | undefined;
  private running: Promise<void> | undefined;

  constructor(private readonly o: DeliveryOptions) {}

  /** New events were committed: deliver them now rather than at the next poll. */
  wake(): void {
    this.woken = true;
    this.wakeUp?.();
  }

  /** Starts the loop; `done()` resolves once it stopped. */
  start(): void {
    this.running = this.loop();
  }

  /** Resolves when the loop has stopped (after a stop, with its last round settled). */
  async done(): Promise<void> {
    this.wake();
    await this.running;
  }

  private async loop(): Promise<void> {
    const { o } = this;
    while (!o.stop.aborted) {
      let worked: boolean;
      try {
        if (!mayStillSend(o.run.lease)) {
          o.log.warn('the run lost its hold on the ledger; taking it again', { run: o.run.id });
          await o.renewRun();
        }
        this.sink ??= await o.openSink();
        worked = await this.round(this.sink.sink);
        this.blocked = undefined;
        o.metrics.deliveryBlocked = 0;
        this.pauseMs = 0;
      } catch (e) {
        await this.paused(e as Error);
        continue;
      }
      if (!worked) await this.idle(Math.max(50, o.maintenanceMs - (Date.now() - this.lastMaintenance)));
    }
    await this.sink?.close().catch(() => undefined);
    this.sink = undefined;
  }

  // One round: housekeeping when due, then a claim of what waits; true when it sent something.
  private async round(sink: Sink): Promise<boolean> {
    const { o } = this;
    const caps = sink.capabilities;
    const deliverer = new Deliverer({
      ledger: o.ledger,
      sink,
      runId: o.run.id,
      namespace: o.namespace,
      concurrency: o.concurrency,
      existing: 'skip',
      stop: o.stop,
      hardStop: o.hardStop,
      mayStillSend: () => mayStillSend(o.run.lease),
      onSettled: (s: SettledItem) => this.settled(s),
    });
    let sent = 0;
    if (Date.now() - this.lastMaintenance >= o.maintenanceMs) {
      this.lastMaintenance = Date.now();
      sent += await this.maintain(deliverer, sink);
    }
    // A round claims what fills the sink's batches in flight, and no more than 1,000 events: on SQLite each claim
    // and settle holds the event loop, and the receiver's answers wait behind it.
    const rows = await o.inbox.queued(
      Math.min(1000, Math.max(caps.claimBlock ?? 0, caps.maxBatch) * Math.max(1, o.concurrency)),
    );
    for (const r of rows) {
      const lead = leadOf(r);
      if (lead) await deliverer.enqueueExisting(r, lead, ['queued']);
    }
    sent += rows.length;
    this.woken = false;
    try {
      await deliverer.finish();
    } finally {
      for (const [result, t] of Object.entries(this.roundTrouble))
        o.log.warn(result === 'failed' ? 'events not delivered' : 'events in doubt', {
          events: t.n,
          example: t.first.key,
          error: t.first.error,
        });
      this.roundTrouble = {};
    }
    return sent > 0;
  }

  // Rows left pending by a dead run become in doubt; doubts old enough are resolved; retryable failures whose
  // backoff has passed are tried again.
  private async maintain(deliverer: Deliverer, sink: Sink): Promise<number> {
    const { o } = this;
    await o.ledger.markOrphansInDoubt();
    // An event this process could not resolve where the sink cannot look people up (a JSONL file read back whole, a
    // webhook that does not drop repeats) is not asked about again for ten minutes: each try would read it for nothing.
    const now = Date.now();
    for (const [k, at] of this.leftInDoubt) if (now - at > RETRY_DOUBT_MS) this.leftInDoubt.delete(k);
    const doubt = (await o.inbox.inDoubt(new Date(now - o.inDoubtAfterMs).toISOString(), 1000)).filter(
      (r) => !this.leftInDoubt.has(r.key),
    );
    if (doubt.length) {
      const r = await deliverer.recoverInDoubt({ rows: doubt });
      // A sink that looks people up is asked again at the next round (a lookup that failed may pass); one that
      // cannot is not.
      if (!canLookUp(sink)) {
        const after = new Map((await o.ledger.rowsByKeys(doubt.map((d) => d.key))).map((x) => [x.key, x.status]));
        for (const d of doubt) if (after.get(d.key) === 'in_doubt') this.leftInDoubt.set(d.key, now);
      }
      o.log.info('events in doubt looked at', { recovered: r.recovered, resent: r.resent, left: r.left });
    }
    const failed = await o.inbox.retryable(new Date(Date.now() - o.retryAfterMs).toISOString(), 1000);
    let n = 0;
    for (const r of failed) {
      // The backoff doubles with each attempt: attempts 1, 2, 3 wait 1, 2, 4 times retryAfterMs.
      const due = Date.parse(r.updated_at) + Math.min(MAX_RETRY_MS, o.retryAfterMs * 2 ** Math.max(0, r.attempts - 1));
      const lead = leadOf(r);
      if (due > Date.now() || !lead) continue;
      await deliverer.enqueueExisting(r, lead, ['failed']);
      n++;
    }
    return n + doubt.length;
  }

  /** Counts the inbox's depth and the doubts on this sink (for /metrics, /readyz and the backpressure). */
  async count(): Promise<void> {
    const d = await this.o.inbox.depth();
    this.o.metrics.inboxEvents = d.events;
    this.o.metrics.inboxBytes = d.bytes;
    this.o.metrics.inDoubt = await this.o.inbox.inDoubtCount();
  }

  private settled(s: SettledItem): void {
    this.o.metrics.delivered.inc({ result: s.result });
    if (s.result !== 'failed' && s.result !== 'in_doubt') return;
    // One line a round, not one an event: an outage fails thousands.
    const t = (this.roundTrouble[s.result] ??= { n: 0, first: s });
    t.n++;
  }

  // Delivery could not go on: the CRM unreachable (its sink is opened again, with a fresh breaker), the credentials
  // refused, the ledger failing. It pauses, longer each time up to 30 s, and tries again; the inbox keeps filling.
  private async paused(e: Error): Promise<void> {
    const { o } = this;
    this.pauseMs = Math.min(MAX_PAUSE_MS, this.pauseMs ? this.pauseMs * 2 : 1000);
    this.blocked = e.message;
    o.metrics.deliveryBlocked = 1;
    const kind =
      e instanceof UnreachableError
        ? 'CRM unreachable'
        : e instanceof CredentialsError
          ? 'credentials refused'
          : 'delivery failed';
    o.log.error(`${kind}: delivery paused`, { error: e.message, retryInMs: this.pauseMs });
    if (e instanceof UnreachableError || e instanceof CredentialsError) {
      await this.sink?.close().catch(() => undefined);
      this.sink = undefined;
    }
    await this.idle(this.pauseMs, false);
  }

  // Waits up to ms, or until woken by new events (unless `wakeable` is false), or stopped.
  private async idle(ms: number, wakeable = true): Promise<void> {
    if (wakeable && this.woken) {
      this.woken = false;
      return;
    }
    await new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(t);
        this.o.stop.removeEventListener('abort', done);
        this.wakeUp = undefined;
        resolve();
      };
      const t = setTimeout(done, ms);
      this.o.stop.addEventListener('abort', done);
      if (wakeable) this.wakeUp = done;
    });
    this.woken = false;
  }
}

function leadOf(r: LedgerEventRow): Lead | undefined {
  if (!r.lead_json) return undefined;
  try {
    return JSON.parse(r.lead_json) as Lead;
  } catch {
    return undefined;
  }
}
