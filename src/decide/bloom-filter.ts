// A Bloom filter over strings: answers "certainly not added" without touching the spill file, so keys never seen
// before (most of them) cost no SQLite lookup once the in-run memory has spilled.

/** Fixed-size Bloom filter; false positives only cost a lookup, never a wrong answer. */
export class BloomFilter {
  private readonly bits: Uint32Array;
  private readonly mask: number;

  /** log2Bits: 26 is 8 MB, about 2% false positives at 10 million strings with 5 probes (a miss costs one lookup). */
  constructor(log2Bits = 26, private readonly probes = 5) {
    this.bits = new Uint32Array(2 ** (log2Bits - 5));
    this.mask = 2 ** log2Bits - 1;
  }

  add(s: string): void {
    let [h1, h2] = hashes(s);
    for (let i = 0; i < this.probes; i++) {
      const bit = h1 & this.mask;
      this.bits[bit >>> 5]! |= 1 << (bit & 31);
      h1 = (h1 + h2) >>> 0;
    }
  }

  mightHave(s: string): boolean {
    let [h1, h2] = hashes(s);
    for (let i = 0; i < this.probes; i++) {
      const bit = h1 & this.mask;
      if ((this.bits[bit >>> 5]! & (1 << (bit & 31))) === 0) return false;
      h1 = (h1 + h2) >>> 0;
    }
    return true;
  }
}

// Two independent 32-bit hashes (FNV-1a and a murmur-style mix) combined by double hashing (Kirsch–Mitzenmacher).
function hashes(s: string): [number, number] {
  let a = 0x811c9dc5;
  let b = 0x9747b28c;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193);
    b = Math.imul(b ^ c, 0x5bd1e995);
    b ^= b >>> 15;
  }
  a ^= a >>> 16;
  a = Math.imul(a, 0x85ebca6b);
  a ^= a >>> 13;
  // An odd step visits distinct bits for every probe.
  return [a >>> 0, (b | 1) >>> 0];
}
