// The mapped records of one block of input, as the decide stage reads them: numbers in one Int32Array (fingerprints,
// lines, what the ledger holds) and strings in one flat array. Map workers build blocks beside parsing and post them
// to the deciding thread for the price of a buffer transfer and a string copy; no object per record crosses over,
// and the deciding thread compares numbers, not strings.
import type { EventStatus, KnownKey } from '../ledger/types.js';
import type { KeyKind, Lead, LeadEvent, Mapped } from '../mapping/types.js';
import { downstreamKeyPrefix, PAYLOAD_HASH_CHARS, payloadHashOfJson } from '../mapping/keys.js';
import { sha256Bytes } from '../hash.js';
import { fingerprintView } from './fingerprint.js';

/** downstreamKeyPrefix() of the run's namespace, as UTF-8: set where this thread's blocks carry downstream keys. */
let downstreamPrefix: Buffer | undefined;
let downstreamScratch = Buffer.allocUnsafeSlow(256);

/**
 * Every event this thread's encoders write from now on carries its downstream key (mapping/keys.ts downstreamKey)
 * for this namespace (none: undefined): a push's map workers take them, off the deciding thread
 * (MapWorkerInit.downstreamNamespace).
 */
export function setDownstreamNamespace(namespace: string | undefined): void {
  downstreamPrefix = namespace === undefined ? undefined : Buffer.from(downstreamKeyPrefix(namespace));
}

/** The hex digits of a downstream key (a whole sha256). */
const DOWNSTREAM_KEY_CHARS = 64;

/** Int32 words per record. */
export const INTS = 14;
/** Strings per record. */
export const STRS = 8;

// Word offsets within a record's ints.
export const I_KIND = 0; // a Kind
export const I_LINE = 1;
export const I_KEY = 2; // 3 words: key fingerprint (0 0 0: no key)
export const I_PAY = 5; // 2 words: a 64-bit fingerprint of the lead JSON (the in-run content check)
export const I_NAT = 7; // 3 words: natural-key fingerprint (0 0 0: none)
export const I_LEDGER = 10; // a ledger code, or NOT_LOOKED_UP
export const I_RUN = 11; // run id of the ledger row (0: none)
export const I_ITEM = 12; // which event of its line or record (1-based; 0: the line's only one)
export const I_FLAGS = 13; // what the run counts of a record beside its decision: F_NATIONAL_PHONE

/** I_FLAGS: the record's phone was written without a calling code (read in the default country, if any). */
export const F_NATIONAL_PHONE = 1;

// String offsets. Events: key, naturalKey, leadJson, payloadHash, type, occurredAt, warnings (one a line), downstream
// key (empty unless the thread takes them: setDownstreamNamespace). Invalid and filtered records: key, '', reason,
// '', '', '', '', ''.
export const S_KEY = 0;
export const S_NAT = 1;
export const S_LEAD = 2;
export const S_REASON = 2;
export const S_HASH = 3;
export const S_TYPE = 4;
export const S_TIME = 5;
export const S_WARN = 6;
export const S_DK = 7;

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
export const STATUSES: Array<EventStatus | undefined> = [undefined, 'sent', 'pending', 'in_doubt', 'failed', 'queued'];

/**
 * Mapped records in the form the decider reads. Their strings are UTF-8 bytes plus offsets: a buffer transferred
 * between threads instead of thousands of strings copied, none of them kept alive in the worker's heap, and the
 * deciding thread decodes only the ones it uses.
 */
export interface MappedBlock {
  n: number;
  ints: Int32Array;
  /** The strings of every record, STRS per record, as UTF-8, one after the other. */
  bytes: Buffer;
  /** Where string i starts in bytes (and, at i + 1, where it ends). */
  offs: Int32Array;
  /** The events that delivered people, found in the ledger; indexed from I_RUN when L_PERSON_DELIVERED is set. */
  deliveredBy: string[];
  /** Set once the block is decided and its buffers are given back (see BlockEvent). */
  released?: boolean;
}

/** The three buffers under a block, handed back and forth between the deciding thread and a worker. */
export interface BlockBuffers {
  ints: ArrayBuffer;
  offs: ArrayBuffer;
  bytes: ArrayBuffer;
}

/** The buffers under a block (to give back once it is decided). */
export function buffersOf(block: MappedBlock): BlockBuffers {
  return {
    ints: block.ints.buffer as ArrayBuffer,
    offs: block.offs.buffer as ArrayBuffer,
    bytes: block.bytes.buffer as ArrayBuffer,
  };
}

