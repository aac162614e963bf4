// How `leadledger serve` tells a sender's request from a forgery: one verifier per endpoint, built once at start (its
// secret read then, from the environment or a file, never from argv or the config), then called on every request's
// raw bytes. A verifier never throws on what a request holds: it answers ok, or why not (missing, malformed, mismatch,
// stale) in words that never hold the secret or the signature it expected.
//
// The algorithms, as their owners document them:
// - Standard Webhooks 1.0.0: the spec (sections "Signature scheme", "Webhook headers", "Verifying signatures"),
//   https://github.com/standard-webhooks/standard-webhooks/blob/main/spec/standard-webhooks.md, and its reference
//   library's tolerance (5 minutes, both ways) and test vector, libraries/javascript/src/{index,webhook.test}.ts there.
// - Stripe: https://docs.stripe.com/webhooks#verify-manually (Stripe-Signature, t= and v1=, signed `${t}.${body}`,
//   HMAC-SHA256 hex keyed with the whole whsec_ secret as text; v0 and other schemes ignored against downgrades).
// - HubSpot v3: https://developers.hubspot.com/docs/apps/legacy-apps/authentication/validating-requests#validate-the-v3-request-signature
//   and https://developers.hubspot.com/docs/apps/developer-platform/build-apps/authentication/request-validation
//   (base64 HMAC-SHA256 of method + URI + body + timestamp; the URI with the table's %XX decoded; 5 minutes).
// - GitHub: https://docs.github.com/en/webhooks/using-webhooks/validating-webhook-deliveries (X-Hub-Signature-256:
//   sha256=<hex HMAC-SHA256 of the body>); Typeform: https://www.typeform.com/developers/webhooks/secure-your-webhooks/
//   (Typeform-Signature: sha256=<base64 HMAC-SHA256 of the body>): both are the `hmac` scheme.
// - Basic: RFC 7617 (https://www.rfc-editor.org/rfc/rfc7617), user-id and password split at the first colon.
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { closeSync, fstatSync, openSync, readFileSync } from 'node:fs';
import type { IncomingHttpHeaders } from 'node:http';
import { UsageError } from '../errors.js';

/** A secret from the environment or a file, never argv. */
export interface SecretRef {
  secretEnv?: string;
  secretFile?: string;
}

/** How one endpoint's requests prove where they come from (the config's serve.endpoints.<name>.signature). */
export type SignatureConfig =
  | { scheme: 'none' }
  | ({ scheme: 'standard-webhooks'; toleranceSec?: number } & SecretRef)
  | ({
      scheme: 'hmac';
      header: string;
      prefix?: string;
      encoding?: 'hex' | 'base64';
      algorithm?: 'sha256' | 'sha1' | 'sha512';
    } & SecretRef)
  | ({ scheme: 'stripe'; toleranceSec?: number } & SecretRef)
  | ({ scheme: 'hubspot-v3'; publicUrl?: string; toleranceSec?: number } & SecretRef)
  | ({ scheme: 'basic'; username: string } & SecretRef)
  | ({ scheme: 'token'; header: string; prefix?: string } & SecretRef);

/** One request as the verifier sees it. */
export interface VerifyRequest {
  method: string;
  /** path and query as received */
  url: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
  /** ms */
  now: number;
}

/** A verifier's answer. */
export type VerifyResult =
  | { ok: true; /** the signed message id where the scheme has one (standard-webhooks' webhook-id) */ id?: string }
  | { ok: false; reason: 'missing' | 'malformed' | 'mismatch' | 'stale'; detail: string };

type Verifier = (req: VerifyRequest) => VerifyResult;

