// The run's circuit breaker in the HTTP client: connection-level failures in a row open it, any answer of the server
// starts the count over, and once open no request leaves (RequestNotSent, so its events are released, not failed).
import assert from 'node:assert/strict';
import { createServer as createHttpServer } from 'node:http';
import { createServer } from 'node:net';
import { test } from 'node:test';
import { CircuitBreaker, isTlsFailure } from '../../src/sinks/transport/breaker.js';
import { HttpClient, RequestNotSent } from '../../src/sinks/transport/http.js';

async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}

test('refused connections in a row open the breaker: the request that sees it is not sent, nor is any after it', async () => {
  const url = `http://127.0.0.1:${await closedPort()}/x`;
  const breaker = new CircuitBreaker(3);
  let attempts = 0;
  const http = new HttpClient({
    breaker,
    maxRetries: 10,
    baseDelayMs: 1,
    onEvent: (e) => e.type === 'network-error' && attempts++,
  });
  await assert.rejects(
    http.request({ method: 'POST', url, body: '{}' }),
    (e: Error) => e instanceof RequestNotSent && /3 connections in a row failed \(ECONNREFUSED\)/.test(e.message),
  );
  assert.equal(attempts, 3, 'not the 11 attempts of its retry schedule');
  assert.ok(breaker.open);
  await assert.rejects(http.request({ method: 'POST', url, body: '{}' }), RequestNotSent);
  assert.equal(attempts, 3, 'no attempt once open');
  http.close();
});

test('an answer of the server, even a 500, starts the count over: a CRM that is there never opens the breaker', async () => {
  let n = 0;
  const server = createHttpServer((_req, res) => {
    res.statusCode = n++ % 2 ? 500 : 200;
    res.end('{}');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  const down = `http://127.0.0.1:${await closedPort()}/x`;
  const breaker = new CircuitBreaker(3);
  const http = new HttpClient({ breaker, maxRetries: 0, baseDelayMs: 1 });
  try {
    for (let i = 0; i < 4; i++) {
      for (let j = 0; j < 2; j++) {
        const r = await http.request({ method: 'GET', url: down });
        assert.equal(r.kind, 'failure');
      }
      const up = await http.request({ method: 'GET', url: `http://127.0.0.1:${port}/` });
      assert.equal(up.kind, 'response');
    }
    assert.equal(breaker.open, false);
  } finally {
    http.close();
    await new Promise<void>((r) => server.close(() => r()));
  }
});

test('TLS failures are connection failures; answers are not', () => {
  assert.ok(isTlsFailure('DEPTH_ZERO_SELF_SIGNED_CERT'));
  assert.ok(isTlsFailure('ERR_TLS_CERT_ALTNAME_INVALID'));
  assert.ok(isTlsFailure('EPROTO'));
  assert.equal(isTlsFailure('ECONNRESET'), false);
});