/** String i of a block (record r's field f is i = r * STRS + f). */
export function str(block: MappedBlock, i: number): string {
  const start = block.offs[i]!;
  const end = block.offs[i + 1]!;
  if (end === start) return '';
  return utf8Slice ? utf8Slice.call(block.bytes, start, end) : block.bytes.toString('utf8', start, end);
}

// Buffer's own decoder, without toString's argument checks, which cost more than decoding a short string
// (measured: two thirds of the deciding thread's decoding time). Offsets come from the encoder, always in range.
const utf8Slice = (Buffer.prototype as unknown as { utf8Slice?: (this: Buffer, start: number, end: number) => string })
  .utf8Slice;

/** A block as posted by a worker: its bytes arrive as a plain Uint8Array and become a Buffer view again. */
export function received(block: MappedBlock): MappedBlock {
  const b = block.bytes as Uint8Array;
  block.bytes = Buffer.from(b.buffer, b.byteOffset, b.byteLength);
  return block;
}

type WellFormed = string & { isWellFormed(): boolean; toWellFormed(): string };

/**
 * The string as UTF-8 round-trips it: a lone surrogate (only an escaped "\ud800" in JSON can make one) becomes
 * U+FFFD, so a key's fingerprint, its ledger lookups and every later use see the same text.
 */
