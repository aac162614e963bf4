// Zoho CRM's OpenAPI document (v8 records API, ../shared/specs/zoho/record.bundled.json) as a check on every request
// of the Zoho tests and every answer to it: a router on 127.0.0.1 (the sink's --zoho-url) sends /crm/... through a
// Prism proxy of the document, which forwards to the emulator, and records every violation Prism reports (its
// sl-violations header, or its own error answer to a request it refused). /oauth/v2/token is the accounts server's,
// not in the document: the router sends it straight to the emulator.
//
// Prism knows the document's oauth2 scheme as `Authorization: Bearer` only, where Zoho's header is
// `Authorization: Zoho-oauthtoken <token>`: the router rewrites it to Bearer in front of Prism, and a hop behind Prism
// rewrites it back before the emulator, which takes Zoho's header only.
//
// What the document cannot say, and is therefore not counted as a break (breaks() leaves it out): it lists only 200
// for insert, upsert and search, where Zoho documents 201 for an insert, 207 for a mixed batch, 400 for a batch none
// of whose records was written, 204 for a search that finds nothing, 401 and 429 (../shared/reference/crm-apis.md
// section 5); and its 200 bodies are oneOf a wrapper and API_Exception, two object schemas without a required key, so
// a success body matches both and Prism reports "must match exactly one schema in oneOf" for any of them. Every
// violation of a request, and every other violation of an answer, is a break.
//
// Prism runs without --errors: with it, Prism would answer 500 in place of every answer it flags, and the sink
// would meet that instead of the emulator's answer; the violations come in its sl-violations header either way.
//
// As for Pipedrive's proxies: when the emulator drops a connection without answering (a fault), Prism answers 500
// with a FetchError; the router drops the client's connection then, so the sink meets the fault the test injected.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const PRISM = path.join(root, 'node_modules', '@stoplight', 'prism-cli', 'dist', 'index.js');
/**
 * The bundled document: fixtures/zoho/record.contract.json (its README says where it comes from), or another copy
 * named by LEADLEDGER_ZOHO_SPEC.
 */
export function zohoSpec(): string | undefined {
  const candidates = [process.env.LEADLEDGER_ZOHO_SPEC, path.join(root, 'fixtures', 'zoho', 'record.contract.json')];
  return candidates.find((p): p is string => !!p && existsSync(p));
}

export interface Violation {
  request: string;
  status: number;
  violations: unknown;
}

/** The statuses Zoho documents that the OpenAPI document leaves out (see the header comment). */
const UNLISTED_STATUSES = new Set([201, 204, 207, 400, 401, 429]);

/** Of Prism's violations, those that break the contract: the document's gaps (header comment) left out. */
export function breaks(found: Violation[]): Violation[] {
  return found
    .map((v) => ({
      ...v,
      violations: (Array.isArray(v.violations) ? v.violations : [v.violations]).filter((x: unknown) => {
        const e = x as { location?: unknown[]; message?: string; code?: string };
        if (e.location?.[0] !== 'response') return true;
        if (/^Unable to match the returned status code/.test(e.message ?? '') && UNLISTED_STATUSES.has(v.status))
          return false;
        return !(e.code === 'oneOf' && /exactly one schema in oneOf/.test(e.message ?? '') && v.status === 200);
      }),
    }))
    .filter((v) => v.violations.length > 0);
}

export interface ZohoContractProxy {
  url: string;
  /** Every violation Prism reported; breaks() tells which break the contract. */
  violations(): Violation[];
  /** Requests that went through Prism. */
  checked(): number;
  clear(): void;
  close(): Promise<void>;
}

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

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

