// The ledger's rules, written once for every storage (docs/architecture.md, the state machine): what a claim takes,
// what a settle records, which rows a dead run leaves in doubt, when a run holds the ledger, and what an erasure
// leaves.
// Storage (sqlite-store in ledger.ts, postgres/store.ts) only carries them out, each in one committed write.
import { LedgerError } from '../errors.js';
import { sha256 } from '../hash.js';
import type { ClaimInput, Settlement } from './types.js';

/**
 * The claims of one batch, one per key: the first occurrence wins, as an INSERT ... ON CONFLICT DO NOTHING of the
 * batch would keep it (and PostgreSQL need not see one key twice in one statement).
 */
export function claimsOf(items: ClaimInput[]): ClaimInput[] {
  const seen = new Set<string>();
  const out: ClaimInput[] = [];
  for (const it of items) {
    if (seen.has(it.key)) continue;
    seen.add(it.key);
    out.push(it);
  }
  return out;
}

/**
 * Whether another run may have written the ledger since run ? started (both parameters: that run's id): one started
 * after it, running or ended (ids only grow), or one still running. What a push's snapshot of the ledger
 * (decide-inputs.ts) is checked against before each block; SQL for both storages.
 */
export const OTHER_RUN_SINCE = `SELECT 1 AS one FROM runs WHERE id > ? OR (status = 'running' AND id <> ?) LIMIT 1`;

/**
 * The key of a person `ledger import` records without an event key: derived from the natural key, so that the email
 * itself never becomes a key.
 */
export function importedPersonKey(naturalKey: string | undefined): string {
  return 'person:' + sha256('person|' + naturalKey).slice(0, 40);
}

/** A settlement as storage writes it: the events row's new values and the attempts row recorded with it. */
export interface SettleRecord {
  key: string;
  status: Settlement['status'];
  outcome: string | null;
  failure: string | null;
  crmId: string | null;
  error: string | null;
  /** The attempts row's outcome. */
  attempt: string;
  /** The attempts row's detail. */
  detail: string | null;
  /** Its key has another record in the same settle: each is an attempts row of its own (mayBeInRow). */
  repeated: boolean;
}

/**
 * The attempt a sent events row records itself. A settle that moves a row to sent writes no attempts row: the row's
 * run_id, sent_at, outcome, crm_id and last_error are that attempt. An attempts row per event was a third of the rows
 * a push wrote, and its key index the one index a settle changed at random (for random keys, a page per event). Any
 * other settle (failed, in doubt, or refused by the fence) is an attempts row, as are releases and orphans; a claim
 * that takes a sent row again (a replay of sent events) first writes its attempt out as a row (MATERIALIZE_ATTEMPT).
 * Ledgers written before recorded that attempt as a row too: a row with the send's moment and outcome stands for
 * it, whichever run it names (an older ledger's release of a replay left the row under the replaying run). SQL for
 * both storages, over an events row named `e`.
 */
export const IMPLIED_ATTEMPT = `e.status = 'sent' AND e.run_id IS NOT NULL AND e.sent_at IS NOT NULL
  AND NOT EXISTS (SELECT 1 FROM attempts a WHERE a.key = e.key AND a.at = e.sent_at AND a.outcome = COALESCE(e.outcome, 'sent'))`;

/** The implied attempt as an attempts row's key, run_id, at, outcome and detail (as settleRecords words them). */
export const IMPLIED_ATTEMPT_COLUMNS = `e.key, e.run_id, e.sent_at, COALESCE(e.outcome, 'sent'), COALESCE(e.last_error, 'crm id ' || e.crm_id)`;

/** Writes out the implied attempt of the events rows `e` as attempts rows: `${MATERIALIZE_ATTEMPT} FROM ... e WHERE ...`. */
export const MATERIALIZE_ATTEMPT = `INSERT INTO attempts (key, run_id, at, outcome, detail) SELECT ${IMPLIED_ATTEMPT_COLUMNS}`;

/**
 * The run_id a released row returns to, in SQL: its own for a row taken from failed or in doubt; for one taken from
 * sent (a replay of sent events), the run of the send it records, so that its attempt is again the one the claim
 * wrote out (none, for an imported row: NULL), not one made up of the releasing run and that send's time.
 */
