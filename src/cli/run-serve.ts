// Wiring of `serve`: flags → ServeOptions, the stop signals (SIGTERM: stop accepting, answer what is under way,
// deliver what the grace period allows), and the log: the first line on stdout says the URL served; after it, JSON
// lines off a terminal (for a log collector), plain lines on one.
import { serve } from '../commands/serve.js';
import { UsageError } from '../errors.js';
import { checkTimezone, resolveDateOrder } from '../mapping/times.js';
import { createServeLog } from '../serve/log.js';
import { SINK_NAMES, sinkFlagValues } from '../sinks/registry.js';
import { didYouMean } from '../did-you-mean.js';
import { describeHttpEvent } from './output.js';
import { installStopSignals } from './signals.js';

/** Runs `serve` from parsed flags until stopped; returns the exit code. */
export async function runServe(flags: Record<string, unknown>, fromEnv: Record<string, string> = {}): Promise<number> {
  const str = (k: string) => (typeof flags[k] === 'string' ? flags[k] : undefined);
  const int = (k: string, min: number, max: number) => {
    const v = str(k);
    if (v === undefined) return undefined;
    const n = Number(v);
    if (!/^\d+$/.test(v.trim()) || n < min || n > max)
      throw new UsageError(
        `--${k.replace(/[A-Z]/g, (c) => '-' + c.toLowerCase())} takes a whole number from ${min} to ${max}, not '${v}'`,
      );
    return n;
  };
  const sink = str('sink') || undefined;
  if (sink !== undefined && !(SINK_NAMES as readonly string[]).includes(sink))
    throw new UsageError(`--sink takes ${SINK_NAMES.join(', ')}, not '${sink}'${didYouMean(sink, SINK_NAMES)}`);
  const timezone = str('timezone');
  const dateOrder = str('dateOrder');
  const given = sinkFlagValues(flags, fromEnv);
  const json = !process.stdout.isTTY;
  const log = createServeLog(process.stdout, json, !!flags.quiet);
  const signals = installStopSignals(graceMs(process.env));
  // Until the receiver listens, warnings go to stderr: the first line on stdout is the one that says the URL.
  let listening = false;
  try {
    const r = await serve(
      {
        ledger: str('ledger'),
        config: str('config'),
        port: int('port', 0, 65535),
        host: str('host'),
        endpoints: flags.endpoint as string[] | undefined,
        archive: str('archive'),
        maxInbox: int('maxInbox', 1, 1e12),
        defaultCountry: str('defaultCountry'),
        defaultCountryFrom: fromEnv.defaultCountry,
        timezone: timezone === undefined ? undefined : checkTimezone(timezone, '--timezone'),
        dateOrder: dateOrder === undefined ? undefined : resolveDateOrder({ flag: dateOrder }).order,
        sink,
        sinkFlags: given.flags,
        sinkFlagsFromEnv: given.fromEnv,
        allowInsecure: !!flags.allowInsecure,
        concurrency: flags.concurrency as number | undefined,
        rate: flags.rate as number | undefined,
        maxRetries: flags.maxRetries as number | undefined,
        backoffMs: flags.backoff as number | undefined,
        timeoutMs: flags.timeout as number | undefined,
      },
      {
        env: process.env,
        cwd: process.cwd(),
        stop: signals.stop,
        hardStop: signals.hardStop,
        warn: (m) => (listening ? log.warn(m) : process.stderr.write(`warning: ${m}\n`)),
        onHttpEvent: flags.verbose ? (e) => e.type !== 'request' && log.info(describeHttpEvent(e)) : undefined,
        log,
        // The first line on stdout, whatever the log's form: what a script or a test waits for.
        onListening: (url, paths) => {
          listening = true;
          process.stdout.write(`leadledger serve: listening on ${url} (POST ${paths.join(', ')})\n`);
        },
      },
    );
    return r.exitCode;
  } finally {
    signals.dispose();
  }
}

// How long deliveries under way may settle after SIGTERM before they are cut (their events end in doubt, and are
// resolved by the next start): 10 s, or LEADLEDGER_GRACE_MS.
function graceMs(env: NodeJS.ProcessEnv): number {
  const ms = Number(env.LEADLEDGER_GRACE_MS);
  return ms > 0 ? ms : 10_000;
}
