// Decide, for each mapped record, what a push does with it: against what this run has seen and what the ledger holds.
import type { Ledger } from '../ledger/ledger.js';
import type { LedgerIndex } from './ledger-index.js';
import { differingFields } from '../mapping/keys.js';
import type { Lead, Mapped } from '../mapping/types.js';
import {
  BlockEvent, encodeMapped, fillLedger, INTS, I_KIND, I_LEDGER, I_LINE, I_NAT, I_PAY, I_RUN, Kind, L_HASH_DIFFERS,
  L_PERMANENT, L_PERSON_DELIVERED, L_RETRYABLE, L_STATUS, L_TOMBSTONE, NOT_LOOKED_UP, STATUSES, STRS, S_KEY, S_REASON,
  str, type MappedBlock,
} from './block.js';
import type { Decision } from './types.js';
import { RunMemory } from './run-memory.js';

/** Options of the decide stage. */
export interface DecideOptions {
  /** The ledger to check against; absent in a dry-run with no ledger file yet. */
  ledger?: Ledger;
  /** Keys (and people) held in memory before the run memory spills to a temp file; tests make it tiny. */
  memoryCapacity?: number;
}

/** Decides records a block at a time: one ledger query per block, then in-order decisions with this run's memory. */
export class Decider {
  private readonly memory: RunMemory;
  /** The read-only ledger's index: blocks that come without ledger codes are filled from it, not from SQLite. */
  index: LedgerIndex | undefined;

  constructor(private readonly opts: DecideOptions) {
    this.memory = new RunMemory(opts.memoryCapacity);
  }

  /** Decisions for mapped records, in input order (tests and small inputs; blocks are the fast path). */
  decideBatch(items: Mapped[]): Decision[] {
    const out: Decision[] = [];
    // A block has one source: consecutive records of the same source go together.
    for (let i = 0; i < items.length; ) {
      let j = i + 1;
      while (j < items.length && items[j]!.source === items[i]!.source) j++;
      out.push(...this.decideBlock(encodeMapped(items.slice(i, j)), items[i]!.source, 0));
      i = j;
    }
    return out;
  }

  /**
   * Decisions for a block of one source, in input order; lines are the block's plus `lineBase`. Records whose
   * ledger codes are not filled in (by the map workers of a dry-run) are looked up here first.
   */
  decideBlock(block: MappedBlock, source: string, lineBase: number, from = 0, to = block.n): Decision[] {
    const { ints } = block;
    const memory = this.memory;
    // The ledger is asked once per block, when its first records are decided.
    for (let r = 0; r < block.n && from === 0; r++) {
      if (ints[r * INTS + I_KIND]! <= Kind.ContentEvent && ints[r * INTS + I_LEDGER] === NOT_LOOKED_UP) {
        if (this.index) this.index.fill(block);
        else fillLedger(block, this.opts.ledger, (x) => ints[x * INTS + I_LEDGER] !== NOT_LOOKED_UP || memory.hasKey(ints, x * INTS));
        break;
      }
    }
    const src = memory.sourceId(source);
    const out = new Array<Decision>(to - from);
    for (let r = from; r < to; r++) {
      const o = r * INTS;
      const s = r * STRS;
      const kind = ints[o + I_KIND]!;
      const line = ints[o + I_LINE]! + lineBase;
      if (kind === Kind.Invalid) {
        out[r - from] = { kind: 'invalid', source, line, key: str(block, s + S_KEY) || undefined, reason: str(block, s + S_REASON) };
      } else if (kind === Kind.Filtered) {
        out[r - from] = { kind: 'filtered', source, line, key: str(block, s + S_KEY) || undefined, reason: str(block, s + S_REASON) };
      } else {
        out[r - from] = this.decideEvent(block, r, source, src, line);
      }
    }
    return out;
  }

  private decideEvent(block: MappedBlock, r: number, source: string, src: number, line: number): Decision {
    const ints = block.ints;
    const o = r * INTS;
    const memory = this.memory;
    const e = new BlockEvent(block, r, source, line);

    const seen = memory.getKey(ints, o);
    if (seen) {
      if (seen.samePayload) return plain(e, 'duplicate_in_input', `same event as ${seen.where}`);
      return this.conflict(e, seen.earlier?.leadJson, `same key as ${seen.where}`);
    }
    const ord = memory.addKey(ints, o, line, src, e);

    const code = ints[o + I_LEDGER]!;
    const status = STATUSES[code & L_STATUS];
    if (status !== undefined) {
      if (code & L_TOMBSTONE) {
        // The ledger forgot who this was; the input still says it, so this run's later events of the person are known.
        memory.addNatural(ints, o, line, src, ord);
        return plain(e, 'duplicate', 'already delivered (person erased from the ledger)');
      }
      if (code & L_HASH_DIFFERS) return this.conflict(e, this.opts.ledger?.getLeadJson(e.key), 'ledger holds this key');
      if (status === 'failed' && code & L_RETRYABLE) {
        memory.addNatural(ints, o, line, src, ord);
        return { ...plain(e, 'new', 'retry: an earlier send failed and may be retried'), retry: true };
      }
      // A delivered (or maybe delivered) event delivered its person too: later events of that person are known leads.
      if (status !== 'failed') memory.addNatural(ints, o, line, src, ord);
      const failure = code & L_RETRYABLE ? 'retryable' : code & L_PERMANENT ? 'permanent' : null;
      return plain(e, 'duplicate', ledgerReason(status, failure, ints[o + I_RUN] || null));
    }

    if (ints[o + I_NAT] !== 0) {
      const other = memory.getNatural(ints, o);
      if (other !== undefined) return plain(e, 'known_lead', `same person as ${other}`);
      // -1: an index found the person (LedgerIndex.fill); the ledger names the event, and confirms the match.
      const at = ints[o + I_RUN]!;
      const by = code & L_PERSON_DELIVERED ? (at >= 0 ? block.deliveredBy[at] : this.opts.ledger?.deliveredBy(e.naturalKey!)) : undefined;
      if (by !== undefined) return plain(e, 'known_lead', `person already delivered (or being delivered) by event ${by}`);
      memory.addAbsentNatural(ints, o, line, src, ord); // getNatural just missed it
    }
    return plain(e, 'new', 'not in the ledger');
  }

  private conflict(e: BlockEvent, earlier: string | undefined, what: string): Decision {
    const fields = earlier ? differingFields(JSON.parse(earlier) as Lead, e.lead) : undefined;
    return { source: e.source, line: e.line, key: e.key, event: e, kind: 'conflict', fields, reason: `${what} with different ${fields?.join(', ') || 'content'}` };
  }

  /**
   * A block's decisions have all been consumed and its buffers may be given back: what the run memory keeps of its
   * events is decoded now, and a late read of any other field of them throws instead of reading reused bytes.
   */
  release(block: MappedBlock): void {
    this.memory.keepRecent(block);
    block.released = true;
  }

  /** Releases the run memory (its spill file, when it has one). */
  close(): void {
    this.memory.close();
  }
}

// The common outcomes are built as literals with the same properties in the same order (one hidden class). The
// person is the event's (decoded only if someone reads it).
function plain(e: BlockEvent, kind: Decision['kind'], reason: string): Decision {
  return { source: e.source, line: e.line, key: e.key, event: e, kind, reason };
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
