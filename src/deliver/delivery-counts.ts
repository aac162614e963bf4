// How the sends of a run ended, counted by deliver/ and shown by report/.

/** How the sends of a push ended. */
export interface DeliveryCounts {
  sent: number;
  updated: number;
  /** The CRM already had the person (a 409 or equivalent), or an in-doubt event was found there. */
  exists: number;
  failed: number;
  inDoubt: number;
  /** In-doubt events of earlier runs resolved at the start of this one. */
  recovered: number;
  /** Claimed by another process between decision and claim: not sent by this run. */
  claimedElsewhere: number;
  /** Stopped before their request left (or before they were claimed): nothing reached the CRM; the next run sends them. */
  released: number;
}

/** What a stop (Ctrl-C / SIGTERM) did to the sends of a run, counted in events. */
export interface StopCounts {
  /** In flight at the stop, and settled in the grace period (sent, already in the CRM, failed...). */
  settled: number;
  /** Still in flight when the grace period ran out (or a second Ctrl-C came): cut, in doubt. */
  cut: number;
  /** Their request had not left (waiting for the rate limiter or a connection), or was never made: released. */
  released: number;
}

/**
 * How the batches into a sink in the ledger's own database went: committed with their ledger records, or rolled back
 * (by why) and then written the ordinary way, claim, send and settle.
 */
export interface SharedBatches {
  committed: number;
  rolledBack: Record<string, number>;
}

/** A lead field the sink had no place for (sinks/types.ts FieldNotHeld), and how many leads it wrote without it. */
export interface FieldNotHeldCount {
  field: string;
  why: string;
  leads: number;
}

/** Empty delivery counts. */
export function emptyDelivery(): DeliveryCounts {
  return { sent: 0, updated: 0, exists: 0, failed: 0, inDoubt: 0, recovered: 0, claimedElsewhere: 0, released: 0 };
}
