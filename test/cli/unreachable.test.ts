// A destination that refuses every connection: the run stops sending after a few failures in a row (the circuit
// breaker), releases what it did not send, says so once, and a later run against a live CRM sends each lead once.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { runCli } from '../helpers/cli.js';
import { emulator } from '../helpers/emulator.js';
import { expectedPeople, generateEvents } from '../helpers/events.js';
import { tmpDir } from '../helpers/tmp.js';
import { DEFAULT_BREAKER_THRESHOLD } from '../../src/sinks/transport/breaker.js';

const TOKEN = 'pat-na1-UNREACHABLE-0000-test';

/** A port of 127.0.0.1 with nothing listening: bound, then closed. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}

test('a CRM that refuses connections: the push stops after a few attempts, exit 1, one message naming it; nothing is lost or in doubt; a rerun sends each lead once', async () => {
  const dir = tmpDir();
  const events = generateEvents(dir, 3000, 36);
  const want = await expectedPeople(events, dir);
  const ledger = join(dir, 'l.db');
  const port = await closedPort();
  const concurrency = 4;
  const base = ['push', events, '--sink', 'hubspot', '--ledger', ledger, '--concurrency', String(concurrency)];
  const down = await runCli([...base, '--hubspot-url', `http://127.0.0.1:${port}`, '--backoff', '1', '--verbose'], {
    env: { HUBSPOT_TOKEN: TOKEN },
  });
  assert.equal(down.code, 1, down.stderr);
  // Connection attempts: the ones that opened the breaker, and at most one more per batch already in flight.
  const attempts = down.stderr.split('\n').filter((l) => /failed: ECONNREFUSED/.test(l)).length;
  assert.ok(attempts >= DEFAULT_BREAKER_THRESHOLD, down.stderr);
  assert.ok(attempts <= DEFAULT_BREAKER_THRESHOLD + concurrency, `${attempts} connection attempts`);
  const stops = down.stderr.split('\n').filter((l) => /stopped sending/.test(l) && !/^\s*UnreachableError/.test(l));
  assert.equal(stops.length, 1, down.stderr);
  assert.match(stops[0]!, new RegExp(`hubspot.*127\\.0\\.0\\.1:${port}.*could not be reached`, 'i'));
  assert.doesNotMatch(down.stderr, new RegExp(TOKEN));
  // Nothing pending, in doubt or failed: what was claimed was released, the rest never claimed.
  const db = new Database(ledger, { readonly: true });
  const left = db.prepare(`SELECT status, count(*) AS n FROM events GROUP BY status`).all();
  db.close();
  assert.deepEqual(left, []);

  const emu = await emulator({ token: TOKEN });
  const up = await runCli([...base, '--hubspot-url', emu.url, '--quiet'], { env: { HUBSPOT_TOKEN: TOKEN } });
  assert.equal(up.code, 0, up.stderr);
  const emails = emu.contacts().map((c) => String(c.properties.email));
  assert.equal(emails.length, new Set(emails).size);
  assert.deepEqual(new Set(emails), want);
});
