// A lead's canonical JSON, its payload hash and the content keys taken of it: shared by mapping (which derives them
// from each record) and the ledger (whose schema v4 upgrade derives them again, for emails written one way since).
import { sha256 } from './hash.js';
import type { Lead } from './mapping/types.js';

/** JSON with object keys sorted at every level, so equal content always hashes equally. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return '[' + value.map(canonicalJson).join(',') + ']';
  const obj = value as Record<string, unknown>;
  const keys = Object.keys(obj)
    .filter((k) => obj[k] !== undefined)
    .sort();
  return '{' + keys.map((k) => JSON.stringify(k) + ':' + canonicalJson(obj[k])).join(',') + '}';
}

/** The payload hash of a lead already written as canonicalLeadJson. */
export function payloadHashOfJson(canonical: string): string {
  return sha256(canonical).slice(0, PAYLOAD_HASH_CHARS);
}

/** The hex digits of sha256 a payload hash keeps. */
export const PAYLOAD_HASH_CHARS = 32;

// Every key a Lead can have, in the order canonicalJson sorts them (plain code-unit order).
const LEAD_KEYS = ['company', 'custom', 'email', 'firstName', 'lastName', 'name', 'phone', 'source'] as const;

/**
 * canonicalJson(lead), written without sorting or an array per level: the payload hash is taken once per record.
 * A lead with any key outside LEAD_KEYS (not one the mapper builds) goes the general way, so the text is always equal.
 */
export function canonicalLeadJson(lead: Lead): string {
  let out = '{';
  let used = 0;
  for (const k of LEAD_KEYS) {
    const v = lead[k];
    if (v === undefined) continue;
    if (used++ > 0) out += ',';
    out += '"' + k + '":' + (typeof v === 'string' ? jsonString(v) : canonicalJson(v));
  }
  let own = 0;
  for (const k in lead) if (Object.hasOwn(lead, k) && (lead as Record<string, unknown>)[k] !== undefined) own++;
  return own === used ? out + '}' : canonicalJson(lead);
}

// Characters JSON.stringify escapes in a string (controls, quote, backslash) or may (surrogates, lone ones escaped).
// eslint-disable-next-line no-control-regex -- control characters are exactly what it looks for
const NEEDS_ESCAPE = /[\u0000-\u001f"\\\ud800-\udfff]/;

/** JSON.stringify(s), without the call for the common string that needs no escaping. */
function jsonString(s: string): string {
  return NEEDS_ESCAPE.test(s) ? JSON.stringify(s) : '"' + s + '"';
}

/** A content key for a record without an id: `c:` + sha256 over the chosen normalized fields. */
export function contentKey(values: Record<string, unknown>): string {
  return 'c:' + sha256(canonicalJson(values)).slice(0, 40);
}
