// Every flag of leadledger, defined once: commander is fed from this table and the README's option section is
// generated from it (npm run docs). Keep this file free of heavy imports: --help and --version load it.
import { InvalidArgumentError, Option, type Command } from 'commander';
import { EXIT_PRECEDENCE, ExitCode } from '../errors.js';
import type { SinkFlag } from '../sinks/definition.js';
import { SINKS, sinkFlags, sinkNamesText } from '../sinks/registry.js';

/** One flag. */
export interface OptionDef {
  flags: string;
  description: string;
  /** Environment variable read when the flag is absent. */
  env?: string;
  default?: string | number | boolean;
  /** Converts the text value; throws a plain Error with a message for bad values. */
  parse?: (value: string, previous: unknown) => unknown;
  /** The commands that take it. */
  commands: Array<'push' | 'replay' | 'ledger' | 'sandbox' | 'doctor' | 'serve' | 'init'>;
  hidden?: boolean;
}

/** The groups --help shows options in, in this order; each flag's group is in OPTION_GROUPS. */
export const OPTION_GROUP_ORDER = ['Input', 'Mapping', 'Selection', 'Sink', 'Delivery', 'Output'] as const;
export type OptionGroup = (typeof OPTION_GROUP_ORDER)[number];

// The group of each flag of the table by its long name; a sink's own flags (sinkFlags) are in 'Sink'.
const OPTION_GROUPS: Readonly<Record<string, OptionGroup>> = {
  format: 'Input',
  encoding: 'Input',
  delimiter: 'Input',
  select: 'Input',
  type: 'Input',
  since: 'Input',
  until: 'Input',
  'require-input': 'Input',
  config: 'Mapping',
  preset: 'Mapping',
  'default-country': 'Mapping',
  timezone: 'Mapping',
  'date-order': 'Mapping',
  failed: 'Selection',
  permanent: 'Selection',
  'in-doubt': 'Selection',
  queued: 'Selection',
  resend: 'Selection',
  force: 'Selection',
  keys: 'Selection',
  'keys-from': 'Selection',
  source: 'Selection',
  run: 'Selection',
  limit: 'Selection',
  from: 'Selection',
  sink: 'Sink',
  'allow-insecure': 'Sink',
  'dry-run': 'Delivery',
  ledger: 'Delivery',
  existing: 'Delivery',
  concurrency: 'Delivery',
  rate: 'Delivery',
  'max-retries': 'Delivery',
  backoff: 'Delivery',
  timeout: 'Delivery',
  wait: 'Delivery',
  yes: 'Delivery',
  'no-lock': 'Delivery',
  report: 'Output',
  json: 'Output',
  quiet: 'Output',
  verbose: 'Output',
  'no-color': 'Output',
};

/** The --help group of a flag of the table. */
export function optionGroup(def: Pick<OptionDef, 'flags'>): OptionGroup {
  const long = /--([\w-]+)/.exec(def.flags)?.[1] ?? '';
  return OPTION_GROUPS[long] ?? 'Sink';
}

const int = (name: string, min: number) => (v: string) => {
  const n = Number(v);
  if (!Number.isInteger(n) || n < min)
    throw new InvalidArgumentError(`${name} takes a whole number ≥ ${min}, not '${v}'`);
  return n;
};
const num = (name: string) => (v: string) => {
  const n = Number(v);
  if (!Number.isFinite(n) || n <= 0) throw new InvalidArgumentError(`${name} takes a positive number, not '${v}'`);
  return n;
};
// A comma-separated list, added to the values of the option's earlier uses. One with nothing in it ('', ',') is
// refused: taken as it is, `--type ,` accepted no type at all, and filtered every event out.
const list = (name: string, what: string) => (v: string, prev: unknown) => {
  const items = v
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (items.length === 0) throw new InvalidArgumentError(`${name} takes ${what} separated by commas, not '${v}'`);
  return [...((prev as string[] | undefined) ?? []), ...items];
};
/** The longest wait a timer holds (2^31 - 1 ms, 24.8 days): a longer one fires at once. */
const MAX_SECONDS = Math.floor((2 ** 31 - 1) / 1000);
const seconds = (name: string) => (v: string) => {
  const n = num(name)(v);
  if (n > MAX_SECONDS)
    throw new InvalidArgumentError(`${name} takes at most ${MAX_SECONDS} seconds (24 days), not '${v}'`);
  return Math.round(n * 1000);
};

