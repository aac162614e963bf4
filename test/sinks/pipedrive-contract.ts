// Pipedrive's OpenAPI documents as a check on every request of the Pipedrive tests and every answer to it: a
// router on 127.0.0.1 (the sink's base URL) sends /api/v2/... through a Prism proxy of the v2 document and /v1/...
// (or /api/v1/...) through one of the v1 document, both forwarding to the emulator, and records every violation
// Prism reports (its sl-violations header, or its own error answer to a request it refused). Prism matches the
// documents' paths without their server prefix, so the router strips /api/v2 and /v1, and each proxy puts it back
// in front of the emulator's URL.
//
// The documents are fixtures/pipedrive/openapi-v{1,2}.contract.json: the operations leadledger uses, verbatim, plus
// the patches fixtures/pipedrive/README.md lists.
//
// One thing Prism changes: when the emulator drops a connection without answering (a fault), Prism answers 500 with
// a problem+json FetchError instead. The router drops the client's connection then, as the emulator did, so the sink
// meets the fault the test injected (an answer lost after the create was applied), not a 500.
import { spawn, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const PRISM = path.join(root, 'node_modules', '@stoplight', 'prism-cli', 'dist', 'index.js');
const SPEC = {
  v1: path.join(root, 'fixtures', 'pipedrive', 'openapi-v1.contract.json'),
  v2: path.join(root, 'fixtures', 'pipedrive', 'openapi-v2.contract.json'),
};

/** One violation Prism reported, with the request it was about. */
export interface Violation {
  request: string;
  status: number;
  violations: unknown;
}

export interface ContractProxy {
  /** The base URL to give the sink: http://127.0.0.1:<port>. */
  url: string;
  /** Violations since the start or the last clear(). */
  violations(): Violation[];
  /** Requests routed since the start, by document. */
  routed(): { v1: number; v2: number };
  clear(): void;
  close(): Promise<void>;
}

/** A free port on 127.0.0.1 (taken from the system, then freed for the child to listen on). */
async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** Resolves once something accepts connections on the port; rejects when the child exits first. */
async function listening(port: number, child: ChildProcess, log: () => string): Promise<void> {
  let exited: string | undefined;
  child.once('exit', (code, signal) => (exited = `exited (${code ?? signal}) before listening:\n${log()}`));
  for (;;) {
    if (exited) throw new Error(`Prism ${exited}`);
    const ok = await new Promise<boolean>((resolve) => {
      const s = net.connect(port, '127.0.0.1');
      s.once('connect', () => {
        s.destroy();
        resolve(true);
      });
      s.once('error', () => resolve(false));
    });
    if (ok) return;
    // Poll the port again after a short pause: what is awaited is the port, not the pause.
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function startPrism(spec: string, upstream: string): Promise<{ port: number; child: ChildProcess }> {
  const port = await freePort();
  const child = spawn(
    process.execPath,
    [PRISM, 'proxy', spec, upstream, '--errors', '--host', '127.0.0.1', '--port', String(port)],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const out: Buffer[] = [];
  child.stdout?.on('data', (b: Buffer) => out.push(b));
  child.stderr?.on('data', (b: Buffer) => out.push(b));
  await listening(port, child, () => Buffer.concat(out).toString('utf8').slice(-4000));
  // Keep reading its log so the pipe never fills and stalls it.
  child.stdout?.on('data', () => undefined);
  return { port, child };
}

/** Start one Prism proxy per document in front of the emulator at `upstream`, and the router in front of both. */
export async function startContractProxy(upstream: string): Promise<ContractProxy> {
  const base = upstream.replace(/\/+$/, '');
  const [v2, v1] = await Promise.all([startPrism(SPEC.v2, `${base}/api/v2`), startPrism(SPEC.v1, `${base}/v1`)]);
  const agent = new http.Agent({ keepAlive: true });
  let found: Violation[] = [];
  const routed = { v1: 0, v2: 0 };

  const router = http.createServer((req, res) => {
    const target = req.url ?? '/';
    const m = /^\/(api\/v2|v1|api\/v1)(\/.*)?$/.exec(target);
    if (!m) {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ success: false, error: `the contract router has no document for ${target}` }));
      return;
    }
    const which = m[1] === 'api/v2' ? 'v2' : 'v1';
    routed[which]++;
    const port = which === 'v2' ? v2.port : v1.port;
    const rest = m[2] ?? '/';
    const headers = { ...req.headers, host: `127.0.0.1:${port}` };
    const up = http.request({ host: '127.0.0.1', port, method: req.method, path: rest, headers, agent }, (upRes) => {
      const chunks: Buffer[] = [];
      upRes.on('data', (c: Buffer) => chunks.push(c));
      upRes.on('end', () => {
        const body = Buffer.concat(chunks);
        const status = upRes.statusCode ?? 0;
        const text = body.toString('utf8');
        const what = `${req.method} ${target}`;
        if (status === 500 && /^\{"type":"FetchError"/.test(text)) {
          // The emulator dropped the connection: drop this one too (see the header comment).
          res.socket?.destroy();
          return;
        }
        const header = upRes.headers['sl-violations'];
        if (typeof header === 'string') found.push({ request: what, status, violations: JSON.parse(header) });
        else if (/^\{"type":"https:\/\/stoplight\.io\/prism\/errors#/.test(text))
          found.push({ request: what, status, violations: JSON.parse(text) });
        const out = { ...upRes.headers };
        delete out['sl-violations'];
        res.writeHead(status, out);
        res.end(body);
      });
    });
    up.on('error', () => res.socket?.destroy());
    req.pipe(up);
  });
  await new Promise<void>((resolve) => router.listen(0, '127.0.0.1', resolve));
  const { port } = router.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}`,
    violations: () => [...found],
    routed: () => ({ ...routed }),
    clear: () => {
      found = [];
    },
    close: async () => {
      agent.destroy();
      await new Promise<void>((resolve) => {
        router.close(() => resolve());
        router.closeAllConnections();
      });
      for (const p of [v1, v2]) {
        if (p.child.exitCode !== null) continue;
        const gone = new Promise((r) => p.child.once('exit', r));
        p.child.kill('SIGTERM');
        await gone;
      }
    },
  };
}
