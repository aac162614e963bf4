// Decide, for each mapped record, what a push does with it: against what this run has seen and what the ledger holds.
import type { KnownKey, Ledger } from '../ledger/ledger.js';
import { differingFields } from '../mapping/keys.js';
import type { Lead, LeadEvent, Mapped } from '../mapping/types.js';
import type { Decision } from './types.js';
import { RunMemory } from './run-memory.js';

/** Options of the decide stage. */
export interface DecideOptions {
  /** The ledger to check against; absent in a dry-run with no ledger file yet. */
  ledger?: Ledger;
  /** Keys (and people) held in memory before the run memory spills to a temp file; tests make it tiny. */
  memoryCapacity?: number;
}

/** What the ledger holds for a batch: its known event keys, and people already delivered by other events. */
export interface LedgerAnswers {
  known: Map<string, KnownKey>;
  delivered: Map<string, string>;
}

/** Decides records in batches: one ledger query per batch, then in-order decisions with this run's memory. */
export class Decider {
  private readonly memory: RunMemory;

  constructor(private readonly opts: DecideOptions) {
    this.memory = new RunMemory(opts.memoryCapacity);
  }

  /**
   * Decisions for a batch of mapped records, in input order. `looked` is the ledger's answer for the batch found
   * beforehand (by the map workers of a dry-run); it must cover at least the keys and people this would query.
   */
  decideBatch(items: Mapped[], looked?: LedgerAnswers): Decision[] {
    const { known, delivered } = looked ?? this.lookUp(items);

    const out: Decision[] = [];
    for (const m of items) {
      if (m.kind === 'invalid') {
        out.push({ kind: 'invalid', source: m.source, line: m.line, key: m.key, reason: m.reason });
        continue;
      }
      if (m.kind === 'filtered') {
        out.push({ kind: 'filtered', source: m.source, line: m.line, key: m.key, reason: m.reason });
        continue;
      }
      out.push(this.decideEvent(m, known.get(m.key), delivered));
    }
    return out;
  }

  private lookUp(items: Mapped[]): LedgerAnswers {
    const ledger = this.opts.ledger;
    const events = items.filter((m): m is LeadEvent => m.kind === 'event');
    const fresh = events.filter((e) => !this.memory.hasKey(e.key));
    const known = ledger && fresh.length ? ledger.lookupKeys([...new Set(fresh.map((e) => e.key))]) : new Map<string, KnownKey>();
    const naturals = [...new Set(fresh.filter((e) => e.naturalKey && !known.has(e.key)).map((e) => e.naturalKey!))];
    const delivered = ledger && naturals.length ? ledger.lookupDelivered(naturals) : new Map<string, string>();
    return { known, delivered };
  }

  private decideEvent(e: LeadEvent, inLedger: ReturnType<Ledger['lookupKeys']> extends Map<string, infer V> ? V | undefined : never, delivered: Map<string, string>): Decision {
    const base = { source: e.source, line: e.line, key: e.key, naturalKey: e.naturalKey, event: e };
    // The common outcomes are built as literals (same properties, same order as {...base}): a spread per record shows in profiles.
    const plain = (kind: Decision['kind'], reason: string): Decision => ({ source: e.source, line: e.line, key: e.key, naturalKey: e.naturalKey, event: e, kind, reason });
    const seen = this.memory.getKey(e.key);
    if (seen) {
      if (seen.payloadHash === e.payloadHash) {
        return plain('duplicate_in_input', `same event as ${seen.where}`);
      }
      const fields = seen.lead ? differingFields(seen.lead, e.lead) : undefined;
      return { ...base, kind: 'conflict', fields, reason: `same key as ${seen.where} with different ${fields?.join(', ') || 'content'}` };
    }
    this.memory.addKey(e);

    if (inLedger) {
      if (inLedger.tombstone) {
        // The ledger forgot who this was; the input still says it, so this run's later events of the person are known.
        this.memory.addNatural(e);
        return { ...base, kind: 'duplicate', reason: 'already delivered (person erased from the ledger)' };
      }
      if (inLedger.payloadHash !== null && inLedger.payloadHash !== e.payloadHash) {
        const stored = this.opts.ledger?.getLeadJson(e.key);
        const fields = stored ? differingFields(JSON.parse(stored) as Lead, e.lead) : undefined;
        return { ...base, kind: 'conflict', fields, reason: `ledger holds this key with different ${fields?.join(', ') || 'content'}` };
      }
      if (inLedger.status === 'failed' && inLedger.failure === 'retryable') {
        this.memory.addNatural(e);
        return { ...base, kind: 'new', retry: true, reason: 'retry: an earlier send failed and may be retried' };
      }
      // A delivered (or maybe delivered) event delivered its person too: later events of that person are known leads.
      if (inLedger.status !== 'failed') this.memory.addNatural(e);
      return plain('duplicate', ledgerReason(inLedger.status, inLedger.failure, inLedger.runId));
    }

    if (e.naturalKey) {
      const other = this.memory.getNatural(e.naturalKey);
      if (other !== undefined) return plain('known_lead', `same person as ${other}`);
      const ledgerKey = delivered.get(e.naturalKey);
      if (ledgerKey !== undefined) return plain('known_lead', `person already delivered (or being delivered) by event ${ledgerKey}`);
      this.memory.addAbsentNatural(e.naturalKey, e.key); // getNatural just missed it
    }
    return plain('new', 'not in the ledger');
  }

  /** Releases the run memory (its spill file, when it has one). */
  close(): void {
    this.memory.close();
  }
}

function ledgerReason(status: string, failure: string | null, runId: number | null): string {
  const run = runId ? ` (run ${runId})` : '';
  switch (status) {
    case 'sent':
      return `already delivered${run}`;
    case 'failed':
      return `failed permanently earlier${run}: fix and use leadledger replay --permanent`;
    case 'in_doubt':
      return `in doubt since${run}: leadledger replay --in-doubt resolves it`;
    case 'pending':
      return `being sent by another run${run}`;
    default:
      return `in the ledger as ${status}${failure ? ` (${failure})` : ''}`;
  }
}
