import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, beforeEach, describe, it } from 'node:test';
import { CredentialsError, UsageError } from '../../src/errors.js';
import { startEmulator, type Emulator } from '../../src/sandbox/emulator.js';
import {
  buildDefaultBody,
  MAX_RECEIVER_MESSAGE,
  receiverMessage,
  renderTemplate,
  WebhookSink,
} from '../../src/sinks/webhook/sink.js';
import { CANARY, fastClient, item, openSinkFor } from './helpers.js';

const lead = {
  email: 'ana@x.com',
  phone: '+5511987654321',
  name: 'Ana Lee',
  firstName: 'Ana',
  lastName: 'Lee',
  source: 'fb',
  custom: { plan: 'pro' },
};

describe('webhook body', () => {
  it('default body is snake_case without empty fields', () => {
    assert.deepEqual(buildDefaultBody('k1', { email: 'a@x.com', company: '', firstName: 'A' }), {
      event_key_hash: 'k1',
      lead: { email: 'a@x.com', first_name: 'A' },
    });
  });

  it('custom fields come first, without empty ones, and a standard field of the same name wins', () => {
    const body = buildDefaultBody('k1', {
      email: 'a@x.com',
      phone: '',
      lastName: 'Lima',
      source: 'fb',
      custom: { plan: 'pro', email: 'other@x.com', note: '', source: 'custom' },
    });
    assert.deepEqual(body, {
      event_key_hash: 'k1',
      lead: { plan: 'pro', email: 'a@x.com', source: 'fb', last_name: 'Lima' },
    });
    // Key order, as a JSONL line or a webhook body shows it: custom fields in their order, then the standard ones.
    assert.deepEqual(Object.keys(body.lead as object), ['plan', 'email', 'source', 'last_name']);
  });

  it('templates substitute whole values, inline values, and drop missing ones', () => {
    const out = renderTemplate(
      {
        e: '{{lead.email}}',
        who: 'Lead {{lead.first_name}} ({{lead.company}})',
        c: '{{lead.company}}',
        k: '{{downstream_key}}',
        arr: ['{{lead.phone}}', '{{lead.nothing}}'],
        plan: '{{lead.custom.plan}}',
        n: 3,
      },
      'dk',
      lead,
    );
    assert.deepEqual(out, {
      e: 'ana@x.com',
      who: 'Lead Ana ()',
      k: 'dk',
      arr: ['+5511987654321', null],
      plan: 'pro',
      n: 3,
    });
  });
});

