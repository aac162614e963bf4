// The receiver's signature checks, scheme by scheme. Every expected signature here is computed with node:crypto as the
// sender's documentation says, never by the module under test; every refusal is checked for its reason and for a
// detail that holds neither the secret nor the signature that was expected.
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import type { IncomingHttpHeaders } from 'node:http';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { UsageError } from '../../src/errors.js';
import {
  makeVerifier,
  resolveSecret,
  secretHeaders,
  type SignatureConfig,
  type VerifyRequest,
  type VerifyResult,
} from '../../src/serve/signatures.js';
import { tmpDir } from '../helpers/tmp.js';

const WHERE = 'endpoint "test"';
const NOW_MS = 1_767_225_600_000; // 2026-01-01T00:00:00Z: a fixed clock, no wall time anywhere
const NOW_S = NOW_MS / 1000;
const BODY = Buffer.from('{"type":"lead.created","data":{"email":"ana@example.com","name":"Ana Lima"}}');

function request(headers: IncomingHttpHeaders, over: Partial<VerifyRequest> = {}): VerifyRequest {
  return { method: 'POST', url: '/hooks/test', headers, body: BODY, now: NOW_MS, ...over };
}

function hmac(algorithm: string, key: string | Buffer, ...parts: (string | Buffer)[]): Buffer {
  const h = createHmac(algorithm, key);
  for (const p of parts) h.update(p);
  return h.digest();
}

/** A refusal for this reason, whose detail quotes none of `secrets` (the secret, the expected signature). */
function refused(result: VerifyResult, reason: string, ...secrets: string[]): string {
  assert.equal(result.ok, false, `expected a refusal (${reason}), got ok`);
  if (result.ok) throw new Error('unreachable');
  assert.equal(result.reason, reason, `reason: ${result.detail}`);
  assert.ok(result.detail.length > 0);
  for (const s of secrets) assert.ok(!result.detail.includes(s), `the detail quotes a secret: ${result.detail}`);
  return result.detail;
}

/** The UsageError thrown by fn: its message names `names` and quotes none of `secrets`. */
function usageError(fn: () => unknown, names: string[], secrets: string[] = []): string {
  let message = '';
  assert.throws(fn, (e: unknown) => {
    assert.ok(e instanceof UsageError, `not a UsageError: ${String(e)}`);
    message = e.message;
    return true;
  });
  for (const n of names) assert.ok(message.includes(n), `"${message}" does not name ${n}`);
  for (const s of secrets) assert.ok(!message.includes(s), `"${message}" quotes the secret`);
  return message;
}

// ---------------------------------------------------------------------------------------------------------------