const SCHEMES = ['none', 'standard-webhooks', 'hmac', 'stripe', 'hubspot-v3', 'basic', 'token'] as const;
// Stripe's and Standard Webhooks' libraries default to 5 minutes; HubSpot rejects what is older than 5 minutes.
const DEFAULT_TOLERANCE_SEC = 300;
// Every scheme's signature or credential header: none of them is ever logged or archived, whichever scheme an
// endpoint uses (a request may carry another sender's signature too).
const ALWAYS_SECRET = [
  'authorization',
  'proxy-authorization',
  'cookie',
  'set-cookie',
  'webhook-signature',
  'stripe-signature',
  'x-hubspot-signature',
  'x-hubspot-signature-v3',
  'x-hub-signature',
  'x-hub-signature-256',
  'typeform-signature',
];
// RFC 9110's token: what a header name may be.
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const HEX = /^[0-9a-fA-F]+$/;
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;
// What a header value cannot hold: a token holding one can never match.
const NOT_IN_HEADER = /[^\t\x20-\x7e\x80-\xff]/;
// HubSpot v3: the URI is signed with these, and only these, percent-encodings decoded.
const HUBSPOT_DECODED = /%(3A|2F|3F|40|21|24|27|28|29|2A|2C|3B)/gi;

/**
 * Reads the secret once at start: a clear error (UsageError) naming the env var or file, never the value, when it is
 * absent, empty or unreadable; a file its group or others may read gives a warning through onWarning.
 */
export function resolveSecret(
  ref: SecretRef,
  env: Record<string, string | undefined>,
  where: string,
  onWarning?: (w: string) => void,
): string {
  const { secretEnv, secretFile } = ref;
  if (secretEnv !== undefined && secretFile !== undefined)
    throw new UsageError(`${where}: give its secret by secretEnv or by secretFile, not both`);
  if (secretEnv === undefined && secretFile === undefined)
    throw new UsageError(
      `${where}: needs a secret: name the environment variable that holds it (secretEnv) or a file (secretFile); a secret never goes in the config or a flag`,
    );
  if (secretEnv !== undefined) {
    if (typeof secretEnv !== 'string' || secretEnv === '')
      throw new UsageError(`${where}: secretEnv must be the name of an environment variable`);
    const value = env[secretEnv];
    if (value === undefined) throw new UsageError(`${where}: the environment variable ${secretEnv} is not set`);
    const secret = value.trim();
    if (!secret) throw new UsageError(`${where}: the environment variable ${secretEnv} is empty`);
    return secret;
  }
  const file = secretFile!;
  if (typeof file !== 'string' || file === '') throw new UsageError(`${where}: secretFile must be a file's path`);
  let text: string;
  let mode: number;
  try {
    // One descriptor for the mode and the content: the file judged is the file read.
    const fd = openSync(file, 'r');
    try {
      mode = fstatSync(fd).mode;
      text = readFileSync(fd, 'utf8');
    } finally {
      closeSync(fd);
    }
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'unreadable';
    const why =
      code === 'ENOENT'
        ? 'no such file'
        : code === 'EACCES'
          ? 'permission denied'
          : code === 'EISDIR'
            ? 'it is a directory'
            : code;
    throw new UsageError(`${where}: cannot read the secret file ${file} (${why})`);
  }
  // As a token file is judged (sinks/transport/token.ts), and psql judges ~/.pgpass: said, and the run goes on.
  if (onWarning && process.platform !== 'win32' && (mode & 0o077) !== 0)
    onWarning(
      `${where}: secret file ${file} may be read by its group or others (mode ${(mode & 0o777).toString(8).padStart(4, '0')}); it should be readable by you only: chmod 600 ${file}`,
    );
  const secret = text.trim();
  if (!secret) throw new UsageError(`${where}: the secret file ${file} is empty`);
  return secret;
}

/**
 * Builds the verifier of one endpoint, its secret resolved once, here. Checks the config first (a known scheme, a
 * header name where one is needed, one secret reference): UsageError saying what to fix.
 */
