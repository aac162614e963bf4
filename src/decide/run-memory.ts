// What this run has already seen: event keys (with a fingerprint of their lead and where they were) and the people
// (natural keys) that events of this run deliver. Both are FpTables of fingerprints, so a 10-million-event audit
// holds a fixed amount in memory and spills the rest to a temporary file. The most recent keys and leads are also
// kept (as the events themselves), to name an earlier event and the fields of a conflict.
import { I_KEY, I_NAT, I_PAY, type BlockEvent, type MappedBlock } from './block.js';
import { FpTable } from './fp-table.js';

/** Entries of each table held in memory before it spills: 256k keys (16 MB of slots) and 256k people (12 MB). */
export const DEFAULT_MEMORY_CAPACITY = 256 * 1024;

// Recent events kept whole, to name an earlier event and the fields of a conflict: retries come soon after the
// first delivery. Each is a few hundred bytes that survive garbage collections; 16k of them cost ~45 MB of peak
// RSS on a 1M audit (measured), 2k cost nothing visible. Older repeats are named by file and line instead.
const RECENT = 2048;

// Words of a key entry: fingerprint (3), payload fingerprint (2), line, source index, ordinal.
const K_PAY = 3;
const K_LINE = 5;
const K_SRC = 6;
const K_ORD = 7;
// Words of a person entry: fingerprint (3), line, source index, ordinal of the event that brought them.
const N_LINE = 3;
const N_SRC = 4;
const N_ORD = 5;

/** An event key seen earlier in this run. */
export interface SeenKey {
  /** The payload fingerprint equals the record's. */
  samePayload: boolean;
  where: string;
  /** The earlier event, while it is recent enough to be kept (for naming the fields of a conflict). */
  earlier?: BlockEvent;
}

/** In-run memory of keys and people, fed records of MappedBlocks. */
export class RunMemory {
  private readonly keys: FpTable;
  private readonly naturals: FpTable;
  private readonly keyEntry = new Uint32Array(8);
  private readonly natEntry = new Uint32Array(6);
  private readonly sources: string[] = [];
  private readonly sourceIndex = new Map<string, number>();
  // Recent events by ordinal (slot = ordinal % RECENT, valid while ringOrd holds the ordinal).
  private readonly ringOrd = new Int32Array(RECENT).fill(-1);
  private readonly ring = new Array<BlockEvent | undefined>(RECENT);
  private ord = 0;

  /** capacity: entries of each kind held in memory before spilling (tests make it tiny). */
  constructor(capacity = DEFAULT_MEMORY_CAPACITY) {
    this.keys = new FpTable(8, capacity);
    this.naturals = new FpTable(6, capacity);
  }

  /** The index of a source name, for entries to say where they were seen. */
  sourceId(source: string): number {
    let i = this.sourceIndex.get(source);
    if (i === undefined) {
      i = this.sources.push(source) - 1;
      this.sourceIndex.set(source, i);
    }
    return i;
  }

  /** True when the key of record `o` (an offset into ints) was seen in this run. */
  hasKey(ints: Int32Array, o: number): boolean {
    return this.keys.get(ints[o + I_KEY]!, ints[o + I_KEY + 1]!, ints[o + I_KEY + 2]!);
  }

  /** The earlier sighting of the key of record `o`, if any. */
  getKey(ints: Int32Array, o: number): SeenKey | undefined {
    if (!this.hasKey(ints, o)) return undefined;
    const f = this.keys.found;
    const ord = f[K_ORD]! | 0;
    const slot = ord % RECENT;
    return {
      samePayload: f[K_PAY] === ints[o + I_PAY]! >>> 0 && f[K_PAY + 1] === ints[o + I_PAY + 1]! >>> 0,
      where: `${this.sources[f[K_SRC]!]} line ${f[K_LINE]}`,
      earlier: this.ringOrd[slot] === ord ? this.ring[slot] : undefined,
    };
  }

  /** Remembers the key of record `o` (absent: getKey just missed it); returns the event's ordinal. */
  addKey(ints: Int32Array, o: number, line: number, src: number, event: BlockEvent): number {
    const ord = this.ord++ & 0x7fffffff;
    const e = this.keyEntry;
    e[0] = ints[o + I_KEY]!;
    e[1] = ints[o + I_KEY + 1]!;
    e[2] = ints[o + I_KEY + 2]!;
    e[K_PAY] = ints[o + I_PAY]!;
    e[K_PAY + 1] = ints[o + I_PAY + 1]!;
    e[K_LINE] = line;
    e[K_SRC] = src;
    e[K_ORD] = ord;
    this.keys.add(e);
    const slot = ord % RECENT;
    this.ringOrd[slot] = ord;
    this.ring[slot] = event;
    return ord;
  }

  /** "event <key>" for the event that brought the person of record `o`, if this run has one. */
  getNatural(ints: Int32Array, o: number): string | undefined {
    if (!this.naturals.get(ints[o + I_NAT]!, ints[o + I_NAT + 1]!, ints[o + I_NAT + 2]!)) return undefined;
    const f = this.naturals.found;
    const ord = f[N_ORD]! | 0;
    const slot = ord % RECENT;
    if (this.ringOrd[slot] === ord) return `event ${this.ring[slot]!.key}`;
    return `the event at ${this.sources[f[N_SRC]!]} line ${f[N_LINE]}`;
  }

  /** Records the person of record `o` for the event `ord`; the caller has just seen getNatural miss it. */
  addAbsentNatural(ints: Int32Array, o: number, line: number, src: number, ord: number): void {
    const e = this.natEntry;
    e[0] = ints[o + I_NAT]!;
    e[1] = ints[o + I_NAT + 1]!;
    e[2] = ints[o + I_NAT + 2]!;
    e[N_LINE] = line;
    e[N_SRC] = src;
    e[N_ORD] = ord;
    this.naturals.add(e);
  }

  /** Records the person of record `o` unless already known. */
  addNatural(ints: Int32Array, o: number, line: number, src: number, ord: number): void {
    if (ints[o + I_NAT] === 0) return;
    if (!this.naturals.get(ints[o + I_NAT]!, ints[o + I_NAT + 1]!, ints[o + I_NAT + 2]!)) this.addAbsentNatural(ints, o, line, src, ord);
  }

  /** The block's buffers are about to be given back: recent events from it decode what this memory reads of them. */
  keepRecent(block: MappedBlock): void {
    for (const e of this.ring) e?.keepLead(block);
  }

  /** Spilled runs so far (tests). */
  get spills(): number {
    return this.keys.spills + this.naturals.spills;
  }

  close(): void {
    this.keys.close();
    this.naturals.close();
    this.ring.fill(undefined);
  }
}

