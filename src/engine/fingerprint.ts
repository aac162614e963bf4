// 96-bit fingerprints of event keys and people, so the run memory holds fixed-size numbers instead of strings.
// The mixing is MurmurHash3's x86 128-bit construction (four 32-bit lanes, Math.imul), fed UTF-8 bytes sixteen at a
// time: a few dozen nanoseconds for a key or an email, computed by the map workers, beside parsing.
//
// Why a fingerprint is safe here: two different keys collide with probability ~n²/2⁹⁶ (10⁻¹⁵ for ten million
// keys). A collision could only make the later event look like an earlier one of this run; its payload hash
// (sha256-based) is compared next, so different content shows up as a `conflict` with its reason, and the ledger,
// which holds the real keys, decides the event again on the next run. Nothing is ever sent twice by a collision.

const C1 = 0x239b961b;
const C2 = 0xab0e9789;
const C3 = 0x38b34ae5;
const C4 = 0xa1e38b93;

const rotl = (x: number, r: number): number => (x << r) | (x >>> (32 - r));

function fmix(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return h ^ (h >>> 16);
}

/**
 * Writes the fingerprint of bytes[start..end) as three 32-bit words at out[o..o+2]. The first word is never 0 (its
 * low bit is set), so a table slot whose first word is 0 is empty. Keys, people and leads are fingerprinted as
 * their UTF-8 bytes: what the map workers write into blocks, and what the fast JSONL path copies from the input.
 */
export function fingerprintBytes(
  b: Uint8Array,
  start: number,
  end: number,
  out: Int32Array | Uint32Array,
  o: number,
): void {
  fingerprintView(new DataView(b.buffer, b.byteOffset, b.byteLength), b, start, end, out, o);
}

/**
 * fingerprintBytes for hot callers that keep a DataView over b (view.getInt32 is one load, where combining four
 * bytes is four loads and their shifts: ~35% less time a byte, measured).
 */
export function fingerprintView(
  view: DataView,
  b: Uint8Array,
  start: number,
  end: number,
  out: Int32Array | Uint32Array,
  o: number,
): void {
  let h1 = 0x9368e53c;
  let h2 = 0x2f6af274;
  let h3 = 0xd1a5c2b7;
  let h4 = 0x6b43a9b5;
  let i = start;
  for (const last = end - 15; i < last; i += 16) {
    let k1 = view.getInt32(i, true);
    let k2 = view.getInt32(i + 4, true);
    let k3 = view.getInt32(i + 8, true);
    let k4 = view.getInt32(i + 12, true);
    k1 = Math.imul(rotl(Math.imul(k1, C1), 15), C2);
    h1 ^= k1;
    h1 = (Math.imul((rotl(h1, 19) + h2) | 0, 5) + 0x561ccd1b) | 0;
    k2 = Math.imul(rotl(Math.imul(k2, C2), 16), C3);
    h2 ^= k2;
    h2 = (Math.imul((rotl(h2, 17) + h3) | 0, 5) + 0x0bcaa747) | 0;
    k3 = Math.imul(rotl(Math.imul(k3, C3), 17), C4);
    h3 ^= k3;
    h3 = (Math.imul((rotl(h3, 15) + h4) | 0, 5) + 0x96cd1c35) | 0;
    k4 = Math.imul(rotl(Math.imul(k4, C4), 18), C1);
    h4 ^= k4;
    h4 = (Math.imul((rotl(h4, 13) + h1) | 0, 5) + 0x32ac3b17) | 0;
  }
  // The tail: up to fifteen bytes, packed little-endian into the four words (a zero word mixes to nothing).
  let k1 = 0;
  let k2 = 0;
  let k3 = 0;
  let k4 = 0;
  for (let j = 0; i < end; i++, j++) {
    const c = b[i]! << ((j & 3) << 3);
    if (j < 4) k1 |= c;
    else if (j < 8) k2 |= c;
    else if (j < 12) k3 |= c;
    else k4 |= c;
  }
  h4 ^= Math.imul(rotl(Math.imul(k4, C4), 18), C1);
  h3 ^= Math.imul(rotl(Math.imul(k3, C3), 17), C4);
  h2 ^= Math.imul(rotl(Math.imul(k2, C2), 16), C3);
  h1 ^= Math.imul(rotl(Math.imul(k1, C1), 15), C2);

  const len = end - start;
  h1 ^= len;
  h2 ^= len;
  h3 ^= len;
  h4 ^= len;
  h1 = (h1 + h2 + h3 + h4) | 0;
  h2 = (h2 + h1) | 0;
  h3 = (h3 + h1) | 0;
  h4 = (h4 + h1) | 0;
  h1 = fmix(h1);
  h2 = fmix(h2);
  h3 = fmix(h3);
  h4 = fmix(h4);
  h1 = (h1 + h2 + h3 + h4) | 0;
  h2 = (h2 + h1) | 0;
  h3 = (h3 + h1) | 0;
  out[o] = h1 | 1;
  out[o + 1] = h2;
  out[o + 2] = h3;
}

let scratch = Buffer.allocUnsafeSlow(1024);
let scratchView = new DataView(scratch.buffer, scratch.byteOffset, scratch.byteLength);

/** The fingerprint of a string's UTF-8 bytes (as fingerprintBytes), for text that is not already in a block. */
export function fingerprint(s: string, out: Int32Array | Uint32Array, o: number): void {
  if (s.length * 3 > scratch.length) {
    scratch = Buffer.allocUnsafeSlow(s.length * 3);
    scratchView = new DataView(scratch.buffer, scratch.byteOffset, scratch.byteLength);
  }
  fingerprintView(scratchView, scratch, 0, scratch.write(s, 0), out, o);
}
