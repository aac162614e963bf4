// An insert-once hash table of fixed-size entries keyed by a 96-bit fingerprint (fingerprint.ts), whose memory does
// not grow with the number of entries: slots live in two Uint32Arrays (first words, the rest); when it is half full
// its entries are written, in slot order, to a temporary file as a "run", and the table starts over. One Bloom filter
// (growing with the spilled entries, up to a fixed size) covers every spilled entry, and each run keeps in memory
// only the file position of every group of slots, so a lookup that passes the filter reads one small range per run,
// newest first.
import { closeSync, mkdtempSync, openSync, readSync, rmSync, unlinkSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BloomFilter } from './bloom-filter.js';

// Slots per group in a run's index: a lookup reads the groups its probe sequence can reach (about 4 KB).
const GROUP_SHIFT = 7;

interface Run {
  /** File offset of the run, in bytes. */
  at: number;
  /** Entry index at which each group of slots starts (one more than there are groups). */
  groups: Uint32Array;
  /** Longest distance, in slots, from an entry's home slot to where it sits: how far a lookup reads on. */
  reach: number;
  /** Entries in the run. */
  count: number;
}

// Reads `bytes` bytes at `position` into buf (a short read is retried from where it stopped).
function readFully(fd: number, buf: Uint32Array, bytes: number, position: number): void {
  const view = new Uint8Array(buf.buffer, buf.byteOffset, bytes);
  for (let done = 0; done < bytes;) {
    const n = readSync(fd, view, done, bytes - done, position + done);
    if (n === 0) throw new Error('spill file ended early');
    done += n;
  }
}

// The Bloom filter over spilled entries grows with them: a check or an add is a random access, which costs ~130 ns
// in a 16 MB filter (a miss to memory) and ~25 ns in a 2 MB one (measured), and a million-event audit spills
// about a million entries and checks as many. It starts at 2 MB and is rebuilt four times larger (from the spill
// file, read in order) whenever it falls under 12 bits an entry, up to 16 MB: ~0.3% false positives at ten
// million entries, where it stays. Its cache line is picked by the low bits of an entry's second word, which also
// pick the entry's home slot: a spill walks the table in slot order, and a rebuild reads the runs in that order,
// so both fill the filter front to back instead of a line at random (3M keys through a table of 256k: 0.27 ->
// 0.15 µs a get and add, measured).
const BLOOM_FIRST_LOG2_BITS = 24;
const BLOOM_MAX_LOG2_BITS = 27;
const BLOOM_MIN_BITS_PER_ENTRY = 12;

/** Fingerprint-keyed table; entries are `stride` 32-bit words whose first three are the fingerprint. */
export class FpTable {
  /** The entry found by the last successful get(). */
  readonly found: Uint32Array;
  // Slot i holds an entry's first word in tags[i] (0: empty) and its other words in slots: a probe that misses,
  // as most do, reads only the tags (4 bytes a slot, 2 MB at the default capacity) instead of whole entries.
  private tags: Uint32Array;
  private slots: Uint32Array;
  private readonly mask: number;
  private readonly limit: number;
  private count = 0;
  private readonly runs: Run[] = [];
  private file: { fd: number; dir?: string; size: number } | undefined;
  private readBuf = new Uint32Array(1024);
  private bloom: BloomFilter | undefined;
  private bloomLog2: number;
  private spilled = 0;
  // The empty slot where the last get() ended its probe: add() right after a miss needs no second probe.
  private hole = -1;

  /**
   * capacity: entries held in memory before a spill (the table has twice as many slots); bloomLog2: the first
   * Bloom filter's size (tests make it tiny, to see it grow).
   */
  constructor(
    private readonly stride: number,
    capacity: number,
    bloomLog2 = BLOOM_FIRST_LOG2_BITS,
  ) {
    this.bloomLog2 = bloomLog2;
    const size = 2 ** Math.max(4, Math.ceil(Math.log2(Math.max(1, capacity) * 2)));
    this.tags = new Uint32Array(size);
    this.slots = new Uint32Array(size * (stride - 1));
    this.mask = size - 1;
    this.limit = size >>> 1;
    this.found = new Uint32Array(stride);
  }

