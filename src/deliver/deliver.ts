// Applies the plan: claim in the ledger, send to the sink, settle in the ledger. The invariant, for every event:
// a committed claim (status pending, owned by this run) exists BEFORE the sink is called, and the outcome is
// committed AFTER it returns. A crash between the two leaves a pending row that the next run turns in_doubt.
import { RESEND_IN_DOUBT } from '../decide/decide.js';
import type { Decision } from '../decide/types.js';
import { CredentialsError, LedgerError, UnreachableError } from '../errors.js';
import type { LedgerStore } from '../ledger/store.js';
import type { ClaimInput, EventStatus, LedgerEventRow, Settlement } from '../ledger/types.js';
import { downstreamKey } from '../mapping/keys.js';
import type { Lead } from '../mapping/types.js';
import {
  emptyDelivery,
  type DeliveryCounts,
  type FieldNotHeldCount,
  type SharedBatches,
  type StopCounts,
} from './delivery-counts.js';
import type { CircuitBreaker } from '../sinks/transport/breaker.js';
import { RequestNotSent } from '../sinks/transport/http.js';
import {
  canFindWritten,
  canLookUp,
  type FieldNotHeld,
  type LookupResult,
  type SendItem,
  type SharedDatabaseWriter,
  type Sink,
  type SinkOutcome,
} from '../sinks/types.js';

/** Options of the deliver stage. */
export interface DeliverOptions {
  ledger: LedgerStore;
  sink: Sink;
  runId: number;
  /** Namespace of the downstream keys: sha256(namespace | event key). */
  namespace: string;
  /** Batches in flight at once. */
  concurrency: number;
  /** What to do with a known lead: skip it (default) or update it in the CRM. */
  existing: 'skip' | 'update';
  /** Aborted by Ctrl-C / SIGTERM: stop claiming, let in-flight sends finish. */
  stop: AbortSignal;
  /** Aborted when the grace period after a stop runs out: in-flight sends are cut (their events end in doubt). */
  hardStop: AbortSignal;
  /** Called once per settled event (report rows, progress). */
  onSettled?: (item: SettledItem) => void;
  /**
   * False once the run's hold on a shared ledger is lost or overdue (its lease): no send starts after that, and the
   * events still queued stay unclaimed (claimed ones stay pending, for the next run to find in doubt).
   */
  mayStillSend?: () => boolean;
  /**
   * The run's circuit breaker: once the destination has refused too many connections in a row, nothing more is
   * claimed or sent; what was claimed and not sent is released, and the run ends with UnreachableError.
   */
  breaker?: CircuitBreaker;
}

/** One event after its send was settled. */
export interface SettledItem {
  decision?: Decision;
  row?: LedgerEventRow;
  key: string;
  result: 'sent' | 'updated' | 'exists' | 'failed' | 'in_doubt' | 'claimed_elsewhere' | 'recovered' | 'released';
  crmId?: string;
  error?: string;
}

/** A settled event, every one of the same shape (a push makes one per event it sends). */
function settled(
  p: { decision?: Decision; row?: LedgerEventRow; key: string },
  result: SettledItem['result'],
  crmId: string | undefined,
  error: string | undefined,
): SettledItem {
  return { decision: p.decision, row: p.row, key: p.key, result, crmId, error };
}

/** The count each result of a settled event adds to. */
const COUNTED_AS: Record<SettledItem['result'], keyof DeliveryCounts> = {
  sent: 'sent',
  updated: 'updated',
  exists: 'exists',
  failed: 'failed',
  in_doubt: 'inDoubt',
  released: 'released',
  claimed_elsewhere: 'claimedElsewhere',
  recovered: 'recovered',
};

/** What a batch's outcomes make the ledger record, and what the run reports once it has. */
interface SettlePlan {
  settlements: Settlement[];
  releases: Array<{ key: string; to: EventStatus | null }>;
  done: SettledItem[];
  stopped: StopCounts;
  /** The fields written leads went without (one entry per lead and field). */
  notHeld?: FieldNotHeld[];
}

interface Pending {
  key: string;
  item: SendItem;
  claim?: ClaimInput;
  /** Absent: a new row (INSERT claim). Present: an existing row, claimed only from these statuses. */
  claimFrom?: EventStatus[];
  decision?: Decision;
  row?: LedgerEventRow;
}