describe('standard-webhooks', () => {
  // 24 random bytes, as the spec asks (24 to 64), written as the spec serializes them.
  const KEY = Buffer.from('5c1d8e2f9a0b47c6d3e8f1a2b4c6d8e0f2a4b6c8d0e2f4a6', 'hex');
  const SECRET = `whsec_${KEY.toString('base64')}`;
  const OTHER_KEY = Buffer.from('00112233445566778899aabbccddeeff0011223344556677', 'hex');
  const env = { SW_SECRET: SECRET };
  const cfg: SignatureConfig = { scheme: 'standard-webhooks', secretEnv: 'SW_SECRET' };
  const verify = makeVerifier(cfg, env, WHERE);
  const ID = 'msg_2KWPBgLlAfxdpx2AI54pPJ85f4W';

  function sign(key: Buffer, id: string, ts: number | string, body: Buffer = BODY): string {
    return `v1,${hmac('sha256', key, `${id}.${ts}.`, body).toString('base64')}`;
  }
  function headers(ts: number | string = NOW_S, signature = sign(KEY, ID, ts)): IncomingHttpHeaders {
    return { 'webhook-id': ID, 'webhook-timestamp': String(ts), 'webhook-signature': signature };
  }

  it("passes the spec's reference library test vector (whsec_ secret, and the same base64 without the prefix)", () => {
    // standard-webhooks/standard-webhooks libraries/javascript/src/webhook.test.ts, "sign function works".
    const vector = {
      secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
      id: 'msg_p5jXN8AQM9LWM0D4loKWxJek',
      timestamp: 1614265330,
      payload: '{"test": 2432232314}',
      signature: 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
    };
    // The vector agrees with the spec's algorithm as node:crypto computes it.
    const key = Buffer.from(vector.secret.slice('whsec_'.length), 'base64');
    assert.equal(sign(key, vector.id, vector.timestamp, Buffer.from(vector.payload)), vector.signature);
    for (const secret of [vector.secret, vector.secret.slice('whsec_'.length)]) {
      const v = makeVerifier(cfg, { SW_SECRET: secret }, WHERE);
      const at = { body: Buffer.from(vector.payload), now: vector.timestamp * 1000 };
      const h = {
        'webhook-id': vector.id,
        'webhook-timestamp': String(vector.timestamp),
        'webhook-signature': vector.signature,
      };
      assert.deepEqual(v(request(h, at)), { ok: true, id: vector.id });
      refused(v(request(h, { ...at, body: Buffer.from('{"test": 2432232315}') })), 'mismatch');
    }
  });

  it('accepts a valid request and gives its webhook-id', () => {
    assert.deepEqual(verify(request(headers())), { ok: true, id: ID });
  });

  it('refuses a signature made with another secret', () => {
    const expected = sign(KEY, ID, NOW_S).slice(3);
    refused(verify(request(headers(NOW_S, sign(OTHER_KEY, ID, NOW_S)))), 'mismatch', SECRET, expected);
  });

  it('refuses a tampered body, id or timestamp', () => {
    const expected = sign(KEY, ID, NOW_S).slice(3);
    refused(verify(request(headers(), { body: Buffer.from(BODY.toString().replace('Ana', 'Eve')) })), 'mismatch');
    refused(verify(request({ ...headers(), 'webhook-id': 'msg_other' })), 'mismatch', expected);
    refused(verify(request({ ...headers(), 'webhook-timestamp': String(NOW_S - 1) })), 'mismatch', expected);
  });

  it('names each missing header', () => {
    for (const name of ['webhook-id', 'webhook-timestamp', 'webhook-signature']) {
      const h = headers();
      delete h[name];
      assert.match(refused(verify(request(h)), 'missing'), new RegExp(name));
    }
    assert.match(refused(verify(request({})), 'missing'), /webhook-id, webhook-timestamp, webhook-signature/);
    refused(verify(request({ ...headers(), 'webhook-signature': '' })), 'missing');
  });

  it('refuses malformed headers without throwing', () => {
    const good = sign(KEY, ID, NOW_S);
    refused(verify(request({ ...headers(), 'webhook-timestamp': 'yesterday' })), 'malformed');
    refused(verify(request({ ...headers(), 'webhook-timestamp': '1.7e9' })), 'malformed');
    refused(verify(request({ ...headers(), 'webhook-timestamp': '-5' })), 'malformed');
    refused(verify(request({ ...headers(), 'webhook-signature': good.slice(3) })), 'malformed');
    // Only v1 is checked: an ed25519 entry or an unknown version, even holding the right bytes, proves nothing.
    refused(verify(request({ ...headers(), 'webhook-signature': `v1a,${good.slice(3)}` })), 'malformed');
    refused(verify(request({ ...headers(), 'webhook-signature': `v2,${good.slice(3)}` })), 'malformed');
    refused(verify(request({ ...headers(), 'webhook-signature': 'v1,' })), 'mismatch');
    refused(verify(request({ ...headers(), 'webhook-signature': 'v1,%%%not base64%%%' })), 'mismatch');
  });

  it('refuses a timestamp more than 5 minutes old or ahead, and accepts one at the edge', () => {
    const old = refused(verify(request(headers(NOW_S - 301))), 'stale');
    assert.match(old, /301 s old, outside the 300 s tolerance/);
    assert.match(refused(verify(request(headers(NOW_S + 301))), 'stale'), /301 s in the future/);
    assert.equal(verify(request(headers(NOW_S - 300))).ok, true);
    assert.equal(verify(request(headers(NOW_S + 300))).ok, true);
  });

  it('takes the configured tolerance', () => {
    const v = makeVerifier({ ...cfg, toleranceSec: 10 }, env, WHERE);
    refused(v(request(headers(NOW_S - 11))), 'stale');
    assert.equal(v(request(headers(NOW_S - 10))).ok, true);
  });

  it('a forged request with an old timestamp is a mismatch, not "stale" (stale means signed, but late)', () => {
    refused(verify(request(headers(NOW_S - 3600, sign(OTHER_KEY, ID, NOW_S - 3600)))), 'mismatch');
  });

  it('accepts any matching signature of several (key rotation), ignoring the others', () => {
    const list = [sign(OTHER_KEY, ID, NOW_S), `v1a,${'A'.repeat(86)}==`, sign(KEY, ID, NOW_S)].join(' ');
    assert.deepEqual(verify(request(headers(NOW_S, list))), { ok: true, id: ID });
    // The receiver's secret is the old one, the sender signs with old and new.
    const old = makeVerifier(cfg, { SW_SECRET: `whsec_${OTHER_KEY.toString('base64')}` }, WHERE);
    assert.equal(old(request(headers(NOW_S, list))).ok, true);
    refused(verify(request(headers(NOW_S, `${sign(OTHER_KEY, ID, NOW_S)} v1,AAAA`))), 'mismatch');
  });

  it('refuses, at start, a secret that is not whsec_ + base64, or an ed25519 key, without quoting it', () => {
    for (const bad of ['whsec_not*base64!', 'whsec_QQ=x', 'c2VjcmV0#']) {
      usageError(() => makeVerifier(cfg, { SW_SECRET: bad }, WHERE), [WHERE, 'SW_SECRET'], [bad]);
    }
    usageError(() => makeVerifier(cfg, { SW_SECRET: 'whsec_' }, WHERE), [WHERE, 'SW_SECRET']);
    const pk = `whpk_${KEY.toString('base64')}`;
    usageError(() => makeVerifier(cfg, { SW_SECRET: pk }, WHERE), ['SW_SECRET', 'ed25519'], [pk]);
  });
});

