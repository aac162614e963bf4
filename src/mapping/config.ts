// The config file: explicit field mapping, key choice, accepted event types, phones, sink settings.
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { userConfigDir } from '../config-dir.js';
import type * as Libphonenumber from 'libphonenumber-js';
import type * as ZodModule from 'zod';
import type { z as Zod } from 'zod';
import { closest } from '../did-you-mean.js';
import { UsageError } from '../errors.js';
import type { RegisteredSink } from '../sinks/definition.js';
import { SINK_NAMES, SINKS, type SinkSections } from '../sinks/registry.js';
import { pgUrlHoldsPassword } from '../pg-url.js';
import { describeJsonError, lineAndColumn } from '../sources/json-error.js';
import { FIELD_NAMES } from './fields.js';
import { checkTimezone } from './times.js';

const LEAD_FIELDS = ['email', 'phone', 'name', 'firstName', 'lastName', 'company', 'source'] as const;
const KEY_FORMS = ['path', 'paths', 'fields'] as const;

/** The config's `key`: an id path, several paths that together identify an event, or a content key over fields. */
export type KeyConfig =
  { path: string } | { paths: string[] } | { fields: Array<(typeof LEAD_FIELDS)[number] | 'type'> };

// zod and libphonenumber-js's country list are loaded when a config file is there to check: most runs have none,
// and loading them cost ~70 ms of every start (measured).
const require = createRequire(import.meta.url);