  /** True (and the entry in `found`) when the fingerprint a, b, c was added, in memory or in a spilled run. */
  get(a: number, b: number, c: number): boolean {
    const { tags, slots, mask } = this;
    const rest = this.stride - 1;
    if (tags.length === 0) return false; // closed
    const tag = a >>> 0;
    let i = b & mask;
    for (; ; i = (i + 1) & mask) {
      const w = tags[i]!;
      if (w === 0) break;
      if (w !== tag) continue;
      const o = i * rest;
      if (slots[o] === b >>> 0 && slots[o + 1] === c >>> 0) {
        const found = this.found;
        found[0] = w;
        for (let k = 0; k < rest; k++) found[k + 1] = slots[o + k]!;
        this.hole = -1;
        return true;
      }
    }
    this.hole = i;
    if (this.bloom?.mightHave(b, c)) {
      for (let r = this.runs.length - 1; r >= 0; r--) if (this.getInRun(this.runs[r]!, a, b, c)) return true;
    }
    return false;
  }

  /** Adds an entry (its fingerprint first) that get() just reported absent. */
  add(entry: ArrayLike<number>): void {
    const { tags, slots, mask } = this;
    const rest = this.stride - 1;
    let i = this.hole;
    if (i < 0 || tags[i] !== 0) for (i = entry[1]! & mask; tags[i] !== 0; i = (i + 1) & mask);
    this.hole = -1;
    tags[i] = entry[0]!;
    const o = i * rest;
    for (let k = 0; k < rest; k++) slots[o + k] = entry[k + 1]!;
    if (++this.count >= this.limit) this.spill();
  }

  /** Bits of the Bloom filter over spilled entries, as a power of two (tests). */
  get bloomBits(): number {
    return this.bloomLog2;
  }

  /** Number of spilled runs (tests). */
  get spills(): number {
    return this.runs.length;
  }

  private getInRun(run: Run, a: number, b: number, c: number): boolean {
    const { stride, mask } = this;
    const home = b & mask;
    const last = (home + run.reach) & mask;
    const g0 = home >>> GROUP_SHIFT;
    const g1 = last >>> GROUP_SHIFT;
    // Probe sequences wrap at the end of the table: then the run is read in two pieces (to its end, from its start).
    const wrapped = home + run.reach > mask;
    const pieces: Array<[number, number]> = wrapped
      ? [
          [g0, run.groups.length - 3],
          [0, g1],
        ]
      : [[g0, g1]];
    for (const [from, to] of pieces) {
      const first = run.groups[from]!;
      const end = run.groups[to + 1]!;
      const words = (end - first) * stride;
      if (words === 0) continue;
      if (this.readBuf.length < words) this.readBuf = new Uint32Array(words);
      const buf = this.readBuf;
      readSync(this.file!.fd, buf, 0, words * 4, run.at + first * stride * 4);
      for (let o = 0; o < words; o += stride) {
        if (buf[o] === a >>> 0 && buf[o + 1] === b >>> 0 && buf[o + 2] === c >>> 0) {
          this.found.set(buf.subarray(o, o + stride));
          return true;
        }
      }
    }
    return false;
  }

