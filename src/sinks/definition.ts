// What a sink is to the rest of leadledger: a definition in the registry (registry.ts), as a source is a definition
// in presets/. The CLI's flags and --help, the README's sink table and the config file's `sinks` section are made
// from the definitions; push and replay read a sink's options and open it only through its definition, so nothing
// outside sinks/ names a sink. A definition module stays light (no driver, no HTTP): --help loads every one of them,
// and open() imports the sink itself only when a run sends.
import type { Writable } from 'node:stream';
import type { z as Zod } from 'zod';
import type { CircuitBreaker } from './transport/breaker.js';
import type { HttpClient, HttpEvent } from './transport/http.js';
import type { Sink, SinkCheck } from './types.js';

/** A flag a sink takes on push and replay: fed to commander, shown in --help and in the README's option table. */
export interface SinkFlag {
  /** As commander takes it: '--hubspot-url <url>', '--create-table'. Its value is read by commander's attribute name. */
  flags: string;
  /**
   * The help. A flag several sinks share (--token-file) is one object, defined once in transport/; its help is then a
   * function of the sinks that take it.
   */
  description: string | ((takers: readonly RegisteredSink[]) => string);
  /** The environment variable commander reads when the flag is absent (SinkInput.fromEnv then names it). */
  env?: string;
  default?: string | number | boolean;
  /** Converts and checks the text value; throws an Error whose message says what the flag takes. */
  parse?: (value: string, previous: unknown) => unknown;
  hidden?: boolean;
}

/** A mistake in a config section that its schema cannot see alone: its path inside the section, and what is wrong. */
export interface ConfigIssue {
  path: Array<string | number>;
  message: string;
}

/** What a definition reads its options from: flags (commander already fell back to their variables), then config. */
export interface SinkInput<C> {
  /** The values of the sink flags, by commander's attribute name (hubspotUrl, pgUrl), defaults applied. */
  flags: Readonly<Record<string, unknown>>;
  /** The flags whose value came from their environment variable: attribute name → variable. */
  fromEnv: Readonly<Record<string, string>>;
  /** The config file's `sinks.<name>` section, validated by the definition's configSchema; undefined when absent. */
  config: C | undefined;
}

/** The run's delivery settings every sink shares (one retry, timeout and rate policy for HTTP and PostgreSQL). */
export interface TransportOptions {
  /** --timeout: per request or statement (ms). */
  timeoutMs?: number;
  /** --max-retries: retries after the first attempt of a request or a batch. */
  maxRetries?: number;
  /** --backoff: the first retry's delay (ms), doubled on each retry, with jitter. */
  baseDelayMs?: number;
  /** --rate: requests per second. */
  rate?: number;
  /** --allow-insecure: plain http to a host other than loopback. */
  allowInsecure?: boolean;
  /** The run's circuit breaker: a destination that refuses connection after connection stops the run's sends. */
  breaker?: CircuitBreaker;
}

/** What open() gets besides the sink's own options. */
export interface SinkOpenContext {
  /** Where tokens and secrets are read from (process.env, or a test's). */
  env: Record<string, string | undefined>;
  transport: TransportOptions;
  /** --existing: a person the destination already holds is skipped or updated. */
  existing: 'skip' | 'update';
  /** --concurrency: batches in flight at once (a pool of connections is sized from it). */
  concurrency: number;
  /** The names of the config's custom fields (fields.custom). */
  customFields: readonly string[];
  /** HTTP progress (retries, rate-limit waits) for --verbose. */
  onHttpEvent?: (event: HttpEvent) => void;
  /** A message a person should read (stderr); never a secret. */
  warn?: (message: string) => void;
  /** Opened for `leadledger doctor`: create nothing (a table, a file) that a push would create. */
  checkOnly?: boolean;
  /** Standard output, for a sink that can write there (default process.stdout). */
  stdout?: Writable;
}

/** An open sink, and the HTTP client whose counters the run's report shows (HTTP sinks only). */
export interface OpenedSink {
  sink: Sink;
  http?: HttpClient;
}

/** What `leadledger auth <sink>` gives a sink's authorize hook besides its flags' values. */
export interface SinkAuthorizeContext {
  /** Where client ids, secrets and refresh tokens are read from (process.env, or a test's). */
  env: Record<string, string | undefined>;
  /** --allow-insecure: plain http to a host other than loopback. */
  allowInsecure: boolean;
  /** A line for the person running the command (stderr): the consent page to open, what it waits for. */
  log: (line: string) => void;
  signal?: AbortSignal;
}

/** What an authorization wrote: where, and a line for stdout; never a secret. */
export interface SinkAuthorization {
  path: string;
  message: string;
}

/** The README's row of a sink: what it sends, its batch size, and how its in-doubt events are settled. */
export interface SinkDocs {
  sends: string;
  batch: string;
  inDoubt: string;
}

