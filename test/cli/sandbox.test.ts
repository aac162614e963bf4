import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { BIN, ROOT } from '../helpers/cli.js';
import { progressText, describeHttpEvent } from '../../src/cli/output.js';

test('leadledger sandbox serves the emulator until Ctrl-C', async () => {
  const child = spawn(process.execPath, [BIN, 'sandbox', '--port', '0'], {
    cwd: ROOT,
    env: { ...process.env, CI: '1' },
  });
  let err = '';
  const url = await new Promise<string>((resolve, reject) => {
    child.stderr.setEncoding('utf8').on('data', (d: string) => {
      err += d;
      const m = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(err);
      if (m) resolve(m[1]!);
    });
    child.on('exit', () => reject(new Error(err)));
  });
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

test('progress lines carry counts, rate and ETA; verbose HTTP lines name the retry', () => {
  const t = progressText({ phase: 'sending', read: 1000, toSend: 400, settled: 100, startedAt: Date.now() - 2000 });
  assert.match(t, /read 1000 · \d+\/s · sent 100\/400 · ETA \d+ s/);
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
