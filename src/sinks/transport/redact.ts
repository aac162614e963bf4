// Secrets (tokens, HMAC secrets) must never reach a message, a report or a log: every text a sink builds passes here.

const MASK = '[redacted]';

/** Replace every known secret, and anything that looks like a bearer token or an API-key query parameter, by a mask. */
export function redact(text: string, secrets: readonly string[] = []): string {
  let out = text;
  for (const secret of secrets) {
    // Very short values would mask ordinary words; real tokens and secrets are long.
    if (secret.length < 4) continue;
    out = out.split(secret).join(MASK);
  }
  out = out.replace(/(Bearer\s+)[^\s"',]+/gi, `$1${MASK}`);
  out = out.replace(/([?&](?:hapikey|api_key|apikey|access_token|token)=)[^&\s"']+/gi, `$1${MASK}`);
  return out;
}