/** Sends decided events in batches with bounded concurrency, claiming before and settling after each send. */
export class Deliverer {
  readonly counts: DeliveryCounts = emptyDelivery();
  readonly failures: Record<string, number> = {};
  /** Events left in doubt grouped by why: reason → count. Every count of counts.inDoubt has its reason here. */
  readonly inDoubtReasons: Record<string, number> = {};
  /** Leads written without a field the sink has no place for, by field and why (fieldsNotHeldCounts). */
  private readonly notHeld = new Map<string, FieldNotHeldCount>();
  /** What the stop did, once the run was stopped: settled in the grace period, cut after it, released. */
  readonly stopped: StopCounts = { settled: 0, cut: 0, released: 0 };
  private batch: Pending[] = [];
  private readonly inFlight = new Set<Promise<void>>();
  private fatal: Error | undefined;
  readonly sinkId: string;
  /** The sink's writer when it is in the ledger's own database: new events then go in one transaction each batch. */
  private readonly shared: SharedDatabaseWriter | undefined;
  /**
   * With such a sink: the batches committed with their ledger records, and those rolled back (by why) and then
   * written the ordinary way. Undefined for any other sink.
   */
  readonly sharedBatches: SharedBatches | undefined;
  /** Events claimed in one ledger transaction (the sink's claimBlock, else its maxBatch). */
  private readonly blockSize: number;
  /** With a claim block: outcomes waiting for their grouped settle transaction, and the sends' counts with them. */
  private settleQueue: SettlePlan[] = [];
  private settleTimer: NodeJS.Timeout | undefined;
  private readonly settling = new Set<Promise<void>>();

  constructor(private readonly o: DeliverOptions) {
    this.sinkId = o.sink.describe();
    const w = o.sink.shared;
    this.shared = w && o.ledger.claimWriteSettle && o.ledger.database === w.database ? w : undefined;
    if (this.shared) this.sharedBatches = { committed: 0, rolledBack: {} };
    const caps = o.sink.capabilities;
    this.blockSize =
      !this.shared && caps.claimBlock && caps.claimBlock > caps.maxBatch ? caps.claimBlock : caps.maxBatch;
  }

  /** The fields the sink had no place for, with how many leads it wrote without each, most first. */
  fieldsNotHeld(): FieldNotHeldCount[] | undefined {
    if (this.notHeld.size === 0) return undefined;
    return [...this.notHeld.values()]
      .map((f) => ({ ...f }))
      .sort((a, b) => b.leads - a.leads || a.field.localeCompare(b.field));
  }

  /** Whether a decision leads to a send under the current policy. */
  wants(d: Decision): boolean {
    return d.kind === 'new' || (d.kind === 'known_lead' && this.o.existing === 'update');
  }

  /** Queues a decided event; resolves when there is room for more (backpressure on the reader). */
  async enqueue(d: Decision): Promise<void> {
    if (this.fatal) throw this.fatal;
    if (this.o.stop.aborted) return this.releaseUnclaimed([{ key: d.event!.key, decision: d }]);
    const e = d.event!;
    // Taken by the map workers, for this namespace (push.ts gives both the same), or here.
    const dk = e.downstreamKey ?? downstreamKey(this.o.namespace, e.key);
    const mode = d.kind === 'known_lead' ? 'update' : 'create';
    const item: SendItem = {
      key: e.key,
      downstreamKey: dk,
      lead: e.lead,
      naturalKey: e.naturalKey,
      occurredAt: e.occurredAt,
      mode,
      ifExists: this.o.existing,
    };
    const claim: ClaimInput = {
      key: e.key,
      keyKind: e.keyKind,
      payloadHash: e.payloadHash,
      naturalKey: e.naturalKey,
      downstreamKey: dk,
      leadJson: e.leadJson ?? JSON.stringify(e.lead),
      source: e.source,
      line: e.line,
      eventTime: e.occurredAt,
    };
    this.batch.push({ key: e.key, item, claim, claimFrom: d.retry ? ['failed'] : undefined, decision: d });
    if (this.batch.length >= this.blockSize) await this.dispatch();
  }

  /** Waits for the sends in flight to settle without starting new ones (the run is failing for another reason). */
  async drain(): Promise<void> {
    while (this.inFlight.size) await Promise.race(this.inFlight);
    await this.flushSettles();
  }

