// The decider: the decision rules (decide/decide.ts) applied to the engine's blocks, in input order. It answers the
// rules' questions from a block's numbers (fingerprints, ledger codes) and from this run's memory, and puts their
// outcome into words only for the decisions someone reads.
import type { LedgerIndex } from './ledger-index.js';
import { differingFields } from '../mapping/keys.js';
import type { Lead, Mapped } from '../mapping/types.js';
import {
  BlockEvent,
  encodeMapped,
  F_NATIONAL_PHONE,
  fillLedger,
  INTS,
  isRetry,
  I_FLAGS,
  I_KIND,
  I_LEDGER,
  I_ITEM,
  I_LINE,
  I_NAT,
  I_RUN,
  Kind,
  L_HASH_DIFFERS,
  L_PERMANENT,
  L_PERSON_DELIVERED,
  L_RETRYABLE,
  L_STATUS,
  L_TOMBSTONE,
  NOT_LOOKED_UP,
  STATUSES,
  STRS,
  S_KEY,
  S_NAT,
  S_REASON,
  S_WARN,
  str,
  type LedgerReader,
  type MappedBlock,
} from './block.js';
import {
  classify,
  conflictReason,
  duplicateInInputReason,
  ERASED_REASON,
  knownInLedgerReason,
  knownInRunReason,
  knownRetryReason,
  ledgerReason,
  NEW_REASON,
  Outcome,
  OUTCOME_KINDS,
  RETRY_REASON,
  type EventFacts,
} from '../decide/decide.js';
import { DECISION_KINDS, type Decision, type DecisionKind, type DecisionTally } from '../decide/types.js';
import type { EventStatus } from '../ledger/types.js';
import { RECENT, RunMemory } from './run-memory.js';

/**
 * What the decider asks the ledger, synchronously: SQLite's Ledger, or a PrefetchedLedger that asked an
 * asynchronous one ahead of each block (prefetch-ledger.ts).
 */
export interface DecideLedger extends LedgerReader {
  deliveredBy(naturalKey: string): string | undefined;
  getLeadJson(key: string): string | undefined;
}

/** Options of the decide stage. */
export interface DecideOptions {
  /** The ledger to check against; absent in a dry-run with no ledger file yet. */
  ledger?: DecideLedger;
  /** Keys (and people) held in memory before the run memory spills to a temp file; tests make it tiny. */
  memoryCapacity?: number;
}

const kindIndex = (k: DecisionKind): number => DECISION_KINDS.indexOf(k);
// The decision kind of each Outcome, as an index into DECISION_KINDS.
const OUTCOME_KIND = Int32Array.from(OUTCOME_KINDS.map(kindIndex));
const INVALID = kindIndex('invalid');
const FILTERED = kindIndex('filtered');

/**
 * Blocks whose ledger codes the decider looked up, blocks that came with them from a map worker, and blocks looked up
 * through a writing run's filter (tests).
 */
export const lookUpStats = { here: 0, byWorkers: 0, filtered: 0 };

/** Decides records a block at a time: one ledger query per block, then in-order decisions with this run's memory. */
export class Decider implements EventFacts {
  private readonly memory: RunMemory;
  /** The read-only ledger's index: blocks that come without ledger codes are filled from it, not from SQLite. */
  index: LedgerIndex | undefined;
  /**
   * A writing run's index of the ledger as it was when the run started deciding: only the keys and people it may
   * hold are asked of SQLite. It stays true while no other run writes the ledger, for what this run writes is in its
   * memory: it is dropped for good the first time `filterValid` says another run may have (Ledger.otherRunSince).
   */
  filter: LedgerIndex | undefined;
  filterValid: (() => boolean) | undefined;
  // The event that delivered the person, when classify() says KnownInLedger.
  private by: string | undefined;
  // The event the rules ask about (see EventFacts): its block, record, offset into ints, line, source and ordinal.
  private cBlock!: MappedBlock;
  private cInts: Int32Array = new Int32Array(0);
  private cCode = 0;
  private cRow = 0;
  private cOff = 0;
  private cLine = 0;
  private cSrc = 0;
  private cOrd = 0;
  private readonly counts = new Int32Array(DECISION_KINDS.length);
  /** Records decided whose phone was written without a calling code (the default country read it). */
  nationalPhones = 0;
  // Decided blocks whose events are still recent (the run memory names them), with the ordinal after their last
  // event and what gives their buffers back.
  private readonly kept: Array<{ block: MappedBlock; end: number; giveBack?: () => void }> = [];