export function RELEASED_RUN(status: string, events: string): string {
  return `CASE WHEN ${status} = 'sent' THEN (SELECT a.run_id FROM attempts a WHERE a.key = ${events}.key AND a.at = ${events}.sent_at
    AND a.outcome NOT IN ('released', 'unknown') ORDER BY a.id DESC LIMIT 1) ELSE ${events}.run_id END`;
}

/**
 * Whether a settle's attempt may be left to the events row it changes (IMPLIED_ATTEMPT) rather than written as an
 * attempts row: a send, the only record of its key in the settle (two would show as one). It is, when the fence lets
 * it change the row and the row then holds its CRM id: none on the row before, or one of its own (a row that kept
 * an earlier send's id, this one having none, would show that id as this send's).
 */
export function mayBeInRow(s: SettleRecord): boolean {
  return mayBeInRowOf(s.status, s.repeated);
}

/** mayBeInRow of a settlement's status, and whether its key has another record in the settle. */
export function mayBeInRowOf(status: Settlement['status'], repeated: boolean): boolean {
  return status === 'sent' && !repeated;
}

/**
 * What a settle writes. It changes only rows still pending and owned by the settling run (the fence: a run whose
 * claim was taken over, by a recovery after its lease ran out, changes nothing); its attempt is recorded either way
 * (in the events row itself when it moved the row to sent: IMPLIED_ATTEMPT).
 */
export function settleRecords(settlements: Settlement[]): SettleRecord[] {
  const seen = new Map<string, number>();
  for (const s of settlements) seen.set(s.key, (seen.get(s.key) ?? 0) + 1);
  return settlements.map((s) => settleRecord(s, seen.get(s.key)! > 1));
}

/** What a settle writes of one settlement (settleRecords); repeated: its key has another record in the settle. */
export function settleRecord(s: Settlement, repeated: boolean): SettleRecord {
  return {
    key: s.key,
    status: s.status,
    outcome: s.outcome ?? null,
    failure: s.failure ?? null,
    crmId: s.crmId ?? null,
    error: s.error ?? null,
    attempt: s.status === 'sent' ? (s.outcome ?? 'sent') : s.status === 'failed' ? 'failed' : 'unknown',
    detail: s.error ?? (s.crmId ? `crm id ${s.crmId}` : null),
    repeated,
  };
}

/**
 * Pending rows no running run owns: claimed, maybe sent, never settled. Their send's outcome is unknown, so they
 * become in_doubt (never pending again by a timeout: recovery looks them up, or re-sends with the same key). The
 * `status <> 'sent'` is the partial index's own condition: SQLite uses that index only where the query says it (a
 * receiver asks this every few seconds, and scanned the whole table each time).
 */
export const ORPHAN_PENDING = `status = 'pending' AND status <> 'sent' AND (run_id IS NULL OR run_id NOT IN (SELECT id FROM runs WHERE status = 'running'))`;
/** The last_error of a row left in doubt by its run. */
export const ORPHAN_ERROR = 'run ended before the send was settled';
/** The detail of the attempt recorded for it. */
export const ORPHAN_DETAIL = 'owner run died mid-send';

/**
 * Whether a running run keeps `command` from taking the ledger exclusively. A receiver (`serve`) runs for weeks and
 * only queues events and claims them, as a --no-lock push would: a push or a replay (backfills) runs beside it, its
 * claims keeping every send single, and its snapshot of the ledger checked against the receiver's writes as against
 * any other run's (OTHER_RUN_SINCE). Management commands (forget, prune, migrate) still wait for it.
 */
export function holdsAgainst(holderCommand: string, command: string): boolean {
  return !(holderCommand === 'serve' && (command === 'push' || command === 'replay'));
}

/** A run recorded as holding the ledger. */
export interface RunHolder {
  id: number;
  host: string;
  pid: number;
}

/** A run to record: what it is, and where it runs. */
export interface NewRun {
  command: string;
  argsJson: string;
  host: string;
  pid: number;
}

/** The error of a run that found the ledger held, and did not (or no longer) wait: exit 5, naming the holder. */
export class LedgerInUse extends LedgerError {
  constructor(
    path: string,
    readonly holder: RunHolder,
    waitedMs = 0,
  ) {
    // After a --wait the run must say that it waited and gave up, or the user takes it for a wait that never began.
    super(
      waitedMs > 0
        ? `ledger ${path} is still in use by run ${holder.id} (pid ${holder.pid} on ${holder.host}): --wait timed out after ${formatWait(waitedMs)}; wait longer (--wait SECONDS) or stop that run`
        : `ledger ${path} is in use by run ${holder.id} (pid ${holder.pid} on ${holder.host}); wait for it, or pass --wait`,
    );
  }
}

