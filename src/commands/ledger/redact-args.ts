// Run arguments are recorded without secrets, but `ledger runs` still masks anything named like one: a ledger
// written by an older or a patched build must not leak a token through a listing.

const SECRET_NAME = /token|secret|password|passwd|authorization|api[-_]?key|cookie/i;

/** Replaces the value of every key named like a secret, at any depth, by [redacted]. */
export function redactSecretKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(redactSecretKeys);
  if (value === null || typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) out[k] = SECRET_NAME.test(k) ? '[redacted]' : redactSecretKeys(v);
  return out;
}