// ---------------------------------------------------------------------------------------------------------------

describe('hmac', () => {
  const SECRET = "It's a Secret to Everybody";
  const env = { HOOK_SECRET: SECRET };

  describe('GitHub: X-Hub-Signature-256: sha256=<hex>', () => {
    const cfg: SignatureConfig = {
      scheme: 'hmac',
      header: 'X-Hub-Signature-256',
      prefix: 'sha256=',
      secretEnv: 'HOOK_SECRET',
    };
    const verify = makeVerifier(cfg, env, WHERE);
    const hex = hmac('sha256', SECRET, BODY).toString('hex');

    it("passes GitHub's documented example", () => {
      // docs.github.com, "Validating webhook deliveries", "Testing the webhook payload validation".
      const v = makeVerifier(cfg, { HOOK_SECRET: "It's a Secret to Everybody" }, WHERE);
      const sig = 'sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17';
      assert.equal(hmac('sha256', "It's a Secret to Everybody", 'Hello, World!').toString('hex'), sig.slice(7));
      assert.deepEqual(v(request({ 'x-hub-signature-256': sig }, { body: Buffer.from('Hello, World!') })), {
        ok: true,
      });
    });

    it('accepts a valid signature (hex in either case)', () => {
      assert.deepEqual(verify(request({ 'x-hub-signature-256': `sha256=${hex}` })), { ok: true });
      assert.equal(verify(request({ 'x-hub-signature-256': `sha256=${hex.toUpperCase()}` })).ok, true);
    });

    it('refuses another secret, a tampered body, a missing or malformed header', () => {
      const other = hmac('sha256', 'another secret', BODY).toString('hex');
      refused(verify(request({ 'x-hub-signature-256': `sha256=${other}` })), 'mismatch', SECRET, hex);
      const tampered = { body: Buffer.concat([BODY, Buffer.from(' ')]) };
      refused(verify(request({ 'x-hub-signature-256': `sha256=${hex}` }, tampered)), 'mismatch', SECRET, hex);
      assert.match(refused(verify(request({ 'x-hub-signature': `sha1=${hex}` })), 'missing'), /X-Hub-Signature-256/);
      refused(verify(request({ 'x-hub-signature-256': hex })), 'malformed', SECRET);
      refused(verify(request({ 'x-hub-signature-256': 'sha256=not-hex' })), 'malformed');
      refused(verify(request({ 'x-hub-signature-256': `sha256=${hex.slice(0, 40)}` })), 'mismatch', hex);
    });

    it('says to set the prefix when the header has one the config does not', () => {
      const noPrefix = makeVerifier({ ...cfg, prefix: undefined }, env, WHERE);
      assert.match(refused(noPrefix(request({ 'x-hub-signature-256': `sha256=${hex}` })), 'malformed'), /prefix/);
    });
  });

  describe('Typeform: Typeform-Signature: sha256=<base64>', () => {
    const cfg: SignatureConfig = {
      scheme: 'hmac',
      header: 'Typeform-Signature',
      prefix: 'sha256=',
      encoding: 'base64',
      secretEnv: 'HOOK_SECRET',
    };
    const verify = makeVerifier(cfg, env, WHERE);
    const b64 = hmac('sha256', SECRET, BODY).toString('base64');

    it('accepts a valid signature, refuses another secret, a tampered body, hex, a missing header', () => {
      assert.deepEqual(verify(request({ 'typeform-signature': `sha256=${b64}` })), { ok: true });
      const other = hmac('sha256', 'nope', BODY).toString('base64');
      refused(verify(request({ 'typeform-signature': `sha256=${other}` })), 'mismatch', SECRET, b64);
      refused(verify(request({ 'typeform-signature': `sha256=${b64}` }, { body: Buffer.from('{}') })), 'mismatch');
      const hex = hmac('sha256', SECRET, BODY).toString('hex');
      refused(verify(request({ 'typeform-signature': `sha256=${hex}` })), 'mismatch', b64);
      refused(verify(request({ 'typeform-signature': `sha256=${b64.slice(0, 10)}!!` })), 'malformed');
      refused(verify(request({})), 'missing');
    });
  });

  it('sha1 and sha512, with and without a prefix', () => {
    for (const algorithm of ['sha1', 'sha512'] as const) {
      const v = makeVerifier(
        { scheme: 'hmac', header: 'X-Signature', algorithm, secretEnv: 'HOOK_SECRET' },
        env,
        WHERE,
      );
      const good = hmac(algorithm, SECRET, BODY).toString('hex');
      assert.equal(v(request({ 'x-signature': good })).ok, true, algorithm);
      const sha256 = hmac('sha256', SECRET, BODY).toString('hex');
      refused(v(request({ 'x-signature': sha256 })), 'mismatch', good);
    }
  });

  it('refuses, at start, a config without a header name, or with a bad one', () => {
    usageError(
      () => makeVerifier({ scheme: 'hmac', secretEnv: 'HOOK_SECRET' } as never, env, WHERE),
      [WHERE, 'header'],
    );
    usageError(
      () => makeVerifier({ scheme: 'hmac', header: 'X Sig:', secretEnv: 'HOOK_SECRET' }, env, WHERE),
      ['X Sig:'],
    );
    usageError(
      () =>
        makeVerifier(
          { scheme: 'hmac', header: 'X-Sig', algorithm: 'md5', secretEnv: 'HOOK_SECRET' } as never,
          env,
          WHERE,
        ),
      ['sha256'],
    );
  });
});