  /**
   * Queues an event already in the ledger (replay): claimed only while it is still in one of `from`, and sent
   * with its stored downstream key, so a re-send is the same request the CRM saw the first time.
   */
  async enqueueExisting(
    row: LedgerEventRow,
    lead: Lead,
    from: EventStatus[],
    decision?: Decision,
    mode: SendItem['mode'] = 'create',
  ): Promise<void> {
    if (this.fatal) throw this.fatal;
    if (this.o.stop.aborted) return this.releaseUnclaimed([{ key: row.key, decision, row }]);
    const dk = row.downstream_key ?? downstreamKey(this.o.namespace, row.key);
    const item: SendItem = {
      key: row.key,
      downstreamKey: dk,
      lead,
      naturalKey: row.natural_key ?? undefined,
      occurredAt: row.event_time ?? undefined,
      mode,
      // An update of a person another event delivered (replay --existing update): where the CRM does not hold them,
      // as the ledger says it does, it is created, as push's updates are.
      ...(mode === 'update' ? { ifExists: this.o.existing } : {}),
    };
    this.batch.push({ key: row.key, item, claimFrom: from, row, decision });
    if (this.batch.length >= this.blockSize) await this.dispatch();
  }

  /**
   * Sends what is queued now, short of a full batch, without waiting for it to settle: the input went idle (a quiet
   * stdin), and leads already read must not wait for more that may not come. Nothing is sent once stopped.
   */
  async flush(): Promise<void> {
    if (this.fatal) throw this.fatal;
    if (this.o.stop.aborted) return;
    await this.dispatch();
  }

  /** Sends what is queued and waits for every send to settle. Rethrows a fatal error (rejected credentials). */
  async finish(): Promise<void> {
    if (!this.o.stop.aborted && !this.fatal) await this.dispatch();
    else if (this.o.stop.aborted) {
      this.releaseUnclaimed(this.batch);
      this.batch = [];
    }
    while (this.inFlight.size) await Promise.race(this.inFlight);
    await this.flushSettles();
    if (this.fatal) throw this.fatal;
  }

  /** Counts an event this run leaves in doubt without trying it (the user must choose how), with why. */
  keepInDoubt(reason: string): void {
    this.counts.inDoubt++;
    this.inDoubtReasons[reason] = (this.inDoubtReasons[reason] ?? 0) + 1;
  }

