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

// String offsets. Events: key, naturalKey, leadJson, payloadHash, type, occurredAt. Invalid and filtered
// records: key, '', reason, '', '', field.
export const S_KEY = 0;
export const S_NAT = 1;
export const S_LEAD = 2;
export const S_REASON = 2;
export const S_HASH = 3;
export const S_TYPE = 4;
export const S_TIME = 5;
export const S_FIELD = 5;

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

/**
 * Mapped records in the form the decider reads. Their strings are one text plus offsets: one string to copy
 * between threads instead of thousands, and the deciding thread cuts out only the ones it uses.
 */
export interface MappedBlock {
  n: number;
  ints: Int32Array;
  /** The strings of every record, STRS per record, concatenated. */
  text: string;
  /** Where string i starts in text (and, at i + 1, where it ends). */
  offs: Int32Array;
  /** The events that delivered people, found in the ledger; indexed from I_RUN when L_PERSON_DELIVERED is set. */
  deliveredBy: string[];
}

/** String i of a block (record r's field f is i = r * STRS + f). */
export function str(block: MappedBlock, i: number): string {
  return block.text.slice(block.offs[i], block.offs[i + 1]);
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
  private offs: Int32Array;
  private readonly parts: string[] = [];
  private at = 0;
  private n = 0;

  constructor(expected = 1024) {
    const cap = Math.max(16, expected);
    this.ints = new Int32Array(cap * INTS);
    this.offs = new Int32Array(cap * STRS + 1);
  }

  add(m: Mapped): void {
    const r = this.n++;
    if (r * INTS >= this.ints.length) {
      const ints = new Int32Array(this.ints.length * 2);
      ints.set(this.ints);
      this.ints = ints;
      const offs = new Int32Array(this.offs.length * 2);
      offs.set(this.offs);
      this.offs = offs;
    }
    const ints = this.ints;
    const o = r * INTS;
    ints[o + I_LINE] = m.line;
    ints[o + I_LEDGER] = NOT_LOOKED_UP;
    if (m.key !== undefined) fingerprint(m.key, ints, o + I_KEY);
    if (m.kind === 'event') {
      ints[o + I_KIND] = m.keyKind === 'id' ? Kind.IdEvent : Kind.ContentEvent;
      ints[o + I_PAY] = parseInt(m.payloadHash.slice(0, 8), 16) | 0;
      ints[o + I_PAY + 1] = parseInt(m.payloadHash.slice(8, 16), 16) | 0;
      if (m.naturalKey) fingerprint(m.naturalKey, ints, o + I_NAT);
      this.strings(r, m.key, m.naturalKey ?? '', m.leadJson ?? JSON.stringify(m.lead), m.payloadHash, m.type ?? '', m.occurredAt ?? '');
    } else {
      ints[o + I_KIND] = m.kind === 'invalid' ? Kind.Invalid : Kind.Filtered;
      this.strings(r, m.key ?? '', '', m.reason, '', '', m.kind === 'invalid' ? (m.field ?? '') : '');
    }
  }

  private strings(r: number, ...values: string[]): void {
    let i = r * STRS;
    for (const v of values) {
      this.offs[i++] = this.at;
      this.parts.push(v);
      this.at += v.length;
    }
    this.offs[i] = this.at;
  }

  /** The block; the encoder must not be used after. */
  finish(): MappedBlock {
    const n = this.n;
    return { n, ints: this.ints.slice(0, n * INTS), text: this.parts.join(''), offs: this.offs.slice(0, n * STRS + 1), deliveredBy: [] };
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
  const { n, ints } = block;
  const rows: number[] = [];
  for (let r = 0; r < n; r++) {
    if (ints[r * INTS + I_KIND]! > Kind.ContentEvent) continue;
    if (skip?.(r)) continue;
    rows.push(r);
    ints[r * INTS + I_LEDGER] = 0;
  }
  if (!ledger || rows.length === 0) return;
  const known = ledger.lookupKeys([...new Set(rows.map((r) => str(block, r * STRS + S_KEY)))]);
  const naturals = new Set<string>();
  for (const r of rows) {
    const s = r * STRS;
    const o = r * INTS;
    const k = known.get(str(block, s + S_KEY));
    if (k) {
      let code = STATUSES.indexOf(k.status);
      if (k.failure === 'retryable') code |= L_RETRYABLE;
      if (k.failure === 'permanent') code |= L_PERMANENT;
      if (k.tombstone) code |= L_TOMBSTONE;
      if (k.payloadHash !== null && k.payloadHash !== str(block, s + S_HASH)) code |= L_HASH_DIFFERS;
      ints[o + I_LEDGER] = code;
      ints[o + I_RUN] = k.runId ?? 0;
    } else if (ints[o + I_NAT] !== 0) naturals.add(str(block, s + S_NAT));
  }
  if (naturals.size === 0) return;
  const delivered = ledger.lookupDelivered([...naturals]);
  if (delivered.size === 0) return;
  for (const r of rows) {
    const o = r * INTS;
    if (ints[o + I_LEDGER] !== 0) continue;
    if (ints[o + I_NAT] === 0) continue;
    const by = delivered.get(str(block, r * STRS + S_NAT));
    if (by !== undefined) {
      ints[o + I_LEDGER] = L_PERSON_DELIVERED;
      ints[o + I_RUN] = block.deliveredBy.push(by) - 1;
    }
  }
}

/**
 * A lead event read back from a block: key and natural key are cut out at once (every decision carries them), the
 * rest of its strings (lead, hash, type, time) only when something reads them, and the lead parsed only then.
 */
export class BlockEvent implements LeadEvent {
  readonly kind = 'event' as const;
  declare naturalKey?: string;
  readonly #block: MappedBlock;
  readonly #s: number;
  #lead: Lead | undefined;

  constructor(block: MappedBlock, r: number, public source: string, public line: number) {
    this.#block = block;
    this.#s = r * STRS;
    this.key = str(block, this.#s + S_KEY);
    this.keyKind = block.ints[r * INTS + I_KIND] === Kind.IdEvent ? 'id' : 'content';
    if (block.ints[r * INTS + I_NAT] !== 0) this.naturalKey = str(block, this.#s + S_NAT);
  }

  key: string;
  keyKind: KeyKind;

  get payloadHash(): string {
    return str(this.#block, this.#s + S_HASH);
  }

  get leadJson(): string {
    return str(this.#block, this.#s + S_LEAD);
  }

  get type(): string | undefined {
    return str(this.#block, this.#s + S_TYPE) || undefined;
  }

  get occurredAt(): string | undefined {
    return str(this.#block, this.#s + S_TIME) || undefined;
  }

  get lead(): Lead {
    return (this.#lead ??= JSON.parse(this.leadJson) as Lead);
  }
}