// ---------------------------------------------------------------------------------------------------------------

describe('stripe', () => {
  const SECRET = 'whsec_test_5Xq2b1Zr8pLmN0vW3kYd';
  const OTHER = 'whsec_test_rolled_9aB7cD5eF3gH1';
  const env = { STRIPE_WEBHOOK_SECRET: SECRET };
  const cfg: SignatureConfig = { scheme: 'stripe', secretEnv: 'STRIPE_WEBHOOK_SECRET' };
  const verify = makeVerifier(cfg, env, WHERE);

  // Stripe keys its HMAC with the whole secret as text, whsec_ included.
  function sign(secret: string, t: number, body: Buffer = BODY): string {
    return hmac('sha256', secret, `${t}.`, body).toString('hex');
  }
  const stripeSig = (value: string): IncomingHttpHeaders => ({ 'stripe-signature': value });

  it('accepts a valid request (with a test-mode v0 beside it)', () => {
    const s = sign(SECRET, NOW_S);
    assert.deepEqual(verify(request(stripeSig(`t=${NOW_S},v1=${s}`))), { ok: true });
    assert.equal(verify(request(stripeSig(`t=${NOW_S},v1=${s},v0=${sign('x', NOW_S)}`))).ok, true);
  });

  it('keys with the whole whsec_ text, not its base64 decoding', () => {
    const decoded = Buffer.from(SECRET.slice('whsec_'.length), 'base64');
    const s = hmac('sha256', decoded, `${NOW_S}.`, BODY).toString('hex');
    refused(verify(request(stripeSig(`t=${NOW_S},v1=${s}`))), 'mismatch');
  });

  it('accepts any of several v1 signatures (a rolled secret)', () => {
    const header = `t=${NOW_S},v1=${sign(OTHER, NOW_S)},v1=${sign(SECRET, NOW_S)}`;
    assert.equal(verify(request(stripeSig(header))).ok, true);
    const rolled = makeVerifier(cfg, { STRIPE_WEBHOOK_SECRET: OTHER }, WHERE);
    assert.equal(rolled(request(stripeSig(header))).ok, true);
  });

  it('refuses another secret, a tampered body or timestamp, a v0-only match', () => {
    const s = sign(SECRET, NOW_S);
    refused(verify(request(stripeSig(`t=${NOW_S},v1=${sign(OTHER, NOW_S)}`))), 'mismatch', SECRET, s);
    refused(verify(request(stripeSig(`t=${NOW_S},v1=${s}`), { body: Buffer.from('{}') })), 'mismatch', s);
    refused(verify(request(stripeSig(`t=${NOW_S - 1},v1=${s}`))), 'mismatch', s);
    // v0 is never accepted, even holding the right signature: no downgrade.
    refused(verify(request(stripeSig(`t=${NOW_S},v0=${s},v1=${sign(OTHER, NOW_S)}`))), 'mismatch', s);
    refused(verify(request(stripeSig(`t=${NOW_S},v0=${s}`))), 'malformed', s);
  });

  it('refuses a missing or malformed header', () => {
    assert.match(refused(verify(request({})), 'missing'), /Stripe-Signature/);
    const s = sign(SECRET, NOW_S);
    refused(verify(request(stripeSig(`v1=${s}`))), 'malformed');
    refused(verify(request(stripeSig(`t=now,v1=${s}`))), 'malformed');
    refused(verify(request(stripeSig(`t=${NOW_S},t=${NOW_S + 1},v1=${s}`))), 'malformed');
    refused(verify(request(stripeSig(`t=${NOW_S}`))), 'malformed');
    refused(verify(request(stripeSig('garbage'))), 'malformed');
  });

  it('refuses a timestamp outside the tolerance, old or ahead', () => {
    assert.match(
      refused(verify(request(stripeSig(`t=${NOW_S - 301},v1=${sign(SECRET, NOW_S - 301)}`))), 'stale'),
      /301 s old/,
    );
    refused(verify(request(stripeSig(`t=${NOW_S + 301},v1=${sign(SECRET, NOW_S + 301)}`))), 'stale');
    assert.equal(verify(request(stripeSig(`t=${NOW_S - 299},v1=${sign(SECRET, NOW_S - 299)}`))).ok, true);
    const v = makeVerifier({ ...cfg, toleranceSec: 30 }, env, WHERE);
    refused(v(request(stripeSig(`t=${NOW_S - 31},v1=${sign(SECRET, NOW_S - 31)}`))), 'stale');
  });

  it('warns when the secret does not look like an endpoint signing secret', () => {
    const warnings: string[] = [];
    const key = 'sk_live_not_a_signing_secret';
    makeVerifier(cfg, { STRIPE_WEBHOOK_SECRET: key }, WHERE, (w) => warnings.push(w));
    assert.equal(warnings.length, 1);
    assert.match(warnings[0]!, /STRIPE_WEBHOOK_SECRET.*whsec_/);
    assert.ok(!warnings[0]!.includes(key));
    makeVerifier(cfg, env, WHERE, (w) => warnings.push(w));
    assert.equal(warnings.length, 1);
  });
});