  /**
   * Resolves in-doubt events of earlier runs for this sink: looked up by natural key where the sink can, re-sent
   * with the same downstream key where the sink honours it (or the lookup found nothing), else left in doubt.
   * Lookups run with the run's concurrency; re-sends go out in the sink's batches.
   */
  async recoverInDoubt(
    opts: {
      rows?: LedgerEventRow[];
      blind?: boolean;
      leads?: Map<string, Lead>;
      onDecision?: (row: LedgerEventRow) => Decision | undefined;
    } = {},
  ): Promise<{ recovered: number; resent: number; left: number }> {
    const { ledger, sink, runId } = this.o;
    const caps = sink.capabilities;
    const rows = opts.rows ?? (await ledger.rowsInStatus('in_doubt', this.sinkId));
    // What the sink can check is what it has the methods for (sinks/types.ts): lookup or lookupMany by natural key,
    // findWritten by downstream key.
    const canLookup = (r: LedgerEventRow) => canLookUp(sink) && !!r.natural_key;
    // A sink that holds the key each lead was sent with (the JSONL file) is read back once for all of them: a lead
    // found there is delivered; one not found may be in a file rotated away, so only --resend (blind) writes it.
    const canFind = (r: LedgerEventRow) => canFindWritten(sink) && !canLookup(r);
    const dkOf = (r: LedgerEventRow) => r.downstream_key ?? downstreamKey(this.o.namespace, r.key);
    const leadOf = (r: LedgerEventRow): Lead | undefined =>
      opts.leads?.get(r.key) ?? (r.lead_json ? (JSON.parse(r.lead_json) as Lead) : undefined);
    // `blind` (replay --in-doubt --resend): the user accepts a possible duplicate where nothing can check first.
    // Counted into counts.inDoubt and inDoubtReasons once recovery is over, each with why it stays in doubt.
    const left: Record<string, number> = {};
    const leave = (reason: string): void => {
      left[reason] = (left[reason] ?? 0) + 1;
    };
    const usable: LedgerEventRow[] = [];
    for (const r of rows) {
      if (!leadOf(r))
        leave('in doubt since an earlier run, and its lead is no longer stored: replay --from <the input>');
      else if (caps.honoursIdempotencyKey || canLookup(r) || canFind(r) || opts.blind) usable.push(r);
      else
        leave(
          `in doubt since an earlier run: ${sink.name} can neither look it up nor drop a repeat; ${RESEND_IN_DOUBT} re-sends it`,
        );
    }
    let recovered = 0;
    this.checkLease();
    const claimed = await ledger.claimExisting(
      usable.map((r) => r.key),
      runId,
      ['in_doubt'],
      this.sinkId,
    );
    const mine = usable.filter((r) => claimed.has(r.key));
    const resend: Pending[] = [];
    // A sink that looks many people up in one query (the postgres sink) is asked a batch at a time, up front; a
    // failed batch of lookups leaves each of its rows to the error handling below.
    const looked = new Map<string, LookupResult | Error>();
    if (sink.lookupMany) {
      const rowsToLook = mine.filter(canLookup);
      const chunks: LedgerEventRow[][] = [];
      for (let i = 0; i < rowsToLook.length; i += caps.maxBatch) chunks.push(rowsToLook.slice(i, i + caps.maxBatch));
      await mapPool(chunks, Math.max(1, this.o.concurrency), async (chunk) => {
        if (this.o.stop.aborted) return;
        try {
          const results = await sink.lookupMany!(
            chunk.map((r) => r.natural_key!),
            this.o.hardStop,
          );
          chunk.forEach((r, i) => looked.set(r.key, results[i] ?? { found: false }));
        } catch (e) {
          for (const r of chunk) looked.set(r.key, e as Error);
        }
      });
    }
    let written: Set<string> | Error | undefined;
    const toFind = mine.filter(canFind);
    if (toFind.length && !this.o.stop.aborted) {
      try {
        written = await sink.findWritten!(toFind.map(dkOf), this.o.hardStop);
      } catch (e) {
        written = e as Error;
      }
    }
    const settleRecovered = async (row: LedgerEventRow, why: string, crmId?: string): Promise<void> => {
      await ledger.settle([{ key: row.key, status: 'sent', outcome: 'recovered', crmId, error: why }], runId);
      recovered++;
      this.counts.recovered++;
      this.o.onSettled?.({ row, key: row.key, decision: opts.onDecision?.(row), result: 'recovered', crmId });
    };
    await mapPool(mine, Math.max(1, this.o.concurrency), async (row) => {
      if (this.o.stop.aborted || this.fatal) {
        await ledger.settle([{ key: row.key, status: 'in_doubt', error: 'not checked: the run was stopped' }], runId);
        leave('not checked: the run was stopped');
        return;
      }
      if (canLookup(row)) {
        let found;
        try {
          const pre = looked.get(row.key);
          if (pre instanceof Error) throw pre;
          found = pre ?? (await lookupOne(sink, row.natural_key!, this.o.hardStop, dkOf(row)));
        } catch (e) {
          const cred = e instanceof CredentialsError;
          // Stopped before the lookup left: nothing was asked, the event simply stays in doubt.
          const error = cred
            ? 'lookup not done: credentials rejected'
            : e instanceof RequestNotSent
              ? 'not checked: the run was stopped'
              : `lookup failed: ${(e as Error).message}`;
          await ledger.settle([{ key: row.key, status: 'in_doubt', error }], runId);
          leave(error);
          if (cred) this.fatal ??= e as Error;
          return;
        }
        if (found.found) {
          await settleRecovered(row, 'found in the CRM after an unsettled send', found.crmId);
          return;
        }
      }
      if (canFind(row)) {
        if (written instanceof Set && written.has(dkOf(row))) {
          await settleRecovered(row, `found in ${sink.describe()} after an unsettled send`);
          return;
        }
        // Not found (or not readable): it stays in doubt, unless the user accepts a repeat (--resend).
        if (!opts.blind) {
          const error =
            written instanceof Error
              ? `${written.message}; ${RESEND_IN_DOUBT} re-sends it`
              : `in doubt, and not in ${sink.describe()} (which may have been rotated since): ${RESEND_IN_DOUBT} re-sends it`;
          await ledger.settle([{ key: row.key, status: 'in_doubt', error }], runId);
          leave(error);
          return;
        }
      }
      // Not in the CRM, nor in the file read back (or the sink drops repeated keys): sending again with the SAME
      // downstream key is safe.
      const item: SendItem = {
        key: row.key,
        downstreamKey: dkOf(row),
        lead: leadOf(row)!,
        naturalKey: row.natural_key ?? undefined,
        occurredAt: row.event_time ?? undefined,
        mode: 'create',
      };
      resend.push({ key: row.key, item, claimFrom: ['in_doubt'], row, decision: opts.onDecision?.(row) });
    });
    this.fatal ??= sink.stopped?.();
    if (this.fatal) {
      await ledger.settle(
        resend.map((p) => ({ key: p.key, status: 'in_doubt', error: 'not re-sent: the run stopped' })),
        runId,
      );
      throw this.fatal;
    }
    const size = caps.maxBatch;
    const chunks: Pending[][] = [];
    for (let i = 0; i < resend.length; i += size) chunks.push(resend.slice(i, i + size));
    await mapPool(chunks, Math.max(1, this.o.concurrency), (chunk) => this.sendClaimed(chunk));
    await this.flushSettles();
    let stayed = 0;
    for (const [reason, n] of Object.entries(left)) {
      this.inDoubtReasons[reason] = (this.inDoubtReasons[reason] ?? 0) + n;
      stayed += n;
    }
    this.counts.inDoubt += stayed;
    return { recovered, resent: resend.length, left: stayed };
  }