/**
 * A sink, as its folder defines it. O: its options, read from flags and config; C: its config section.
 * Capabilities are not declared here: they are the methods the opened Sink has (types.ts).
 */
export interface SinkDefinition<O, C = Record<string, never>> {
  /** The value of --sink, and the key of its config section (`sinks.<name>`). */
  readonly name: string;
  /** One line for --help's list of sinks. */
  readonly summary: string;
  readonly docs: SinkDocs;
  /** Command lines --help shows as examples ($ is added). */
  readonly examples?: readonly string[];
  /** Its flags, in the order --help shows them (a flag shared with other sinks is shown once, where first named). */
  readonly flags: readonly SinkFlag[];
  /** The environment variable the token comes from when --token-file is not given (sinks that take one). */
  readonly tokenEnv?: string;
  /**
   * The schema of its config section, made with the zod given (zod is loaded only when a config file is read).
   * Unknown keys must be errors: a strict object. Absent: the section may be there, empty.
   */
  configSchema?(z: typeof Zod): Zod.ZodType<C>;
  /** Checks of the section against the rest of the config (a template's placeholders against the custom fields). */
  checkConfig?(section: C, config: { customFields: readonly string[] }): ConfigIssue[];
  /** Reads its options: a flag, else its environment variable, else the config. Reads no file; throws nothing. */
  read(input: SinkInput<C>): O;
  /** What the run's report and the ledger's run record show of the options: never a secret. */
  shown(options: O): Record<string, unknown>;
  /** The flags a `replay --in-doubt` command repeats to reach the same destination: never a secret. */
  replayArgs(options: O): string[];
  /**
   * What sending this many leads costs at the destination, in a line (Zoho's API credits), for a CRM that charges by
   * the record: a dry-run shows it, and a push says it before it sends. Absent: nothing to say.
   */
  spend?(options: O, leads: number): string;
  /** Checks what is missing, reads credentials by reference and opens the sink; loads the sink's module lazily. */
  open(options: O, ctx: SinkOpenContext): Promise<OpenedSink>;
  /**
   * `leadledger doctor`'s look at the destination, where opening the sink is not side-effect free (a file it would
   * create): what a push would meet, without changing anything. Absent: the sink is opened (credentials read by
   * reference) and its check() asked, then closed.
   */
  check?(options: O, ctx: SinkOpenContext): Promise<SinkCheck>;
  /**
   * `leadledger init --sink <name>`: what to create once in the CRM before the first push (a key field), and, where
   * credentials are at hand, whether it is there; changes nothing. Absent: the sink needs nothing created.
   */
  setup?(options: O, ctx: SinkOpenContext): Promise<SinkSetupLine[]>;
  /** The files holding its credentials (a token file, OAuth credentials), for doctor to check their permissions. */
  credentialFiles?(options: O, env: Record<string, string | undefined>): CredentialFile[];
  /** What `leadledger auth <sink>` does for it, in a line of help (sinks with authorize only). */
  readonly authorizeHelp?: string;
  /** The flags `leadledger auth <sink>` takes for it (a flag object shared with `flags` is the same flag). */
  readonly authorizeFlags?: readonly SinkFlag[];
  /**
   * Obtains credentials that expire (OAuth 2) and stores them where open() reads them: `leadledger auth <sink>`.
   * Absent: the sink takes a token by reference, and `auth` says so. args: its flags' values by attribute name.
   */
  authorize?(args: Readonly<Record<string, unknown>>, ctx: SinkAuthorizeContext): Promise<SinkAuthorization>;
}

/**
 * A line `leadledger init --sink <name>` prints: a step to take once in the CRM ('todo'), or what a look at the
 * destination found (ok, warn, fail; a fail ends init with its exitCode, else 1).
 */
export interface SinkSetupLine {
  status: 'todo' | 'ok' | 'warn' | 'fail';
  message: string;
  exitCode?: number;
}

/** A file holding credentials: named by a flag (it must be there), or the default place (it may be absent). */
export interface CredentialFile {
  path: string;
  named: boolean;
}

/** One line of `leadledger doctor` about a sink: its credentials, or the destination itself. */
export interface SinkCheckLine extends SinkCheck {
  check: 'credentials' | 'destination';
}

/** A sink whose options were read: what push and replay hold of it. */
export interface ConfiguredSink {
  readonly name: string;
  shown(): Record<string, unknown>;
  replayArgs(): string[];
  /** What sending this many leads costs at the destination (SinkDefinition.spend). */
  spend?(leads: number): string;
  open(ctx: SinkOpenContext): Promise<OpenedSink>;
  /** doctor: its credentials and one cheap request to the destination, changing nothing (see SinkDefinition.check). */
  check?(ctx: SinkOpenContext, signal?: AbortSignal): Promise<SinkCheckLine[]>;
  /** init --sink: what to create in the CRM, and whether it is there (SinkDefinition.setup). */
  setup?(ctx: SinkOpenContext): Promise<SinkSetupLine[]>;
  /** doctor: the files holding its credentials. */
  credentialFiles?(env: Record<string, string | undefined>): CredentialFile[];
}

