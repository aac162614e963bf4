#!/usr/bin/env node
// Peer for bench scenarios 17-19: the webhook handler teams write before they have leadledger serve, written
// plainly. node:http, no framework; a better-sqlite3 table processed_events(id PRIMARY KEY); per request: SELECT
// the event id, and when it is absent create the lead in the CRM (HubSpot's single contact create, answered
// synchronously) and then INSERT the id; answer 200. Check, then create, then mark: two deliveries of one event that
// overlap (a sender retrying on timeout) both pass the check before either marks it, and both create the lead. That
// race is what the bench shows; nothing here guards against it, as nothing in the handlers it stands for does.
//
// The database gets WAL, the one pragma better-sqlite3's documentation recommends for speed, so that the peer is not
// slowed by a default it would be told to change; everything else is as first written.
//
// usage: HUBSPOT_TOKEN=… node bench/peers/plain-handler.mjs --db <file> --crm-url <HubSpot API base URL> [--port 0]
// The first line on stdout is `plain-handler: listening on http://127.0.0.1:<port>` (as `leadledger serve` says).
import http from 'node:http';
import Database from 'better-sqlite3';

const args = process.argv.slice(2);
const flag = (name, dflt) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : dflt;
};
const dbPath = flag('--db');
const crmUrl = flag('--crm-url');
const port = Number(flag('--port', '0'));
if (!dbPath || !crmUrl) {
  console.error('usage: plain-handler.mjs --db <file> --crm-url <url> [--port N]');
  process.exit(2);
}
const token = process.env.HUBSPOT_TOKEN ?? '';

const db = new Database(dbPath);
db.pragma('journal_mode = WAL');
db.exec('CREATE TABLE IF NOT EXISTS processed_events (id TEXT PRIMARY KEY)');
const seen = db.prepare('SELECT id FROM processed_events WHERE id = ?');
const mark = db.prepare('INSERT INTO processed_events (id) VALUES (?)');

function reply(res, status, body) {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

async function readBody(req) {
  const chunks = [];
  for await (const c of req) chunks.push(c);
  return JSON.parse(Buffer.concat(chunks).toString('utf8'));
}

const server = http.createServer(async (req, res) => {
  try {
    if (req.method !== 'POST' || !req.url.startsWith('/hooks/')) return reply(res, 404, { error: 'not found' });
    const event = await readBody(req);
    if (seen.get(event.event_id)) return reply(res, 200, { status: 'already_processed' });
    const [firstname, ...rest] = String(event.name ?? '').split(' ');
    const crm = await fetch(`${crmUrl}/crm/v3/objects/contacts`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify({
        properties: { email: event.email, firstname, lastname: rest.join(' ') },
        associations: [],
      }),
    });
    if (!crm.ok) throw new Error(`CRM answered ${crm.status}: ${await crm.text()}`);
    await crm.arrayBuffer();
    mark.run(event.event_id);
    reply(res, 200, { status: 'ok' });
  } catch (e) {
    reply(res, 500, { error: String(e.message ?? e).slice(0, 300) });
  }
});
server.keepAliveTimeout = 60_000;
server.listen(port, '127.0.0.1', () => {
  console.log(`plain-handler: listening on http://127.0.0.1:${server.address().port}`);
});
for (const sig of ['SIGINT', 'SIGTERM'])
  process.on(sig, () => {
    server.close(() => {
      db.close();
      process.exit(0);
    });
    server.closeIdleConnections?.();
    setTimeout(() => process.exit(0), 3000).unref();
  });
