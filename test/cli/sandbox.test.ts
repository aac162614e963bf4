import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { createServer } from 'node:net';
import { BIN, ROOT, runCli } from '../helpers/cli.js';
import { progressText, describeHttpEvent } from '../../src/cli/output.js';

test('leadledger sandbox serves the emulator until Ctrl-C', async () => {
  const child = spawn(process.execPath, [BIN, 'sandbox', '--port', '0'], {
    cwd: ROOT,
    env: { ...process.env, CI: '1' },
  });
  const url = await listening(child);
  const res = await fetch(`${url}/crm/v3/objects/contacts/batch/create`, {
    method: 'POST',
    headers: { authorization: 'Bearer x', 'content-type': 'application/json' },
    body: JSON.stringify({ inputs: [{ properties: { email: 'a@x.io' }, associations: [] }] }),
  });
  assert.ok(res.status === 200 || res.status === 201, String(res.status));
  const contacts = (await (await fetch(`${url}/__admin/contacts`)).json()) as unknown[];
  assert.equal(contacts.length, 1);
  child.kill('SIGINT');
  const code = await new Promise((r) => child.on('exit', r));
  assert.equal(code, 0);
});

/** The URL the sandbox prints once it serves, and has taken Ctrl-C, SIGTERM and SIGHUP over (the line after). */
function listening(child: ChildProcessWithoutNullStreams): Promise<string> {
  let err = '';
  return new Promise<string>((resolve, reject) => {
    child.stderr.setEncoding('utf8').on('data', (d: string) => {
      err += d;
      const m = /listening on (http:\/\/127\.0\.0\.1:\d+)[^]*Press Ctrl-C to stop/.exec(err);
      if (m) resolve(m[1]!);
    });
    child.on('exit', () => reject(new Error(err)));
  });
}

test('leadledger sandbox stops on SIGHUP (its terminal closed) as on Ctrl-C: its server closed, exit 0', async () => {
  const child = spawn(process.execPath, [BIN, 'sandbox', '--port', '0'], {
    cwd: ROOT,
    env: { ...process.env, CI: '1' },
  });
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
  const url = await listening(child);
  const exit = new Promise<[number | null, NodeJS.Signals | null]>((r) => child.on('exit', (c, s) => r([c, s])));
  child.kill('SIGHUP');
  assert.deepEqual(await exit, [0, null]);
  await assert.rejects(fetch(`${url}/__admin/stats`), 'the server is closed');
  assert.doesNotMatch(out, /error/i);
});

test('progress lines carry the share read, counts, rate and an ETA for the whole input; verbose HTTP lines name the retry', () => {
  const now = 1_000_000;
  // A quarter of the input read in 2 s, 400 sends queued, 100 settled: the whole input brings about 1,600 sends,
  // and 1,500 more at 50/s take 30 s (reading the rest alone would take 6 s).
  const files = { phase: 'sending', read: 1000, toSend: 400, settled: 100, startedAt: now - 2000 } as const;
  assert.equal(
    progressText({ ...files, bytesRead: 250_000, bytesTotal: 1_000_000, sendingSince: now - 2000 }, now),
    '25% of 1.0 MB · read 1000 · 500 read/s · sent 100/400 · 50 sent/s · ETA 30 s',
  );
  // stdin: no total, so no share and no ETA that would count only what is queued ("ETA 1 s" with most unread).
  assert.equal(
    progressText({ ...files, bytesRead: 250_000 }, now),
    'read 1000 · 500 read/s · sent 100/400 · 50 sent/s',
  );
  // A dry-run: reading is all there is.
  assert.equal(
    progressText(
      { phase: 'reading', read: 1000, toSend: 0, settled: 0, startedAt: now - 10_000, bytesRead: 1e8, bytesTotal: 4e8 },
      now,
    ),
    '25% of 400.0 MB · read 1000 · 100 read/s · ETA 30 s',
  );
  assert.equal(
    progressText({ ...files, bytesRead: 1e5, bytesTotal: 1e7, sendingSince: now - 2000 }, now),
    '1% of 10.0 MB · read 1000 · 500 read/s · sent 100/400 · 50 sent/s · ETA 13 min 18 s',
  );
  assert.equal(
    describeHttpEvent({
      type: 'retry',
      method: 'POST',
      url: 'https://api.hubapi.com/x',
      attempt: 1,
      delayMs: 512.4,
      reason: 'HTTP 503',
      status: 503,
    }),
    'http: retry 1 of POST https://api.hubapi.com/x in 512 ms (HTTP 503)',
  );
});

test('leadledger sandbox on a port already in use: a usage error naming the port, no stack trace', async () => {
  const busy = createServer();
  await new Promise<void>((r) => busy.listen(0, '127.0.0.1', r));
  const port = (busy.address() as { port: number }).port;
  try {
    const r = await runCli(['sandbox', '--port', String(port)]);
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, new RegExp(`--port ${port}: 127\\.0\\.0\\.1:${port} is already in use`));
    assert.doesNotMatch(r.stderr, /unexpected error|please report|\n\s+at /);
  } finally {
    busy.close();
  }
});