  // The destination refused connection after connection: no claim is taken and no send starts after that. Events
  // never claimed are simply not in the ledger; the next run decides them as new.
  private checkReachable(): void {
    const b = this.o.breaker;
    if (!b?.open) return;
    this.fatal ??= new UnreachableError(
      `stopped sending: ${this.sinkId} could not be reached: ${b.why()}; the events not sent were released, none is in doubt: run the same command again once it is reachable`,
    );
    throw this.fatal;
  }

  // The fence of a shared ledger: a run that lost (or could not renew) its lease sends nothing more.
  private checkLease(): void {
    if (this.o.mayStillSend && !this.o.mayStillSend()) {
      this.fatal ??= new LedgerError(
        'the run lost its lease on the ledger (it could not renew it in time): it stopped sending',
      );
      throw this.fatal;
    }
  }

  private async dispatch(): Promise<void> {
    if (!this.batch.length) return;
    const batch = this.batch;
    this.batch = [];
    while (this.inFlight.size >= this.o.concurrency) await Promise.race(this.inFlight);
    if (this.fatal) throw this.fatal;
    if (this.o.stop.aborted) return this.releaseUnclaimed(batch);
    const max = this.o.sink.capabilities.maxBatch;
    if (batch.length <= max) return this.track(this.claimAndSend(batch));
    // A claim block: claimed in one transaction (committed before any of its requests leaves), then sent a batch at
    // a time within the run's concurrency.
    let mine: Pending[];
    try {
      mine = await this.claim(batch);
    } catch (e) {
      this.fatal ??= e as Error;
      throw this.fatal;
    }
    for (let i = 0; i < mine.length; i += max) {
      while (this.inFlight.size >= this.o.concurrency) await Promise.race(this.inFlight);
      if (this.fatal || this.o.stop.aborted) {
        await this.unsent(mine.slice(i));
        // Set by a send that failed while this block waited (TS still narrows it from the check above).
        const fatal = this.fatal as Error | undefined;
        if (fatal) throw fatal;
        return;
      }
      this.track(this.sendClaimed(mine.slice(i, i + max)));
    }
  }

  private track(work: Promise<void>): void {
    const p = work
      .catch((e: Error) => {
        this.fatal ??= e;
      })
      .finally(() => this.inFlight.delete(p));
    this.inFlight.add(p);
  }

  /**
   * Events of a claim block claimed and never sent (the run stopped, or failed): released, as a stop releases what
   * it did not send. When the ledger itself failed (a lost lease among them) they stay pending under this run: the
   * next run finds them in doubt and looks them up, as it would after a crash.
   */
  private async unsent(rest: Pending[]): Promise<void> {
    if (!rest.length || this.fatal instanceof LedgerError) return;
    try {
      await this.settleAll(
        rest,
        rest.map(() => ({ kind: 'released' as const, reason: 'not sent: the run stopped before its request left' })),
      );
    } catch (e) {
      this.fatal ??= e as Error;
    }
  }

