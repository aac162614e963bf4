// Wiring of `push`: flags → PushOptions, signals, progress, and the report (summary on stdout, messages on stderr).
import { push, type PushOptions } from '../commands/push.js';
import { UsageError } from '../errors.js';
import { loadConfig } from '../mapping/config.js';
import { readTimeBound, type TimeBoundOptions } from '../mapping/map-record.js';
import { checkTimezone, resolveDateOrder, type DateOrder } from '../mapping/times.js';
import { SINK_NAMES, sinkFlagValues } from '../sinks/registry.js';
import { runWithReport } from './run-with-report.js';
import { didYouMean } from '../did-you-mean.js';

/** Runs `push` from parsed flags (fromEnv: those taken from their environment variable); returns the exit code. */
export async function runPush(
  inputs: string[],
  flags: Record<string, unknown>,
  fromEnv: Record<string, string> = {},
): Promise<number> {
  const opts = toPushOptions(inputs, flags, fromEnv);
  return runWithReport(flags, (ctx) => push(opts, ctx));
}

/** --delimiter as typed: `\\t` and `tab` (hard to type in a shell) mean a tab. */
export function csvDelimiter(v: string | undefined): string | undefined {
  return v === '\\t' || v === 'tab' ? '\t' : v;
}

/** Converts commander's flags into push options, validating what commander cannot. */
export function toPushOptions(
  inputs: string[],
  f: Record<string, unknown>,
  fromEnv: Record<string, string> = {},
): PushOptions {
  const str = (k: string) => (typeof f[k] === 'string' ? f[k] : undefined);
  const timezone = str('timezone');
  const dateOrder = str('dateOrder');
  const checked = {
    timezone: timezone === undefined ? undefined : checkTimezone(timezone, '--timezone'),
    dateOrder: dateOrder === undefined ? undefined : resolveDateOrder({ flag: dateOrder }).order,
  };
  // --since and --until read a time without a zone, and a date with its year last, as the records' times are read:
  // in --timezone or the config's (else UTC), in --date-order or the config's. The config is read for them only.
  let bounds: TimeBoundOptions | undefined;
  const time = (k: string) => {
    const v = str(k);
    if (v === undefined) return undefined;
    bounds ??= timeBoundOptions(checked, str('config'));
    const d = readTimeBound(v, Date.now(), bounds);
    if (!(d instanceof Date)) throw new UsageError(`--${k}: ${d.error}`);
    return d;
  };
  const format = str('format');
  if (format && !['jsonl', 'json', 'csv'].includes(format))
    throw new UsageError(`--format takes jsonl, json or csv, not '${format}'`);
  // Checked here, not only when the sink is built: a dry-run builds none, and took a misspelt --sink without a word.
  // An empty LEADLEDGER_SINK is no sink, as an unset one.
  const sink = str('sink') || undefined;
  if (sink !== undefined && !(SINK_NAMES as readonly string[]).includes(sink))
    throw new UsageError(`--sink takes ${SINK_NAMES.join(', ')}, not '${sink}'${didYouMean(sink, SINK_NAMES)}`);
  const existing = str('existing') ?? 'skip';
  if (existing !== 'skip' && existing !== 'update')
    throw new UsageError(`--existing takes skip or update, not '${existing}'`);
  const report = str('report');
  // Both would take stdout, one document written into the other.
  if ((report === '-' || report === '/dev/stdout') && f.json)
    throw new UsageError(
      `--report ${report} writes the report on stdout, which --json takes too: give --report a file, or leave out --json`,
    );
  if ((report === '-' || report === '/dev/stdout') && str('output') === '-')
    throw new UsageError(`--report ${report} and --output - would both write on stdout: give one of them a file`);
  const delimiter = str('delimiter');
  const sinkFlagsGiven = sinkFlagValues(f, fromEnv);
  const wait = f.wait === true ? 600_000 : typeof f.wait === 'number' ? f.wait : undefined;
  return {
    inputs,
    dryRun: !!f.dryRun,
    ledger: str('ledger'),
    config: str('config'),
    format: format as PushOptions['format'],
    encoding: str('encoding'),
    delimiter: csvDelimiter(delimiter),
    select: str('select'),
    preset: str('preset'),
    defaultCountry: str('defaultCountry'),
    defaultCountryFrom: fromEnv.defaultCountry,
    timezone: checked.timezone,
    dateOrder: checked.dateOrder,
    types: f.type as string[] | undefined,
    since: time('since'),
    until: time('until'),
    report,
    sink,
    // Each sink's own flags go to its definition as they are (sinks/registry.ts), which reads and checks them.
    sinkFlags: sinkFlagsGiven.flags,
    sinkFlagsFromEnv: sinkFlagsGiven.fromEnv,
    allowInsecure: !!f.allowInsecure,
    concurrency: f.concurrency as number | undefined,
    rate: f.rate as number | undefined,
    maxRetries: f.maxRetries as number | undefined,
    backoffMs: f.backoff as number | undefined,
    timeoutMs: f.timeout as number | undefined,
    existing,
    wait,
    noLock: f.lock === false,
    requireInput: !!f.requireInput,
  };
}

// How --since/--until read a time: the zone and the order of the flags, else of the config (never guessed).
function timeBoundOptions(
  flags: { timezone?: string; dateOrder?: DateOrder },
  config: string | undefined,
): TimeBoundOptions {
  const c = loadConfig(config).config;
  const o: TimeBoundOptions = {};
  const zone = flags.timezone ?? (c.timezone ? checkTimezone(c.timezone, 'the config\'s "timezone"') : undefined);
  if (zone) o.timezone = zone;
  if (flags.dateOrder) o.dateOrder = { order: flags.dateOrder, from: '--date-order' };
  else if (c.dateOrder) o.dateOrder = { order: c.dateOrder, from: "the config's dateOrder" };
  return o;
}
