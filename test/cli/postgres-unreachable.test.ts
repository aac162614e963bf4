// A PostgreSQL that starts refusing connections mid-run (a server stopped or restarting, a port closed): the push stops
// after a few refused connections in a row, as the HTTP sinks do (the run's circuit breaker), releases the batches it
// did not write, says so once and ends 1; a later run writes each lead once. The built CLI against a real PostgreSQL
// (test/helpers/postgres.ts), behind a TCP proxy that shuts its port at the first INSERT it sees.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createConnection, createServer, type Socket } from 'node:net';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { runCli } from '../helpers/cli.js';
import { readLedger } from '../helpers/kill.js';
import { jsonlEvents } from '../helpers/events.js';
import { createLeadsTable, pgDatabase } from '../helpers/postgres.js';
import { tmpDir } from '../helpers/tmp.js';

const db = await pgDatabase();
const env = { PGPASSWORD: db.cluster.password, PGPASSFILE: undefined, LEADLEDGER_PG_URL: undefined };

/**
 * A proxy to the test server's port. At the first chunk that carries an INSERT it forwards nothing more: every
 * connection is cut and the port closed, so each later connection is refused (ECONNREFUSED).
 */
async function shuttingProxy(port: number): Promise<{ port: number; shut: () => boolean }> {
  const sockets = new Set<Socket>();
  let shut = false;
  const server = createServer((client) => {
    if (shut) return client.destroy();
    const upstream = createConnection(port, '127.0.0.1');
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => undefined);
    }
    client.on('data', (chunk: Buffer) => {
      if (shut) return;
      if (chunk.includes('INSERT INTO')) {
        shut = true;
        server.close();
        for (const s of sockets) s.destroy();
        return;
      }
      upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => {
      if (!shut) client.write(chunk);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { port: (server.address() as { port: number }).port, shut: () => shut };
}

test('PostgreSQL refusing connections mid-run: the push stops after a few, releases what it did not write, exit 1 with one message; a rerun writes each lead once', async () => {
  await createLeadsTable(db, 'refusing');
  const dir = tmpDir();
  const n = 5000;
  const events = join(dir, 'events.jsonl');
  writeFileSync(events, jsonlEvents(n));
  const ledger = join(dir, 'l.db');
  const proxy = await shuttingProxy(db.cluster.port);
  const url = (port: number) => db.url.replace(/:\d+\//, `:${port}/`);
  const base = ['push', events, '--sink', 'postgres', '--table', 'refusing', '--ledger', ledger, '--concurrency', '4'];
  const down = await runCli([...base, '--pg-url', url(proxy.port), '--backoff', '1'], { env });
  assert.ok(proxy.shut(), 'the proxy shut its port');
  assert.equal(down.code, 1, down.stderr);
  const stops = down.stderr.split('\n').filter((l) => /stopped sending/.test(l));
  assert.equal(stops.length, 1, down.stderr);
  assert.match(
    stops[0]!,
    new RegExp(`postgres.*127\\.0\\.0\\.1:${proxy.port}.*could not be reached.*ECONNREFUSED`, 'i'),
  );
  assert.doesNotMatch(down.stderr, new RegExp(db.cluster.password));
  // Nothing written, nothing pending, in doubt or failed: what was claimed was released, the rest never claimed.
  assert.equal((await db.query(`SELECT 1 FROM refusing`)).rowCount, 0);
  const l = new Database(ledger, { readonly: true });
  const left = l.prepare(`SELECT status, count(*) AS n FROM events GROUP BY status`).all();
  l.close();
  assert.deepEqual(left, []);

  const up = await runCli([...base, '--pg-url', db.url, '--quiet'], { env });
  assert.equal(up.code, 0, up.stderr);
  const rows = await db.query<{ n: string; d: string }>(`SELECT count(*) n, count(DISTINCT email) d FROM refusing`);
  assert.deepEqual(rows.rows[0], { n: String(n), d: String(n) });
});

test('a --pg-url whose port refuses connections from the start: exit 1, one message naming it, nothing claimed', async () => {
  const dir = tmpDir();
  const events = join(dir, 'events.jsonl');
  writeFileSync(events, jsonlEvents(50));
  const ledger = join(dir, 'l.db');
  // A port of 127.0.0.1 with nothing listening: bound, then closed.
  const free = createServer();
  await new Promise<void>((r) => free.listen(0, '127.0.0.1', r));
  const { port } = free.address() as { port: number };
  await new Promise<void>((r) => free.close(() => r()));
  const pgUrl = db.url.replace(/:\d+\//, `:${port}/`);
  const r = await runCli(
    [
      'push',
      events,
      '--sink',
      'postgres',
      '--table',
      'refusing',
      '--ledger',
      ledger,
      '--pg-url',
      pgUrl,
      '--backoff',
      '1',
    ],
    {
      env,
    },
  );
  assert.equal(r.code, 1, r.stderr);
  const lines = r.stderr.split('\n').filter((l) => l.trim());
  assert.equal(lines.length, 1, r.stderr);
  assert.match(
    lines[0]!,
    new RegExp(`cannot use PostgreSQL at postgres://[^ ]*127\\.0\\.0\\.1:${port}/.*ECONNREFUSED`),
  );
  const claimed = readLedger(ledger, (l) => (l.prepare(`SELECT count(*) n FROM events`).get() as { n: number }).n);
  assert.ok(!claimed, 'nothing claimed');
});
