// `leadledger presets`: the sources leadledger recognizes, what tells each apart, and what each maps, as data (the
// CLI prints it as text or --json). Everything comes from the definitions themselves (presets/sources/), so the
// listing cannot drift from what push does.
import { FIELD_NAMES } from '../mapping/fields.js';
import { LOGS, SOURCES } from '../presets/catalog.js';
import type { JsonSignature, LogDef, SourceDef } from '../presets/types.js';
import { UsageError } from '../errors.js';
import { didYouMean } from '../did-you-mean.js';

/** One source, as `leadledger presets` shows it. */
export interface PresetInfo {
  name: string;
  title: string;
  reads: 'json' | 'csv';
  /** What a record (or a CSV header) must have to be read as this source, in words. */
  recognizedBy: string[];
  /** Where the events of one record are, when a record holds several. */
  events?: string;
  /** Lead field → the paths (or columns) read, first that holds a value wins. */
  fields: Record<string, string[]>;
  /** The paths the event key is made of (joined), or the single one. */
  key: string[];
  /** Events this source marks as not leads: when, and the reason they are filtered with. */
  filtered: Array<{ when: string; reason: string }>;
  /** Invalid events this source explains: when, and the reason said before the mapper's. */
  explained?: Array<{ when: string; reason: string }>;
  docs: string[];
  note?: string;
}

/** One application log leadledger unwraps. */
export interface LogInfo {
  name: string;
  title: string;
  recognizedBy: string[];
  /** Where the webhook body is looked for in each line, in this order (a message: at the end of its text). */
  bodies: string[];
  docs: string[];
}

export interface PresetsListing {
  sources: PresetInfo[];
  logs: LogInfo[];
}

/** Every source and log (or the one named: a name that is none is a usage error listing them). */
export function listPresets(name?: string): PresetsListing {
  if (name === undefined) return { sources: SOURCES.map(presetInfo), logs: LOGS.map(logInfo) };
  const s = SOURCES.find((x) => x.name === name);
  if (s) return { sources: [presetInfo(s)], logs: [] };
  const l = LOGS.find((x) => x.name === name);
  if (l) return { sources: [], logs: [logInfo(l)] };
  throw new UsageError(
    `'${name}' is no source leadledger knows; one of: ${[...SOURCES, ...LOGS].map((x) => x.name).join(', ')}${didYouMean(
      name,
      [...SOURCES, ...LOGS].map((x) => x.name),
    )}`,
  );
}

function presetInfo(s: SourceDef): PresetInfo {
  const fields: Record<string, string[]> = {};
  const mapped = s.mapping.fields ?? {};
  for (const f of FIELD_NAMES) {
    const v = mapped[f];
    if (v !== undefined) fields[f] = typeof v === 'string' ? [v] : [...v];
  }
  for (const [name, path] of Object.entries(mapped.custom ?? {})) fields[`custom.${name}`] = [path];
  const k = s.mapping.key;
  // Without a key of its own, the event id field is the key (the first of its columns that holds a value).
  const id = mapped.id;
  const key = !k
    ? id === undefined
      ? []
      : typeof id === 'string'
        ? [id]
        : [id.join(' or ')]
    : 'paths' in k
      ? [...k.paths]
      : 'path' in k
        ? [k.path]
        : [...k.fields];
  const info: PresetInfo = {
    name: s.name,
    title: s.title,
    reads: s.reads,
    recognizedBy:
      s.reads === 'csv'
        ? [
            `columns ${s.signature.headers.map((h) => JSON.stringify(h)).join(', ')}`,
            ...(s.signature.anyOf ? [`one of ${s.signature.anyOf.map((h) => JSON.stringify(h)).join(', ')}`] : []),
          ]
        : jsonSignature(s.signature),
    fields,
    key,
    filtered: (s.skip ?? []).map((x) => ({ when: x.when.describe, reason: x.reason })),
    docs: [...s.docs],
  };
  if (s.explain?.length) info.explained = s.explain.map((x) => ({ when: x.when.describe, reason: x.reason }));
  if (s.reads === 'json' && s.events) info.events = s.events;
  if (s.note) info.note = s.note;
  return info;
}

function logInfo(l: LogDef): LogInfo {
  return {
    name: l.name,
    title: l.title,
    recognizedBy: Array.isArray(l.signature)
      ? l.signature.map((s: JsonSignature) => `one of: ${jsonSignature(s).join('; ')}`)
      : jsonSignature(l.signature as JsonSignature),
    bodies: [...l.bodies, ...(l.messages ?? []).map((m) => `${m} (a body after its words)`), ...(l.payloads ?? [])],
    docs: [...l.docs],
  };
}

function jsonSignature(sig: JsonSignature): string[] {
  const out = sig.has.length ? [`${sig.has.join(', ')} present`] : [];
  if (sig.anyOf?.length) out.push(`one of ${sig.anyOf.join(', ')} present`);
  for (const [p, vs] of Object.entries(sig.equals ?? {}))
    out.push(`${p} is ${vs.map((v) => JSON.stringify(v)).join(' or ')}`);
  if (sig.lacks?.length) out.push(`no ${sig.lacks.join(', ')}`);
  return out;
}