/** The option table. */
export const OPTIONS: OptionDef[] = [
  {
    flags: '-n, --dry-run',
    description: 'decide and report what a push would send; no CRM is called and the ledger is not written',
    commands: ['push', 'replay'],
  },
  {
    flags: '--ledger <file>',
    description: 'the ledger: a file, or postgres://user@host/db[?schema=name] for several hosts',
    env: 'LEADLEDGER_LEDGER',
    // Shown, not applied by commander: the config's "ledger" comes between the environment and this default.
    default: '.leadledger/ledger.db, or the config\'s "ledger"',
    commands: ['push', 'replay', 'ledger', 'doctor', 'serve'],
  },
  {
    flags: '-c, --config <file>',
    description:
      'config file (field mapping, key, types, the sink and its settings, the ledger), else the one LEADLEDGER_CONFIG names; the summary names the one in use',
    default: './leadledger.config.json, else config.json in the user config directory (~/.config/leadledger/)',
    commands: ['push', 'replay', 'doctor', 'serve', 'init'],
  },
  {
    flags: '--format <format>',
    description: 'input format: jsonl, json, csv or log (lines of text) (default: from the extension or the content)',
    commands: ['push', 'replay', 'ledger'],
  },
  {
    flags: '--encoding <name>',
    description:
      'text encoding of the inputs (CSV, JSONL, JSON), e.g. utf-8, windows-1252 (default: detected: UTF-8, else Windows-1252)',
    commands: ['push', 'replay', 'ledger'],
  },
  {
    flags: '--delimiter <char>',
    description: 'CSV delimiter (default: sniffed from , ; tab |)',
    commands: ['push', 'replay', 'ledger'],
  },
  {
    flags: '--select <path>',
    description: 'dotted path of the event inside each record of a wrapped log (e.g. body, payload)',
    commands: ['push', 'replay', 'ledger'],
  },
  {
    flags: '--preset <name>',
    description:
      'read every input as this source (leadledger presets lists them; generic: by field names only); default: each input is recognized',
    commands: ['push', 'replay'],
  },
  {
    flags: '--default-country <code>',
    description: 'country of national phone numbers, ISO 3166 (e.g. BR, US)',
    env: 'LEADLEDGER_DEFAULT_COUNTRY',
    commands: ['push', 'replay', 'serve'],
  },
  {
    flags: '--timezone <zone>',
    description:
      "the zone of event times written without one, an IANA name (e.g. America/Sao_Paulo; also the config's timezone); default: UTC, whatever the machine's TZ",
    commands: ['push', 'replay', 'serve'],
  },
  {
    flags: '--date-order <order>',
    description:
      "the order of day and month of dates written with the year last, where a field's own dates do not show it: dmy (25/12/2024) or mdy (12/25/2024) (also the config's dateOrder); default: mdy for a --default-country that writes dates so (US), else dmy",
    commands: ['push', 'replay', 'serve'],
  },
  {
    flags: '--type <types>',
    description: 'accept only these event types (comma-separated, repeatable)',
    parse: list('--type', 'event types'),
    commands: ['push', 'replay'],
  },
  {
    flags: '--since <time>',
    description:
      "only events at or after this time (ISO date/time, or an age like 7d, 12h, 30min, 2w, 6mo; a time without a zone is UTC unless --timezone or the config's timezone says)",
    commands: ['push', 'replay', 'ledger'],
  },
  { flags: '--until <time>', description: 'only events before this time', commands: ['push', 'replay', 'ledger'] },
  {
    flags: '--report <file>',
    description:
      "write a row per record read (.csv or .jsonl; never through a symlink; a device such as /dev/null gets JSONL; - or /dev/stdout: JSONL on stdout, the summary then on stderr): source, line, item (of a record with several events), key, email, decision, reason, result, crm id, warnings; or .html: one self-contained page with the counts, a timeline, the reasons, the conflicts' field diffs and a searchable table",
    commands: ['push', 'replay'],
  },
  {
    flags: '--json',
    description: 'print the run report as one JSON document on stdout (the summary then goes to stderr)',
    commands: ['push', 'replay', 'ledger', 'doctor'],
  },
  {
    flags: '-s, --sink <name>',
    description: `destination: ${sinkNamesText()}`,
    env: 'LEADLEDGER_SINK',
    commands: ['push', 'replay', 'doctor', 'serve', 'init'],
  },
  // Each sink's own flags, from its definition (sinks/registry.ts).
  ...sinkFlags().map(({ key: _key, sinks: _sinks, ...f }): OptionDef => ({
    ...f,
    commands: ['push', 'replay', 'doctor', 'serve', 'init'],
  })),
  {
    flags: '--allow-insecure',
    description: 'allow plain http:// to a host other than loopback',
    commands: ['push', 'replay', 'doctor', 'serve', 'init'],
  },
  {
    flags: '--existing <policy>',
    description: 'a person already delivered by another event, or already in the CRM: skip or update',
    default: 'skip',
    commands: ['push', 'replay', 'doctor'],
  },
  {
    flags: '--concurrency <n>',
    description: 'batches in flight at once',
    default: 4,
    parse: int('--concurrency', 1),
    commands: ['push', 'replay', 'serve'],
  },
  {
    flags: '--rate <n>',
    description: 'at most n requests per second (the CRM’s rate-limit headers are obeyed too)',
    parse: num('--rate'),
    commands: ['push', 'replay', 'serve'],
  },
  {
    flags: '--max-retries <n>',
    description: 'retries of one request on 408/429/5xx/network errors',
    default: 5,
    parse: int('--max-retries', 0),
    commands: ['push', 'replay', 'serve'],
  },
  {
    flags: '--backoff <ms>',
    description: 'first retry delay; doubles on each retry, with jitter (Retry-After wins)',
    default: 500,
    parse: int('--backoff', 0),
    commands: ['push', 'replay', 'serve'],
  },
  {
    flags: '--timeout <seconds>',
    description: 'per-request timeout',
    default: 30,
    parse: seconds('--timeout'),
    commands: ['push', 'replay', 'doctor', 'serve'],
  },
  {
    flags: '--wait [seconds]',
    description: 'if another run holds the ledger, wait for it (default 600 s) instead of exiting 5',
    parse: seconds('--wait'),
    commands: ['push', 'replay'],
  },
  {
    flags: '--require-input',
    description:
      'a glob that matches no file is an error (exit 3); without it, it is "nothing to do": a note, and exit 0 (for cron)',
    commands: ['push', 'replay'],
  },
  {
    flags: '-q, --quiet',
    description: 'print nothing but errors (and --json)',
    commands: ['push', 'replay', 'ledger', 'sandbox', 'serve'],
  },
  {
    flags: '--verbose',
    description: 'stack traces and HTTP retry details',
    commands: ['push', 'replay', 'ledger', 'sandbox', 'serve'],
  },
  {
    flags: '--no-color',
    description: 'no colour (also NO_COLOR=1)',
    commands: ['push', 'replay', 'ledger', 'sandbox', 'doctor', 'serve'],
  },
  {
    flags: '--failed',
    description: 'replay retryable failures (the default when no status flag is given)',
    commands: ['replay'],
  },
  {
    flags: '--permanent',
    description: 'replay permanent (4xx) failures too, e.g. after fixing the mapping',
    commands: ['replay'],
  },
  {
    flags: '--in-doubt',
    description:
      'replay in-doubt events: looked up in the CRM first, or re-sent with their key where the sink drops repeats; the rest only with --resend',
    commands: ['replay'],
  },
  {
    flags: '--queued',
    description:
      'replay the events leadledger serve acknowledged and has not delivered (its inbox), e.g. when no receiver will start again on this ledger',
    commands: ['replay'],
  },
  {
    flags: '--resend',
    description:
      'with --in-doubt: also re-send in-doubt events the sink can neither look up nor drop as a repeat (the CRM may get them twice); sends no other event',
    commands: ['replay'],
  },
  {
    flags: '--force',
    description: 'also re-send events already sent (same downstream key; asks first)',
    commands: ['replay'],
  },
  { flags: '-y, --yes', description: 'answer yes to confirmations (needed off a terminal)', commands: ['replay'] },
  {
    flags: '--keys <keys>',
    description: 'only these event keys (comma-separated, repeatable)',
    parse: list('--keys', 'event keys'),
    commands: ['replay'],
  },
  {
    flags: '--keys-from <file>',
    description: 'only the event keys listed in a file, one per line (- for stdin)',
    commands: ['replay'],
  },
  { flags: '--source <file>', description: 'only events that came from this input file', commands: ['replay'] },
  {
    flags: '--run <id>',
    description: 'only events last touched by this run (see ledger runs)',
    parse: int('--run', 1),
    commands: ['replay'],
  },
  { flags: '--limit <n>', description: 'at most n events', parse: int('--limit', 1), commands: ['replay'] },
  {
    flags: '--from <files...>',
    description: 'match these input files to the ledger and re-send their failed / in-doubt events from the inputs',
    commands: ['replay'],
  },
  {
    flags: '--no-lock',
    description: 'do not take the run lock (claims still prevent double sends)',
    commands: ['push', 'replay'],
    hidden: true,
  },
];