function utf8Safe(s: string): string {
  return (s as WellFormed).isWellFormed() ? s : (s as WellFormed).toWellFormed();
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
  private bytes: Buffer;
  // A view over bytes, for word-wide copies and fingerprints.
  private view: DataView;
  private at = 0;
  private n = 0;

  /** spare: buffers a decided block gave back, reused where big enough (steady state allocates nothing). */
  constructor(expected = 1024, spare?: BlockBuffers) {
    const cap = Math.max(16, expected);
    const fits = (b: ArrayBuffer | undefined, bytes: number): b is ArrayBuffer =>
      b !== undefined && b.byteLength >= bytes;
    this.ints = fits(spare?.ints, cap * INTS * 4) ? new Int32Array(spare.ints) : new Int32Array(cap * INTS);
    this.ints.fill(0, 0, cap * INTS);
    this.offs = fits(spare?.offs, (cap * STRS + 1) * 4) ? new Int32Array(spare.offs) : new Int32Array(cap * STRS + 1);
    // Its own ArrayBuffer (not Node's shared pool), so a worker can transfer it.
    this.bytes = fits(spare?.bytes, cap * 256) ? Buffer.from(spare.bytes) : Buffer.allocUnsafeSlow(cap * 256);
    this.view = new DataView(this.bytes.buffer, this.bytes.byteOffset, this.bytes.byteLength);
  }

  add(m: Mapped): void {
    const r = this.begin(m.line);
    if (m.item !== undefined) this.ints[r * INTS + I_ITEM] = m.item;
    const s = r * STRS;
    const key = m.key === undefined ? '' : utf8Safe(m.key);
    this.put(s + S_KEY, key);
    if (m.kind === 'event') {
      this.put(s + S_NAT, m.naturalKey ? utf8Safe(m.naturalKey) : '');
      this.put(s + S_LEAD, m.leadJson ?? JSON.stringify(m.lead));
      this.put(s + S_HASH, m.payloadHash);
      this.put(s + S_TYPE, m.type ?? '');
      this.put(s + S_TIME, m.occurredAt ?? '');
      this.put(s + S_WARN, m.warnings ? m.warnings.join('\n') : '');
      this.putDownstreamKey(s + S_DK, s + S_KEY);
      this.seal(r, m.keyKind === 'id' ? Kind.IdEvent : Kind.ContentEvent);
      if (m.nationalPhone) this.ints[r * INTS + I_FLAGS] = F_NATIONAL_PHONE;
    } else {
      this.put(s + S_NAT, '');
      this.put(s + S_REASON, m.reason);
      this.put(s + S_HASH, '');
      this.put(s + S_TYPE, '');
      this.put(s + S_TIME, '');
      this.put(s + S_WARN, '');
      this.put(s + S_DK, '');
      this.seal(r, m.kind === 'invalid' ? Kind.Invalid : Kind.Filtered);
      if (m.kind === 'invalid' && m.nationalPhone) this.ints[r * INTS + I_FLAGS] = F_NATIONAL_PHONE;
    }
  }

  /**
   * Starts the next record (its strings follow, in order, through put, putBytes or open/append; then seal):
   * returns its index.
   */
  begin(line: number): number {
    const r = this.n++;
    if (r * INTS >= this.ints.length) {
      const ints = new Int32Array(this.ints.length * 2);
      ints.set(this.ints);
      this.ints = ints;
      const offs = new Int32Array(this.offs.length * 2);
      offs.set(this.offs);
      this.offs = offs;
    }
    const o = r * INTS;
    // A record rewound over (see rewind) leaves its words behind. A store a word costs less than a call to fill().
    const ints = this.ints;
    for (let k = 0; k < INTS; k++) ints[o + k] = 0;
    ints[o + I_LINE] = line;
    ints[o + I_LEDGER] = NOT_LOOKED_UP;
    return r;
  }

  /** Records so far. */
  get size(): number {
    return this.n;
  }

  /** Drops the records from index n on (a reader that failed midway reads them again). */
  rewind(n: number): void {
    if (n >= this.n) return;
    this.at = this.offs[n * STRS]!;
    this.n = n;
  }

  /** String i (record r's field f is r * STRS + f) is v. */
  put(i: number, v: string): void {
    this.offs[i] = this.at;
    if (v.length === 0) return;
    this.room(v.length * 3);
    this.at += this.bytes.write(v, this.at);
  }

  /** String i is the UTF-8 bytes src[start..end). */
  putBytes(i: number, src: Uint8Array, start: number, end: number): void {
    this.offs[i] = this.at;
    this.append(src, start, end);
  }

  /** putBytes() for a source read through a view (see appendView). */
  putView(i: number, srcView: DataView, src: Uint8Array, start: number, end: number): void {
    this.offs[i] = this.at;
    this.appendView(srcView, src, start, end);
  }

  /**
   * String i is the payload hash (payloadHashOfJson) of string j, the lead JSON: j must be the string written last,
   * and its bytes are the UTF-8 of the lead JSON, so their sha256 is the string's.
   */
  putPayloadHash(i: number, j: number): void {
    const hex = sha256Bytes(this.bytes.subarray(this.offs[j], this.at));
    this.offs[i] = this.at;
    this.room(PAYLOAD_HASH_CHARS);
    this.at += this.bytes.write(hex, this.at, PAYLOAD_HASH_CHARS, 'latin1');
  }

  /**
   * String i is the downstream key of string k, the event key, for this thread's namespace (setDownstreamNamespace);
   * empty where none is set. The key's bytes are the UTF-8 of the key the deciding thread reads, so the digest is
   * the one downstreamKey() takes of namespace + '|' + key.
   */
  putDownstreamKey(i: number, k: number): void {
    this.offs[i] = this.at;
    const pre = downstreamPrefix;
    if (!pre) return;
    const a = this.offs[k]!;
    const b = this.offs[k + 1]!;
    const len = pre.length + b - a;
    if (downstreamScratch.length < len) downstreamScratch = Buffer.allocUnsafeSlow(len * 2);
    pre.copy(downstreamScratch, 0);
    this.bytes.copy(downstreamScratch, pre.length, a, b);
    const hex = sha256Bytes(downstreamScratch.subarray(0, len));
    this.room(DOWNSTREAM_KEY_CHARS);
    this.at += this.bytes.write(hex, this.at, DOWNSTREAM_KEY_CHARS, 'latin1');
  }

  /** String i starts here: append() and appendAscii() add to it until the next string starts. */
  open(i: number): void {
    this.offs[i] = this.at;
  }

  /** Adds UTF-8 bytes to the open string. */
  append(src: Uint8Array, start: number, end: number): void {
    this.room(end - start);
    // Field values are a few dozen bytes: a loop costs less than a subarray and a native copy.
    const bytes = this.bytes;
    let at = this.at;
    for (let i = start; i < end; i++) bytes[at++] = src[i]!;
    this.at = at;
  }

  /**
   * append(), for a source read through a view (src's own): four bytes a step, at less than half the time a byte
   * of the byte loop (measured on field-sized copies).
   */
  appendView(srcView: DataView, src: Uint8Array, start: number, end: number): void {
    this.room(end - start);
    const view = this.view;
    let at = this.at;
    let i = start;
    for (const last = end - 3; i < last; i += 4, at += 4) view.setInt32(at, srcView.getInt32(i, true), true);
    const bytes = this.bytes;
    for (; i < end; i++) bytes[at++] = src[i]!;
    this.at = at;
  }

  /** Adds ASCII text to the open string. */
  appendAscii(text: string): void {
    this.room(text.length);
    const bytes = this.bytes;
    let at = this.at;
    for (let i = 0; i < text.length; i++) bytes[at++] = text.charCodeAt(i);
    this.at = at;
  }

  /**
   * Ends record r: its kind, and fingerprints taken of the UTF-8 bytes just written (the event key, the person,
   * and, for the in-run content check, the lead; sha256, payloadHash, is for the ledger and taken only where needed).
   */
  seal(r: number, kind: Kind): void {
    const { ints, offs, bytes, view } = this;
    const o = r * INTS;
    const s = r * STRS;
    offs[s + STRS] = this.at;
    ints[o + I_KIND] = kind;
    if (offs[s + S_KEY + 1]! > offs[s + S_KEY]!)
      fingerprintView(view, bytes, offs[s + S_KEY]!, offs[s + S_KEY + 1]!, ints, o + I_KEY);
    if (kind > Kind.ContentEvent) return;
    if (offs[s + S_NAT + 1]! > offs[s + S_NAT]!)
      fingerprintView(view, bytes, offs[s + S_NAT]!, offs[s + S_NAT + 1]!, ints, o + I_NAT);
    fingerprintView(view, bytes, offs[s + S_LEAD]!, offs[s + S_LEAD + 1]!, scratch, 0);
    ints[o + I_PAY] = scratch[1]!;
    ints[o + I_PAY + 1] = scratch[2]!;
  }

  private room(n: number): void {
    if (this.at + n <= this.bytes.length) return;
    const grown = Buffer.allocUnsafeSlow(Math.max(this.bytes.length * 2, this.at + n));
    this.bytes.copy(grown, 0, 0, this.at);
    this.bytes = grown;
    this.view = new DataView(grown.buffer, grown.byteOffset, grown.byteLength);
  }

  /** The block (views over the encoder's buffers, which go with it); the encoder must not be used after. */
  finish(): MappedBlock {
    const n = this.n;
    return {
      n,
      ints: this.ints.subarray(0, n * INTS),
      bytes: this.bytes.subarray(0, this.at),
      offs: this.offs.subarray(0, n * STRS + 1),
      deliveredBy: [],
    };
  }
}

