// Hashing shared by mapping (keys, payload hashes) and the ledger (tombstones): one digest, one implementation.
import * as crypto from 'node:crypto';

// crypto.hash (Node >= 20.12) hashes in one call, without a Hash object per record: same digest, less garbage.
const oneShot = (crypto as { hash?: (alg: string, data: string, enc: 'hex') => string }).hash;
const oneShotBytes = oneShot as ((alg: string, data: Uint8Array, enc: 'hex') => string) | undefined;

/** Hex sha256 of bytes (of a string's UTF-8: the same digest as sha256 of the string). */
export function sha256Bytes(bytes: Uint8Array): string {
  return oneShot ? oneShotBytes!('sha256', bytes, 'hex') : crypto.createHash('sha256').update(bytes).digest('hex');
}

/** Hex sha256 of a string. */
export function sha256(text: string): string {
  return oneShot ? oneShot('sha256', text, 'hex') : crypto.createHash('sha256').update(text).digest('hex');
}
