// Running `leadledger serve` as a user does: the built CLI spawned, its URL read from the first line on stdout, its
// log lines kept, stopped by a signal.
import { spawn, type ChildProcess } from 'node:child_process';
import { after } from 'node:test';
import { BIN, inheritedEnv, ROOT } from './cli.js';

/** A receiver process under test. */
export interface ServeProcess {
  url: string;
  child: ChildProcess;
  /** Every line of stdout so far (the first says the URL; JSON log lines after it). */
  lines(): string[];
  stderr(): string;
  /** Sends a signal and resolves with the exit code once the process exited. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Spawns `leadledger serve ...args` and resolves once it listens; rejects with its stderr if it exits first. */
export function startServe(
  args: string[],
  opts: { env?: Record<string, string | undefined>; cwd?: string } = {},
): Promise<ServeProcess> {
  const env: Record<string, string | undefined> = {
    ...inheritedEnv(),
    LEADLEDGER_SERVE_MAINTENANCE_MS: '200',
    LEADLEDGER_SERVE_RETRY_MS: '300',
    LEADLEDGER_SERVE_IN_DOUBT_MS: '500',
    ...opts.env,
  };
  for (const k of Object.keys(env)) if (env[k] === undefined) delete env[k];
  const child = spawn(process.execPath, [BIN, 'serve', ...args], {
    cwd: opts.cwd ?? ROOT,
    env: env as NodeJS.ProcessEnv,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('close', (code, signal) => resolve({ code, signal })),
  );
  // A receiver a failed test leaves running is killed when the file's tests end.
  after(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  return new Promise((resolve, reject) => {
    child.stdout!.setEncoding('utf8').on('data', (d: string) => {
      out += d;
      const m = /^leadledger serve: listening on (http:\/\/\S+)/m.exec(out);
      if (m && !ready) {
        ready = true;
        resolve(proc(m[1]!));
      }
    });
    child.stderr!.setEncoding('utf8').on('data', (d: string) => (err += d));
    let ready = false;
    void exited.then(({ code }) => {
      if (!ready) reject(new Error(`serve exited ${code} before listening:\n${err}\n${out}`));
    });
  });

  function proc(url: string): ServeProcess {
    return {
      url,
      child,
      lines: () => out.split('\n').filter(Boolean),
      stderr: () => err,
      async stop(signal = 'SIGTERM') {
        child.kill(signal);
        return (await exited).code;
      },
      exited,
    };
  }
}

/** POSTs a body (an object is sent as JSON); the status, headers and parsed JSON answer. */
export async function post(
  url: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: Headers; json: Record<string, unknown> }> {
  const text = typeof body === 'string' || Buffer.isBuffer(body) ? body : JSON.stringify(body);
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: text,
  });
  const t = await res.text();
  let json: Record<string, unknown>;
  try {
    json = JSON.parse(t) as Record<string, unknown>;
  } catch {
    json = { text: t };
  }
  return { status: res.status, headers: res.headers, json };
}

/** Waits until `check` holds, asking again every 50 ms; fails after `boundMs` (a bound, not a measure). */
export async function waitFor(what: string, check: () => boolean | Promise<boolean>, boundMs = 60_000): Promise<void> {
  const end = Date.now() + boundMs;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
