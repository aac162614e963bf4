import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { DeliveryCounts } from '../../src/deliver/delivery-counts.js';
import type { RunReport } from '../../src/report/run-report.js';

/** The built CLI, as users run it. */
export const BIN = fileURLToPath(new URL('../../bin/leadledger.js', import.meta.url));
export const ROOT = fileURLToPath(new URL('../..', import.meta.url));

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/**
 * The run report `push --json` and `replay --json` print on stdout (src/report/run-report.ts). Its delivery counts,
 * failures and HTTP statistics are typed as present: a test reads them only of a run that has them (one that sent,
 * through an HTTP sink for `http`).
 */
export type JsonReport = Omit<RunReport, 'warnings'> & {
  schemaVersion: number;
  /** The warnings as published: a list of {message, count} (src/cli/machine-json.ts). */
  warnings: Omit<RunReport['warnings'], 'byReason'> & { reasons: Array<{ message: string; count: number }> };
  delivery: DeliveryCounts;
  failures: Record<string, number>;
  http: Record<string, number>;
};

/** The run report of a push or replay run with --json. */
export function jsonReport(r: { stdout: string }): JsonReport {
  return JSON.parse(r.stdout) as JsonReport;
}

/**
 * The command line that runs argv bound by file modes. Root's capabilities override them (a folder chmod'ed 0555 is
 * still one root writes), so as root the command runs with CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH dropped
 * (setpriv, util-linux): still root, still the owner of the test's files, but held to their modes as anyone else is.
 */
export function boundByFileModes(argv: string[]): string[] {
  if (process.getuid?.() !== 0) return argv;
  return ['setpriv', '--bounding-set=-dac_override,-dac_read_search', '--', ...argv];
}

/**
 * The environment a spawned CLI inherits: the test runner's, without what would choose a default phone country
 * (the locale, LEADLEDGER_DEFAULT_COUNTRY), so that a test reads national numbers alike on every machine; a test
 * that wants them passes them.
 */
export function inheritedEnv(): Record<string, string | undefined> {
  const env: Record<string, string | undefined> = { ...process.env, NO_COLOR: '1', CI: '1' };
  for (const k of ['LC_ALL', 'LC_TELEPHONE', 'LEADLEDGER_DEFAULT_COUNTRY']) delete env[k];
  env.LANG = 'C.UTF-8';
  return env;
}

/** Runs bin/leadledger.js with args (with `fileModes`, bound by file modes even as root); resolves when it exits. */
export function runCli(
  args: string[],
  opts: {
    env?: Record<string, string | undefined>;
    input?: string | Buffer;
    cwd?: string;
    timeoutMs?: number;
    fileModes?: boolean;
  } = {},
): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const env: Record<string, string | undefined> = { ...inheritedEnv(), ...opts.env };
    for (const k of Object.keys(env)) if (env[k] === undefined) delete env[k];
    const argv = [process.execPath, BIN, ...args];
    const [cmd, ...rest] = opts.fileModes ? boundByFileModes(argv) : argv;
    const child = spawn(cmd!, rest, {
      cwd: opts.cwd ?? ROOT,
      env: env as NodeJS.ProcessEnv,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    // A failure bound, not a measure: a CLI still running then is killed (and fails its test) rather than left behind.
    // Generous, for a machine under load; below the runner's 180 s per test (scripts/run-tests.mjs).
    const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 150_000);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
    if (opts.input !== undefined) child.stdin.end(opts.input);
    else child.stdin.end();
  });
}