  private async claimAndSend(batch: Pending[]): Promise<void> {
    if (this.shared && batch.every((p) => !p.claimFrom)) {
      this.checkLease();
      this.checkReachable();
      if (await this.claimWriteSettle(batch, this.shared)) return;
    }
    const mine = await this.claim(batch);
    if (mine.length) await this.sendClaimed(mine);
  }

  /** Claims a batch (or a claim block) in the ledger, committed before anything is sent; returns what is this run's. */
  private async claim(batch: Pending[]): Promise<Pending[]> {
    const { ledger, runId } = this.o;
    this.checkLease();
    this.checkReachable();
    // Claim: committed before the send. Keys another process claimed in the meantime are not ours to send.
    const fresh = batch.filter((p) => !p.claimFrom);
    const claimed = new Set<string>();
    if (fresh.length)
      for (const k of await ledger.claimNew(
        fresh.map((p) => p.claim!),
        runId,
        this.sinkId,
      ))
        claimed.add(k);
    const existing = new Map<string, Pending[]>();
    for (const p of batch)
      if (p.claimFrom) existing.set(p.claimFrom.join(), [...(existing.get(p.claimFrom.join()) ?? []), p]);
    for (const group of existing.values()) {
      for (const k of await ledger.claimExisting(
        group.map((p) => p.key),
        runId,
        group[0]!.claimFrom!,
        this.sinkId,
      ))
        claimed.add(k);
    }
    const mine: Pending[] = [];
    for (const p of batch) {
      if (claimed.has(p.key)) mine.push(p);
      else this.apply(planOf([{ decision: p.decision, key: p.key, result: 'claimed_elsewhere' }]));
    }
    return mine;
  }

  /**
   * New events into a sink in the ledger's database: claim, write and settle in one transaction, so that a kill at
   * any point leaves each event either sent and recorded, or untouched. False when the transaction rolled back
   * (a lead the database refused, a deadlock, a lost connection): nothing happened, and the batch takes the ordinary
   * path, whose send retries, splits and reports as it does for any sink.
   */
  private async claimWriteSettle(batch: Pending[], writer: SharedDatabaseWriter): Promise<boolean> {
    let plan: SettlePlan | undefined;
    const r = await this.o.ledger.claimWriteSettle!(
      batch.map((p) => p.claim!),
      this.o.runId,
      this.sinkId,
      async (client) => {
        const outcomes = await writer.write(
          client,
          batch.map((p) => p.item),
        );
        plan = this.planSettle(batch, outcomes);
        return plan.settlements;
      },
      this.o.hardStop,
    );
    const shared = this.sharedBatches!;
    if (r.kind === 'rolled_back') {
      shared.rolledBack[r.reason] = (shared.rolledBack[r.reason] ?? 0) + 1;
      if (!this.o.stop.aborted) return false;
      this.releaseUnclaimed(batch);
      return true;
    }
    if (r.kind === 'committed') {
      shared.committed++;
      this.apply(plan!);
      return true;
    }
    // Unanswered, and no telling: all of it is in the ledger and the table, or none of it is. The next run decides
    // these events again from what it finds, so none of them is sent twice, and none is lost.
    const why = `${r.reason}: the next push finds out whether they were written (they commit with their ledger record)`;
    const cut = this.o.hardStop.aborted;
    const p = planOf(batch.map((m) => ({ decision: m.decision, key: m.key, result: 'in_doubt' as const, error: why })));
    if (this.o.stop.aborted) p.stopped[cut ? 'cut' : 'settled'] = batch.length;
    this.apply(p);
    return true;
  }