describe('webhook sink against the emulator', () => {
  let emu: Emulator;
  before(async () => {
    emu = await startEmulator({ webhook: { secret: CANARY } });
  });
  after(() => emu.close());
  beforeEach(() => {
    emu.reset();
    emu.configureWebhook({ secret: CANARY, honourIdempotencyKey: false });
  });

  it('posts a signed body the receiver verifies, with the Idempotency-Key', async () => {
    const { client } = fastClient();
    const s = new WebhookSink({ url: `${emu.url}/webhook`, http: client, env: { LEADLEDGER_WEBHOOK_SECRET: CANARY } });
    const out = await s.send([item(1, lead)]);
    assert.deepEqual(out, [{ kind: 'created', crmId: 'wh_1' }]);
    const got = emu.webhookReceived().deliveries[0];
    assert.equal(got?.idempotencyKey, item(1, lead).downstreamKey);
    assert.deepEqual(got?.body, buildDefaultBody(item(1, lead).downstreamKey, lead));
    await s.close();
  });

  it('a wrong secret is a credentials error that does not show the secret', async () => {
    const { client } = fastClient();
    const s = new WebhookSink({
      url: `${emu.url}/hooks/leads`,
      http: client,
      env: { LEADLEDGER_WEBHOOK_SECRET: `${CANARY}x` },
    });
    await assert.rejects(
      s.send([item(1, lead)]),
      (err: unknown) => err instanceof CredentialsError && !err.message.includes(CANARY),
    );
    await s.close();
  });

  it('template, static headers and a custom id path', async () => {
    const { client } = fastClient();
    const s = new WebhookSink({
      url: `${emu.url}/hooks/x`,
      http: client,
      env: { HOOK_SECRET: CANARY },
      config: {
        template: { contact: { mail: '{{lead.email}}' }, ref: '{{downstream_key}}' },
        headers: { 'x-tenant': 't1' },
        secretEnv: 'HOOK_SECRET',
        idPath: 'id',
      },
    });
    const out = await s.send([item(1, lead)]);
    assert.equal(out[0]?.kind, 'created');
    assert.deepEqual(emu.webhookReceived().deliveries[0]?.body, {
      contact: { mail: 'ana@x.com' },
      ref: item(1, lead).downstreamKey,
    });
    await s.close();
  });

  it('commit-then-drop against a receiver honouring Idempotency-Key stores once', async () => {
    emu.configureWebhook({ honourIdempotencyKey: true });
    emu.setFaults({ script: ['commit-then-drop'] });
    const { client } = fastClient();
    const s = new WebhookSink({
      url: `${emu.url}/webhook`,
      http: client,
      env: { LEADLEDGER_WEBHOOK_SECRET: CANARY },
      config: { honoursIdempotencyKey: true },
    });
    assert.equal(s.capabilities.honoursIdempotencyKey, true);
    const out = await s.send([item(1, lead)]);
    assert.deepEqual(out, [{ kind: 'created', crmId: 'wh_1' }]);
    assert.equal(emu.webhookReceived().deliveries.length, 1);
    assert.equal(emu.webhookReceived().requests, 2);
    await s.close();
  });

  it('503 until retries run out: failed retryable; a 404 is permanent', async () => {
    emu.setFaults({ outage: true });
    const { client } = fastClient({ maxRetries: 1 });
    const s = new WebhookSink({ url: `${emu.url}/webhook`, http: client, env: { LEADLEDGER_WEBHOOK_SECRET: CANARY } });
    const [o] = await s.send([item(1, lead)]);
    assert.equal(o?.kind === 'failed' && o.permanent, false);
    emu.setFaults({});
    const s2 = new WebhookSink({
      url: `${emu.url}/nowhere`,
      http: fastClient().client,
      env: { LEADLEDGER_WEBHOOK_SECRET: CANARY },
    });
    const [p] = await s2.send([item(2, lead)]);
    assert.equal(p?.kind === 'failed' && p.permanent, true);
    await s.close();
    await s2.close();
  });

  it("the URL's query values never reach its description or an echoed error", async () => {
    const s = new WebhookSink({
      url: `${emu.url}/nowhere?key=SECRET789`,
      http: fastClient().client,
      env: { LEADLEDGER_WEBHOOK_SECRET: CANARY },
    });
    assert.equal(s.describe(), `webhook at ${emu.url}/nowhere?redacted`);
    const [o] = await s.send([item(1, lead)]);
    const reason = o?.kind === 'failed' ? o.reason : '';
    assert.match(reason, /^HTTP 404: .*no route POST \/nowhere\?key=/);
    assert.ok(!reason.includes('SECRET789'), reason);
    await s.close();
  });

  it('refuses plain http to a non-loopback host unless allowed', async () => {
    await assert.rejects(openSinkFor('webhook', { url: 'http://example.com/hook' }, { env: {} }), UsageError);
    const ok = await openSinkFor(
      'webhook',
      { url: 'http://example.com/hook' },
      { env: {}, transport: { allowInsecure: true } },
    );
    assert.equal(ok.capabilities.maxBatch, 1);
    await ok.close?.();
    for (const url of ['http://127.0.0.5:9/x', 'http://localhost:9/x', 'http://[::1]:9/x', 'https://example.com/x']) {
      const s = await openSinkFor('webhook', { url }, { env: {} });
      await s.close?.();
    }
    await assert.rejects(openSinkFor('webhook', {}, { env: {} }), UsageError);
  });
});

describe('webhook refusals', () => {
  it('the message of a JSON error body, else its text; whitespace collapsed', () => {
    const same = (t: string) => t;
    const said = (body: unknown) => receiverMessage(JSON.stringify(body), body, same);
    assert.equal(said({ message: 'no such list' }), 'no such list');
    assert.equal(said({ error: 'blocked domain' }), 'blocked domain');
    assert.equal(said({ error: { message: 'in progress', code: 7 } }), 'in progress');
    assert.equal(said({ error_description: 'bad', detail: 'x' }), 'bad');
    assert.equal(said({ title: 'Conflict' }), 'Conflict');
    assert.equal(said({ errors: [{ message: 'email taken' }] }), 'email taken');
    assert.equal(said({ errors: ['first'] }), 'first');
    assert.equal(said({ code: 7 }), '{"code":7}');
    assert.equal(receiverMessage('<h1>Conflict</h1>\n\n  try later', undefined, same), '<h1>Conflict</h1> try later');
  });

  it('a 409 quotes the receiver, its secrets redacted before the cut, at most MAX_RECEIVER_MESSAGE characters', async () => {
    // The receiver echoes the signing secret at the very place the message is cut: a cut before the redaction
    // would show its first characters.
    const pad = 'x'.repeat(MAX_RECEIVER_MESSAGE - 10);
    const server = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        res.writeHead(409, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ message: `refused ${pad} ${CANARY} ${'y'.repeat(5000)}` }));
      });
    });
    await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
    try {
      const { port } = server.address() as AddressInfo;
      const s = new WebhookSink({
        url: `http://127.0.0.1:${port}/hook`,
        http: fastClient().client,
        env: { LEADLEDGER_WEBHOOK_SECRET: CANARY },
      });
      const [o] = await s.send([item(1, lead)]);
      assert.equal(o?.kind, 'failed');
      const f = o as { permanent: boolean; reason: string; status?: number };
      assert.equal(f.permanent, false);
      assert.equal(f.status, 409);
      assert.ok(!f.reason.includes(CANARY.slice(0, 8)), f.reason);
      assert.ok(f.reason.startsWith(`HTTP 409: refused ${pad} `), f.reason);
      assert.equal(f.reason.length, 'HTTP 409: '.length + MAX_RECEIVER_MESSAGE);
      assert.ok(f.reason.endsWith('…'));
      await s.close();
    } finally {
      server.close();
    }
  });
});