// ---------------------------------------------------------------------------------------------------------------

describe('hubspot-v3', () => {
  const SECRET = 'c8b2e5f0-3a1d-4e7b-9c6f-2d4a8b1e0f37';
  const env = { HUBSPOT_CLIENT_SECRET: SECRET };
  const cfg: SignatureConfig = { scheme: 'hubspot-v3', secretEnv: 'HUBSPOT_CLIENT_SECRET' };
  const verify = makeVerifier(cfg, env, WHERE);
  const TS = String(NOW_MS - 1500);

  // base64(HMAC-SHA256(client secret, method + uri + body + timestamp)), the uri as HubSpot decodes it.
  function sign(uri: string, ts = TS, method = 'POST', body: Buffer = BODY, secret = SECRET): string {
    return hmac('sha256', secret, `${method}${uri}`, body, ts).toString('base64');
  }
  function hs(signature: string, ts = TS, host = 'hooks.example.com'): IncomingHttpHeaders {
    return { host, 'x-hubspot-signature-v3': signature, 'x-hubspot-request-timestamp': ts };
  }

  it('accepts a request signed over https://<Host><path?query>', () => {
    const url = '/hooks/test?portalId=62515';
    assert.deepEqual(verify(request(hs(sign(`https://hooks.example.com${url}`)), { url })), { ok: true });
  });

  it('signs the URI with the listed percent-encodings decoded, and only those', () => {
    const url = '/hooks/test?email=ana%40example.com&q=a%2Cb%3Bc%3ad&name=Ana%20Lima';
    const decoded = 'https://hooks.example.com/hooks/test?email=ana@example.com&q=a,b;c:d&name=Ana%20Lima';
    assert.equal(verify(request(hs(sign(decoded)), { url })).ok, true);
    refused(verify(request(hs(sign(`https://hooks.example.com${url}`)), { url })), 'mismatch');
    refused(verify(request(hs(sign(decodeURIComponent(`https://hooks.example.com${url}`))), { url })), 'mismatch');
  });

  it('rebuilds the URI from publicUrl: an origin, a path prefix, or the whole URL HubSpot was given', () => {
    const url = '/hooks/test?x=1';
    const signed = 'https://example.com/leadledger/hooks/test?x=1';
    for (const publicUrl of [
      'https://example.com/leadledger',
      'https://example.com/leadledger/',
      'https://example.com/leadledger/hooks/test',
    ]) {
      const v = makeVerifier({ ...cfg, publicUrl }, env, WHERE);
      // The Host header a proxy passes on is not what HubSpot signed.
      assert.equal(v(request(hs(sign(signed), TS, '127.0.0.1:8080'), { url })).ok, true, publicUrl);
    }
    const origin = makeVerifier({ ...cfg, publicUrl: 'https://hooks.example.com/' }, env, WHERE);
    assert.equal(origin(request(hs(sign(`https://hooks.example.com${url}`), TS, 'x'), { url })).ok, true);
  });

  it('refuses another secret, a tampered body, another method or URL', () => {
    const uri = 'https://hooks.example.com/hooks/test';
    const good = sign(uri);
    refused(verify(request(hs(sign(uri, TS, 'POST', BODY, 'other-secret')))), 'mismatch', SECRET, good);
    refused(verify(request(hs(good), { body: Buffer.from('[]') })), 'mismatch', good);
    refused(verify(request(hs(good), { method: 'PUT' })), 'mismatch', good);
    refused(verify(request(hs(good), { url: '/hooks/test?x=1' })), 'mismatch', good);
    refused(verify(request(hs(good, String(Number(TS) + 1)))), 'mismatch', good);
  });

  it('refuses missing headers, a missing Host, a malformed timestamp', () => {
    const good = sign('https://hooks.example.com/hooks/test');
    assert.match(
      refused(verify(request({ host: 'h' })), 'missing'),
      /X-HubSpot-Signature-v3, X-HubSpot-Request-Timestamp/,
    );
    const noHost = hs(good);
    delete noHost.host;
    assert.match(refused(verify(request(noHost)), 'missing'), /Host.*publicUrl/);
    refused(verify(request(hs(good, `${NOW_S}.5`))), 'malformed');
    refused(verify(request(hs(good, 'Thu, 01 Jan 2026 00:00:00 GMT'))), 'malformed');
  });

  it('refuses a timestamp (in ms) more than 5 minutes old or ahead', () => {
    const uri = 'https://hooks.example.com/hooks/test';
    const old = String(NOW_MS - 301_000);
    assert.match(refused(verify(request(hs(sign(uri, old), old))), 'stale'), /301 s old/);
    const ahead = String(NOW_MS + 301_000);
    refused(verify(request(hs(sign(uri, ahead), ahead))), 'stale');
    const edge = String(NOW_MS - 300_000);
    assert.equal(verify(request(hs(sign(uri, edge), edge))).ok, true);
  });

  it('refuses, at start, a publicUrl that is not an http(s) URL', () => {
    usageError(() => makeVerifier({ ...cfg, publicUrl: 'hooks.example.com/x' }, env, WHERE), [WHERE, 'publicUrl']);
    usageError(() => makeVerifier({ ...cfg, publicUrl: 'ftp://example.com' }, env, WHERE), ['publicUrl']);
  });
});