/** The payload hash of record s / STRS: as mapped, or taken now from its lead (see createMapper's hashLater). */
export function payloadHashAt(block: MappedBlock, s: number): string {
  return str(block, s + S_HASH) || payloadHashOfJson(str(block, s + S_LEAD));
}

/** What the ledger holds, looked up in batches: the same answers from a Ledger or a worker's LedgerLookup. */
export interface LedgerReader {
  lookupKeys(keys: string[]): Map<string, KnownKey>;
  lookupDelivered(naturalKeys: string[]): Map<string, string>;
}

/**
 * What a writing run knows the ledger does not hold, without asking it (LedgerIndex answers this): false is certain,
 * true means "ask SQLite". Offsets are of the fingerprint's first word in a block's ints.
 */
export interface LedgerFilter {
  mayHoldKey(ints: Int32Array, o: number): boolean;
  hasPerson(ints: Int32Array, o: number): boolean;
}

/**
 * Fills the ledger codes of a block's events: two batched queries. `skip(r)` leaves a record NOT_LOOKED_UP (the
 * decider skips keys it already remembers: it decides them without the ledger). With a `filter`, only the keys and
 * people it may hold are asked; the others are answered "not held" as SQLite would.
 */
export function fillLedger(
  block: MappedBlock,
  ledger: LedgerReader | undefined,
  skip?: (r: number) => boolean,
  filter?: LedgerFilter,
): void {
  const { n, ints } = block;
  const rows: number[] = [];
  for (let r = 0; r < n; r++) {
    if (ints[r * INTS + I_KIND]! > Kind.ContentEvent) continue;
    if (skip?.(r)) continue;
    rows.push(r);
    ints[r * INTS + I_LEDGER] = 0;
  }
  if (!ledger || rows.length === 0) return;
  const asked = filter ? rows.filter((r) => filter.mayHoldKey(ints, r * INTS + I_KEY)) : rows;
  const known = asked.length
    ? ledger.lookupKeys([...new Set(asked.map((r) => str(block, r * STRS + S_KEY)))])
    : new Map<string, KnownKey>();
  const naturals = new Set<string>();
  for (const r of rows) {
    const s = r * STRS;
    const o = r * INTS;
    const k = known.size ? known.get(str(block, s + S_KEY)) : undefined;
    if (k) {
      let code = STATUSES.indexOf(k.status);
      if (k.failure === 'retryable') code |= L_RETRYABLE;
      if (k.failure === 'permanent') code |= L_PERMANENT;
      if (k.tombstone) code |= L_TOMBSTONE;
      if (k.payloadHash !== null && k.payloadHash !== payloadHashAt(block, s)) code |= L_HASH_DIFFERS;
      ints[o + I_LEDGER] = code;
      ints[o + I_RUN] = k.runId ?? 0;
      // A retry's person is asked too: the rules make it a known lead when another event delivered them.
      if (isRetry(code) && ints[o + I_NAT] !== 0 && (!filter || filter.hasPerson(ints, o + I_NAT)))
        naturals.add(str(block, s + S_NAT));
    } else if (ints[o + I_NAT] !== 0 && (!filter || filter.hasPerson(ints, o + I_NAT)))
      naturals.add(str(block, s + S_NAT));
  }
  if (naturals.size === 0) return;
  const delivered = ledger.lookupDelivered([...naturals]);
  if (delivered.size === 0) return;
  for (const r of rows) {
    const o = r * INTS;
    const code = ints[o + I_LEDGER]!;
    if (code !== 0 && !isRetry(code)) continue;
    if (ints[o + I_NAT] === 0) continue;
    const by = delivered.get(str(block, r * STRS + S_NAT));
    if (by !== undefined) {
      // A retry's run id gives way to the event that delivered the person: its decision names that one.
      ints[o + I_LEDGER] = code | L_PERSON_DELIVERED;
      ints[o + I_RUN] = block.deliveredBy.push(by) - 1;
    }
  }
}

