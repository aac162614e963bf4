// A Bloom filter over fingerprints: answers "certainly not in this spilled run" from memory, so the keys and people
// never seen before (most of them, in an audit) cost no read of the spill file.

/** Fixed-size Bloom filter fed two independent 32-bit hash words; a false positive only costs a file read. */
export class BloomFilter {
  private readonly bits: Uint32Array;
  private readonly mask: number;

  /** log2Bits: the filter's size in bits as a power of two (23 is 1 MB). */
  constructor(log2Bits: number, private readonly probes = 5) {
    this.bits = new Uint32Array(2 ** Math.max(0, log2Bits - 5) || 1);
    this.mask = 2 ** log2Bits - 1;
  }

  /** A filter with about 16 bits per entry: ~0.2% false positives with 5 probes. */
  static forEntries(n: number): BloomFilter {
    return new BloomFilter(Math.max(10, Math.ceil(Math.log2(Math.max(1, n) * 16))));
  }

  add(a: number, b: number): void {
    // Double hashing (Kirsch–Mitzenmacher); an odd step visits distinct bits for every probe.
    const step = (b | 1) >>> 0;
    let h = a >>> 0;
    for (let i = 0; i < this.probes; i++) {
      const bit = h & this.mask;
      this.bits[bit >>> 5]! |= 1 << (bit & 31);
      h = (h + step) >>> 0;
    }
  }

  mightHave(a: number, b: number): boolean {
    const step = (b | 1) >>> 0;
    let h = a >>> 0;
    for (let i = 0; i < this.probes; i++) {
      const bit = h & this.mask;
      if ((this.bits[bit >>> 5]! & (1 << (bit & 31))) === 0) return false;
      h = (h + step) >>> 0;
    }
    return true;
  }
}
