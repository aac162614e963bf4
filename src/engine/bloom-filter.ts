// A Bloom filter over fingerprints: answers "certainly not spilled" from memory, so the keys and people never seen
// before (most of them, in an audit) cost no read of the spill file.

const BLOCK_WORDS = 16; // 512 bits: one 64-byte cache line
const PROBES = 6;

/**
 * Blocked Bloom filter (all probes of a value fall in one cache line: one memory miss per check instead of one
 * per probe), fed two independent 32-bit hash words. A false positive only costs a file read.
 */
export class BloomFilter {
  private readonly words: Uint32Array;
  private readonly blockMask: number;

  /** log2Bits: the filter's size in bits as a power of two (at least 9; 27 is 16 MB). */
  constructor(log2Bits: number) {
    const blocks = 2 ** Math.max(0, log2Bits - 9);
    this.words = new Uint32Array(blocks * BLOCK_WORDS);
    this.blockMask = blocks - 1;
  }

  add(a: number, b: number): void {
    const base = (a & this.blockMask) * BLOCK_WORDS;
    // Probe positions within the block: 9 bits at a time from b, then from a's high bits.
    let h = (b >>> 0) ^ ((a >>> 23) << 27);
    const step = ((a >>> 14) & 0x1ff) | 1;
    for (let i = 0; i < PROBES; i++) {
      const bit = h & 511;
      this.words[base + (bit >>> 5)]! |= 1 << (bit & 31);
      h = (h >>> 9) + step * (i + 1);
    }
  }

  mightHave(a: number, b: number): boolean {
    const base = (a & this.blockMask) * BLOCK_WORDS;
    let h = (b >>> 0) ^ ((a >>> 23) << 27);
    const step = ((a >>> 14) & 0x1ff) | 1;
    for (let i = 0; i < PROBES; i++) {
      const bit = h & 511;
      if ((this.words[base + (bit >>> 5)]! & (1 << (bit & 31))) === 0) return false;
      h = (h >>> 9) + step * (i + 1);
    }
    return true;
  }
}
