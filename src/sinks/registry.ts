// The one list of sinks. --sink's names, the push and replay flags of each sink, --help's list of sinks, the README's
// sink table (npm run docs) and the config file's `sinks` section are all made from it: adding a sink is a folder in
// sinks/ with its definition, and one line here (README.md in this folder says how).
import { flagKey, type RegisteredSink, type SinkFlag, type SinkInput } from './definition.js';
import { hubspot } from './hubspot/definition.js';
import { jsonl } from './jsonl/definition.js';
import { pipedrive } from './pipedrive/definition.js';
import { postgres } from './postgres/definition.js';
import { rdstation } from './rdstation/definition.js';
import { salesforce } from './salesforce/definition.js';
import { webhook } from './webhook/definition.js';
import { zoho } from './zoho/definition.js';

/** Every sink, in the order --help and the README list them. */
export const SINKS = [hubspot, webhook, jsonl, postgres, pipedrive, rdstation, salesforce, zoho] as const;

export type SinkName = (typeof SINKS)[number]['name'];

/** The names --sink takes. */
export const SINK_NAMES: readonly SinkName[] = SINKS.map((s) => s.name);

/** The config file's `sinks` section: each sink's own, typed by its schema. */
export type SinkSections = {
  [S in (typeof SINKS)[number] as S['name']]?: S extends RegisteredSink<string, infer C> ? C : never;
};

/** The sink of a name, or undefined. */
export function findSink(name: string): RegisteredSink | undefined {
  return (SINKS as readonly RegisteredSink[]).find((s) => s.name === name);
}

/** "hubspot, webhook, jsonl or postgres". */
export function sinkNamesText(): string {
  return `${SINK_NAMES.slice(0, -1).join(', ')} or ${SINK_NAMES.at(-1)!}`;
}

/** A sink flag as the CLI adds it: its help written out, and the sinks that take it. */
export interface ListedSinkFlag extends Omit<SinkFlag, 'description'> {
  description: string;
  /** Commander's attribute name of its value. */
  key: string;
  sinks: SinkName[];
}

/** Every sink's flags, each once (a flag several sinks share is one), in the order of the sinks that name them. */
export function sinkFlags(): ListedSinkFlag[] {
  const byFlags = new Map<string, { flag: SinkFlag; takers: RegisteredSink[] }>();
  for (const s of SINKS as readonly RegisteredSink[])
    for (const f of s.flags) {
      const seen = byFlags.get(f.flags);
      if (seen && seen.flag !== f)
        throw new Error(`sinks define ${f.flags} twice: define it once (transport/) and share the object`);
      if (seen) seen.takers.push(s);
      else byFlags.set(f.flags, { flag: f, takers: [s] });
    }
  return [...byFlags.values()].map(({ flag, takers }) => ({
    ...flag,
    description: typeof flag.description === 'string' ? flag.description : flag.description(takers),
    key: flagKey(flag.flags),
    sinks: takers.map((t) => t.name as SinkName),
  }));
}

/** Of a command's parsed flags, those of the sinks: what a definition reads (SinkInput.flags and fromEnv). */
export function sinkFlagValues(
  flags: Readonly<Record<string, unknown>>,
  fromEnv: Readonly<Record<string, string>> = {},
): Omit<SinkInput<unknown>, 'config'> {
  const values: Record<string, unknown> = {};
  const env: Record<string, string> = {};
  for (const { key } of sinkFlags()) {
    if (flags[key] !== undefined) values[key] = flags[key];
    if (fromEnv[key] !== undefined) env[key] = fromEnv[key];
  }
  return { flags: values, fromEnv: env };
}
