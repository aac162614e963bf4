// A read-only set of fingerprints with a few words of data each, built once from a known list (what a ledger holds)
// and probed in one or two memory reads: the entries are sorted into buckets by the top bits of their first word,
// with a directory of where each bucket starts. 12 bytes per fingerprint, plus the data words, plus 0.5-1 byte of
// directory: a compact snapshot, where a hash table would keep a third of its slots empty.

/** Entries collected one by one, then frozen into an FpIndex. */
export class FpIndexBuilder {
  private words: Int32Array;
  private n = 0;

  /** width: words per entry, the fingerprint's three first. */
  constructor(
    readonly width: number,
    expected = 1024,
  ) {
    this.words = new Int32Array(Math.max(16, expected) * width);
  }

  /** The number of entries added. */
  get size(): number {
    return this.n;
  }

  /** Makes room for one more entry and returns its offset in `array`, where the caller writes its words. */
  slot(): number {
    const o = this.n * this.width;
    if (o + this.width > this.words.length) {
      const grown = new Int32Array(this.words.length * 2);
      grown.set(this.words);
      this.words = grown;
    }
    this.n++;
    return o;
  }

  /** The array slot() offsets point into (it changes when the builder grows: read it after slot()). */
  get array(): Int32Array {
    return this.words;
  }

  /** The index of everything added; the builder must not be used after. */
  freeze(): FpIndex {
    return new FpIndex(this.words, this.n, this.width);
  }
}

/** An FpIndex as plain data on shared memory: posted to worker threads, which probe the same bytes. */
export interface SharedFpIndex {
  entries: Int32Array;
  dir: Int32Array;
  width: number;
}

/** Fingerprints (and their data words) bucketed by their first word's top bits; see FpIndexBuilder. */
export class FpIndex {
  private readonly entries: Int32Array;
  private readonly dir: Int32Array;
  private readonly shift: number;
  readonly width: number;

  constructor(from: SharedFpIndex);
  constructor(unsorted: Int32Array, size: number, width: number);
  constructor(a: Int32Array | SharedFpIndex, size = 0, width = 0) {
    if (!(a instanceof Int32Array)) {
      this.entries = a.entries;
      this.dir = a.dir;
      this.width = a.width;
      this.shift = 32 - Math.log2(a.dir.length - 1);
      return;
    }
    this.width = width;
    // Four to eight entries a bucket: the directory (half a byte to a byte an entry: 256 KB for 400,000 keys) stays
    // in the CPU's cache, and a probe reads one or two adjacent lines of entries. With one entry a bucket, the
    // directory was four times larger and a probe missed the cache twice (0.055 -> 0.034 µs a probe, measured).
    const bits = Math.min(24, Math.max(4, Math.floor(Math.log2(Math.max(1, size))) - 2));
    this.shift = 32 - bits;
    const buckets = 1 << bits;
    const dir = new Int32Array(new SharedArrayBuffer((buckets + 1) * 4));
    for (let i = 0; i < size; i++) dir[(a[i * width]! >>> this.shift) + 1]!++;
    for (let b = 0; b < buckets; b++) dir[b + 1]! += dir[b]!;
    // A counting sort by bucket: each entry goes to the next free place of its bucket.
    const next = dir.slice(0, buckets);
    const entries = new Int32Array(new SharedArrayBuffer(Math.max(4, size * width * 4)));
    for (let i = 0; i < size; i++) {
      const from = i * width;
      const to = next[a[from]! >>> this.shift]!++ * width;
      for (let w = 0; w < width; w++) entries[to + w] = a[from + w]!;
    }
    this.entries = entries;
    this.dir = dir;
  }

  /** The index as shared data (the same memory, not a copy). */
  shared(): SharedFpIndex {
    return { entries: this.entries, dir: this.dir, width: this.width };
  }

  /** The offset of the entry with fingerprint a, b, c in `words`, or -1. */
  find(a: number, b: number, c: number): number {
    const h = a >>> this.shift;
    const e = this.entries;
    const w = this.width;
    for (let i = this.dir[h]!, end = this.dir[h + 1]!; i < end; i++) {
      const o = i * w;
      if (e[o] === a && e[o + 1] === b && e[o + 2] === c) return o;
    }
    return -1;
  }

  /** The entries, for reading the data words of an offset find() returned. */
  get words(): Int32Array {
    return this.entries;
  }
}
