// The decider asks the ledger synchronously, a block at a time. A ledger that answers asynchronously (PostgreSQL) is
// asked here first, for the whole block: its codes filled in (from the dry-run's index, or by two batched queries),
// and what the decisions may then ask by key (the lead stored for a conflict, the event that delivered a person)
// kept until the block is decided. The answers are the ones a synchronous ledger gives the decider itself.
import type { KnownKey } from '../ledger/types.js';
import type { LedgerStore } from '../ledger/store.js';
import {
  fillLedger,
  INTS,
  I_KEY,
  I_KIND,
  I_LEDGER,
  I_NAT,
  I_RUN,
  Kind,
  L_HASH_DIFFERS,
  L_PERSON_DELIVERED,
  NOT_LOOKED_UP,
  S_KEY,
  S_NAT,
  STRS,
  str,
  type MappedBlock,
} from './block.js';
import { lookUpStats, type DecideLedger } from './decider.js';
import type { LedgerIndex } from './ledger-index.js';

/** A DecideLedger whose answers were fetched, a block ahead, from an asynchronous ledger. */
export class PrefetchedLedger implements DecideLedger {
  private leads = new Map<string, string>();
  private people = new Map<string, string>();

  /**
   * A writing run's snapshot of the ledger while it holds it alone (Decider.filter): only what it may hold is
   * asked; dropped for good once `filterValid` says another run may have written the ledger.
   */
  filter: LedgerIndex | undefined;
  filterValid: (() => Promise<boolean>) | undefined;

  constructor(private readonly store: LedgerStore) {}

  /** Fills the block's ledger codes (unless the map workers did) and fetches what its decisions may ask. */
  async prepare(block: MappedBlock, index: LedgerIndex | undefined): Promise<void> {
    const { n, ints } = block;
    this.leads = new Map();
    this.people = new Map();
    let first = -1;
    for (let r = 0; r < n && first < 0; r++) if (ints[r * INTS + I_KIND]! <= Kind.ContentEvent) first = r;
    if (first < 0) return;
    if (ints[first * INTS + I_LEDGER] === NOT_LOOKED_UP) {
      if (index) index.fill(block);
      else {
        if (this.filter && !(await this.filterValid?.())) this.filter = undefined;
        const filter = this.filter;
        if (filter) lookUpStats.filtered++;
        const keys = new Set<string>();
        const naturals = new Set<string>();
        for (let r = 0; r < n; r++) {
          const o = r * INTS;
          if (ints[o + I_KIND]! > Kind.ContentEvent) continue;
          if (!filter || filter.mayHoldKey(ints, o + I_KEY)) keys.add(str(block, r * STRS + S_KEY));
          if (ints[o + I_NAT] !== 0 && (!filter || filter.hasPerson(ints, o + I_NAT)))
            naturals.add(str(block, r * STRS + S_NAT));
        }
        // Every person of the block is asked (that the snapshot may hold): fillLedger reads only those whose key the
        // ledger does not hold.
        const [known, delivered] = await Promise.all([
          keys.size ? this.store.lookupKeys([...keys]) : new Map<string, KnownKey>(),
          naturals.size ? this.store.lookupDelivered([...naturals]) : new Map<string, string>(),
        ]);
        fillLedger(block, { lookupKeys: () => known, lookupDelivered: () => delivered }, undefined, filter);
      }
    }
    // What the decisions ask by key: an index names no event for a person (I_RUN -1), and conflicts show the lead.
    const persons = new Set<string>();
    const conflicts = new Set<string>();
    for (let r = 0; r < n; r++) {
      const o = r * INTS;
      if (ints[o + I_KIND]! > Kind.ContentEvent) continue;
      const code = ints[o + I_LEDGER]!;
      if (code === NOT_LOOKED_UP) continue;
      if (code & L_PERSON_DELIVERED && ints[o + I_RUN]! < 0) persons.add(str(block, r * STRS + S_NAT));
      if (code & L_HASH_DIFFERS) conflicts.add(str(block, r * STRS + S_KEY));
    }
    if (persons.size) this.people = await this.store.lookupDelivered([...persons]);
    for (const k of conflicts) {
      const lead = await this.store.getLeadJson(k);
      if (lead !== undefined) this.leads.set(k, lead);
    }
  }

  // Blocks come filled (prepare): the decider never looks up keys itself.
  lookupKeys(): Map<string, KnownKey> {
    throw new Error('an asynchronous ledger is looked up in prepare(), before the block is decided');
  }

  lookupDelivered(): Map<string, string> {
    throw new Error('an asynchronous ledger is looked up in prepare(), before the block is decided');
  }

  deliveredBy(naturalKey: string): string | undefined {
    return this.people.get(naturalKey);
  }

  getLeadJson(key: string): string | undefined {
    return this.leads.get(key);
  }
}
