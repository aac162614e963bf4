// Normalization of the fields that identify a person: email, phone, names.
import { createRequire } from 'node:module';
import type * as Libphonenumber from 'libphonenumber-js';
import type { CountryCode } from 'libphonenumber-js';
import { fastE164 } from './phone-fast.js';

// The library is loaded the first time a phone needs it: most phones are decided by fastE164, and loading it cost
// ~40 ms of every start (and of every map worker's).
const require = createRequire(import.meta.url);
let library: typeof Libphonenumber | undefined;

// Pragmatic address check: one @, a dot in the domain, no spaces or angle brackets. Deliberately not RFC 5322:
// CRMs reject far less exotic input than the RFC allows, and a false "valid" only costs a failed send.
const EMAIL_RE = /^[^\s@<>(),;:"]+@[^\s@<>(),;:"]+\.[a-z]{2,}$/;

export type Normalized = { ok: true; value: string } | { ok: false; reason: string };

/** RFC 5321's limits: 254 characters in all (a path of 256 less its brackets), 64 before the @. */
export const MAX_EMAIL = 254;
export const MAX_EMAIL_LOCAL = 64;

/** Trims, strips a mailto: prefix, lower-cases and validates an email address. */
export function normalizeEmail(raw: string): Normalized {
  let v = raw.trim().toLowerCase();
  if (v.startsWith('mailto:')) v = v.slice(7);
  if (!EMAIL_RE.test(v)) return { ok: false, reason: `${quoted(raw.trim())} is not a valid email address` };
  if (v.length > MAX_EMAIL)
    return { ok: false, reason: `${quoted(raw.trim())} is longer than ${MAX_EMAIL} characters (RFC 5321)` };
  if (v.indexOf('@') > MAX_EMAIL_LOCAL)
    return {
      ok: false,
      reason: `${quoted(raw.trim())} has more than ${MAX_EMAIL_LOCAL} characters before the @ (RFC 5321)`,
    };
  return { ok: true, value: v };
}

/** A value quoted in a reason, cut so that a 1M-character value makes a reason a line can hold. */
export function quoted(v: string): string {
  return v.length > 80 ? `'${v.slice(0, 60)}…' (${v.length} characters)` : `'${v}'`;
}

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