// What each exit code means: the one table --help and the README (npm run docs) show. `satisfies` keeps it whole: a
// code added to ExitCode (src/errors.ts) without a row here does not compile.
const EXIT_MEANINGS = {
  [ExitCode.ok]: 'all done (including "nothing new")',
  [ExitCode.incomplete]:
    'finished, but some events failed or are in doubt, or the --report file could not be written; or the destination refused connection after connection and the run stopped sending (what was not sent was released: run it again later)',
  [ExitCode.usage]: 'usage or config error',
  [ExitCode.input]:
    'input unreadable, wholly or in part: a file, the rest of one, or a record (a broken JSON line, a CSV row with broken quoting or the wrong number of cells, an email or phone of a form-encoded body whose bytes are not UTF-8); what could be read was still decided and sent',
  [ExitCode.credentials]: 'the CRM rejected the credentials',
  [ExitCode.budget]:
    "the CRM's API budget would run out: stopped before it; the rest goes with the next run (what was sent is settled, nothing is lost)",
  [ExitCode.ledger]: 'ledger locked by another run, or unusable',
  [ExitCode.conflict]:
    'finished, but some events conflict with what the ledger or the input holds (the same key, another lead): never sent, a person must look; a --dry-run that finds conflicts ends 6 too',
  [ExitCode.interrupted]:
    'interrupted (Ctrl-C / SIGTERM / SIGHUP): sends in flight settled within the grace period, the rest in doubt; unsent events released',
} satisfies Record<ExitCode, string>;

