// The mapped records of one block of input, as the decide stage reads them: numbers in one Int32Array (fingerprints,
// lines, what the ledger holds) and strings in one flat array. Map workers build blocks beside parsing and post them
// to the deciding thread for the price of a buffer transfer and a string copy; no object per record crosses over,
// and the deciding thread compares numbers, not strings.
import type { EventStatus, KnownKey } from '../ledger/ledger.js';
import type { KeyKind, Lead, LeadEvent, Mapped } from '../mapping/types.js';
import { fingerprint } from './fingerprint.js';

/** Int32 words per record. */
export const INTS = 12;
/** Strings per record. */
export const STRS = 7;

// Word offsets within a record's ints.
export const I_KIND = 0; // a Kind
export const I_LINE = 1;
export const I_KEY = 2; // 3 words: key fingerprint (0 0 0: no key)
export const I_PAY = 5; // 2 words: the first 64 bits of the payload hash
export const I_NAT = 7; // 3 words: natural-key fingerprint (0 0 0: none)
export const I_LEDGER = 10; // a ledger code, or NOT_LOOKED_UP
export const I_RUN = 11; // run id of the ledger row (0: none)

// String offsets. Events: key, naturalKey, leadJson, payloadHash, type, occurredAt, the event that delivered the
// person (from the ledger). Invalid and filtered records: key, reason, field.
export const S_KEY = 0;
export const S_NAT = 1;
export const S_LEAD = 2;
export const S_REASON = 2;
export const S_HASH = 3;
export const S_TYPE = 4;
export const S_TIME = 5;
export const S_FIELD = 6;
export const S_DELIVERED_BY = 6;

export const enum Kind {
  IdEvent = 0,
  ContentEvent = 1,
  Invalid = 2,
  Filtered = 3,
}

// Ledger codes: the low 3 bits are the status; flags above.
export const NOT_LOOKED_UP = -1;
export const L_STATUS = 7;
export const L_RETRYABLE = 8;
export const L_PERMANENT = 16;
export const L_TOMBSTONE = 32;
export const L_HASH_DIFFERS = 64;
export const L_PERSON_DELIVERED = 128;
export const STATUSES: Array<EventStatus | undefined> = [undefined, 'sent', 'pending', 'in_doubt', 'failed'];

/** Mapped records in the form the decider reads. `source` is '' until the deciding thread names it. */
export interface MappedBlock {
  n: number;
  ints: Int32Array;
  strs: string[];
}

/** Encodes mapped records (fingerprints computed here); ledger codes start as NOT_LOOKED_UP. */
export function encodeMapped(items: Mapped[]): MappedBlock {
  const enc = new BlockEncoder(items.length);
  for (const m of items) enc.add(m);
  return enc.finish();
}

/**
 * Builds a block record by record, so a worker's mapped objects die young (a block of thousands of them kept
 * until the end would survive into the old generation and cost a full collection).
 */
export class BlockEncoder {
  private ints: Int32Array;
  private strs: string[] = [];
  private n = 0;

  constructor(expected = 1024) {
    this.ints = new Int32Array(Math.max(16, expected) * INTS);
  }

  add(m: Mapped): void {
    const r = this.n++;
    if (r * INTS >= this.ints.length) {
      const grown = new Int32Array(this.ints.length * 2);
      grown.set(this.ints);
      this.ints = grown;
    }
    const { ints, strs } = this;
    const o = r * INTS;
    const s = r * STRS;
    for (let i = 0; i < STRS; i++) strs.push('');
    ints[o + I_LINE] = m.line;
    ints[o + I_LEDGER] = NOT_LOOKED_UP;
    if (m.key !== undefined) {
      strs[s + S_KEY] = m.key;
      fingerprint(m.key, ints, o + I_KEY);
    }
    if (m.kind === 'event') {
      ints[o + I_KIND] = m.keyKind === 'id' ? Kind.IdEvent : Kind.ContentEvent;
      ints[o + I_PAY] = parseInt(m.payloadHash.slice(0, 8), 16) | 0;
      ints[o + I_PAY + 1] = parseInt(m.payloadHash.slice(8, 16), 16) | 0;
      if (m.naturalKey) {
        strs[s + S_NAT] = m.naturalKey;
        fingerprint(m.naturalKey, ints, o + I_NAT);
      }
      strs[s + S_LEAD] = m.leadJson ?? JSON.stringify(m.lead);
      strs[s + S_HASH] = m.payloadHash;
      if (m.type !== undefined) strs[s + S_TYPE] = m.type;
      if (m.occurredAt !== undefined) strs[s + S_TIME] = m.occurredAt;
    } else {
      ints[o + I_KIND] = m.kind === 'invalid' ? Kind.Invalid : Kind.Filtered;
      strs[s + S_REASON] = m.reason;
      if (m.kind === 'invalid' && m.field !== undefined) strs[s + S_FIELD] = m.field;
    }
  }