  constructor(private readonly opts: DecideOptions) {
    this.memory = new RunMemory(opts.memoryCapacity);
  }

  /** Decisions for mapped records, in input order (tests and small inputs; blocks are the fast path). */
  decideBatch(items: Mapped[]): Decision[] {
    const out: Decision[] = [];
    // A block has one source: consecutive records of the same source go together.
    for (let i = 0; i < items.length;) {
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
    if (from === 0) this.lookUp(block);
    const ints = block.ints;
    const src = this.memory.sourceId(source);
    this.atBlock(block, src);
    const out = new Array<Decision>(to - from);
    for (let r = from; r < to; r++) {
      const kind = ints[r * INTS + I_KIND]!;
      const line = ints[r * INTS + I_LINE]! + lineBase;
      if (ints[r * INTS + I_FLAGS]! & F_NATIONAL_PHONE) this.nationalPhones++;
      const d =
        kind <= Kind.ContentEvent ? this.decideEvent(block, r, source, line) : notAnEvent(block, r, source, line);
      const item = ints[r * INTS + I_ITEM]!;
      if (item !== 0) d.item = item;
      out[r - from] = d;
    }
    return out;
  }

  /**
   * Counts the decisions of a whole block into the tally, the same decisions decideBlock would make, without
   * making them: only those of a kind the tally wants become objects (an audit of a million events makes a handful).
   */
  countBlock(block: MappedBlock, source: string, lineBase: number, tally: DecisionTally): void {
    this.lookUp(block);
    this.countRows(block, source, lineBase, tally);
    tally.addCounts(source, this.counts);
  }

  // countBlock's loop, in a function of its own: optimized on the stack inside its loop (OSR) before the first call
  // returned, countBlock had no feedback for the call after the loop, and left its optimized code there on every
  // block (measured: a deoptimization a block).
  private countRows(block: MappedBlock, source: string, lineBase: number, tally: DecisionTally): void {
    const { ints, n, offs } = block;
    const src = this.memory.sourceId(source);
    this.atBlock(block, src);
    const counts = this.counts.fill(0);
    const wanted = tally.wanted;
    let national = 0;
    for (let r = 0; r < n; r++) {
      const kind = ints[r * INTS + I_KIND]!;
      const line = ints[r * INTS + I_LINE]! + lineBase;
      national += ints[r * INTS + I_FLAGS]! & F_NATIONAL_PHONE;
      if (kind <= Kind.ContentEvent) {
        const out = this.classify(r, line);
        const k = OUTCOME_KIND[out]!;
        if (wanted[k]) tally.add(withItem(this.explain(block, r, source, line, out), ints[r * INTS + I_ITEM]!));
        else {
          counts[k]!++;
          // Only a record with warnings has text there; it is counted with them.
          const w = r * STRS + S_WARN;
          if (offs[w + 1]! > offs[w]!)
            tally.addWarnings(source, line, str(block, r * STRS + S_KEY), str(block, w).split('\n'));
        }
      } else {
        const k = kind === Kind.Invalid ? INVALID : FILTERED;
        if (wanted[k]) tally.add(withItem(notAnEvent(block, r, source, line), ints[r * INTS + I_ITEM]!));
        else counts[k]!++;
      }
    }
    this.nationalPhones += national;
  }

  // The ledger is asked once per block, before its first records are decided (unless the map workers filled it in).
  private lookUp(block: MappedBlock): void {
    const { ints, n } = block;
    const memory = this.memory;
    for (let r = 0; r < n; r++) {
      if (ints[r * INTS + I_KIND]! <= Kind.ContentEvent) {
        if (ints[r * INTS + I_LEDGER] !== NOT_LOOKED_UP) {
          lookUpStats.byWorkers++;
          return;
        }
        lookUpStats.here++;
        if (this.index) {
          this.index.fill(block);
          return;
        }
        if (this.filter && !this.filterValid?.()) this.filter = undefined;
        if (this.filter) lookUpStats.filtered++;
        fillLedger(
          block,
          this.opts.ledger,
          (x) => ints[x * INTS + I_LEDGER] !== NOT_LOOKED_UP || memory.hasKey(ints, x * INTS),
          this.filter,
        );
        return;
      }
    }
  }

  private decideEvent(block: MappedBlock, r: number, source: string, line: number): Decision {
    return this.explain(block, r, source, line, this.classify(r, line));
  }

  /**
   * What happens to event r of the block, as an Outcome, with this run's memory updated: the whole decision but
   * its objects and words, which explain() makes, right after, when someone reads them.
   */
  private classify(r: number, line: number): Outcome {
    this.cRow = r;
    this.cOff = r * INTS;
    this.cLine = line;
    return classify(this);
  }

  // The block (and its source) whose events classify() is given next.
  private atBlock(block: MappedBlock, src: number): void {
    this.cBlock = block;
    this.cInts = block.ints;
    this.cSrc = src;
  }

  // The rules' questions (EventFacts), about the event classify() was given.

  keySeen(): boolean {
    return this.memory.hasKey(this.cInts, this.cOff);
  }

  sameLead(): boolean {
    return this.memory.foundSamePayload(this.cInts, this.cOff);
  }

  rememberKey(): void {
    this.cOrd = this.memory.addKey(this.cBlock, this.cRow, this.cOff, this.cLine, this.cSrc);
  }

  // The rules ask for the status first: the other answers about the ledger read the code it read.
  ledgerStatus(): EventStatus | undefined {
    return STATUSES[(this.cCode = this.cInts[this.cOff + I_LEDGER]!) & L_STATUS];
  }

  erased(): boolean {
    return (this.cCode & L_TOMBSTONE) !== 0;
  }

  ledgerLeadDiffers(): boolean {
    return (this.cCode & L_HASH_DIFFERS) !== 0;
  }

  retryable(): boolean {
    return (this.cCode & L_RETRYABLE) !== 0;
  }

  hasPerson(): boolean {
    return this.cInts[this.cOff + I_NAT] !== 0;
  }

  personSeen(): boolean {
    return this.memory.hasNatural(this.cInts, this.cOff);
  }

  personDelivered(): boolean {
    if ((this.cCode & L_PERSON_DELIVERED) === 0) return false;
    const block = this.cBlock;
    // -1: an index found the person (LedgerIndex.fill); the ledger names the event, and confirms the match.
    const at = this.cInts[this.cOff + I_RUN]!;
    this.by = at >= 0 ? block.deliveredBy[at] : this.opts.ledger?.deliveredBy(str(block, this.cRow * STRS + S_NAT));
    return this.by !== undefined;
  }

  rememberPerson(): void {
    this.memory.addNatural(this.cInts, this.cOff, this.cLine, this.cSrc, this.cOrd);
  }

  rememberNewPerson(): void {
    this.memory.addAbsentNatural(this.cInts, this.cOff, this.cLine, this.cSrc, this.cOrd);
  }

  /** The decision for event r, which classify() has just given `out`. */
  private explain(block: MappedBlock, r: number, source: string, line: number, out: Outcome): Decision {
    const e = new BlockEvent(block, r, source, line);
    const memory = this.memory;
    const o = r * INTS;
    const code = block.ints[o + I_LEDGER]!;
    switch (out) {
      case Outcome.New:
        return plain(e, 'new', NEW_REASON);
      case Outcome.DuplicateInInput:
        return plain(e, 'duplicate_in_input', duplicateInInputReason(memory.foundKeyWhere()));
      case Outcome.ConflictInInput:
        return this.conflict(e, memory.foundKeyLead(), `same key as ${memory.foundKeyWhere()}`);
      case Outcome.DuplicateErased:
        return plain(e, 'duplicate', ERASED_REASON);
      case Outcome.ConflictWithLedger:
        return this.conflict(e, this.opts.ledger?.getLeadJson(e.key), 'ledger holds this key');
      case Outcome.Retry:
        return { ...plain(e, 'new', RETRY_REASON), retry: true };
      case Outcome.DuplicateInLedger: {
        const failure = code & L_RETRYABLE ? 'retryable' : code & L_PERMANENT ? 'permanent' : null;
        const status = STATUSES[code & L_STATUS]!;
        const d = plain(e, 'duplicate', ledgerReason(status, failure, block.ints[o + I_RUN] || null));
        if (status === 'in_doubt') d.inDoubt = true;
        return d;
      }
      case Outcome.KnownInRun:
        return known(e, code, knownInRunReason(memory.foundNaturalBy()));
      case Outcome.KnownInLedger:
        return known(e, code, knownInLedgerReason(this.by!));
    }
  }

  private conflict(e: BlockEvent, earlier: string | undefined, what: string): Decision {
    const held = earlier ? (JSON.parse(earlier) as Lead) : undefined;
    const fields = held ? differingFields(held, e.lead) : undefined;
    const reason = conflictReason(what, fields);
    const d: Decision = { source: e.source, line: e.line, key: e.key, event: e, kind: 'conflict', fields, reason };
    // The held lead goes with the decision, so that a report can show each differing field's two values.
    if (held) d.held = held;
    return d;
  }

  /**
   * A block's decisions have all been consumed. Its buffers are given back (giveBack) once its events are no longer
   * among the run memory's recent ones, which it names from their blocks; from then on, reading a field of one of
   * its events that was not detached throws instead of reading reused bytes.
   */
  release(block: MappedBlock, giveBack?: () => void): void {
    const now = this.memory.ordinal;
    this.kept.push({ block, end: now, giveBack });
    while (this.kept.length > 0 && now - this.kept[0]!.end >= RECENT) giveUp(this.kept.shift()!);
  }

  /** Releases the run memory (its spill file, when it has one). */
  close(): void {
    for (const k of this.kept.splice(0)) giveUp(k);
    this.memory.close();
  }
}

function giveUp(k: { block: MappedBlock; giveBack?: () => void }): void {
  k.block.released = true;
  k.giveBack?.();
}

// A decision of one of several events of a line says which (the item of its block row; 0: the line's only one).
function withItem(d: Decision, item: number): Decision {
  if (item !== 0) d.item = item;
  return d;
}

// An invalid or filtered record's decision.
function notAnEvent(block: MappedBlock, r: number, source: string, line: number): Decision {
  const s = r * STRS;
  const kind = block.ints[r * INTS + I_KIND] === Kind.Invalid ? 'invalid' : 'filtered';
  return { kind, source, line, key: str(block, s + S_KEY) || undefined, reason: str(block, s + S_REASON) };
}

// A known lead's decision; a retry's (its key failed before, retryably) says so, and an update claims that row.
function known(e: BlockEvent, code: number, reason: string): Decision {
  return isRetry(code)
    ? { ...plain(e, 'known_lead', knownRetryReason(reason)), retry: true }
    : plain(e, 'known_lead', reason);
}

// The common outcomes are built as literals with the same properties in the same order (one hidden class). The
// person is the event's (decoded only if someone reads it).
function plain(e: BlockEvent, kind: Decision['kind'], reason: string): Decision {
  return { source: e.source, line: e.line, key: e.key, event: e, kind, reason };
}