export function makeVerifier(
  cfg: SignatureConfig,
  env: Record<string, string | undefined>,
  where: string,
  onWarning?: (w: string) => void,
): (req: VerifyRequest) => VerifyResult {
  if (typeof cfg !== 'object' || cfg === null)
    throw new UsageError(`${where}: its signature must be an object with a scheme (${SCHEMES.join(', ')})`);
  let verify: Verifier;
  switch (cfg.scheme) {
    case 'none':
      return () => ({ ok: true });
    case 'standard-webhooks': {
      const tolerance = toleranceOf(cfg.toleranceSec, where);
      verify = standardWebhooks(standardWebhooksKey(resolveSecret(cfg, env, where, onWarning), cfg, where), tolerance);
      break;
    }
    case 'hmac': {
      const name = headerName(cfg.header, where, 'hmac');
      const algorithm = cfg.algorithm ?? 'sha256';
      if (!['sha256', 'sha1', 'sha512'].includes(algorithm))
        throw new UsageError(`${where}: the hmac algorithm must be sha256, sha1 or sha512`);
      const encoding = cfg.encoding ?? 'hex';
      if (encoding !== 'hex' && encoding !== 'base64')
        throw new UsageError(`${where}: the hmac encoding must be hex or base64`);
      if (cfg.prefix !== undefined && typeof cfg.prefix !== 'string')
        throw new UsageError(`${where}: the hmac prefix must be text, e.g. "sha256="`);
      verify = hmacHeader(
        name,
        cfg.header,
        cfg.prefix ?? '',
        encoding,
        algorithm,
        resolveSecret(cfg, env, where, onWarning),
      );
      break;
    }
    case 'stripe': {
      const tolerance = toleranceOf(cfg.toleranceSec, where);
      const secret = resolveSecret(cfg, env, where, onWarning);
      if (!secret.startsWith('whsec_'))
        onWarning?.(
          `${where}: its Stripe secret (${secretSource(cfg)}) does not start with whsec_ as an endpoint's signing secret does (an API key is not one)`,
        );
      verify = stripe(secret, tolerance);
      break;
    }
    case 'hubspot-v3': {
      const tolerance = toleranceOf(cfg.toleranceSec, where);
      const base = cfg.publicUrl === undefined ? undefined : publicBase(cfg.publicUrl, where);
      verify = hubspotV3(resolveSecret(cfg, env, where, onWarning), base, tolerance);
      break;
    }
    case 'basic': {
      if (typeof cfg.username !== 'string' || cfg.username === '')
        throw new UsageError(`${where}: the basic scheme needs a username`);
      if (cfg.username.includes(':'))
        throw new UsageError(`${where}: a Basic user name cannot hold a colon (RFC 7617 splits at the first one)`);
      verify = basic(cfg.username, resolveSecret(cfg, env, where, onWarning));
      break;
    }
    case 'token': {
      const name = headerName(cfg.header, where, 'token');
      if (cfg.prefix !== undefined && typeof cfg.prefix !== 'string')
        throw new UsageError(`${where}: the token prefix must be text, e.g. "Bearer "`);
      const secret = resolveSecret(cfg, env, where, onWarning);
      const at = secret.search(NOT_IN_HEADER);
      if (at >= 0)
        throw new UsageError(
          `${where}: its token (${secretSource(cfg)}) holds a control character at character ${at + 1}: no header can carry it`,
        );
      verify = token(name, cfg.header, cfg.prefix ?? '', secret);
      break;
    }
    default: {
      const scheme: unknown = (cfg as { scheme?: unknown }).scheme;
      throw new UsageError(
        `${where}: unknown signature scheme ${JSON.stringify(scheme) ?? 'undefined'} (one of ${SCHEMES.join(', ')})`,
      );
    }
  }
  return (req) => {
    try {
      return verify(req);
    } catch {
      // A request shaped as no sender shapes one (a header of an odd type): refused, never a crash of the server.
      return malformed('the request could not be read for its signature');
    }
  };
}

/** Header names whose values must never be logged or archived: every scheme's credentials, and the configured header. */
export function secretHeaders(cfg: SignatureConfig): Set<string> {
  const names = new Set(ALWAYS_SECRET);
  const header = typeof cfg === 'object' && cfg !== null && 'header' in cfg ? cfg.header : undefined;
  if (typeof header === 'string' && header) names.add(header.toLowerCase());
  return names;
}

// ---- the schemes

