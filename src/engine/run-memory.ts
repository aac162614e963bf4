// What this run has already seen: event keys (with a fingerprint of their lead and where they were) and the people
// (natural keys) that events of this run deliver. Both are FpTables of fingerprints, so a 10-million-event audit
// holds a fixed amount in memory and spills the rest to a temporary file. The most recent events are also known by
// where they sit in their blocks (which the decider keeps until they are no longer recent), to name an earlier
// event and the fields of a conflict.
import { I_KEY, I_NAT, I_PAY, STRS, S_KEY, S_LEAD, str, type MappedBlock } from './block.js';
import { FpTable } from './fp-table.js';

/** Entries of each table held in memory before it spills: 256k keys (16 MB of slots) and 256k people (12 MB). */
export const DEFAULT_MEMORY_CAPACITY = 256 * 1024;

/**
 * Recent events, named by their key and their lead read back from their block, to name an earlier event and the
 * fields of a conflict: retries come soon after the first delivery. Older repeats are named by file and line
 * instead. The decider keeps a block until its events are no longer recent (Decider.release).
 */
export const RECENT = 2048;

// Words of a key entry: fingerprint (3), payload fingerprint (2), line, source index, ordinal.
const K_PAY = 3;
const K_LINE = 5;
const K_SRC = 6;
const K_ORD = 7;
// Words of a person entry: fingerprint (3), line, source index, ordinal of the event that brought them.
const N_LINE = 3;
const N_SRC = 4;
const N_ORD = 5;

/** In-run memory of keys and people, fed records of MappedBlocks. */
export class RunMemory {
  private readonly keys: FpTable;
  private readonly naturals: FpTable;
  private readonly keyEntry = new Uint32Array(8);
  private readonly natEntry = new Uint32Array(6);
  private readonly sources: string[] = [];
  private readonly sourceIndex = new Map<string, number>();
  // Recent events by ordinal (slot = ordinal % RECENT, valid while ringOrd holds the ordinal): their block and
  // record index.
  private readonly ringOrd = new Int32Array(RECENT).fill(-1);
  private readonly ringBlock = new Array<MappedBlock | undefined>(RECENT);
  private readonly ringRow = new Int32Array(RECENT);
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

  /** After hasKey found it: whether the earlier event's payload fingerprint equals that of record `o`. */
  foundSamePayload(ints: Int32Array, o: number): boolean {
    const f = this.keys.found;
    return f[K_PAY] === ints[o + I_PAY]! >>> 0 && f[K_PAY + 1] === ints[o + I_PAY + 1]! >>> 0;
  }

  /** After hasKey found it: where the earlier event was. */
  foundKeyWhere(): string {
    const f = this.keys.found;
    return `${this.sources[f[K_SRC]!]} line ${f[K_LINE]}`;
  }

  /** After hasKey found it: the earlier event's lead JSON, while it is recent (for the fields of a conflict). */
  foundKeyLead(): string | undefined {
    const ord = this.keys.found[K_ORD]! | 0;
    const block = this.recent(ord);
    return block && str(block, this.ringRow[ord % RECENT]! * STRS + S_LEAD);
  }

  /** Remembers the key of record r of block (absent: hasKey just missed it); returns the event's ordinal. */
  addKey(block: MappedBlock, r: number, o: number, line: number, src: number): number {
    const ints = block.ints;
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
    this.ringBlock[slot] = block;
    this.ringRow[slot] = r;
    return ord;
  }

  /** Ordinals given so far (the next event's). */
  get ordinal(): number {
    return this.ord;
  }

  // The block of event `ord` while it is recent and its block is not given back.
  private recent(ord: number): MappedBlock | undefined {
    const slot = ord % RECENT;
    const block = this.ringBlock[slot];
    return this.ringOrd[slot] === ord && block && !block.released ? block : undefined;
  }

  /** True when an event of this run brought the person of record `o`. */
  hasNatural(ints: Int32Array, o: number): boolean {
    return this.naturals.get(ints[o + I_NAT]!, ints[o + I_NAT + 1]!, ints[o + I_NAT + 2]!);
  }

  /** After hasNatural found it: "event <key>" for the event that brought the person, or where it was. */
  foundNaturalBy(): string {
    const f = this.naturals.found;
    const ord = f[N_ORD]! | 0;
    const block = this.recent(ord);
    if (block) return `event ${str(block, this.ringRow[ord % RECENT]! * STRS + S_KEY)}`;
    return `the event at ${this.sources[f[N_SRC]!]} line ${f[N_LINE]}`;
  }

  /** Records the person of record `o` for the event `ord`; the caller has just seen hasNatural miss it. */
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
    if (!this.naturals.get(ints[o + I_NAT]!, ints[o + I_NAT + 1]!, ints[o + I_NAT + 2]!))
      this.addAbsentNatural(ints, o, line, src, ord);
  }

  /** Spilled runs so far (tests). */
  get spills(): number {
    return this.keys.spills + this.naturals.spills;
  }

  close(): void {
    this.keys.close();
    this.naturals.close();
    this.ringBlock.fill(undefined);
  }
}