function makeSchema(z: typeof Zod) {
  const countries = new Set<string>((require('libphonenumber-js') as typeof Libphonenumber).getCountries());
  // A field is read from one path, or from the first of several that holds a value.
  const paths = z.union([z.string().min(1), z.array(z.string().min(1)).min(1)]);
  const fieldsSchema = z
    .object(
      Object.fromEntries(FIELD_NAMES.map((f) => [f, paths.optional()])) as Record<
        (typeof FIELD_NAMES)[number],
        Zod.ZodOptional<typeof paths>
      >,
    )
    .extend({ custom: z.record(z.string(), z.string().min(1)).optional() })
    .strict();

  // One object with the three forms as its keys, one of them given: a misspelt key is then named as such (a union
  // of three objects could only say that the value matched none of them).
  const keySchema = z
    .object({
      path: z.string().min(1).optional(),
      // Sources without an event id (RD Station's webhooks): the values at these paths, together, are the key. The
      // first must be there; the others may be missing.
      paths: z.array(z.string().min(1)).min(2).optional(),
      fields: z
        .array(z.enum([...LEAD_FIELDS, 'type']))
        .min(1)
        .optional(),
    })
    .strict()
    .superRefine((k, ctx) => {
      const given = KEY_FORMS.filter((f) => k[f] !== undefined);
      if (given.length !== 1)
        ctx.addIssue({
          code: 'custom',
          message: given.length
            ? `takes one of path, paths or fields, not ${given.join(' and ')}`
            : 'takes one of path, paths or fields',
        });
    })
    .transform((k) => k as KeyConfig);

  // Each sink's section, by its own definition's schema (sinks/registry.ts): an unknown sink is an unknown key.
  const sinksSchema = z
    .object(
      Object.fromEntries(
        SINKS.map((d: RegisteredSink) => [d.name, (d.configSchema?.(z) ?? z.object({}).strict()).optional()]),
      ),
    )
    .strict()
    // Typed as each definition's schema makes its section.
    .transform((c) => c as SinkSections);

  // `leadledger serve`: its endpoints (each with its source and signature scheme; secrets from the environment or a
  // file, never here), the inbox's bound, the body limit.
  const secretRef = {
    secretEnv: z.string().min(1).optional(),
    secretFile: z.string().min(1).optional(),
  };
  const tolerance = { toleranceSec: z.number().int().positive().optional() };
  const signatureSchema = z.discriminatedUnion('scheme', [
    z.object({ scheme: z.literal('none') }).strict(),
    z.object({ scheme: z.literal('standard-webhooks'), ...secretRef, ...tolerance }).strict(),
    z
      .object({
        scheme: z.literal('hmac'),
        header: z.string().min(1),
        prefix: z.string().optional(),
        encoding: z.enum(['hex', 'base64']).optional(),
        algorithm: z.enum(['sha256', 'sha1', 'sha512']).optional(),
        ...secretRef,
      })
      .strict(),
    z.object({ scheme: z.literal('stripe'), ...secretRef, ...tolerance }).strict(),
    z
      .object({ scheme: z.literal('hubspot-v3'), publicUrl: z.string().url().optional(), ...secretRef, ...tolerance })
      .strict(),
    z.object({ scheme: z.literal('basic'), username: z.string().min(1), ...secretRef }).strict(),
    z
      .object({ scheme: z.literal('token'), header: z.string().min(1), prefix: z.string().optional(), ...secretRef })
      .strict(),
  ]);
  const serveSchema = z
    .object({
      host: z.string().min(1).optional(),
      port: z.number().int().min(0).max(65535).optional(),
      endpoints: z
        .record(
          z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/, 'an endpoint name: letters, digits, ".", "_", "-"'),
          z.object({ source: z.string().min(1).optional(), signature: signatureSchema.optional() }).strict(),
        )
        .optional(),
      inbox: z
        .object({
          maxEvents: z.number().int().positive().optional(),
          maxBytes: z.number().int().positive().optional(),
        })
        .strict()
        .optional(),
      bodyLimit: z.number().int().positive().optional(),
      retryAfter: z.number().int().positive().optional(),
      // Seconds a client has to send its headers, and its whole request (slow clients are cut off).
      headersTimeout: z.number().positive().optional(),
      requestTimeout: z.number().positive().optional(),
      archive: z.string().min(1).optional(),
    })
    .strict();

  return z
    .object({
      $schema: z.string().optional(),
      // The sink a push or replay sends to when --sink (LEADLEDGER_SINK) is not given; its settings are sinks.<name>.
      sink: z.enum(SINK_NAMES as [string, ...string[]]).optional(),
      // The ledger when --ledger (LEADLEDGER_LEDGER) is not given: a file (relative to this config file's folder), or
      // postgres://user@host/db without a password (that comes from PGPASSWORD, ~/.pgpass or LEADLEDGER_LEDGER).
      ledger: z
        .string()
        .min(1)
        .refine((l) => !pgUrlHoldsPassword(l), {
          message: 'holds a password: secrets never go in the config (PGPASSWORD, ~/.pgpass, or LEADLEDGER_LEDGER)',
        })
        .optional(),
      // The source every input is read as (`leadledger presets`), instead of recognizing each one.
      preset: z.string().min(1).optional(),
      fields: fieldsSchema.optional(),
      key: keySchema.optional(),
      types: z.array(z.string().min(1)).min(1).optional(),
      defaultCountry: z
        .string()
        .refine((c) => countries.has(c.toUpperCase()), {
          message: 'not an ISO 3166 country code known for phone numbers (e.g. BR, US, PT)',
        })
        .optional(),
      // Where times written without a zone are (an IANA name); UTC when absent, on every machine.
      timezone: z
        .string()
        .refine((t) => validTimezone(t), {
          message: 'not a time zone: give an IANA name, e.g. America/Sao_Paulo, Europe/Lisbon, UTC',
        })
        .optional(),
      // The order of day and month of dates whose column does not show it (25/12/2024 is dmy, 12/25/2024 mdy).
      dateOrder: z.enum(['dmy', 'mdy']).optional(),
      // A phone that cannot be read, on a lead with a valid email: left out (the default) or sent as written.
      phones: z
        .object({ invalid: z.enum(['omit', 'as-written']).optional() })
        .strict()
        .optional(),
      namespace: z.string().min(1).optional(),
      retention: z
        .object({ sentPayloads: z.enum(['keep', 'drop']).optional() })
        .strict()
        .optional(),
      sinks: sinksSchema.optional(),
      serve: serveSchema.optional(),
    })
    .strict()
    .superRefine((c, ctx) => {
      // What a sink's schema cannot check alone: its section against the rest of the config (the custom fields).
      const customFields = Object.keys(c.fields?.custom ?? {});
      const sections = (c.sinks ?? {}) as Record<string, unknown>;
      for (const d of SINKS as readonly RegisteredSink[]) {
        const section = sections[d.name];
        if (section === undefined || !d.checkConfig) continue;
        for (const issue of d.checkConfig(section, { customFields }))
          ctx.addIssue({ code: 'custom', path: ['sinks', d.name, ...issue.path], message: issue.message });
      }
    });
}