/** Forward a request to 127.0.0.1:port with these headers; the answer, or a dropped connection. */
function forward(
  req: http.IncomingMessage,
  res: http.ServerResponse,
  port: number,
  headers: http.IncomingHttpHeaders,
  agent: http.Agent,
  onAnswer?: (status: number, headers: http.IncomingHttpHeaders, body: Buffer) => boolean,
): void {
  const up = http.request(
    {
      host: '127.0.0.1',
      port,
      method: req.method,
      path: req.url,
      headers: { ...headers, host: `127.0.0.1:${port}` },
      agent,
    },
    (upRes) => {
      const chunks: Buffer[] = [];
      upRes.on('data', (c: Buffer) => chunks.push(c));
      upRes.on('end', () => {
        const body = Buffer.concat(chunks);
        const status = upRes.statusCode ?? 0;
        if (onAnswer && !onAnswer(status, upRes.headers, body)) {
          res.socket?.destroy();
          return;
        }
        const out = { ...upRes.headers };
        delete out['sl-violations'];
        res.writeHead(status, out);
        res.end(body);
      });
    },
  );
  up.on('error', () => res.socket?.destroy());
  req.pipe(up);
}

/** Start Prism in front of the emulator at `upstream`, the header hops, and the router; needs zohoSpec(). */
export async function startZohoContractProxy(upstream: string): Promise<ZohoContractProxy> {
  const spec = zohoSpec();
  if (!spec) throw new Error("Zoho's OpenAPI document is not in fixtures/zoho/ (or LEADLEDGER_ZOHO_SPEC)");
  const target = new URL(upstream);
  const agent = new http.Agent({ keepAlive: true });
  // Behind Prism: Bearer back to Zoho-oauthtoken, then the emulator.
  const back = http.createServer((req, res) => {
    const auth = req.headers.authorization?.replace(/^Bearer\s+/, 'Zoho-oauthtoken ');
    forward(req, res, Number(target.port), { ...req.headers, ...(auth ? { authorization: auth } : {}) }, agent);
  });
  await new Promise<void>((resolve) => back.listen(0, '127.0.0.1', resolve));
  const backPort = (back.address() as AddressInfo).port;
  const prismPort = await freePort();
  const child = spawn(
    process.execPath,
    [PRISM, 'proxy', spec, `http://127.0.0.1:${backPort}`, '--host', '127.0.0.1', '--port', String(prismPort)],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const out: Buffer[] = [];
  child.stdout?.on('data', (b: Buffer) => out.push(b));
  child.stderr?.on('data', (b: Buffer) => out.push(b));
  await listening(prismPort, child, () => Buffer.concat(out).toString('utf8').slice(-4000));
  let found: Violation[] = [];
  let checked = 0;
  const router = http.createServer((req, res) => {
    const where = req.url ?? '/';
    if (!where.startsWith('/crm/')) return forward(req, res, Number(target.port), req.headers, agent);
    checked++;
    const auth = req.headers.authorization?.replace(/^Zoho-oauthtoken\s+/, 'Bearer ');
    forward(
      req,
      res,
      prismPort,
      { ...req.headers, ...(auth ? { authorization: auth } : {}) },
      agent,
      (status, headers, body) => {
        const text = body.toString('utf8');
        const what = `${req.method} ${where}`;
        // The emulator dropped the connection: drop this one too (see the header comment).
        if (status === 500 && /^\{"type":"FetchError"/.test(text)) return false;
        const header = headers['sl-violations'];
        if (typeof header === 'string') found.push({ request: what, status, violations: JSON.parse(header) });
        else if (/^\{"type":"https:\/\/stoplight\.io\/prism\/errors#/.test(text))
          found.push({ request: what, status, violations: JSON.parse(text) });
        return true;
      },
    );
  });
  await new Promise<void>((resolve) => router.listen(0, '127.0.0.1', resolve));
  const { port } = router.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    violations: () => [...found],
    checked: () => checked,
    clear: () => {
      found = [];
      checked = 0;
    },
    close: async () => {
      agent.destroy();
      for (const s of [router, back])
        await new Promise<void>((resolve) => {
          s.close(() => resolve());
          s.closeAllConnections();
        });
      if (child.exitCode === null) {
        const gone = new Promise((r) => child.once('exit', r));
        child.kill('SIGTERM');
        await gone;
      }
    },
  };
}