  private spill(): void {
    const { tags, slots, stride, mask } = this;
    const size = mask + 1;
    const out = new Uint32Array(this.count * stride);
    // groups[g] for every group, then the entry count twice (the end of the last group, and a guard).
    const ngroups = Math.max(1, size >>> GROUP_SHIFT);
    const groups = new Uint32Array(ngroups + 2);
    const bloom = (this.bloom ??= new BloomFilter(this.bloomLog2));
    // A group at a time, in a function of its own: called thousands of times it is optimized as a whole, where
    // one long loop run once per spill was not. acc holds the entries written and the longest reach so far.
    const acc = new Int32Array(2);
    for (let g = 0; g < ngroups; g++) {
      groups[g] = acc[0]!;
      compactGroup(
        tags,
        slots,
        stride,
        mask,
        g << GROUP_SHIFT,
        Math.min(size, (g + 1) << GROUP_SHIFT),
        out,
        bloom,
        acc,
      );
    }
    const n = acc[0]!;
    const reach = acc[1]!;
    groups[ngroups] = n;
    groups[ngroups + 1] = n;
    const file = this.openFile();
    const bytes = new Uint8Array(out.buffer, 0, n * stride * 4);
    for (let done = 0; done < bytes.length;)
      done += writeSync(file.fd, bytes, done, bytes.length - done, file.size + done);
    this.runs.push({ at: file.size, groups, reach, count: n });
    file.size += bytes.length;
    this.tags.fill(0);
    this.count = 0;
    this.spilled += n;
    if (this.spilled * BLOOM_MIN_BITS_PER_ENTRY > 2 ** this.bloomLog2 && this.bloomLog2 < BLOOM_MAX_LOG2_BITS)
      this.growBloom();
  }

  // A filter four times larger (at most the largest), fed every spilled entry again from the file.
  private growBloom(): void {
    this.bloomLog2 = Math.min(BLOOM_MAX_LOG2_BITS, this.bloomLog2 + 2);
    const bloom = new BloomFilter(this.bloomLog2);
    const { stride } = this;
    const chunk = new Uint32Array(stride * 32768);
    for (const run of this.runs) {
      for (let done = 0; done < run.count;) {
        const n = Math.min(32768, run.count - done);
        readFully(this.file!.fd, chunk, n * stride * 4, run.at + done * stride * 4);
        for (let o = 0; o < n * stride; o += stride) bloom.add(chunk[o + 1]!, chunk[o + 2]!);
        done += n;
      }
    }
    this.bloom = bloom;
  }

  private openFile(): NonNullable<FpTable['file']> {
    if (this.file) return this.file;
    const dir = mkdtempSync(join(tmpdir(), 'leadledger-'));
    const path = join(dir, 'spill');
    const fd = openSync(path, 'w+', 0o600);
    // Unlinked while open where the system allows it (not Windows): a killed run leaves nothing behind.
    try {
      unlinkSync(path);
      rmSync(dir, { recursive: true, force: true });
      this.file = { fd, size: 0 };
    } catch {
      this.file = { fd, dir, size: 0 };
    }
    return this.file;
  }

  /** Frees the slots and deletes the spill file. */
  close(): void {
    this.tags = new Uint32Array(0);
    this.slots = new Uint32Array(0);
    if (this.file) {
      closeSync(this.file.fd);
      if (this.file.dir) rmSync(this.file.dir, { recursive: true, force: true });
      this.file = undefined;
    }
  }
}

// Copies the occupied slots from..to of a table into out (whole entries, at entry acc[0]), adds them to the Bloom
// filter, and keeps in acc[1] the longest distance of an entry from its home slot.
function compactGroup(
  tags: Uint32Array,
  slots: Uint32Array,
  stride: number,
  mask: number,
  from: number,
  to: number,
  out: Uint32Array,
  bloom: BloomFilter,
  acc: Int32Array,
): void {
  const rest = stride - 1;
  let n = acc[0]!;
  let reach = acc[1]!;
  for (let i = from; i < to; i++) {
    const tag = tags[i]!;
    if (tag === 0) continue;
    const o = i * rest;
    const d = (i - (slots[o]! & mask)) & mask;
    if (d > reach) reach = d;
    bloom.add(slots[o]!, slots[o + 1]!);
    const at = n * stride;
    out[at] = tag;
    for (let w = 0; w < rest; w++) out[at + 1 + w] = slots[o + w]!;
    n++;
  }
  acc[0] = n;
  acc[1] = reach;
}