// ---------------------------------------------------------------------------------------------------------------

describe('basic', () => {
  const PASSWORD = 'pa:ss wörd';
  const env = { HOOK_PASSWORD: PASSWORD };
  const verify = makeVerifier({ scheme: 'basic', username: 'typeform', secretEnv: 'HOOK_PASSWORD' }, env, WHERE);
  const auth = (user: string, password: string): IncomingHttpHeaders => ({
    authorization: `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`,
  });

  it('accepts the right user and password (a colon in the password is the password’s)', () => {
    assert.deepEqual(verify(request(auth('typeform', PASSWORD))), { ok: true });
    assert.equal(
      verify(request({ authorization: `basic ${Buffer.from(`typeform:${PASSWORD}`).toString('base64')}` })).ok,
      true,
    );
  });

  it('refuses a wrong password or user without saying which', () => {
    const a = refused(verify(request(auth('typeform', 'guess'))), 'mismatch', PASSWORD);
    const b = refused(verify(request(auth('admin', PASSWORD))), 'mismatch', PASSWORD);
    assert.equal(a, b);
    refused(verify(request(auth('typeform', `${PASSWORD}x`))), 'mismatch', PASSWORD);
    refused(verify(request(auth('', ''))), 'mismatch');
  });

  it('refuses a missing or malformed Authorization', () => {
    refused(verify(request({})), 'missing');
    refused(verify(request({ authorization: `Bearer ${PASSWORD}` })), 'malformed', PASSWORD);
    refused(verify(request({ authorization: 'Basic !!!' })), 'malformed');
    refused(verify(request({ authorization: `Basic ${Buffer.from('no-colon').toString('base64')}` })), 'malformed');
    refused(verify(request({ authorization: 'Basic' })), 'malformed');
  });

  it('refuses, at start, a missing user name or one with a colon', () => {
    usageError(() => makeVerifier({ scheme: 'basic', secretEnv: 'HOOK_PASSWORD' } as never, env, WHERE), ['username']);
    usageError(
      () => makeVerifier({ scheme: 'basic', username: 'a:b', secretEnv: 'HOOK_PASSWORD' }, env, WHERE),
      ['colon'],
    );
  });
});

// ---------------------------------------------------------------------------------------------------------------

describe('token', () => {
  const TOKEN = 'tok_8sK2mQ9vX4rB7nL1';
  const env = { HOOK_TOKEN: TOKEN };

  it('with a prefix: Authorization: Bearer <token>', () => {
    const v = makeVerifier(
      { scheme: 'token', header: 'Authorization', prefix: 'Bearer ', secretEnv: 'HOOK_TOKEN' },
      env,
      WHERE,
    );
    assert.deepEqual(v(request({ authorization: `Bearer ${TOKEN}` })), { ok: true });
    assert.equal(v(request({ authorization: `bearer ${TOKEN}` })).ok, true);
    refused(v(request({ authorization: 'Bearer tok_guess' })), 'mismatch', TOKEN);
    refused(v(request({ authorization: `Bearer ${TOKEN.slice(0, -1)}` })), 'mismatch', TOKEN);
    refused(v(request({ authorization: TOKEN })), 'malformed', TOKEN);
    refused(v(request({ authorization: `Basic ${TOKEN}` })), 'malformed', TOKEN);
    assert.match(refused(v(request({ 'x-webhook-token': TOKEN })), 'missing'), /Authorization/);
  });

  it('without a prefix: X-Webhook-Token: <token>', () => {
    const v = makeVerifier({ scheme: 'token', header: 'X-Webhook-Token', secretEnv: 'HOOK_TOKEN' }, env, WHERE);
    assert.deepEqual(v(request({ 'x-webhook-token': TOKEN })), { ok: true });
    refused(v(request({ 'x-webhook-token': `Bearer ${TOKEN}` })), 'mismatch', TOKEN);
    refused(v(request({ 'x-webhook-token': `${TOKEN}${TOKEN}` })), 'mismatch', TOKEN);
    refused(v(request({ 'x-webhook-token': 'x' })), 'mismatch', TOKEN);
    assert.match(refused(v(request({ authorization: `Bearer ${TOKEN}` })), 'missing'), /X-Webhook-Token/);
  });

  it('refuses, at start, a config without a header name', () => {
    usageError(() => makeVerifier({ scheme: 'token', header: '', secretEnv: 'HOOK_TOKEN' }, env, WHERE), ['header']);
  });
});

