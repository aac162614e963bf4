// Wiring of `presets`: the listing as text on stdout, or as JSON with --json.
import { machineJson } from './machine-json.js';
import { listPresets, type LogInfo, type PresetInfo } from '../commands/presets.js';

/** Prints the sources leadledger recognizes (or the one named); returns the exit code. */
export function runPresets(name: string | undefined, flags: Record<string, unknown>): number {
  const listing = listPresets(name);
  if (flags.json) {
    process.stdout.write(machineJson({ ...listing }));
    return 0;
  }
  const out: string[] = [];
  if (name === undefined)
    out.push(
      'Sources leadledger recognizes. push reads each input as the first whose signature its records (or its CSV',
      'header) match; --preset <name> (or "preset" in the config) reads every input as one; generic: by field names.',
      '',
    );
  for (const s of listing.sources) out.push(...source(s), '');
  if (listing.logs.length) {
    if (name === undefined)
      out.push('Application logs: their lines are unwrapped, the webhook body they hold is recognized as above.', '');
    for (const l of listing.logs) out.push(...log(l), '');
  }
  process.stdout.write(out.join('\n'));
  return 0;
}

function source(s: PresetInfo): string[] {
  const lines = [`${s.name}  ${s.title} (${s.reads === 'csv' ? 'CSV export' : 'JSON'})`];
  lines.push(`  recognized by: ${s.recognizedBy.join('; ')}`);
  if (s.events) lines.push(`  events: each item of ${s.events}, decided on its own (line N, item i)`);
  const width = Math.max(...Object.keys(s.fields).map((f) => f.length));
  lines.push('  fields:');
  for (const [f, paths] of Object.entries(s.fields)) lines.push(`    ${f.padEnd(width)} ← ${paths.join(', then ')}`);
  lines.push(`  key: ${s.key.length ? s.key.join(' + ') : "by content (the lead's fields)"}`);
  for (const x of s.filtered) lines.push(`  filtered when ${x.when}: ${x.reason}`);
  for (const x of s.explained ?? []) lines.push(`  invalid, when ${x.when}, explained: ${x.reason}`);
  for (const d of s.docs) lines.push(`  docs: ${d}`);
  if (s.note) lines.push(`  note: ${s.note}`);
  return lines;
}

function log(l: LogInfo): string[] {
  return [
    `${l.name}  ${l.title}`,
    `  recognized by: ${l.recognizedBy.join('; ')}`,
    `  webhook body looked for in: ${l.bodies.join(', ')} (an object, or JSON in a string)`,
    ...l.docs.map((d) => `  docs: ${d}`),
  ];
}