// 600 s, 1.5 s: the --wait as the user gave it, in seconds.
function formatWait(ms: number): string {
  return `${Math.round(ms / 100) / 10} s`;
}

/** The error of a run that found the ledger held, and did not (or no longer, after waitedMs) wait. */
export function ledgerInUse(path: string, holder: RunHolder, waitedMs?: number): LedgerError {
  return new LedgerInUse(path, holder, waitedMs);
}

/**
 * Takes the ledger for a run, waiting up to waitMs for a holder to finish (or to be found dead): `attempt` is one
 * atomic try of the storage (mark dead runs crashed, then insert the run unless a live one holds the ledger).
 */
export async function takeLedger(
  path: string,
  waitMs: number | undefined,
  attempt: () => number | RunHolder | Promise<number | RunHolder>,
  sleep: (ms: number) => void | Promise<void>,
): Promise<number> {
  const deadline = Date.now() + (waitMs ?? 0);
  for (;;) {
    const holder = await attempt();
    if (typeof holder === 'number') return holder;
    if (Date.now() >= deadline) throw ledgerInUse(path, holder, waitMs);
    await sleep(Math.min(500, Math.max(10, deadline - Date.now())));
  }
}

/** The timings of a run's lease on a shared ledger: its length, how often it is renewed, and the safety margin. */
export interface LeaseTimes {
  /** The lease runs this long past the database's clock at each renewal. */
  ttlMs: number;
  /** Renewed this often. */
  renewMs: number;
  /**
   * A run stops sending once this long has passed since its last successful renewal (measured on its own clock,
   * from before the renewal was asked): always well before the lease it holds runs out on the database's clock.
   */
  fenceMs: number;
}

/** The default lease: 30 s, renewed every 5 s, no send starts later than 15 s after the last renewal. */
export function leaseTimes(env: Record<string, string | undefined>): LeaseTimes {
  // Hidden: tests shorten the lease so that a killed run is found dead in seconds.
  const ttl = Number(env.LEADLEDGER_LEASE_MS) > 0 ? Number(env.LEADLEDGER_LEASE_MS) : 30_000;
  return { ttlMs: ttl, renewMs: Math.max(50, Math.floor(ttl / 6)), fenceMs: Math.floor(ttl / 2) };
}

/**
 * A run's hold on the ledger, renewed on a timer: `renew` returns false when the storage says the lease is gone
 * (another run found it expired). `live()` is false once a renewal failed or is overdue: the run must not start
 * another send (deliver/ asks before each), so no send of a run begins after its lease could have expired.
 */
export class LeaseKeeper {
  private renewedAt: number;
  private lost = false;
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly times: LeaseTimes,
    private readonly renew: () => boolean | Promise<boolean>,
    private readonly onLost?: (why: string) => void,
  ) {
    this.renewedAt = Date.now();
    this.timer = setInterval(() => void this.tick(), times.renewMs);
    this.timer.unref();
  }

  private busy = false;

  private async tick(): Promise<void> {
    // A renewal slower than the period is not asked twice at once.
    if (this.lost || this.busy) return;
    this.busy = true;
    const asked = Date.now();
    try {
      if (await this.renew()) this.renewedAt = asked;
      else this.lose('the ledger says this run is no longer running (its lease ran out)');
    } catch (e) {
      // A failed renewal is not yet a lost lease: live() says so once the margin is used up.
      if (!this.live()) this.lose(`the lease could not be renewed: ${(e as Error).message}`);
    } finally {
      this.busy = false;
    }
  }

  private lose(why: string): void {
    this.lost = true;
    this.onLost?.(why);
  }

  /** True while a send may start: renewed within the fence margin, and never lost. */
  live(): boolean {
    if (!this.lost && Date.now() - this.renewedAt > this.times.fenceMs) this.lose('the lease was not renewed in time');
    return !this.lost;
  }

  /** Stops renewing. */
  stop(): void {
    clearInterval(this.timer);
  }
}
