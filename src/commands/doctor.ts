// `leadledger doctor`: before a long push, in a few seconds, what would stop it: the config (found where, valid), the
// ledger (opens, schema version, events failed or in doubt), the sink's credentials (present, their files' modes)
// and the destination (one cheap request: it answers, takes the credentials, lets them write). Changes nothing.
import { existsSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import { isAbsolute, resolve } from 'node:path';
import { configureSink, type SinkFlags } from '../deliver/open-sink.js';
import { ExitCode, exitCodeOf } from '../errors.js';
import { ledgerPath } from '../ledger/ledger.js';
import { ledgerName, openLedgerStore } from '../ledger/open.js';
import { SCHEMA_VERSION } from '../ledger/schema.js';
import { isPostgresUrl } from '../ledger/store.js';
import { loadConfig, type Config, type LoadedConfig } from '../mapping/config.js';
import type { SinkOpenContext } from '../sinks/definition.js';
import type { CommandContext } from './context.js';

/** Options of `doctor`: the same config, ledger and sink flags as push. */
export interface DoctorOptions extends SinkFlags {
  config?: string;
  ledger?: string;
  /** Where --sink came from when it came from its variable (LEADLEDGER_SINK). */
  sinkFrom?: string;
}

/** One line of the doctor's report. */
export interface DoctorLine {
  check: 'config' | 'ledger' | 'sink' | 'credentials' | 'destination';
  status: 'ok' | 'warn' | 'fail';
  message: string;
  hint?: string;
  /** For a fail: the exit code it stands for (2 config or usage, 4 credentials, 5 ledger; 1 otherwise). */
  exitCode?: number;
}

/** What doctor found. */
export interface DoctorReport {
  command: 'doctor';
  config: string | null;
  ledger: string;
  sink: string | null;
  checks: DoctorLine[];
  /** 0 when no check failed (warnings do not fail); else the first fail's code in EXIT_PRECEDENCE order. */
  exitCode: number;
}

/** A check of the destination takes at most this long: doctor answers in seconds, not a push's retry schedule. */
const CHECK_TIMEOUT_MS = 10_000;

/** Runs every check, in the order a push meets them; never throws for what it checks. */
export async function doctor(o: DoctorOptions, ctx: CommandContext): Promise<DoctorReport> {
  const checks: DoctorLine[] = [];
  const loaded = checkConfig(o, ctx, checks);
  const config: Config = loaded?.config ?? {};
  const ledger = ledgerPath(o.ledger, ctx.env, config.ledger);
  const path = isPostgresUrl(ledger) || isAbsolute(ledger) ? ledger : resolve(ctx.cwd, ledger);
  checks.push(...(await checkLedger(path, ctx)));
  let sinkName: string | null = null;
  try {
    const chosen = configureSink(o, config);
    if (!chosen)
      checks.push({
        check: 'sink',
        status: 'warn',
        message: 'none named: push and replay need --sink, LEADLEDGER_SINK or "sink" in the config',
      });
    else {
      sinkName = chosen.name;
      const from = o.sink ? (o.sinkFrom ?? '--sink') : 'the config';
      checks.push({ check: 'sink', status: 'ok', message: `${chosen.name} (from ${from})` });
      for (const f of chosen.credentialFiles?.(ctx.env) ?? []) {
        const line = await checkCredentialFile(f.path, f.named);
        if (line) checks.push(line);
      }
      const timeoutMs = Math.min(o.timeoutMs ?? CHECK_TIMEOUT_MS, CHECK_TIMEOUT_MS);
      const warnings: string[] = [];
      const open: SinkOpenContext = {
        env: ctx.env,
        // One attempt: a destination that does not answer now is what doctor reports.
        transport: { timeoutMs, maxRetries: 0, allowInsecure: o.allowInsecure },
        existing: o.existing ?? 'skip',
        concurrency: 1,
        customFields: Object.keys(config.fields?.custom ?? {}),
        warn: (m) => warnings.push(m),
        // doctor creates nothing (never a table).
        checkOnly: true,
      };
      const signal = AbortSignal.any([ctx.stop, AbortSignal.timeout(timeoutMs * 2)]);
      for (const l of (await chosen.check?.(open, signal)) ?? []) checks.push({ ...l });
      for (const w of warnings) checks.push({ check: 'destination', status: 'warn', message: w });
    }
  } catch (e) {
    checks.push({ check: 'sink', status: 'fail', message: (e as Error).message, exitCode: exitOf(e) });
  }
  const fails = checks.filter((c) => c.status === 'fail').map((c) => (c.exitCode ?? 1) as ExitCode);
  return {
    command: 'doctor',
    config: loaded?.path ?? null,
    ledger: ledgerName(path),
    sink: sinkName,
    checks,
    exitCode: fails.length ? exitCodeOf(new Set(fails)) || ExitCode.incomplete : ExitCode.ok,
  };
}

// The config: found where, and valid. An invalid one is a fail; the checks after it run without it.
function checkConfig(o: DoctorOptions, ctx: CommandContext, checks: DoctorLine[]): LoadedConfig | undefined {
  try {
    const loaded = loadConfig(o.config, ctx.cwd, ctx.env);
    checks.push(
      loaded.path
        ? { check: 'config', status: 'ok', message: `${loaded.path} (${foundBy(loaded.from)}): valid` }
        : {
            check: 'config',
            status: 'ok',
            message:
              'none (no --config, no LEADLEDGER_CONFIG, no ./leadledger.config.json, nothing in the user config directory): flags and environment only',
          },
    );
    return loaded;
  } catch (e) {
    checks.push({
      check: 'config',
      status: 'fail',
      message: (e as Error).message,
      hint: 'fix it, or name another with --config; `leadledger init <sample>` writes one',
      exitCode: exitOf(e),
    });
    return undefined;
  }
}

function foundBy(from: LoadedConfig['from']): string {
  switch (from) {
    case '--config':
      return 'named by --config';
    case 'LEADLEDGER_CONFIG':
      return 'named by LEADLEDGER_CONFIG';
    case 'working directory':
      return 'found in the working directory';
    default:
      return "found in the user's config directory";
  }
}

// The ledger: opens read-only, its schema version, and what it holds that a person should see to.
async function checkLedger(path: string, ctx: CommandContext): Promise<DoctorLine[]> {
  const name = ledgerName(path);
  if (!isPostgresUrl(path) && !existsSync(path))
    return [
      {
        check: 'ledger',
        status: 'warn',
        message: `${name} does not exist yet`,
        hint: 'the first push creates it; if a push already ran, this is not its ledger (--ledger, LEADLEDGER_LEDGER, "ledger" in the config)',
      },
    ];
  let store;
  try {
    store = await openLedgerStore(path, { readonly: true, env: ctx.env });
  } catch (e) {
    return [{ check: 'ledger', status: 'fail', message: (e as Error).message, exitCode: exitOf(e, ExitCode.ledger) }];
  }
  if (!store) return [{ check: 'ledger', status: 'warn', message: `${name} does not exist yet` }];
  try {
    const { schemaVersion } = await store.storageFacts();
    const rows = await store.sql.all<{ status: string; failure: string | null; n: number }>(
      "SELECT status, failure, count(*) AS n FROM events WHERE status <> 'sent' GROUP BY status, failure",
    );
    const count = (status: string, failure?: string) =>
      rows
        .filter((r) => r.status === status && (failure === undefined || (r.failure ?? 'retryable') === failure))
        .reduce((s, r) => s + Number(r.n), 0);
    const inDoubt = count('in_doubt');
    const retryable = count('failed', 'retryable');
    const permanent = count('failed', 'permanent');
    const pending = count('pending');
    const newer = store.sql.dialect === 'sqlite' && schemaVersion > SCHEMA_VERSION;
    const lines: DoctorLine[] = [
      newer
        ? {
            check: 'ledger',
            status: 'fail',
            message: `${name}: schema v${schemaVersion}, written by a newer leadledger (this one writes v${SCHEMA_VERSION})`,
            hint: 'upgrade leadledger',
            exitCode: ExitCode.ledger,
          }
        : {
            check: 'ledger',
            status: 'ok',
            message: `${name}: opens, schema v${schemaVersion}; in doubt ${inDoubt}, failed ${retryable + permanent} (${permanent} permanent), pending ${pending}`,
          },
    ];
    if (inDoubt)
      lines.push({
        check: 'ledger',
        status: 'warn',
        message: `${inDoubt} event${inDoubt === 1 ? '' : 's'} in doubt (maybe delivered, maybe not)`,
        hint: 'leadledger replay --in-doubt (looked up in the CRM first where the sink can)',
      });
    if (retryable || permanent)
      lines.push({
        check: 'ledger',
        status: 'warn',
        message: `${retryable + permanent} event${retryable + permanent === 1 ? '' : 's'} failed`,
        hint: `leadledger replay${permanent ? ' (--permanent for the 4xx ones, after fixing what the CRM refused)' : ''}`,
      });
    return lines;
  } finally {
    await store.close();
  }
}

// A file holding credentials: there when named, and readable by its owner only (as ssh and ~/.pgpass want).
async function checkCredentialFile(path: string, named: boolean): Promise<DoctorLine | undefined> {
  let mode: number;
  try {
    mode = (await stat(path)).mode;
  } catch (e) {
    if (!named) return undefined;
    return {
      check: 'credentials',
      status: 'fail',
      message: `${path}: ${(e as NodeJS.ErrnoException).code === 'ENOENT' ? 'does not exist' : (e as Error).message}`,
      exitCode: ExitCode.usage,
    };
  }
  if (mode & 0o077)
    return {
      check: 'credentials',
      status: 'warn',
      message: `${path} can be read by other users (mode ${(mode & 0o777).toString(8)})`,
      hint: `chmod 600 ${path}`,
    };
  return { check: 'credentials', status: 'ok', message: `${path}: readable by its owner only` };
}

function exitOf(e: unknown, fallback: number = ExitCode.usage): number {
  const c = (e as { exitCode?: unknown }).exitCode;
  return typeof c === 'number' ? c : fallback;
}