  /** Sends events this run has claimed and commits their outcomes. */
  private async sendClaimed(mine: Pending[]): Promise<void> {
    const { sink } = this.o;
    // Claimed, but the lease is gone: not sent. The rows stay pending under this run, which the next run finds dead
    // and marks in doubt; sending now could race the run that already took them over.
    this.checkLease();
    let outcomes: SinkOutcome[];
    try {
      outcomes = await sink.send(
        mine.map((p) => p.item),
        this.o.hardStop,
      );
      if (outcomes.length !== mine.length)
        throw new Error(`sink ${sink.name} returned ${outcomes.length} outcomes for ${mine.length} leads`);
    } catch (e) {
      // Rejected credentials: nothing was accepted, so the events are retryable failures, then the run stops.
      // Stopped before the request left: nothing reached the CRM, the claims are undone.
      // Anything else thrown mid-send: the CRM may have the leads, so they are in doubt.
      const cred = e instanceof CredentialsError;
      const reason = cred ? 'not sent: the CRM rejected the credentials' : `send interrupted: ${(e as Error).message}`;
      outcomes = mine.map(() =>
        cred
          ? { kind: 'failed', permanent: false, reason }
          : e instanceof RequestNotSent
            ? { kind: 'released', reason: e.message }
            : { kind: 'unknown', reason },
      );
      await this.settleAll(mine, outcomes);
      if (cred) throw e;
      this.checkReachable();
      return;
    }
    await this.settleAll(mine, outcomes);
    this.checkSinkStop();
    this.checkReachable();
  }

  // A sink that decided to send nothing more (its CRM's daily budget): what it answered is settled, what it released
  // is back as it was; no further batch leaves, and the run ends with its error.
  private checkSinkStop(): void {
    const stop = this.o.sink.stopped?.();
    if (stop) {
      this.fatal ??= stop;
      throw this.fatal;
    }
  }

  private async settleAll(mine: Pending[], outcomes: SinkOutcome[]): Promise<void> {
    const plan = this.planSettle(mine, outcomes);
    if (this.blockSize > this.o.sink.capabilities.maxBatch && !plan.releases.length) return this.settleGrouped(plan);
    // Settle: committed after the send, in one transaction for the batch.
    if (plan.settlements.length) await this.o.ledger.settle(plan.settlements, this.o.runId);
    if (plan.releases.length)
      await this.o.ledger.release(plan.releases, this.o.runId, 'the run stopped before the request left');
    this.apply(plan);
  }

  /**
   * Queues a send's outcomes for a settle transaction shared with the sends around it: committed when enough are
   * queued, shortly after the first, or when the run finishes. Until then the rows stay pending under this run, so a
   * crash leaves them for the next run to find in doubt and settle by lookup; nothing is counted before the commit.
   */
  private settleGrouped(plan: SettlePlan): void {
    this.settleQueue.push(plan);
    if (this.settleQueue.length >= SETTLE_GROUP) this.commitSettles();
    else this.settleTimer ??= setTimeout(() => this.commitSettles(), SETTLE_GROUP_MS);
  }

  private commitSettles(): void {
    if (this.settleTimer) clearTimeout(this.settleTimer);
    this.settleTimer = undefined;
    const plans = this.settleQueue;
    this.settleQueue = [];
    if (!plans.length) return;
    const p = Promise.resolve()
      .then(() =>
        this.o.ledger.settle(
          plans.flatMap((x) => x.settlements),
          this.o.runId,
        ),
      )
      .then(() => {
        for (const x of plans) this.apply(x);
      })
      .catch((e: Error) => {
        this.fatal ??= e;
      })
      .finally(() => this.settling.delete(p));
    this.settling.add(p);
  }

  /** Commits every queued outcome and waits for the settle transactions under way. */
  private async flushSettles(): Promise<void> {
    this.commitSettles();
    while (this.settling.size) await Promise.race(this.settling);
  }

