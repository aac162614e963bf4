// The HTTP client after the run's stop: a request that has not left is abandoned (RequestNotSent), one already on
// the wire is answered; a cut after it left is not taken for "not sent".
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { startEmulator } from '../../src/sandbox/emulator.js';
import { HttpClient, RequestNotSent } from '../../src/sinks/transport/http.js';
import { RateLimiter } from '../../src/sinks/transport/rate-limiter.js';

const req = (url: string, signal?: AbortSignal) => ({
  method: 'POST' as const,
  url: `${url}/crm/v3/objects/contacts/search`,
  headers: { authorization: 'Bearer t', 'content-type': 'application/json' },
  body: JSON.stringify({ filterGroups: [], properties: [], limit: 1, after: '0', sorts: [] }),
  ...(signal ? { signal } : {}),
});

test('a request waiting for the rate limiter when the run stops is abandoned: RequestNotSent, nothing reaches the server', async () => {
  const emu = await startEmulator();
  try {
    const limiter = new RateLimiter();
    limiter.pause(60_000);
    const http = new HttpClient({ limiter });
    const stop = new AbortController();
    http.abandonUnsentOn(stop.signal);
    const pending = http.request(req(emu.url));
    setTimeout(() => stop.abort(), 50);
    await assert.rejects(pending, RequestNotSent);
    assert.equal(emu.stats().requests, 0);
    await assert.rejects(http.request(req(emu.url)), RequestNotSent, 'and none leaves after the stop');
    http.close();
  } finally {
    await emu.close();
  }
});

test('a request on the wire when the run stops is answered; one cut after it left is not "not sent"', async () => {
  // Stopped, or cut, once the emulator has the request: on the wire, whatever the speed of the machine.
  const arrived = async (n: number) => {
    while (emu.stats().requests < n) await new Promise((r) => setTimeout(r, 5));
  };
  const emu = await startEmulator({ faults: { latencyMs: 400 } });
  try {
    const http = new HttpClient();
    const stop = new AbortController();
    http.abandonUnsentOn(stop.signal);
    const onWire = http.request(req(emu.url));
    await arrived(1);
    stop.abort();
    const r = await onWire;
    assert.equal(r.kind, 'response');
    // A request never answered: the cut comes while it is on the wire.
    emu.setFaults({ script: ['hang'] });
    const http2 = new HttpClient();
    const hard = new AbortController();
    const cut = http2.request(req(emu.url, hard.signal));
    await arrived(2);
    hard.abort();
    await assert.rejects(cut, (e: unknown) => !(e instanceof RequestNotSent));
    http.close();
    http2.close();
  } finally {
    await emu.close();
  }
});
