// A webhook receiver that holds every request until the test opens it: a push to it stays mid-run, holding its
// ledger with claims pending, for exactly as long as the test wants, whatever the speed of the machine.
import { once } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after } from 'node:test';

export interface HeldReceiver {
  /** Where to push: --sink webhook --url <url>. */
  url: string;
  /** Resolves with the first request: the push is sending. */
  arrived: Promise<void>;
  /** Answers every request held, and every later one at once (200, `{}`). */
  open(): void;
  /** Requests received so far. */
  received(): number;
}

/** Starts a held receiver on 127.0.0.1, opened and closed when the test file ends. */
export async function heldReceiver(): Promise<HeldReceiver> {
  let open!: () => void;
  const gate = new Promise<void>((r) => (open = r));
  let first!: () => void;
  const arrived = new Promise<void>((r) => (first = r));
  let received = 0;
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    req.resume();
    req.on('end', () => {
      received++;
      first();
      void gate.then(() => res.writeHead(200, { 'content-type': 'application/json' }).end('{}'));
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  after(() => {
    open();
    server.closeAllConnections();
    server.close();
  });
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/hook`, arrived, open, received: () => received };
}