  /**
   * What the ledger must record of a batch's outcomes, and what the run counts once it has: nothing is counted before
   * the ledger committed it (apply).
   */
  private planSettle(mine: Pending[], outcomes: SinkOutcome[]): SettlePlan {
    const settlements: Settlement[] = [];
    const releases: Array<{ key: string; to: EventStatus | null }> = [];
    const done: SettledItem[] = [];
    const stopped: StopCounts = { settled: 0, cut: 0, released: 0 };
    let notHeld: FieldNotHeld[] | undefined;
    const isStopped = this.o.stop.aborted;
    for (let i = 0; i < mine.length; i++) {
      const p = mine[i]!;
      const o = outcomes[i]!;
      if (isStopped) {
        // After a stop, each outcome is one of three: its request never left (released), it was still on the wire
        // when the grace period ran out (cut: in doubt), or it was answered in the grace period (settled).
        if (o.kind === 'released') stopped.released++;
        else if (o.kind === 'unknown' && this.o.hardStop.aborted) stopped.cut++;
        else stopped.settled++;
      }
      switch (o.kind) {
        case 'created':
        case 'updated':
        case 'exists':
          settlements.push({ key: p.key, status: 'sent', outcome: o.kind, crmId: o.crmId });
          // Written without what the sink has no place for (a person already there was not written at all).
          if (o.kind !== 'exists' && this.o.sink.fieldsNotHeld) {
            const lost = this.o.sink.fieldsNotHeld(p.item);
            if (lost.length) (notHeld ??= []).push(...lost);
          }
          done.push(settled(p, o.kind === 'created' ? 'sent' : o.kind, o.crmId, undefined));
          break;
        case 'failed':
          settlements.push({
            key: p.key,
            status: 'failed',
            failure: o.permanent ? 'permanent' : 'retryable',
            error: o.reason,
          });
          done.push(settled(p, 'failed', undefined, o.reason));
          break;
        case 'unknown':
          settlements.push({ key: p.key, status: 'in_doubt', error: o.reason });
          done.push(settled(p, 'in_doubt', undefined, o.reason));
          break;
        case 'released': {
          // Nothing reached the CRM: the claim is undone. A row claimed from another status goes back to it; one
          // that stays in doubt (a recovery re-send) is still counted in doubt.
          const to = p.claimFrom
            ? p.claimFrom.length === 1
              ? p.claimFrom[0]!
              : (p.row?.status ?? p.claimFrom[0]!)
            : null;
          releases.push({ key: p.key, to });
          if (to === 'in_doubt') done.push(settled(p, 'in_doubt', undefined, 'not re-sent: the run was stopped'));
          else done.push(settled(p, 'released', undefined, o.reason));
          break;
        }
      }
    }
    return { settlements, releases, done, stopped, ...(notHeld ? { notHeld } : {}) };
  }

  /** Counts what a committed plan recorded, and reports each event. */
  private apply(plan: SettlePlan): void {
    this.stopped.settled += plan.stopped.settled;
    this.stopped.cut += plan.stopped.cut;
    this.stopped.released += plan.stopped.released;
    for (const f of plan.notHeld ?? []) {
      const id = `${f.field}\0${f.why}`;
      const c = this.notHeld.get(id);
      if (c) c.leads++;
      else this.notHeld.set(id, { field: f.field, why: f.why, leads: 1 });
    }
    for (const d of plan.done) {
      this.count(d);
      this.o.onSettled?.(d);
    }
  }

  private count(d: SettledItem): void {
    this.counts[COUNTED_AS[d.result]]++;
    if (d.result === 'failed') this.failures[d.error!] = (this.failures[d.error!] ?? 0) + 1;
    if (d.result === 'in_doubt') this.inDoubtReasons[d.error!] = (this.inDoubtReasons[d.error!] ?? 0) + 1;
  }

  /** Events stopped before they were claimed: never in flight, nothing to undo; counted, and reported as released. */
  private releaseUnclaimed(batch: Array<Pick<Pending, 'key' | 'decision' | 'row'>>): void {
    for (const p of batch) {
      this.counts.released++;
      this.stopped.released++;
      this.o.onSettled?.({
        decision: p.decision,
        row: p.row,
        key: p.key,
        result: 'released',
        error: 'not sent: the run stopped',
      });
    }
  }
}

/** Outcomes committed in one settle transaction at most (with a claim block), and how long the first may wait. */
const SETTLE_GROUP = 64;
const SETTLE_GROUP_MS = 20;

/** A plan of reports only: nothing for the ledger to record. */
function planOf(done: SettledItem[]): SettlePlan {
  return { settlements: [], releases: [], done, stopped: { settled: 0, cut: 0, released: 0 } };
}

/**
 * Looks one person up: by lookup, or by lookupMany where the sink has only that. The event's downstream key goes
 * along, so a CRM that records every send (RD Station's conversions) can tell this event's send from another's.
 */
async function lookupOne(
  sink: Sink,
  naturalKey: string,
  signal: AbortSignal,
  downstreamKey: string,
): Promise<LookupResult> {
  if (sink.lookup) return sink.lookup(naturalKey, signal, downstreamKey);
  return (await sink.lookupMany!([naturalKey], signal))[0] ?? { found: false };
}

/** Runs fn over items with at most n at a time. */
async function mapPool<T>(items: T[], n: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await fn(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(n, items.length) }, worker));
}