function standardWebhooks(key: Buffer, toleranceSec: number): Verifier {
  return (req) => {
    const id = headerOf(req.headers, 'webhook-id');
    const timestamp = headerOf(req.headers, 'webhook-timestamp');
    const signatures = headerOf(req.headers, 'webhook-signature');
    const absent = [
      ...(id === undefined ? ['webhook-id'] : []),
      ...(timestamp === undefined ? ['webhook-timestamp'] : []),
      ...(signatures === undefined ? ['webhook-signature'] : []),
    ];
    if (absent.length) return missing(`no ${absent.join(', ')} header`);
    const seconds = integerOf(timestamp!);
    if (seconds === undefined) return malformed('webhook-timestamp is not an integer of seconds');
    // A space-separated list, one entry per key while a secret is rotated; only v1 (HMAC-SHA256) is ours to check,
    // v1a (ed25519) and unknown versions are skipped as the spec's libraries skip them.
    const v1 = signatures!
      .split(' ')
      .filter((s) => s.startsWith('v1,'))
      .map((s) => s.slice(3));
    if (!v1.length) return malformed('webhook-signature holds no v1,<base64> signature');
    const expected = createHmac('sha256', key).update(`${id!}.${timestamp!}.`).update(req.body).digest('base64');
    if (!anyMatches(v1, expected)) return mismatch('no signature in webhook-signature matches the request');
    const stale = staleness(seconds * 1000, wholeSeconds(req.now), toleranceSec, 'webhook-timestamp');
    if (stale) return { ok: false, reason: 'stale', detail: stale };
    return { ok: true, id: id! };
  };
}

