// The config file: explicit field mapping, key choice, accepted event types, phones, sink settings.
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type * as Libphonenumber from 'libphonenumber-js';
import type * as ZodModule from 'zod';
import type { z as Zod } from 'zod';
import { UsageError } from '../errors.js';
import { describeJsonError, lineAndColumn } from '../sources/json-error.js';
import { FIELD_NAMES } from './fields.js';

const LEAD_FIELDS = ['email', 'phone', 'name', 'firstName', 'lastName', 'company', 'source'] as const;

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

  const keySchema = z.union([
    z.object({ path: z.string().min(1) }).strict(),
    // Sources without an event id (RD Station's webhooks): the values at these paths, together, are the key. The
    // first must be there; the others may be missing.
    z.object({ paths: z.array(z.string().min(1)).min(2) }).strict(),
    z.object({ fields: z.array(z.enum([...LEAD_FIELDS, 'type'])).min(1) }).strict(),
  ]);

  return z
    .object({
      $schema: z.string().optional(),
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
      sinks: z
        .object({
          webhook: z.record(z.string(), z.unknown()).optional(),
          hubspot: z.record(z.string(), z.unknown()).optional(),
          jsonl: z.record(z.string(), z.unknown()).optional(),
          // The postgres sink: lead field (email, name, ..., created_at, or a custom field) → column of the table.
          postgres: z
            .object({ columns: z.record(z.string().min(1), z.string().min(1)).optional() })
            .strict()
            .optional(),
        })
        .strict()
        .optional(),
    })
    .strict();
}

let schema: ReturnType<typeof makeSchema> | undefined;

/** The schema of leadledger.config.json. */
export function configSchema(): ReturnType<typeof makeSchema> {
  return (schema ??= makeSchema((require('zod') as typeof ZodModule).z));
}

export type Config = Zod.infer<ReturnType<typeof makeSchema>>;

/** The config file read when --config is not given. */
export const DEFAULT_CONFIG_FILE = 'leadledger.config.json';

/** Loads and validates a config file; a problem is a UsageError naming the file and the field. */
export function loadConfig(path: string | undefined, cwd = process.cwd()): { config: Config; path?: string } {
  const file = path ?? (existsSync(`${cwd}/${DEFAULT_CONFIG_FILE}`) ? `${cwd}/${DEFAULT_CONFIG_FILE}` : undefined);
  if (!file) return { config: {} };
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
  return { config: parseConfig(raw, file), path: file };
}

/** Validates a config object; errors name the field (e.g. "fields.emial: unrecognized key"). */
export function parseConfig(raw: unknown, file = 'config'): Config {
  const r = configSchema().safeParse(raw);
  if (r.success) return r.data;
  const lines = r.error.issues.map((i) => {
    const where = i.path.length ? i.path.join('.') : '(top level)';
    const keys = i.code === 'unrecognized_keys' ? ` ${i.keys.map((k) => `'${k}'`).join(', ')}` : '';
    return `  ${where}: ${i.message}${keys}`;
  });
  throw new UsageError(`config ${file} is invalid:\n${lines.join('\n')}`);
}