// ---------------------------------------------------------------------------------------------------------------

describe('none', () => {
  it('accepts every request', () => {
    assert.deepEqual(makeVerifier({ scheme: 'none' }, {}, WHERE)(request({})), { ok: true });
  });
});

describe('makeVerifier: the config, checked at start', () => {
  it('refuses an unknown scheme, naming it and the known ones', () => {
    usageError(() => makeVerifier({ scheme: 'svix' } as never, {}, WHERE), [WHERE, 'svix', 'standard-webhooks']);
    usageError(() => makeVerifier({} as never, {}, WHERE), [WHERE, 'hubspot-v3']);
  });

  it('refuses a scheme with neither or both of secretEnv and secretFile', () => {
    usageError(() => makeVerifier({ scheme: 'stripe' }, {}, WHERE), [WHERE, 'secretEnv', 'secretFile']);
    usageError(
      () => makeVerifier({ scheme: 'stripe', secretEnv: 'A', secretFile: '/x' }, { A: 'whsec_1' }, WHERE),
      ['not both'],
    );
  });

  it('refuses a tolerance that is not a positive number', () => {
    for (const toleranceSec of [0, -5, Number.NaN])
      usageError(
        () => makeVerifier({ scheme: 'stripe', secretEnv: 'S', toleranceSec }, { S: 'whsec_x' }, WHERE),
        ['toleranceSec'],
      );
  });

  it('reads the secret once, at start: a variable unset later changes nothing, one unset before fails at once', () => {
    const env: Record<string, string | undefined> = { T: 'first-token' };
    const v = makeVerifier({ scheme: 'token', header: 'X-Token', secretEnv: 'T' }, env, WHERE);
    env.T = 'second-token';
    assert.equal(v(request({ 'x-token': 'first-token' })).ok, true);
    refused(v(request({ 'x-token': 'second-token' })), 'mismatch');
    usageError(() => makeVerifier({ scheme: 'token', header: 'X-Token', secretEnv: 'UNSET' }, {}, WHERE), ['UNSET']);
  });

  it('never throws on odd requests: arrays, blanks, control bytes, a huge list', () => {
    const configs: [SignatureConfig, Record<string, string>][] = [
      [{ scheme: 'standard-webhooks', secretEnv: 'S' }, { S: `whsec_${Buffer.alloc(24, 7).toString('base64')}` }],
      [{ scheme: 'hmac', header: 'X-Sig', prefix: 'sha256=', secretEnv: 'S' }, { S: 's' }],
      [{ scheme: 'stripe', secretEnv: 'S' }, { S: 'whsec_s' }],
      [{ scheme: 'hubspot-v3', secretEnv: 'S' }, { S: 's' }],
      [{ scheme: 'basic', username: 'u', secretEnv: 'S' }, { S: 's' }],
      [{ scheme: 'token', header: 'X-Sig', secretEnv: 'S' }, { S: 's' }],
    ];
    const odd: IncomingHttpHeaders[] = [
      {},
      { 'webhook-id': ['a', 'b'], 'webhook-timestamp': [String(NOW_S)], 'webhook-signature': ['v1,x', 'v1,y'] },
      { 'x-sig': '   ', 'stripe-signature': ',,,=,t=,v1=', authorization: 'Basic =', host: '' },
      { 'x-sig': 'sha256=\u0000\u00ff', 'stripe-signature': `t=${'9'.repeat(40)},v1=zz`, authorization: 'Basic AA==' },
      {
        'webhook-id': 'x',
        'webhook-timestamp': String(NOW_S),
        'webhook-signature': Array(2000).fill('v1,AAAA').join(' '),
        'x-hubspot-signature-v3': 'x',
        'x-hubspot-request-timestamp': '1'.repeat(30),
      },
      { 'X-Sig': 'sha256=00', 'Stripe-Signature': 't=1' } as IncomingHttpHeaders,
    ];
    for (const [cfg, env] of configs) {
      const v = makeVerifier(cfg, env, WHERE);
      for (const headers of odd)
        for (const url of ['', '/', '/%zz?%%', 'http://evil/x'])
          assert.equal(v(request(headers, { url, body: Buffer.from([0xff, 0xfe, 0]) })).ok, false, cfg.scheme);
    }
  });
});

// ---------------------------------------------------------------------------------------------------------------