/** Exit codes, as --help and the README show them, in numeric order. */
export const EXIT_CODES: Array<[number, string]> = Object.entries(EXIT_MEANINGS)
  .map(([c, d]): [number, string] => [Number(c), d])
  .sort((a, b) => a[0] - b[0]);

/** Under the table of exit codes: which one a run that meets several ends with. */
export const EXIT_PRECEDENCE_TEXT = `When several apply, the run ends with the first of ${EXIT_PRECEDENCE.join(', ')}.`;

/** Adds the options of the table that `name` takes to a command, group by group (as --help shows them). */
export function addOptions(cmd: Command, name: OptionDef['commands'][number]): Command {
  const defs = OPTIONS.filter((d) => d.commands.includes(name));
  // Options the command defined itself (sandbox's) come first, as its own; the table's follow in their groups.
  for (const o of cmd.options) if (!o.helpGroupHeading) o.helpGroup(`${cap(name)} options:`);
  const order = (d: OptionDef) => OPTION_GROUP_ORDER.indexOf(optionGroup(d));
  for (const def of [...defs].sort((a, b) => order(a) - order(b))) {
    // A flag the command defined itself stays its own (init's --output before the jsonl sink's).
    if (cmd.options.some((o) => o.long === new Option(def.flags).long)) continue;
    const o = new Option(def.flags, def.description).helpGroup(`${optionGroup(def)} options:`);
    if (def.env) o.env(def.env);
    if (def.parse) o.argParser(asArgParser(def.parse));
    // Commander does not pass defaults through the parser: parse them here, show them as written.
    if (def.default !== undefined && !(typeof def.default === 'string' && def.default.includes(' '))) {
      o.default(def.parse ? def.parse(String(def.default), undefined) : def.default, String(def.default));
    }
    if (def.hidden) o.hideHelp();
    cmd.addOption(o);
  }
  return cmd;
}

function cap(s: string): string {
  return s[0]!.toUpperCase() + s.slice(1);
}

// Commander reports a bad value only from an InvalidArgumentError: a sink's parser throws a plain Error with its message.
function asArgParser(parse: NonNullable<OptionDef['parse']>): NonNullable<OptionDef['parse']> {
  return (value, previous) => {
    try {
      return parse(value, previous);
    } catch (e) {
      if (e instanceof InvalidArgumentError) throw e;
      throw new InvalidArgumentError((e as Error).message);
    }
  };
}

/** The flags whose value the command took from their environment variable: attribute name → variable. */
export function valuesFromEnv(cmd: Command): Record<string, string> {
  const out: Record<string, string> = {};
  for (const o of cmd.options)
    if (o.envVar && cmd.getOptionValueSource(o.attributeName()) === 'env') out[o.attributeName()] = o.envVar;
  return out;
}

/** The sinks `leadledger auth` serves: those with an authorize hook. */
export function authorizingSinks(): Array<(typeof SINKS)[number]> {
  return SINKS.filter((s) => !!s.authorize);
}

/** Adds to `leadledger auth` the flags of every sink that authorizes (a flag two sinks share, once). */
export function addAuthOptions(cmd: Command): Command {
  const seen = new Set<string>();
  const flags: SinkFlag[] = [];
  for (const s of authorizingSinks())
    for (const f of s.authorizeFlags ?? []) if (!seen.has(f.flags) && seen.add(f.flags)) flags.push(f);
  for (const f of flags) {
    const description = typeof f.description === 'string' ? f.description : f.description(authorizingSinks());
    const o = new Option(f.flags, description);
    if (f.env) o.env(f.env);
    if (f.parse) o.argParser(asArgParser(f.parse));
    if (f.default !== undefined) o.default(f.default);
    cmd.addOption(o);
  }
  return cmd.option('--allow-insecure', 'allow plain http:// to a host other than loopback');
}
