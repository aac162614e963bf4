// The CRM emulator for scenario 3, in its own process (`leadledger sandbox`), never in the harness's process, so
// the measured push CLI and the emulator don't share an event loop with the harness.
import { spawn } from 'node:child_process';
import net from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';
import { track } from './measure.mjs';

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

export async function startSandbox(cli, { latencyMs, rateLimit, rdstationRateLimit }) {
  const port = await freePort();
  const rd = rdstationRateLimit ? ['--rdstation-rate-limit', rdstationRateLimit] : [];
  const child = track(
    spawn(
      process.execPath,
      [
        cli,
        'sandbox',
        '--port',
        String(port),
        '--latency',
        String(latencyMs),
        '--rate-limit',
        rateLimit,
        ...rd,
        '--quiet',
      ],
      {
        stdio: ['ignore', 'ignore', 'pipe'],
      },
    ),
  );
  let err = '';
  child.stderr.on('data', (d) => {
    err = (err + d).slice(-4000);
  });
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 15_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`sandbox exited ${child.exitCode}: ${err}`);
    try {
      const r = await fetch(`${url}/__admin/stats`);
      if (r.ok) break;
    } catch {
      /* not listening yet */
    }
    if (Date.now() > deadline) throw new Error(`sandbox did not answer on ${url} within 15 s: ${err}`);
    await delay(100);
  }
  return {
    url,
    async reset() {
      const r = await fetch(`${url}/__admin/reset`, { method: 'POST' });
      if (!r.ok) throw new Error(`reset: HTTP ${r.status}`);
    },
    async seed(contacts) {
      const r = await fetch(`${url}/__admin/contacts`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(contacts.map((properties) => ({ properties }))),
      });
      if (!r.ok) throw new Error(`seed: HTTP ${r.status}`);
      return (await r.json()).stored;
    },
    async stats() {
      return (await fetch(`${url}/__admin/stats`)).json();
    },
    async contactCount() {
      const body = await (await fetch(`${url}/__admin/contacts`)).json();
      return Array.isArray(body) ? body.length : Array.isArray(body?.results) ? body.results.length : null;
    },
    async stop() {
      if (child.exitCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGINT');
      await Promise.race([exited, delay(5000).then(() => child.kill('SIGKILL'))]);
    },
  };
}