// Whether the time zone database knows the zone (see times.ts checkTimezone).
function validTimezone(t: string): boolean {
  try {
    checkTimezone(t, 'timezone');
    return true;
  } catch {
    return false;
  }
}

let schema: ReturnType<typeof makeSchema> | undefined;

/** The schema of leadledger.config.json. */
export function configSchema(): ReturnType<typeof makeSchema> {
  return (schema ??= makeSchema((require('zod') as typeof ZodModule).z));
}

export type Config = Zod.infer<ReturnType<typeof makeSchema>>;

/** Where the package keeps the config's JSON Schema (schemas/config.schema.json, written by `npm run docs`). */
export const CONFIG_SCHEMA_FILE = 'schemas/config.schema.json';

/**
 * The address `init` writes as the config's "$schema": the schema shipped in this version of the package, as the npm
 * registry's CDN serves it (the config is often written where leadledger runs through npx, with no node_modules).
 */
export function configSchemaUrl(): string {
  const pkg = require('../../package.json') as { name: string; version: string };
  return `https://unpkg.com/${pkg.name}@${pkg.version}/${CONFIG_SCHEMA_FILE}`;
}

/**
 * The config's JSON Schema, made from the zod schema (what a config may be written as: refinements that JSON Schema
 * cannot say, such as known countries and time zones, are checked by leadledger when it reads the config).
 */
export function configJsonSchema(): Record<string, unknown> {
  const { z } = require('zod') as typeof ZodModule;
  const schema = z.toJSONSchema(configSchema(), { io: 'input', unrepresentable: 'any' });
  return {
    $schema: schema.$schema,
    title: 'leadledger config (leadledger.config.json)',
    description:
      'Field mapping, event key, accepted types, phones and dates, the sink and its settings, the ledger. Secrets never go here: tokens come from the environment or a token file.',
    ...Object.fromEntries(Object.entries(schema).filter(([k]) => k !== '$schema')),
  };
}

/** The config file read from the working directory when --config and LEADLEDGER_CONFIG are not given. */
export const DEFAULT_CONFIG_FILE = 'leadledger.config.json';

/** The config file of the user's config directory, read when no other is found. */
export const USER_CONFIG_FILE = 'config.json';

/** Where a config file was found, in the lookup order. */
export type ConfigFrom = '--config' | 'LEADLEDGER_CONFIG' | 'working directory' | 'user config directory';

/** A config file found: its absolute path and how it was found. */
export interface FoundConfig {
  path: string;
  from: ConfigFrom;
}

/**
 * The config file in use: --config, else LEADLEDGER_CONFIG, else leadledger.config.json in the working directory,
 * else config.json in the user's config directory (where `leadledger auth` keeps its credentials file); undefined
 * when there is none. A file named by --config or LEADLEDGER_CONFIG that does not exist is a UsageError naming it.
 */
export function findConfig(
  flag: string | undefined,
  cwd = process.cwd(),
  env: Record<string, string | undefined> = process.env,
): FoundConfig | undefined {
  const named: Array<[string | undefined, ConfigFrom]> = [
    [flag, '--config'],
    [env.LEADLEDGER_CONFIG?.trim() || undefined, 'LEADLEDGER_CONFIG'],
  ];
  for (const [file, from] of named) {
    if (file === undefined) continue;
    const path = resolve(cwd, file);
    if (!existsSync(path)) throw new UsageError(`config ${path} (from ${from}) does not exist`);
    return { path, from };
  }
  const here = join(cwd, DEFAULT_CONFIG_FILE);
  if (existsSync(here)) return { path: resolve(here), from: 'working directory' };
  const user = join(userConfigDir(env), USER_CONFIG_FILE);
  if (existsSync(user)) return { path: user, from: 'user config directory' };
  return undefined;
}

