// Endpoints declared in the config with their source and signature, as a team replacing its handler writes them:
// a Typeform endpoint (HMAC-SHA256, base64, Typeform-Signature: sha256=...) and a Standard Webhooks one. A request
// that is not signed right is 401, counted, and leaves nothing in the ledger or the archive; the secrets never
// appear in the log, the metrics, the archive or the ledger.
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import Database from 'better-sqlite3';
import { emulator } from '../helpers/emulator.js';
import { post, startServe, waitFor } from '../helpers/serve.js';
import { tmpDir } from '../helpers/tmp.js';

const TYPEFORM_SECRET = 'typeform-CANARY-3f9a1c';
// A Standard Webhooks secret: whsec_ and the key's bytes in base64.
const SW_KEY = Buffer.from('standard-webhooks-CANARY-key-7b2e');
const SW_SECRET = `whsec_${SW_KEY.toString('base64')}`;

/** A Typeform delivery (https://www.typeform.com/developers/webhooks/example-payload/), invented people. */
function typeformBody(eventId: string, email: string): string {
  return JSON.stringify({
    event_id: eventId,
    event_type: 'form_response',
    form_response: {
      form_id: 'lT4Z3j',
      submitted_at: '2026-12-04T10:00:00Z',
      definition: { id: 'lT4Z3j', title: 'Contact', fields: [] },
      answers: [
        { type: 'email', email, field: { id: 'f1', type: 'email', ref: 'email' } },
        { type: 'text', text: 'Júlia Prado', field: { id: 'f2', type: 'short_text', ref: 'name' } },
      ],
    },
  });
}

const typeformSig = (body: string, secret = TYPEFORM_SECRET) =>
  'sha256=' + createHmac('sha256', secret).update(body).digest('base64');

function standardHeaders(id: string, body: string, at = Math.floor(Date.now() / 1000), key = SW_KEY) {
  const sig = createHmac('sha256', key).update(`${id}.${at}.${body}`).digest('base64');
  return { 'webhook-id': id, 'webhook-timestamp': String(at), 'webhook-signature': `v1,${sig}` };
}

async function setup() {
  const dir = tmpDir();
  const emu = await emulator();
  writeFileSync(join(dir, 'standard.key'), SW_SECRET + '\n', { mode: 0o600 });
  writeFileSync(
    join(dir, 'leadledger.config.json'),
    JSON.stringify({
      sink: 'hubspot',
      serve: {
        endpoints: {
          typeform: {
            source: 'typeform',
            signature: {
              scheme: 'hmac',
              header: 'Typeform-Signature',
              prefix: 'sha256=',
              encoding: 'base64',
              secretEnv: 'TYPEFORM_SECRET',
            },
          },
          app: { source: 'generic', signature: { scheme: 'standard-webhooks', secretFile: 'standard.key' } },
        },
      },
    }),
  );
  // Started from another folder: the config (and the secret file it names beside it) is found by --config.
  const srv = await startServe(
    [
      '--config',
      join(dir, 'leadledger.config.json'),
      '--hubspot-url',
      emu.url,
      '--ledger',
      join(dir, 'ledger.db'),
      '--port',
      '0',
      '--archive',
      join(dir, 'archive'),
    ],
    { env: { HUBSPOT_TOKEN: 'hub-CANARY-token', TYPEFORM_SECRET }, cwd: tmpDir() },
  );
  return { dir, emu, srv };
}