/**
 * A definition as the registry holds it, its option type sealed inside configure(): the registry lists sinks of
 * different option types, and the code around them never needs those types.
 */
export interface RegisteredSink<Name extends string = string, C = unknown> {
  readonly name: Name;
  readonly summary: string;
  readonly docs: SinkDocs;
  readonly examples: readonly string[];
  readonly flags: readonly SinkFlag[];
  readonly tokenEnv?: string;
  configSchema?(z: typeof Zod): Zod.ZodType<C>;
  checkConfig?(section: unknown, config: { customFields: readonly string[] }): ConfigIssue[];
  /** Reads the options from flags and the config section (validated by configSchema when the config was read). */
  configure(input: SinkInput<unknown>): ConfiguredSink;
  readonly authorizeHelp?: string;
  readonly authorizeFlags?: readonly SinkFlag[];
  authorize?(args: Readonly<Record<string, unknown>>, ctx: SinkAuthorizeContext): Promise<SinkAuthorization>;
}

/** Registers a definition: its name kept as a literal type, its config section typed by its schema. */
export function defineSink<const Name extends string, O, C = Record<string, never>>(
  def: SinkDefinition<O, C> & { readonly name: Name },
): RegisteredSink<Name, C> {
  return {
    name: def.name,
    summary: def.summary,
    docs: def.docs,
    examples: def.examples ?? [],
    flags: def.flags,
    ...(def.tokenEnv !== undefined ? { tokenEnv: def.tokenEnv } : {}),
    ...(def.authorize
      ? {
          authorize: (args, ctx) => def.authorize!(args, ctx),
          authorizeFlags: def.authorizeFlags ?? [],
          ...(def.authorizeHelp !== undefined ? { authorizeHelp: def.authorizeHelp } : {}),
        }
      : {}),
    ...(def.configSchema ? { configSchema: (z: typeof Zod) => def.configSchema!(z) } : {}),
    // The section reaching here passed this definition's own schema (mapping/config.ts builds `sinks` from them).
    ...(def.checkConfig ? { checkConfig: (section: unknown, config) => def.checkConfig!(section as C, config) } : {}),
    configure(input) {
      const options = def.read({ ...input, config: input.config as C | undefined });
      return {
        name: def.name,
        shown: () => def.shown(options),
        replayArgs: () => def.replayArgs(options),
        ...(def.spend ? { spend: (leads: number) => def.spend!(options, leads) } : {}),
        open: (ctx) => def.open(options, ctx),
        check: (ctx, signal) =>
          def.check
            ? def.check(options, ctx).then((c) => [{ check: 'destination' as const, ...c }])
            : checkByOpening(() => def.open(options, ctx), !!def.tokenEnv || !!def.authorize, signal),
        ...(def.setup ? { setup: (ctx: SinkOpenContext) => def.setup!(options, ctx) } : {}),
        credentialFiles: (env) => def.credentialFiles?.(options, env) ?? [],
      };
    },
  };
}

/**
 * doctor's look at a sink that opening changes nothing of: opened (its credentials read by reference: a line of
 * their own where it takes any), asked its check(), closed. An error opening it is the line's fail, with the exit
 * code a push would end with (2: a credential missing; 4: refused; 1: the destination).
 */
async function checkByOpening(
  open: () => Promise<OpenedSink>,
  takesCredentials: boolean,
  signal?: AbortSignal,
): Promise<SinkCheckLine[]> {
  let opened: OpenedSink;
  try {
    opened = await open();
  } catch (e) {
    const exitCode = (e as { exitCode?: unknown }).exitCode;
    const code = typeof exitCode === 'number' ? exitCode : 1;
    return [
      {
        check: takesCredentials && code !== 1 ? 'credentials' : 'destination',
        status: 'fail',
        message: (e as Error).message,
        exitCode: code,
      },
    ];
  }
  const { sink } = opened;
  try {
    const lines: SinkCheckLine[] = [];
    if (takesCredentials)
      lines.push({
        check: 'credentials',
        status: 'ok',
        message: `found, as a push reads them, for ${sink.describe()}`,
      });
    lines.push(
      sink.check
        ? { check: 'destination', ...(await sink.check(signal)) }
        : {
            check: 'destination',
            status: 'warn',
            message: `${sink.describe()}: not checked (no request tells without a send)`,
          },
    );
    return lines;
  } finally {
    await sink.close?.();
  }
}

/** The attribute name commander gives a flag's value: --hubspot-url → hubspotUrl, --no-lock → lock. */
export function flagKey(flags: string): string {
  const long = /--(?:no-)?([\w-]+)/.exec(flags)?.[1] ?? flags;
  return long.replace(/-(\w)/g, (_, c: string) => c.toUpperCase());
}
