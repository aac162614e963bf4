// `leadledger init <sample...>`: reads the first records of samples the way push would, says what it recognized
// and, field by field, which column or path it maps (with two example values), and builds the config that makes
// push decide the same way on every machine: the source as a preset, or the detected paths written out, and the
// default country of national phones (cron's locale is rarely the user's).
import { closeSync, constants, existsSync, lstatSync, openSync, renameSync, unlinkSync, writeSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { InputError, UsageError } from '../errors.js';
import { resolveDefaultCountry, type DefaultCountry } from '../mapping/default-country.js';
import {
  configuredPath,
  FIELD_NAMES,
  getPath,
  pathText,
  planFields,
  scalarText,
  type FieldName,
  type FieldPath,
} from '../mapping/fields.js';
import { type Config, configSchemaUrl, DEFAULT_CONFIG_FILE, loadConfig } from '../mapping/config.js';
import { discoverPerson } from '../mapping/discover.js';
import { recognizeHead } from '../presets/head.js';
import { Recognizer, type SeenEvent } from '../presets/recognize.js';
import type { Mapped } from '../mapping/types.js';
import { readFormat, readInputsWith } from '../sources/read-inputs.js';
import { resolveInputs } from '../sources/resolve-inputs.js';
import type { InputRead, ReadOptions } from '../sources/types.js';
import { configureSink } from '../deliver/open-sink.js';
import type { SinkSetupLine } from '../sinks/definition.js';
import type { CommandContext } from './context.js';

export interface InitOptions {
  samples: string[];
  read?: Pick<ReadOptions, 'format' | 'encoding' | 'delimiter'>;
  defaultCountry?: string;
  defaultCountryFrom?: string;
  /** Where the config goes (default leadledger.config.json in the working directory). */
  output?: string;
  /** Records looked at per sample. */
  limit?: number;
  /**
   * Asks the person at the terminal the country of national phone numbers, when most of the samples' numbers are
   * national and no --default-country was given; resolves to an ISO code, or undefined to keep the one assumed.
   * Without it (off a terminal), init keeps what it assumed and says so.
   */
  askCountry?: (q: PhoneNumbersSeen & { assumed?: string }) => Promise<string | undefined>;
}

/** Phone numbers of the samples: how many, and how many written without a country code. */
export interface PhoneNumbersSeen {
  national: number;
  total: number;
}

/** What a field is read from, as init found it in the samples. */
export interface FieldFound {
  field: string;
  /** The column or path that gave it a value most often; null when no sample record had it. */
  from: string | null;
  /** Up to two distinct values it gave, as written. */
  examples: string[];
}

/** What init found, and the config it would write. */
export interface InitPlan {
  inputs: Array<{ source: string; format: string; records: number; readAs: Array<{ as: string; events: number }> }>;
  /** The source every sample was read as, when one was (written as the config's "preset"). */
  preset?: { name: string; title: string };
  fields: FieldFound[];
  /** What the event key is read from. */
  key: string;
  phones: DefaultCountry;
  phoneNumbers: PhoneNumbersSeen;
  config: Config;
  path: string;
  exists: boolean;
}

const LIMIT = 1000;

/** How init names a path that discovery found (no field named the person there). */
const DISCOVERED = 'found by looking through the record';

/** Reads the samples and builds the plan; writes nothing. */
export async function planInit(o: InitOptions, ctx: CommandContext): Promise<InitPlan> {
  if (!o.samples.length) throw new UsageError('init needs at least one sample file (an export or a webhook log)');
  let phones = resolveDefaultCountry({ flag: o.defaultCountry, flagFrom: o.defaultCountryFrom, env: ctx.env });
  const map = { config: {} as Config, defaultCountry: phones.country };
  const limit = o.limit ?? LIMIT;
  const seen: SeenEvent[] = [];
  const inputs: InitPlan['inputs'] = [];
  const counts = new Map<string, number>();
  const read: ReadOptions = {
    ...o.read,
    requireInput: true,
    stdin: ctx.stdin,
    signal: ctx.stop,
    onInputRead: (r: InputRead) =>
      inputs.push({
        source: r.source,
        format: r.format,
        records: counts.get(r.source) ?? 0,
        readAs: r.readAs ?? [{ as: 'by field names', events: counts.get(r.source) ?? 0 }],
      }),
  };
  // Samples are what the config is written from: each must be read (a missing one is an error, not a note).
  const unreadable = (await resolveInputs(o.samples, { requireInput: true })).inputs.find((i) => i.unreadable);
  if (unreadable) throw new InputError(`cannot read input '${unreadable.source}': ${unreadable.unreadable}`);
  const batches = readInputsWith(
    o.samples,
    read,
    async function* (opened, info, rctx) {
      const head = info.format === 'json' ? undefined : recognizeHead(opened.head, opened.complete, info);
      const r = new Recognizer({
        map,
        format: info.format,
        log: !!head?.log,
        headers: head?.headers,
        onEvent: (e) => seen.push(e),
      });
      rctx.readAs = r.readAs;
      let n = 0;
      for await (const batch of readFormat(opened, info, rctx)) {
        const out: Mapped[] = [];
        for (const item of batch) if (item.kind !== 'unread') r.push(item, out);
        n += batch.length;
        counts.set(info.source, n);
        yield out;
        if (n >= limit) return;
      }
    },
    () => [],
  );
  for await (const b of batches) void b;

  const sources = new Set(seen.map((e) => e.def?.name ?? ''));
  const inLog = seen.some((e) => e.log);
  const only = sources.size === 1 ? seen[0]?.def : undefined;
  // A preset forces every record to be read as that source: right for exports and webhook bodies, not for a log,
  // whose lines must be unwrapped first (recognition does it on its own).
  const preset = only && !inLog ? only : undefined;
  const fields = findFields(seen);
  phones = await countryOfNationalNumbers(phones, fields.phoneNumbers, o, ctx);
  // Editors that read "$schema" complete and check the config against the schema the package ships.
  const config: Config = { $schema: configSchemaUrl() };
  if (preset) config.preset = preset.name;
  else if (sources.size === 1 && !only && !inLog) {
    // Read by field names: the columns found are written out, so that the config says where each field is.
    // Paths found by discovery are not written: push finds the person the same way, record by record, and its
    // filters of generic records (screen.ts) stay on.
    // A config naming the email or the phone turns discovery off (the filters of generic records hold either way):
    // where any sample needed discovery, neither is written.
    const byDiscovery = (f: FieldStats) => f.paths.some((p) => p.endsWith(`(${DISCOVERED})`));
    const discovered = fields.all.some(byDiscovery);
    const explicit: NonNullable<Config['fields']> = {};
    for (const f of fields.all) {
      if (!f.paths.length || byDiscovery(f) || (discovered && (f.field === 'email' || f.field === 'phone'))) continue;
      // An id named in the config must be in every record (one without is invalid): where some sample record had
      // none, push keys each record as it finds it, by its id or by its content, and so does the config.
      if (f.field === 'id' && f.without > 0) continue;
      explicit[f.field] = f.paths.length === 1 ? f.paths[0]! : f.paths;
    }
    config.fields = explicit;
  }
  if (phones.country) config.defaultCountry = phones.country;
  const path = resolve(ctx.cwd, o.output ?? DEFAULT_CONFIG_FILE);
  const id = fields.byName.get('id');
  const key = only
    ? (keyText(only.mapping.key) ?? "the lead's content (no event id)")
    : id?.from
      ? id.without > 0
        ? `${id.from} where a record has it, else the lead's content`
        : id.from
      : "the lead's content (no event id found)";
  return {
    inputs,
    ...(only ? { preset: { name: only.name, title: only.title } } : {}),
    fields: fields.all.map(({ field, from, examples }) => ({ field, from, examples })),
    key,
    phones,
    phoneNumbers: fields.phoneNumbers,
    config,
    path,
    exists: existsSync(path) || isLink(path),
  };
}

function keyText(k: Config['key']): string | undefined {
  if (!k) return undefined;
  if ('path' in k) return k.path;
  if ('paths' in k) return k.paths.join(' + ');
  return `the lead's ${k.fields.join(', ')}`;
}

function isLink(p: string): boolean {
  try {
    return lstatSync(p).isSymbolicLink();
  } catch {
    return false;
  }
}

/**
 * The country of national numbers where most of the samples' are national and no --default-country says it: the
 * person at the terminal is asked (askCountry); elsewhere what was assumed (the locale's country, or none) stays,
 * and is said.
 */
async function countryOfNationalNumbers(
  phones: DefaultCountry,
  seen: PhoneNumbersSeen,
  o: InitOptions,
  ctx: CommandContext,
): Promise<DefaultCountry> {
  const given = o.defaultCountry !== undefined && o.defaultCountry !== '';
  if (given || seen.total === 0 || seen.national * 2 <= seen.total) return phones;
  const share = `${seen.national} of ${seen.total}`;
  if (o.askCountry) {
    const answer = await o.askCountry({ ...seen, ...(phones.country ? { assumed: phones.country } : {}) });
    if (answer === undefined || answer.trim() === '') return phones;
    const chosen = resolveDefaultCountry({ flag: answer, flagFrom: 'the country given', env: ctx.env });
    return { country: chosen.country!, from: 'the answer at the terminal' };
  }
  ctx.warn(
    phones.country
      ? `most phone numbers of the samples (${share}) have no country code: assumed ${phones.country} (from ${phones.from ?? 'the locale'}); pass --default-country to choose another`
      : `most phone numbers of the samples (${share}) have no country code, and no country was found to read them in (no --default-country, no country in the locale): the config has none, and push cannot read them; pass --default-country, e.g. BR`,
  );
  return phones;
}

// A phone written without a country code: not +55..., not 0055... (a number with too few digits is no phone).
function isNational(text: string): boolean {
  const t = text.replace(/[\s().-]/g, '');
  return !t.startsWith('+') && !t.startsWith('00') && (t.match(/\d/g)?.length ?? 0) >= 6;
}

interface FieldStats extends FieldFound {
  field: FieldName;
  /** Every path that gave a value, in the order first seen (written as the config's list). */
  paths: string[];
  /** Events read by field names that had no value for it. */
  without: number;
}

// Per field, which path gave each event its value: the source's declared paths, or those detected by name.
function findFields(seen: readonly SeenEvent[]): {
  all: FieldStats[];
  byName: Map<string, FieldStats>;
  phoneNumbers: PhoneNumbersSeen;
} {
  const phoneNumbers: PhoneNumbersSeen = { national: 0, total: 0 };
  const hits = new Map<FieldName, Map<string, number>>();
  const examples = new Map<FieldName, string[]>();
  const without = new Map<FieldName, number>();
  const tally = (f: FieldName, text: string, t: string) => {
    if (f === 'phone') {
      phoneNumbers.total++;
      if (isNational(t)) phoneNumbers.national++;
    }
    const h = hits.get(f) ?? new Map<string, number>();
    h.set(text, (h.get(text) ?? 0) + 1);
    hits.set(f, h);
    const ex = examples.get(f) ?? [];
    if (ex.length < 2 && !ex.includes(t)) ex.push(t.length > 60 ? `${t.slice(0, 57)}...` : t);
    examples.set(f, ex);
  };
  for (const e of seen) {
    const plan = e.def ? undefined : planFields(e.event, {});
    const discovered = new Set<FieldName>();
    // No field named the person: where discovery found them (push looks the same way, record by record).
    if (
      plan &&
      !plan.email.some((p) => scalarText(getPath(e.event, p))) &&
      !plan.phone.some((p) => scalarText(getPath(e.event, p)))
    ) {
      const d = discoverPerson(e.event);
      if (d.email || d.phone)
        for (const f of ['email', 'phone', 'name', 'firstName', 'lastName', 'company'] as const) {
          const found = d[f];
          if (found) tally(f, `${found.path} (${DISCOVERED})`, found.value);
          discovered.add(f);
        }
    }
    for (const f of FIELD_NAMES) {
      if (discovered.has(f)) continue;
      let paths: readonly FieldPath[];
      if (e.def) {
        const declared = e.def.mapping.fields?.[f];
        if (declared === undefined) continue;
        const texts = typeof declared === 'string' ? [declared] : declared;
        paths = texts.map((t) => configuredPath(e.event, t));
      } else paths = plan![f];
      const p = paths.find((x) => scalarText(getPath(e.event, x)) !== undefined);
      if (p) tally(f, pathText(p), scalarText(getPath(e.event, p))!);
      else if (!e.def) without.set(f, (without.get(f) ?? 0) + 1);
    }
  }
  const all: FieldStats[] = FIELD_NAMES.map((field) => {
    const h = hits.get(field);
    const ranked = h ? [...h].sort((a, b) => b[1] - a[1]) : [];
    return {
      field,
      from: ranked[0]?.[0] ?? null,
      examples: examples.get(field) ?? [],
      paths: h ? [...h.keys()] : [],
      without: without.get(field) ?? 0,
    };
  });
  return { all, byName: new Map(all.map((f) => [f.field, f])), phoneNumbers };
}

/**
 * Writes the config: never over an existing file (or a link) unless `force`; through a new file renamed into
 * place, so that a crash leaves the old config or the new one.
 */
export function writeInitConfig(plan: InitPlan, force: boolean): void {
  if (plan.exists && !force) throw new UsageError(`${plan.path} exists: nothing written (--force replaces it)`);
  const text = JSON.stringify(plan.config, null, 2) + '\n';
  const tmp = join(dirname(plan.path), `.${basename(plan.path)}.${process.pid}.tmp`);
  const fd = openSync(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o644);
  try {
    writeSync(fd, text);
  } catch (e) {
    closeSync(fd);
    unlinkSync(tmp);
    throw e;
  }
  closeSync(fd);
  renameSync(tmp, plan.path);
}

/** What `init --sink` reads: the sink named, its flags, and the config whose `sinks.<name>` section it takes. */
export interface InitSinkOptions {
  sink: string;
  sinkFlags: Readonly<Record<string, unknown>>;
  sinkFlagsFromEnv: Readonly<Record<string, string>>;
  config?: string;
  allowInsecure?: boolean;
}

/** What `init --sink` found: the sink's setup lines, and the exit code (the first fail's, else 0). */
export interface InitSinkReport {
  sink: string;
  lines: SinkSetupLine[];
  exitCode: number;
}

/** A look at the destination takes at most this long, as doctor's (one attempt, no retry schedule). */
const SETUP_TIMEOUT_MS = 10_000;

/**
 * `init --sink <name>`: what to create once in the CRM before the first push, and whether it is there when
 * credentials are at hand (the sink definition's setup); changes nothing.
 */
export async function initSink(o: InitSinkOptions, ctx: CommandContext): Promise<InitSinkReport> {
  const loaded = loadConfig(o.config, ctx.cwd, ctx.env);
  const chosen = configureSink(
    { sink: o.sink, sinkFlags: o.sinkFlags, sinkFlagsFromEnv: o.sinkFlagsFromEnv },
    loaded.config,
  )!;
  const warnings: string[] = [];
  const lines: SinkSetupLine[] = chosen.setup
    ? await chosen.setup({
        env: ctx.env,
        transport: { timeoutMs: SETUP_TIMEOUT_MS, maxRetries: 0, allowInsecure: !!o.allowInsecure },
        existing: 'skip',
        concurrency: 1,
        customFields: Object.keys(loaded.config.fields?.custom ?? {}),
        warn: (m) => warnings.push(m),
        checkOnly: true,
      })
    : [
        {
          status: 'ok',
          message: `${chosen.name} needs nothing created before the first push; \`leadledger doctor --sink ${chosen.name}\` checks what a push would meet`,
        },
      ];
  lines.push(...warnings.map((message): SinkSetupLine => ({ status: 'warn', message })));
  const fail = lines.find((l) => l.status === 'fail');
  return { sink: chosen.name, lines, exitCode: fail ? (fail.exitCode ?? 1) : 0 };
}
