// Normalization of the fields that identify a person: email, phone, names.
import { createRequire } from 'node:module';
import type * as Libphonenumber from 'libphonenumber-js';
import type { CountryCode } from 'libphonenumber-js';
import { quoted, type Normalized } from '../email.js';
import { fastE164 } from './phone-fast.js';

export {
  canonicalEmail,
  MAX_DOMAIN,
  MAX_EMAIL,
  MAX_EMAIL_LOCAL,
  MAX_LABEL,
  normalizeEmail,
  quoted,
  type Normalized,
} from '../email.js';

// The library is loaded the first time a phone needs it: most phones are decided by fastE164, and loading it cost
// ~40 ms of every start (and of every map worker's).
const require = createRequire(import.meta.url);
let library: typeof Libphonenumber | undefined;

const phoneCache = new Map<string, Normalized>();

/**
 * Converts a phone number to E.164 using the default country for national numbers. Most phones are
 * "+<code> <number>": fastE164 answers those exactly as libphonenumber would, for a fraction of its cost, and
 * leaves anything it is not certain about to the library (see phone-fast.ts).
 */
export function normalizePhone(raw: string, defaultCountry?: string): Normalized {
  // The fast path costs less than a cache lookup (and most phones are unique): only the library's answers are cached.
  const fast = fastE164(raw.trim());
  if (fast !== undefined) return fast === null ? invalidPhone(raw.trim(), defaultCountry) : { ok: true, value: fast };
  const cacheKey = (defaultCountry ?? '') + '|' + raw;
  const hit = phoneCache.get(cacheKey);
  if (hit) return hit;
  const result = parsePhone(raw, defaultCountry);
  // Retried deliveries repeat phones; the cache is bounded so a 10M-line audit does not grow without limit.
  if (phoneCache.size > 50_000) phoneCache.clear();
  phoneCache.set(cacheKey, result);
  return result;
}

function parsePhone(raw: string, defaultCountry?: string): Normalized {
  const v = raw.trim();
  library ??= require('libphonenumber-js') as typeof Libphonenumber;
  const n = library.parsePhoneNumberFromString(v, defaultCountry as CountryCode | undefined);
  if (n && n.isValid()) return { ok: true, value: n.number };
  return invalidPhone(v, defaultCountry);
}

/** What an invalid phone's reason says after the quoted phone. */
export const INVALID_PHONE = 'is not a valid phone number';
/** What it adds when the phone is national and there is no default country to read it in. */
export const NATIONAL_HINT = ' (national number: set --default-country, e.g. BR)';

function invalidPhone(v: string, defaultCountry?: string): Normalized {
  const hint = v.startsWith('+') || defaultCountry ? '' : NATIONAL_HINT;
  return { ok: false, reason: `${quoted(v)} ${INVALID_PHONE}${hint}` };
}

// Already normalized: words of non-space characters with one plain space between them (a test costs less than
// the replace it saves, and most names pass it).
const NORMAL_NAME = /^\S+(?: \S+)*$/;

/** Collapses runs of whitespace and trims. */
export function normalizeName(raw: string): string {
  return NORMAL_NAME.test(raw) ? raw : raw.replace(/\s+/g, ' ').trim();
}

/** Splits a full name into first name and the rest. */
export function splitName(full: string): { firstName: string; lastName?: string } {
  const i = full.indexOf(' ');
  if (i < 0) return { firstName: full };
  return { firstName: full.slice(0, i), lastName: full.slice(i + 1) };
}