const FAILED = STATUSES.indexOf('failed');

/** Whether a ledger code is a retryable failure's: an event a push sends again, unless its person is known. */
export function isRetry(code: number): boolean {
  return (code & L_STATUS) === FAILED && (code & L_RETRYABLE) !== 0;
}

const scratch = new Int32Array(3);

/**
 * A lead event read back from a block. Its key is decoded at once; its person, lead, type, time and hash when
 * first read. Until then it reads the block: a consumer that keeps a decision past the next batch (a send queue)
 * detaches its event first (see Decider.release). Reading a field the block no longer holds is a bug, and
 * throws rather than returning another record's bytes.
 */
export class BlockEvent implements LeadEvent {
  readonly kind = 'event' as const;
  readonly key: string;
  readonly keyKind: KeyKind;
  #block: MappedBlock | undefined;
  #natural: string | undefined;
  #s: number;
  #leadJson: string | undefined;
  #hash: string | undefined;
  #type: string | undefined;
  #time: string | undefined;
  #dk: string | undefined;
  #lead: Lead | undefined;
  #warnings: string[] | null | undefined;

  constructor(
    block: MappedBlock,
    r: number,
    public source: string,
    public line: number,
  ) {
    const s = r * STRS;
    this.#block = block;
    this.#s = s;
    this.key = str(block, s + S_KEY);
    this.keyKind = block.ints[r * INTS + I_KIND] === Kind.IdEvent ? 'id' : 'content';
  }

  get naturalKey(): string | undefined {
    return (this.#natural ??= this.read(S_NAT)) || undefined;
  }

  get leadJson(): string {
    return (this.#leadJson ??= this.read(S_LEAD));
  }

  get type(): string | undefined {
    return (this.#type ??= this.read(S_TYPE)) || undefined;
  }

  get occurredAt(): string | undefined {
    return (this.#time ??= this.read(S_TIME)) || undefined;
  }

  get lead(): Lead {
    return (this.#lead ??= JSON.parse(this.leadJson) as Lead);
  }

  get downstreamKey(): string | undefined {
    return (this.#dk ??= this.read(S_DK)) || undefined;
  }

  get payloadHash(): string {
    return (this.#hash ||= this.read(S_HASH) || payloadHashOfJson(this.leadJson));
  }

  get warnings(): string[] | undefined {
    if (this.#warnings === undefined) {
      const text = this.read(S_WARN);
      this.#warnings = text ? text.split('\n') : null;
    }
    return this.#warnings ?? undefined;
  }

  /** Decodes every field now: the event no longer needs its block. */
  detach(): void {
    if (!this.#block) return;
    void this.naturalKey;
    void this.leadJson;
    void this.type;
    void this.occurredAt;
    void this.downstreamKey;
    void this.payloadHash;
    void this.warnings;
    this.#block = undefined;
  }

  private read(field: number): string {
    const block = this.#block;
    if (!block || block.released)
      throw new Error(`internal: field ${field} of event ${this.key} read after its block was released`);
    return str(block, this.#s + field);
  }
}
