// A ledger and a sink made of maps and arrays, for testing the deliver stage's policy alone (as Powertools tests its
// idempotency policy through a stub persistence layer): the ledger keeps rows and records every call; the sink has
// exactly the methods a test gives it, which is what deliver/ reads its capabilities from.
import type { LedgerStore } from '../../src/ledger/store.js';
import type { ClaimInput, EventStatus, LedgerEventRow, Settlement } from '../../src/ledger/types.js';
import type { Lead } from '../../src/mapping/types.js';
import type { LookupResult, SendItem, Sink, SinkOutcome } from '../../src/sinks/types.js';

export const SINK_ID = 'Fake CRM';

/** A ledger row in doubt since an earlier run on the fake sink. */
export function inDoubtRow(key: string, lead: Lead | undefined, extra: Partial<LedgerEventRow> = {}): LedgerEventRow {
  return {
    key,
    key_kind: 'id',
    payload_hash: 'h',
    natural_key: lead?.email ?? null,
    status: 'in_doubt',
    failure: null,
    outcome: null,
    crm_id: null,
    attempts: 1,
    last_error: 'send interrupted',
    sink: SINK_ID,
    downstream_key: `dk-${key}`,
    lead_json: lead ? JSON.stringify(lead) : null,
    source: 'in.jsonl',
    source_line: 1,
    event_time: null,
    run_id: 1,
    first_seen_at: '2026-01-01T00:00:00Z',
    updated_at: '2026-01-01T00:00:00Z',
    sent_at: null,
    ...extra,
  };
}

/** The calls of the deliver stage that a ledger serves, on rows in a map. */
export class FakeLedger {
  readonly rows = new Map<string, LedgerEventRow>();
  readonly settled: Settlement[] = [];
  readonly released: Array<{ key: string; to: EventStatus | null }> = [];

  constructor(rows: LedgerEventRow[] = []) {
    for (const r of rows) this.rows.set(r.key, { ...r });
  }

  /** Typed as the store deliver/ takes: it calls only what is here. */
  get store(): LedgerStore {
    return this as unknown as LedgerStore;
  }

  rowsInStatus(status: EventStatus, sink?: string): LedgerEventRow[] {
    return [...this.rows.values()].filter((r) => r.status === status && (sink === undefined || r.sink === sink));
  }

  claimNew(items: ClaimInput[], runId: number, sink: string): Set<string> {
    const out = new Set<string>();
    for (const c of items) {
      if (this.rows.has(c.key)) continue;
      this.rows.set(c.key, {
        ...inDoubtRow(c.key, JSON.parse(c.leadJson) as Lead),
        status: 'pending',
        run_id: runId,
        sink,
        downstream_key: c.downstreamKey,
      });
      out.add(c.key);
    }
    return out;
  }

  claimExisting(keys: string[], runId: number, from: EventStatus[], sink: string): Set<string> {
    const out = new Set<string>();
    for (const k of keys) {
      const r = this.rows.get(k);
      if (!r || !from.includes(r.status)) continue;
      Object.assign(r, { status: 'pending', run_id: runId, sink });
      out.add(k);
    }
    return out;
  }

  settle(settlements: Settlement[]): void {
    for (const s of settlements) {
      this.settled.push(s);
      const r = this.rows.get(s.key)!;
      Object.assign(r, {
        status: s.status,
        outcome: s.outcome ?? null,
        crm_id: s.crmId ?? r.crm_id,
        last_error: s.error ?? null,
      });
    }
  }

  release(items: Array<{ key: string; to: EventStatus | null }>): void {
    for (const i of items) {
      this.released.push(i);
      if (i.to === null) this.rows.delete(i.key);
      else this.rows.get(i.key)!.status = i.to;
    }
  }

  status(key: string): EventStatus | undefined {
    return this.rows.get(key)?.status;
  }
}

/** The methods a fake sink may have: a test gives those its case needs, and no others. */
export interface FakeSinkMethods {
  lookup?: (naturalKey: string, signal?: AbortSignal, downstreamKey?: string) => Promise<LookupResult>;
  lookupMany?: (naturalKeys: string[]) => Promise<LookupResult[]>;
  findWritten?: (downstreamKeys: string[]) => Promise<Set<string>>;
}

/** A sink that records what it was sent and answers created, unless a test says otherwise. */
export class FakeSink implements Sink {
  readonly name = 'fake';
  readonly capabilities: Sink['capabilities'];
  readonly sent: SendItem[][] = [];
  lookup?: Sink['lookup'];
  lookupMany?: Sink['lookupMany'];
  findWritten?: Sink['findWritten'];

  constructor(
    o: FakeSinkMethods & { maxBatch?: number; honoursIdempotencyKey?: boolean } = {},
    private readonly answer: (item: SendItem) => SinkOutcome = () => ({ kind: 'created', crmId: 'new' }),
  ) {
    this.capabilities = { maxBatch: o.maxBatch ?? 10, honoursIdempotencyKey: o.honoursIdempotencyKey ?? false };
    if (o.lookup) this.lookup = o.lookup;
    if (o.lookupMany) this.lookupMany = o.lookupMany;
    if (o.findWritten) this.findWritten = o.findWritten;
  }

  async send(items: SendItem[]): Promise<SinkOutcome[]> {
    this.sent.push(items);
    return items.map((i) => this.answer(i));
  }

  describe(): string {
    return SINK_ID;
  }

  /** Every item sent, in order. */
  get items(): SendItem[] {
    return this.sent.flat();
  }
}