/** The config in use and where it is; `from` says how it was found. */
export interface LoadedConfig {
  config: Config;
  path?: string;
  from?: ConfigFrom;
}

/**
 * Finds (findConfig), loads and validates the config file; a problem is a UsageError naming the file and the field.
 * A relative `ledger` file is made absolute from the config file's folder.
 */
export function loadConfig(
  flag: string | undefined,
  cwd = process.cwd(),
  env: Record<string, string | undefined> = process.env,
): LoadedConfig {
  const found = findConfig(flag, cwd, env);
  if (!found) return { config: {} };
  const file = found.path;
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new UsageError(`cannot read config ${file}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
  }
  // Editors on Windows (Notepad) save UTF-8 with a byte order mark, which JSON.parse refuses.
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (e) {
    const { message, offset } = describeJsonError(e, text);
    const { line, column } = lineAndColumn(text, offset);
    throw new UsageError(`config ${file} is not valid JSON: ${message} at line ${line}, column ${column}`);
  }
  const config = parseConfig(raw, file);
  // A ledger named in a config of the user's config directory is not meant relative to wherever cron runs.
  if (config.ledger && !/^postgres(ql)?:\/\//i.test(config.ledger))
    config.ledger = resolve(dirname(file), config.ledger);
  return { config, path: file, from: found.from };
}

/**
 * Validates a config object; each mistake is a line naming its path: `fields.emial: unknown key (did you mean
 * email?)`, `phones.invalid: Invalid option: ...`.
 */
export function parseConfig(raw: unknown, file = 'config'): Config {
  const r = configSchema().safeParse(raw);
  if (r.success) return r.data;
  const lines: string[] = [];
  for (const i of r.error.issues) {
    const where = (path: readonly PropertyKey[]) => (path.length ? path.map(String).join('.') : '(top level)');
    if (i.code === 'unrecognized_keys') {
      const known = knownKeysAt(configSchema(), i.path);
      for (const k of i.keys) {
        const near = closest(k, known);
        lines.push(`  ${where([...i.path, k])}: unknown key${near ? ` (did you mean ${near}?)` : ''}`);
      }
    } else lines.push(`  ${where(i.path)}: ${i.message}`);
  }
  throw new UsageError(`config ${file} is invalid:\n${lines.join('\n')}`);
}

/** The internals of a zod 4 schema that knownKeysAt walks. */
interface SchemaDef {
  type: string;
  shape?: Record<string, { _zod: { def: SchemaDef } }>;
  innerType?: { _zod: { def: SchemaDef } };
  in?: { _zod: { def: SchemaDef } };
  valueType?: { _zod: { def: SchemaDef } };
  element?: { _zod: { def: SchemaDef } };
}

/** The keys the object at `path` of the schema takes (for "did you mean"); empty where it is not an object. */
function knownKeysAt(schema: { _zod: { def: unknown } }, path: readonly PropertyKey[]): string[] {
  let def = schema._zod.def as SchemaDef;
  const unwrap = () => {
    for (;;) {
      const inner = def.innerType ?? def.in;
      if (!inner) return;
      def = inner._zod.def;
    }
  };
  unwrap();
  for (const step of path) {
    const next =
      def.type === 'object'
        ? def.shape?.[String(step)]
        : def.type === 'record'
          ? def.valueType
          : def.type === 'array'
            ? def.element
            : undefined;
    if (!next) return [];
    def = next._zod.def;
    unwrap();
  }
  return def.type === 'object' ? Object.keys(def.shape ?? {}) : [];
}