describe('resolveSecret', () => {
  const SECRET = 's3cr3t-value-7Hq';

  it('reads an environment variable, trimmed', () => {
    assert.equal(resolveSecret({ secretEnv: 'S' }, { S: `  ${SECRET}\n` }, WHERE), SECRET);
  });

  it('names a missing or empty variable, never its value', () => {
    assert.match(
      usageError(() => resolveSecret({ secretEnv: 'HOOK_SECRET' }, {}, WHERE), [WHERE, 'HOOK_SECRET']),
      /not set/,
    );
    const blank = ' \n\t ';
    assert.match(
      usageError(() => resolveSecret({ secretEnv: 'HOOK_SECRET' }, { HOOK_SECRET: blank }, WHERE), ['HOOK_SECRET']),
      /empty/,
    );
  });

  it('reads a file, trimmed, and warns (naming it) when its group or others may read it', () => {
    const dir = tmpDir();
    const file = join(dir, 'secret');
    writeFileSync(file, `${SECRET}\n`, { mode: 0o600 });
    chmodSync(file, 0o600);
    const warnings: string[] = [];
    assert.equal(
      resolveSecret({ secretFile: file }, {}, WHERE, (w) => warnings.push(w)),
      SECRET,
    );
    assert.deepEqual(warnings, []);
    chmodSync(file, 0o644);
    assert.equal(
      resolveSecret({ secretFile: file }, {}, WHERE, (w) => warnings.push(w)),
      SECRET,
    );
    if (process.platform !== 'win32') {
      assert.equal(warnings.length, 1);
      assert.ok(warnings[0]!.includes(file) && warnings[0]!.includes('chmod 600') && warnings[0]!.includes('0644'));
      assert.ok(!warnings[0]!.includes(SECRET));
      // Its group alone is enough to warn about.
      chmodSync(file, 0o640);
      resolveSecret({ secretFile: file }, {}, WHERE, (w) => warnings.push(w));
      assert.equal(warnings.length, 2);
      assert.ok(warnings[1]!.includes('0640'));
    }
  });

  it('names an empty file, a missing file and an unreadable one, never the content', () => {
    const dir = tmpDir();
    const empty = join(dir, 'empty');
    writeFileSync(empty, '\n  \n', { mode: 0o600 });
    assert.match(
      usageError(() => resolveSecret({ secretFile: empty }, {}, WHERE), [WHERE, empty]),
      /empty/,
    );
    const gone = join(dir, 'gone');
    assert.match(
      usageError(() => resolveSecret({ secretFile: gone }, {}, WHERE), [gone]),
      /no such file/,
    );
    // A directory cannot be read as a file, whoever runs the test (root reads a mode-000 file).
    const folder = join(dir, 'folder');
    mkdirSync(folder);
    assert.match(
      usageError(() => resolveSecret({ secretFile: folder }, {}, WHERE), [folder]),
      /directory/,
    );
  });

  it(
    'names a file it has no permission to read',
    { skip: process.getuid?.() === 0 || process.platform === 'win32' },
    () => {
      const dir = tmpDir();
      const locked = join(dir, 'locked');
      writeFileSync(locked, SECRET, { mode: 0o000 });
      chmodSync(locked, 0o000);
      assert.match(
        usageError(() => resolveSecret({ secretFile: locked }, {}, WHERE), [locked], [SECRET]),
        /permission/,
      );
    },
  );

  it('refuses both or neither reference', () => {
    usageError(() => resolveSecret({}, {}, WHERE), [WHERE, 'secretEnv', 'secretFile']);
    usageError(() => resolveSecret({ secretEnv: 'A', secretFile: '/a' }, { A: SECRET }, WHERE), ['not both'], [SECRET]);
  });
});

describe('secretHeaders', () => {
  it("holds every scheme's credential headers, and the configured one, lower-cased", () => {
    const always = [
      'authorization',
      'proxy-authorization',
      'cookie',
      'webhook-signature',
      'stripe-signature',
      'x-hubspot-signature',
      'x-hubspot-signature-v3',
      'x-hub-signature',
      'x-hub-signature-256',
      'typeform-signature',
    ];
    for (const cfg of [
      { scheme: 'none' },
      { scheme: 'stripe', secretEnv: 'S' },
      { scheme: 'hmac', header: 'X-Shopify-Hmac-Sha256', secretEnv: 'S' },
      { scheme: 'token', header: 'X-Webhook-Token', secretEnv: 'S' },
    ] as SignatureConfig[]) {
      const s = secretHeaders(cfg);
      for (const h of always) assert.ok(s.has(h), `${cfg.scheme}: ${h}`);
      for (const h of s) assert.equal(h, h.toLowerCase());
      assert.ok(!s.has('webhook-id') && !s.has('content-type'));
    }
    assert.ok(
      secretHeaders({ scheme: 'hmac', header: 'X-Shopify-Hmac-Sha256', secretEnv: 'S' }).has('x-shopify-hmac-sha256'),
    );
    assert.ok(secretHeaders({ scheme: 'token', header: 'X-Webhook-Token', secretEnv: 'S' }).has('x-webhook-token'));
  });
});