test('signed endpoints: a valid signature is accepted and delivered; a forged, tampered or stale one is 401 and leaves nothing', async () => {
  const { dir, emu, srv } = await setup();
  const tf = `${srv.url}/hooks/typeform`;
  const body = typeformBody('tf-1', 'julia@example.com');
  const ok = await post(tf, body, { 'Typeform-Signature': typeformSig(body) });
  assert.equal(ok.status, 200, JSON.stringify(ok.json));
  assert.equal(ok.json.status, 'accepted');
  // The same delivery again (Typeform retries): already processed.
  assert.equal((await post(tf, body, { 'Typeform-Signature': typeformSig(body) })).json.status, 'already_processed');

  const forged = typeformBody('tf-2', 'mallory@example.com');
  const refused = [
    await post(tf, forged, { 'Typeform-Signature': typeformSig(forged, 'wrong-secret') }),
    await post(tf, forged, {}),
    await post(tf, forged.replace('mallory', 'mallor1'), { 'Typeform-Signature': typeformSig(forged) }),
    await post(tf, forged, { 'Typeform-Signature': 'sha256=***' }),
  ];
  for (const r of refused) assert.equal(r.status, 401, JSON.stringify(r.json));

  const app = `${srv.url}/hooks/app`;
  const ev = JSON.stringify({ email: 'rui@example.com', name: 'Rui' });
  const good = await post(app, ev, standardHeaders('msg_1', ev));
  assert.equal(good.status, 200, JSON.stringify(good.json));
  assert.deepEqual(good.json.events, [{ key: 'msg_1', status: 'accepted' }]);
  // Replayed with the same id and a valid signature: answered as the repeat it is, sent once.
  assert.equal((await post(app, ev, standardHeaders('msg_1', ev))).json.status, 'already_processed');
  const stale = await post(app, ev, standardHeaders('msg_2', ev, Math.floor(Date.now() / 1000) - 3600));
  assert.equal(stale.status, 401);
  assert.match(String(stale.json.error), /stale/);
  const wrongKey = await post(app, ev, standardHeaders('msg_3', ev, undefined, Buffer.from('another key')));
  assert.equal(wrongKey.status, 401);

  await waitFor('both people delivered', () => emu.contacts().length === 2);
  const metrics = await (await fetch(`${srv.url}/metrics`)).text();
  assert.match(metrics, /leadledger_serve_signature_failures_total\{endpoint="typeform",reason="mismatch"\} [1-9]/);
  assert.match(metrics, /leadledger_serve_signature_failures_total\{endpoint="typeform",reason="missing"\} 1/);
  assert.match(metrics, /leadledger_serve_signature_failures_total\{endpoint="app",reason="stale"\} 1/);
  assert.equal(await srv.stop(), 0);

  const emails = emu
    .contacts()
    .map((c) => c.properties.email)
    .sort();
  assert.deepEqual(emails, ['julia@example.com', 'rui@example.com']);
  const db = new Database(join(dir, 'ledger.db'), { readonly: true });
  const keys = (db.prepare('SELECT key FROM events ORDER BY key').all() as Array<{ key: string }>).map((r) => r.key);
  const dump =
    JSON.stringify(db.prepare('SELECT * FROM events').all()) + JSON.stringify(db.prepare('SELECT * FROM runs').all());
  db.close();
  assert.deepEqual(keys, ['msg_1', 'tf-1'], 'nothing of a refused request is recorded');
  const archive = readdirSync(join(dir, 'archive'))
    .map((f) => readFileSync(join(dir, 'archive', f), 'utf8'))
    .join('');
  assert.equal(archive.trim().split('\n').length, 4, 'the archive holds the 4 accepted requests only');
  for (const secret of [TYPEFORM_SECRET, SW_SECRET, SW_KEY.toString('base64'), 'hub-CANARY-token', 'typeform-CANARY'])
    for (const [what, text] of [
      ['log', srv.lines().join('\n') + srv.stderr()],
      ['archive', archive],
      ['ledger', dump],
      ['metrics', metrics],
    ])
      assert.ok(!text!.includes(secret), `${what} holds a secret`);
  assert.doesNotMatch(archive, /typeform-signature|webhook-signature/i, 'no signature header is archived');
});

test('a secret that cannot be read stops the receiver before it listens, naming where it looked and not the value', async () => {
  const dir = tmpDir();
  writeFileSync(
    join(dir, 'leadledger.config.json'),
    JSON.stringify({
      sink: 'jsonl',
      serve: { endpoints: { tf: { signature: { scheme: 'hmac', header: 'X-Sig', secretEnv: 'NOT_SET_ANYWHERE' } } } },
    }),
  );
  await assert.rejects(
    startServe(['--output', join(dir, 'out.jsonl'), '--ledger', join(dir, 'l.db'), '--port', '0'], { cwd: dir }),
    /NOT_SET_ANYWHERE/,
  );
});
