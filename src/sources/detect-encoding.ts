// Guesses the text encoding of a CSV export. Spreadsheet software on Windows still writes Windows-1252
// (a superset of ISO-8859-1 for printable text); anything that is valid UTF-8 is taken as UTF-8, since
// Windows-1252 text with accents is almost never valid UTF-8 by accident.

import iconv from 'iconv-lite';

/** Encoding used when the first bytes are not valid UTF-8. */
export const FALLBACK_ENCODING = 'windows-1252';

/** Returns 'utf-8' when `head` is valid UTF-8 (a sequence cut at the end of an incomplete head is allowed), else windows-1252. */
export function detectEncoding(head: Buffer, complete: boolean): string {
  return isValidUtf8(head, complete) ? 'utf-8' : FALLBACK_ENCODING;
}

/** True when the bytes decode as UTF-8 without error. */
export function isValidUtf8(bytes: Buffer, complete: boolean): boolean {
  try {
    // stream: true tolerates a multi-byte character split at the end of a head sample.
    new TextDecoder('utf-8', { fatal: true }).decode(bytes, { stream: !complete });
    return true;
  } catch {
    return false;
  }
}

/** Normalizes a user-given encoding name, or returns null when iconv-lite does not know it. */
export function normalizeEncoding(name: string): string | null {
  const n = name.trim().toLowerCase();
  if (!iconv.encodingExists(n)) return null;
  if (n === 'utf8') return 'utf-8';
  if (n === 'cp1252') return 'windows-1252';
  return n;
}
