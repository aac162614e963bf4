// What a sink is to the rest of leadledger: a definition in the registry (registry.ts), as a source is a definition
// in presets/. The CLI's flags and --help, the README's sink table and the config file's `sinks` section are made
// from the definitions; push and replay read a sink's options and open it only through its definition, so nothing
// outside sinks/ names a sink. A definition module stays light (no driver, no HTTP): --help loads every one of them,
// and open() imports the sink itself only when a run sends.
import type { Writable } from 'node:stream';
import type { z as Zod } from 'zod';
import type { CircuitBreaker } from './transport/breaker.js';
import type { HttpClient, HttpEvent } from './transport/http.js';
import type { Sink } from './types.js';

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
  /** Checks what is missing, reads credentials by reference and opens the sink; loads the sink's module lazily. */
  open(options: O, ctx: SinkOpenContext): Promise<OpenedSink>;
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

/** A sink whose options were read: what push and replay hold of it. */
export interface ConfiguredSink {
  readonly name: string;
  shown(): Record<string, unknown>;
  replayArgs(): string[];
  open(ctx: SinkOpenContext): Promise<OpenedSink>;
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
        open: (ctx) => def.open(options, ctx),
      };
    },
  };
}

/** The attribute name commander gives a flag's value: --hubspot-url → hubspotUrl, --no-lock → lock. */
export function flagKey(flags: string): string {
  const long = /--(?:no-)?([\w-]+)/.exec(flags)?.[1] ?? flags;
  return long.replace(/-(\w)/g, (_, c: string) => c.toUpperCase());
}
