#!/usr/bin/env node
// The floor of bench scenarios 17-19: a receiver that answers every request 200 at once, without reading its body
// into anything, no ledger, no CRM. What the load generator and this machine give when the receiver costs nothing:
// the most any receiver could show here, and the latency the machine adds by itself (its scheduling under load).
// usage: node bench/lib/null-receiver.mjs [--port 0]; the first line on stdout says where it listens.
import http from 'node:http';

const i = process.argv.indexOf('--port');
const port = i >= 0 ? Number(process.argv[i + 1]) : 0;
const server = http.createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{"status":"accepted"}');
  });
});
server.keepAliveTimeout = 60_000;
server.listen(port, '127.0.0.1', () => {
  console.log(`null-receiver: listening on http://127.0.0.1:${server.address().port}`);
});
for (const sig of ['SIGINT', 'SIGTERM'])
  process.on(sig, () => {
    server.close(() => process.exit(0));
    server.closeIdleConnections?.();
    setTimeout(() => process.exit(0), 3000).unref();
  });
