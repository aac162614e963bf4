// A push's batches as columns: how its claims and settles cross to the ledger's writer thread (threaded.ts), and how
// the SQLite ledger takes a batch (Ledger.claimNewFromColumns, Ledger.settleFromColumns), with no object per claim
// or settlement on either side.
import type { ClaimInput, Settlement } from './types.js';

/**
 * A batch of claims as it crosses to the thread: a column per field, each source name once. An array of objects is
 * cloned with every property name of every object, and rebuilt an object at a time (the clone of a push's claims
 * and settles was a tenth of the main thread's samples, and more of the writer's).
 */
export interface ClaimColumns {
  keys: string[];
  keyKinds: string[];
  payloadHashes: string[];
  naturalKeys: Array<string | undefined>;
  downstreamKeys: string[];
  leadJsons: string[];
  sources: string[];
  /** Each claim's source, as an index into `sources`. */
  sourceOf: Int32Array;
  lines: Float64Array;
  eventTimes: Array<string | undefined>;
}

/** Settlements as they cross to the thread: a column per field (see ClaimColumns). */
export interface SettleColumns {
  keys: string[];
  statuses: Array<Settlement['status']>;
  outcomes: Array<Settlement['outcome']>;
  failures: Array<Settlement['failure']>;
  crmIds: Array<string | undefined>;
  errors: Array<string | undefined>;
}

/** Claims as columns, for the thread. */
export function claimColumns(items: ClaimInput[]): ClaimColumns {
  const n = items.length;
  const c: ClaimColumns = {
    keys: [],
    keyKinds: [],
    payloadHashes: [],
    naturalKeys: [],
    downstreamKeys: [],
    leadJsons: [],
    sources: [],
    sourceOf: new Int32Array(n),
    lines: new Float64Array(n),
    eventTimes: [],
  };
  // Filled by push, not map: an array that V8 holds as holey crosses postMessage element by element with its
  // index (a "sparse" array), and the optimized map of a batch of claims made them so (measured: 30 of a push's
  // 41 claims).
  let last = -1;
  for (let i = 0; i < n; i++) {
    const it = items[i]!;
    c.keys.push(it.key);
    c.keyKinds.push(it.keyKind);
    c.payloadHashes.push(it.payloadHash);
    c.naturalKeys.push(it.naturalKey);
    c.downstreamKeys.push(it.downstreamKey);
    c.leadJsons.push(it.leadJson);
    c.eventTimes.push(it.eventTime);
    if (last < 0 || c.sources[last] !== it.source) {
      last = c.sources.indexOf(it.source);
      if (last < 0) last = c.sources.push(it.source) - 1;
    }
    c.sourceOf[i] = last;
    c.lines[i] = it.line;
  }
  return c;
}

/** Settlements as columns, for the thread; filled by push, as claimColumns's are, so that they cross dense. */
export function settleColumns(settlements: Settlement[]): SettleColumns {
  const c: SettleColumns = { keys: [], statuses: [], outcomes: [], failures: [], crmIds: [], errors: [] };
  for (const s of settlements) {
    c.keys.push(s.key);
    c.statuses.push(s.status);
    c.outcomes.push(s.outcome);
    c.failures.push(s.failure);
    c.crmIds.push(s.crmId);
    c.errors.push(s.error);
  }
  return c;
}

/** The settlement at index i of SettleColumns, as the Ledger takes it (fields it does not hold left out, as given). */
export function settlementAt(c: SettleColumns, i: number): Settlement {
  const s: Settlement = { key: c.keys[i]!, status: c.statuses[i]! };
  if (c.outcomes[i] !== undefined) s.outcome = c.outcomes[i];
  if (c.failures[i] !== undefined) s.failure = c.failures[i];
  if (c.crmIds[i] !== undefined) s.crmId = c.crmIds[i];
  if (c.errors[i] !== undefined) s.error = c.errors[i];
  return s;
}