  /** The block; the encoder must not be used after. */
  finish(): MappedBlock {
    return { n: this.n, ints: this.ints.slice(0, this.n * INTS), strs: this.strs };
  }
}

/** What the ledger holds, looked up in batches: the same answers from a Ledger or a worker's LedgerLookup. */
export interface LedgerReader {
  lookupKeys(keys: string[]): Map<string, KnownKey>;
  lookupDelivered(naturalKeys: string[]): Map<string, string>;
}

/**
 * Fills the ledger codes of a block's events: two batched queries. `skip(r)` leaves a record NOT_LOOKED_UP (the
 * decider skips keys it already remembers: it decides them without the ledger).
 */
export function fillLedger(block: MappedBlock, ledger: LedgerReader | undefined, skip?: (r: number) => boolean): void {
  const { n, ints, strs } = block;
  const rows: number[] = [];
  for (let r = 0; r < n; r++) {
    if (ints[r * INTS + I_KIND]! > Kind.ContentEvent) continue;
    if (skip?.(r)) continue;
    rows.push(r);
    ints[r * INTS + I_LEDGER] = 0;
  }
  if (!ledger || rows.length === 0) return;
  const known = ledger.lookupKeys([...new Set(rows.map((r) => strs[r * STRS + S_KEY]!))]);
  const naturals = new Set<string>();
  for (const r of rows) {
    const s = r * STRS;
    const k = known.get(strs[s + S_KEY]!);
    if (k) {
      const o = r * INTS;
      let code = STATUSES.indexOf(k.status);
      if (k.failure === 'retryable') code |= L_RETRYABLE;
      if (k.failure === 'permanent') code |= L_PERMANENT;
      if (k.tombstone) code |= L_TOMBSTONE;
      if (k.payloadHash !== null && k.payloadHash !== strs[s + S_HASH]) code |= L_HASH_DIFFERS;
      ints[o + I_LEDGER] = code;
      ints[o + I_RUN] = k.runId ?? 0;
    } else if (strs[s + S_NAT]) naturals.add(strs[s + S_NAT]!);
  }
  if (naturals.size === 0) return;
  const delivered = ledger.lookupDelivered([...naturals]);
  if (delivered.size === 0) return;
  for (const r of rows) {
    const o = r * INTS;
    if (ints[o + I_LEDGER] !== 0) continue;
    const by = delivered.get(strs[r * STRS + S_NAT]!);
    if (by !== undefined) {
      ints[o + I_LEDGER] = L_PERSON_DELIVERED;
      strs[r * STRS + S_DELIVERED_BY] = by;
    }
  }
}

/** A lead event read back from a block; its lead is parsed from JSON only when something asks for it. */
export class BlockEvent implements LeadEvent {
  readonly kind = 'event' as const;
  declare naturalKey?: string;
  declare type?: string;
  declare occurredAt?: string;
  private parsed: Lead | undefined;

  constructor(
    public source: string,
    public line: number,
    public key: string,
    public keyKind: KeyKind,
    public payloadHash: string,
    public leadJson: string,
  ) {}

  get lead(): Lead {
    return (this.parsed ??= JSON.parse(this.leadJson) as Lead);
  }
}

/** The event of record r, with the block's source and the line offset added. */
export function eventAt(block: MappedBlock, r: number, source: string, lineBase: number): BlockEvent {
  const { ints, strs } = block;
  const o = r * INTS;
  const s = r * STRS;
  const e = new BlockEvent(source, ints[o + I_LINE]! + lineBase, strs[s + S_KEY]!, ints[o + I_KIND] === Kind.IdEvent ? 'id' : 'content', strs[s + S_HASH]!, strs[s + S_LEAD]!);
  if (strs[s + S_NAT]) e.naturalKey = strs[s + S_NAT];
  if (strs[s + S_TYPE]) e.type = strs[s + S_TYPE];
  if (strs[s + S_TIME]) e.occurredAt = strs[s + S_TIME];
  return e;
}
