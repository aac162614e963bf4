// Keys and hashes: event keys for records without an id, payload hashes, and the keys sent downstream.
import { sha256 } from '../hash.js';
import { canonicalLeadJson, payloadHashOfJson } from '../lead-hash.js';
import type { Lead } from './types.js';

export { canonicalJson, canonicalLeadJson, contentKey, PAYLOAD_HASH_CHARS, payloadHashOfJson } from '../lead-hash.js';

/** The payload hash of a lead: 128 bits of sha256 over its canonical JSON (collisions are not a practical concern). */
export function payloadHash(lead: Lead): string {
  return payloadHashOfJson(canonicalLeadJson(lead));
}

/** The key sent downstream (Idempotency-Key, objectWriteTraceId): derived, never the raw event id or PII. */
export function downstreamKey(namespace: string, eventKey: string): string {
  return sha256(downstreamKeyPrefix(namespace) + eventKey);
}

/** What downstreamKey hashes before the event key (the map workers hash the same bytes: engine/block.ts). */
export function downstreamKeyPrefix(namespace: string): string {
  return namespace + '|';
}

/** Names of the lead fields whose values differ between two leads (custom fields as custom.<name>). */
export function differingFields(a: Lead, b: Lead): string[] {
  const out: string[] = [];
  const keys = new Set([...Object.keys(a), ...Object.keys(b)]) as Set<keyof Lead>;
  for (const k of [...keys].sort()) {
    if (k === 'custom') continue;
    if (a[k] !== b[k]) out.push(k);
  }
  const ca = a.custom ?? {};
  const cb = b.custom ?? {};
  for (const k of [...new Set([...Object.keys(ca), ...Object.keys(cb)])].sort()) {
    if (ca[k] !== cb[k]) out.push('custom.' + k);
  }
  return out;
}