function hmacHeader(
  name: string,
  shown: string,
  prefix: string,
  encoding: 'hex' | 'base64',
  algorithm: string,
  secret: string,
): Verifier {
  return (req) => {
    const value = headerOf(req.headers, name);
    if (value === undefined) return missing(`no ${shown} header`);
    if (!value.startsWith(prefix)) return malformed(`${shown} does not start with ${JSON.stringify(prefix)}`);
    const given = value.slice(prefix.length).trim();
    if (!(encoding === 'hex' ? HEX : BASE64).test(given)) {
      // sha256=<hex> sent to an endpoint configured without the prefix: say what to set.
      const label = /^([A-Za-z0-9-]{1,16}=)[^=]/.exec(given)?.[1];
      return malformed(
        `${shown} is not ${encoding}${label ? ` (it starts with ${JSON.stringify(label)}: set the signature's prefix)` : ''}`,
      );
    }
    const expected = createHmac(algorithm, secret).update(req.body).digest(encoding);
    // Hex is the same digest in either case; base64 is compared as sent.
    if (!sameText(encoding === 'hex' ? given.toLowerCase() : given, expected))
      return mismatch(`${shown} does not match the body`);
    return { ok: true };
  };
}

function stripe(secret: string, toleranceSec: number): Verifier {
  return (req) => {
    const value = headerOf(req.headers, 'stripe-signature');
    if (value === undefined) return missing('no Stripe-Signature header');
    const times: string[] = [];
    const v1: string[] = [];
    for (const element of value.split(',')) {
      const eq = element.indexOf('=');
      if (eq < 0) continue;
      const key = element.slice(0, eq).trim();
      const val = element.slice(eq + 1).trim();
      if (key === 't') times.push(val);
      // Only v1: v0 (test mode's fake scheme) and any other scheme are ignored against downgrades.
      else if (key === 'v1') v1.push(val);
    }
    const seconds = times.length === 1 ? integerOf(times[0]!) : undefined;
    if (seconds === undefined) return malformed('Stripe-Signature holds no single t=<seconds> timestamp');
    if (!v1.length) return malformed('Stripe-Signature holds no v1 signature');
    const expected = createHmac('sha256', secret).update(`${times[0]!}.`).update(req.body).digest('hex');
    const given = v1.map((s) => s.toLowerCase());
    if (!anyMatches(given, expected)) return mismatch('no v1 signature in Stripe-Signature matches the request');
    const stale = staleness(seconds * 1000, wholeSeconds(req.now), toleranceSec, 'the t= timestamp');
    if (stale) return { ok: false, reason: 'stale', detail: stale };
    return { ok: true };
  };
}

function hubspotV3(secret: string, base: string | undefined, toleranceSec: number): Verifier {
  return (req) => {
    const signature = headerOf(req.headers, 'x-hubspot-signature-v3');
    const timestamp = headerOf(req.headers, 'x-hubspot-request-timestamp');
    const absent = [
      ...(signature === undefined ? ['X-HubSpot-Signature-v3'] : []),
      ...(timestamp === undefined ? ['X-HubSpot-Request-Timestamp'] : []),
    ];
    if (absent.length) return missing(`no ${absent.join(', ')} header`);
    const ms = integerOf(timestamp!);
    if (ms === undefined) return malformed('X-HubSpot-Request-Timestamp is not an integer of milliseconds');
    const uri = hubspotUri(base, req);
    if (uri === undefined) return missing('no Host header to rebuild the URL HubSpot signed (set the publicUrl)');
    const expected = createHmac('sha256', secret)
      .update(`${req.method}${uri}`)
      .update(req.body)
      .update(timestamp!)
      .digest('base64');
    if (!sameText(signature!, expected)) return mismatch('X-HubSpot-Signature-v3 does not match the request');
    const stale = staleness(ms, req.now, toleranceSec, 'X-HubSpot-Request-Timestamp');
    if (stale) return { ok: false, reason: 'stale', detail: stale };
    return { ok: true };
  };
}

function basic(username: string, password: string): Verifier {
  return (req) => {
    const value = headerOf(req.headers, 'authorization');
    if (value === undefined) return missing('no Authorization header');
    const m = /^basic\s+(\S+)$/i.exec(value);
    if (!m || !BASE64.test(m[1]!)) return malformed('Authorization does not hold Basic credentials');
    const pair = Buffer.from(m[1]!, 'base64').toString('utf8');
    const colon = pair.indexOf(':');
    if (colon < 0) return malformed('the Basic credentials hold no user:password');
    // Both compared, always: which of the two was wrong is not said, nor shown by the time taken.
    const userOk = sameText(pair.slice(0, colon), username);
    const passwordOk = sameText(pair.slice(colon + 1), password);
    if (!userOk || !passwordOk) return mismatch('wrong user name or password');
    return { ok: true };
  };
}

function token(name: string, shown: string, prefix: string, secret: string): Verifier {
  return (req) => {
    const value = headerOf(req.headers, name);
    if (value === undefined) return missing(`no ${shown} header`);
    // A prefix is an auth scheme's name ("Bearer "), which HTTP compares without regard to case.
    if (value.slice(0, prefix.length).toLowerCase() !== prefix.toLowerCase())
      return malformed(`${shown} does not start with ${JSON.stringify(prefix)}`);
    if (!sameText(value.slice(prefix.length).trim(), secret)) return mismatch(`the token in ${shown} is wrong`);
    return { ok: true };
  };
}

// ---- parts

function missing(detail: string): VerifyResult {
  return { ok: false, reason: 'missing', detail };
}
function malformed(detail: string): VerifyResult {
  return { ok: false, reason: 'malformed', detail };
}
function mismatch(detail: string): VerifyResult {
  return { ok: false, reason: 'mismatch', detail };
}

// Equal in constant time: the digests of both are compared, so the lengths are equal for timingSafeEqual and the
// time taken tells nothing of how long either one is, nor how much of it matched.
function sameText(given: string, expected: string): boolean {
  return timingSafeEqual(sha256(given), sha256(expected));
}

// Any of several signatures (key rotation), each one compared whole: no early way out after a match.
function anyMatches(given: readonly string[], expected: string): boolean {
  const want = sha256(expected);
  let matched = false;
  for (const g of given) matched = timingSafeEqual(sha256(g), want) || matched;
  return matched;
}

function sha256(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}

// A header's value, trimmed; undefined when absent or blank. Node lower-cases the names it parses; a headers object
// built otherwise is searched without regard to case. Repeated headers are joined as Node joins them.
function headerOf(headers: IncomingHttpHeaders, name: string): string | undefined {
  let value: unknown = headers[name];
  if (value === undefined)
    for (const [k, v] of Object.entries(headers))
      if (k.toLowerCase() === name) {
        value = v;
        break;
      }
  if (value === undefined || value === null) return undefined;
  const text = (Array.isArray(value) ? value.map(String).join(', ') : String(value)).trim();
  return text === '' ? undefined : text;
}

// A timestamp as senders write it: decimal digits only (no sign, exponent or fraction), a safe integer.
function integerOf(text: string): number | undefined {
  if (!/^[0-9]{1,16}$/.test(text)) return undefined;
  const n = Number(text);
  return Number.isSafeInteger(n) ? n : undefined;
}

// Why a signed time is too far from now, in either direction (a replay, or a clock far off), or undefined.
function staleness(signedMs: number, nowMs: number, toleranceSec: number, what: string): string | undefined {
  const aheadMs = signedMs - nowMs;
  if (Math.abs(aheadMs) <= toleranceSec * 1000) return undefined;
  const sec = Math.round(Math.abs(aheadMs) / 1000);
  return aheadMs < 0
    ? `${what} is ${sec} s old, outside the ${toleranceSec} s tolerance`
    : `${what} is ${sec} s in the future, outside the ${toleranceSec} s tolerance`;
}

// Now, in the whole seconds a timestamp of seconds is compared with (as the Standard Webhooks and Stripe libraries do).
function wholeSeconds(ms: number): number {
  return Math.floor(ms / 1000) * 1000;
}

function toleranceOf(toleranceSec: number | undefined, where: string): number {
  if (toleranceSec === undefined) return DEFAULT_TOLERANCE_SEC;
  if (typeof toleranceSec !== 'number' || !Number.isFinite(toleranceSec) || toleranceSec <= 0)
    throw new UsageError(`${where}: toleranceSec must be a number of seconds above 0`);
  return toleranceSec;
}

function headerName(name: unknown, where: string, scheme: string): string {
  if (typeof name !== 'string' || name === '')
    throw new UsageError(`${where}: the ${scheme} scheme needs the name of the header that carries it (header)`);
  if (!HEADER_NAME.test(name)) throw new UsageError(`${where}: ${JSON.stringify(name)} is not a header name`);
  return name.toLowerCase();
}

// Where an endpoint's secret comes from, to name in a message (never the secret).
function secretSource(ref: SecretRef): string {
  return ref.secretEnv !== undefined ? `the environment variable ${ref.secretEnv}` : `the file ${ref.secretFile!}`;
}

// The spec serializes a symmetric secret as whsec_ + base64; its libraries accept the base64 without the prefix too.
function standardWebhooksKey(secret: string, ref: SecretRef, where: string): Buffer {
  if (/^wh(sk|pk)_/.test(secret))
    throw new UsageError(
      `${where}: the secret in ${secretSource(ref)} is an ed25519 key (whsk_/whpk_); only symmetric whsec_ secrets (v1 signatures) are verified`,
    );
  const b64 = secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret;
  const key = BASE64.test(b64) && b64.length % 4 !== 1 ? Buffer.from(b64, 'base64') : undefined;
  // Buffer.from skips what is not base64: a key that does not encode back to the text is not what was meant.
  if (!key || key.length === 0 || key.toString('base64').replace(/=+$/, '') !== b64.replace(/=+$/, ''))
    throw new UsageError(
      `${where}: the secret in ${secretSource(ref)} is not a Standard Webhooks secret (whsec_ followed by base64)`,
    );
  return key;
}

// publicUrl: the URL HubSpot was given, or the origin (and path prefix) a proxy receives it under. Kept as written,
// without its query or fragment: the request's own query is what HubSpot signed.
function publicBase(publicUrl: unknown, where: string): string {
  let url: URL | undefined;
  try {
    url = typeof publicUrl === 'string' ? new URL(publicUrl) : undefined;
  } catch {
    url = undefined;
  }
  if (!url || (url.protocol !== 'https:' && url.protocol !== 'http:'))
    throw new UsageError(`${where}: publicUrl must be an http(s) URL, the one HubSpot sends to`);
  return (publicUrl as string).replace(/[?#].*$/, '');
}

// The URI HubSpot signed: the publicUrl with the path and query received (the publicUrl's path already ending with the
// path received, it is the whole URL HubSpot was given and only the query is added), else https://<Host><path?query>;
// then the percent-encodings HubSpot's table lists are decoded, and no others (the hex digits in either case).
function hubspotUri(base: string | undefined, req: VerifyRequest): string | undefined {
  const q = req.url.indexOf('?');
  const path = q < 0 ? req.url : req.url.slice(0, q);
  const query = q < 0 ? '' : req.url.slice(q);
  let uri: string;
  if (base !== undefined)
    uri = path !== '' && path !== '/' && base.endsWith(path) ? base + query : base.replace(/\/+$/, '') + req.url;
  else {
    const host = headerOf(req.headers, 'host');
    if (host === undefined) return undefined;
    uri = `https://${host}${req.url}`;
  }
  return uri.replace(HUBSPOT_DECODED, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));
}
