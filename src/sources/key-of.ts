// Field names as senders spell them: `Email`, `EMAIL` and `email` name one field wherever leadledger looks for one.

/**
 * The key of obj that a path step `k` names: `k` itself when obj has it, else the first key that differs from it in
 * case only (`Email`, `EMAIL` for `email`). Undefined when obj has neither.
 */
export function keyOf(obj: object, k: string): string | undefined {
  if (Object.hasOwn(obj, k)) return k;
  const lower = k.toLowerCase();
  for (const key in obj) if (Object.hasOwn(obj, key) && key.toLowerCase() === lower) return key;
  return undefined;
}
