// The human summary of a run: the result on stdout (on stderr where --json or --report - take stdout).
import type { ChalkInstance } from 'chalk';
import { isAbsolute, relative, sep } from 'node:path';
import { DECISION_KINDS, type DecisionKind } from '../decide/types.js';
import { printable } from './printable.js';
import type { FieldDates } from '../sources/types.js';
import type { DatesRead, Example, RunReport, Unread } from './run-report.js';

const LABEL: Record<DecisionKind, string> = {
  new: 'new',
  duplicate: 'duplicate (in ledger)',
  duplicate_in_input: 'duplicate in input',
  conflict: 'conflict',
  known_lead: 'known lead',
  invalid: 'invalid',
  filtered: 'filtered',
};

/** Renders the end-of-run summary as text. */
export function formatSummary(r: RunReport, c: ChalkInstance): string {
  const lines: string[] = [];
  const title = r.dryRun
    ? `${r.command} --dry-run: nothing was sent and the ledger was not written`
    : `${r.command}${r.sink ? ` → ${printable(r.sink)}` : ''}`;
  lines.push(c.bold(title));
  lines.push(`ledger ${printable(r.ledger)}${r.runId ? ` (run ${r.runId})` : ''}`);
  lines.push(`config: ${r.config === null ? 'none' : printable(configShown(r.config))}`);
  if (r.configMismatch) lines.push(c.yellow(`warning: ${printable(r.configMismatch, 1000)} (exit code 2)`));
  lines.push('');
  const width = Math.max(...Object.values(LABEL).map((l) => l.length));
  lines.push(`  ${'records read'.padEnd(width)}  ${String(r.counts.read).padStart(9)}`);
  for (const k of DECISION_KINDS) {
    const n = r.counts[k];
    if (!n && k !== 'new') continue;
    const label = k === 'new' && r.dryRun ? 'new (would send)' : LABEL[k];
    const colour = k === 'new' ? c.green : k === 'conflict' || k === 'invalid' ? c.yellow : c.dim;
    lines.push(colour(`  ${label.padEnd(width)}  ${String(n).padStart(9)}`));
  }
  const sources = Object.keys(r.perSource);
  if (sources.length > 1) {
    lines.push('');
    lines.push('  per input:');
    for (const s of sources) {
      const p = r.perSource[s]!;
      const parts = DECISION_KINDS.filter((k) => p[k]).map((k) => `${p[k]} ${k}`);
      lines.push(`    ${printable(s)}: ${p.read} read (${parts.join(', ')})`);
    }
  }
  const noted = r.readAs.filter((x) => x.notes.length > 0 || x.readAs?.length || x.dates?.length);
  if (noted.length) {
    lines.push('');
    lines.push('  how inputs were read:');
    for (const x of noted) {
      if (x.readAs?.length)
        lines.push(`    ${printable(x.source)}: read as ${x.readAs.map((a) => `${a.as} (${a.events})`).join(', ')}`);
      for (const d of x.dates ?? []) lines.push(`    ${printable(x.source)}: ${fieldDatesLine(d, r.dates)}`);
      for (const n of x.notes) lines.push(c.yellow(`    ${printable(x.source)}: ${printable(n, 400)}`));
    }
  }
  if (r.phones) {
    lines.push('');
    lines.push(phonesLine(r.phones, c));
  }
  if (r.dates) {
    if (!r.phones) lines.push('');
    lines.push(datesLine(r.dates));
  }
  if (r.spend) {
    lines.push('');
    lines.push(`  ${printable(r.spend, 400)}`);
  }
  if (r.delivery) {
    const d = r.delivery;
    lines.push('');
    lines.push(
      `  sent ${c.green(String(d.sent))}, updated ${d.updated}, already in the CRM ${d.exists}, failed ${d.failed ? c.red(String(d.failed)) : '0'}, in doubt ${d.inDoubt ? c.red(String(d.inDoubt)) : '0'}`,
    );
    if (d.recovered) lines.push(`  recovered from earlier runs: ${d.recovered}`);
    if (d.claimedElsewhere) lines.push(`  claimed by another run meanwhile (not sent here): ${d.claimedElsewhere}`);
    for (const [reason, n] of Object.entries(r.failures ?? {}))
      lines.push(c.red(`    failed ×${n}: ${printable(reason, 400)}`));
    for (const [reason, n] of Object.entries(r.inDoubtReasons ?? {}))
      lines.push(c.red(`    in doubt ×${n}: ${printable(reason, 400)}`));
    if (r.inDoubtInLedger)
      lines.push(
        c.red(
          `  in doubt on another sink since an earlier run: ${r.inDoubtInLedger} events of this input (duplicates in the ledger, not sent again: maybe delivered, maybe not)`,
        ),
      );
    if (r.fieldsNotHeld?.length) {
      lines.push(c.yellow('  fields written without, where the sink has no place for them:'));
      for (const f of r.fieldsNotHeld)
        lines.push(c.yellow(`    ${printable(f.field, 80)} ×${f.leads}: ${printable(f.why, 400)}`));
    }
    const shared = r.sharedTransactions;
    if (shared && (shared.committed || Object.keys(shared.rolledBack).length)) {
      lines.push(`  committed with their ledger records, one transaction a batch: ${shared.committed} batches`);
      for (const [reason, n] of Object.entries(shared.rolledBack))
        lines.push(c.yellow(`    rolled back ×${n}, then written claim by claim: ${printable(reason, 400)}`));
    }
    if (r.inDoubtResolution)
      lines.push(
        `  to settle ${d.inDoubt ? `the ${d.inDoubt} in doubt` : 'them'}: ${printable(r.inDoubtResolution.command, 400)} (${r.inDoubtResolution.how}; ${d.inDoubt ? r.inDoubtResolution.nextPush : "no push settles another sink's: only this replay does"})`,
      );
  }
  if (r.http && r.http.requests) {
    lines.push(
      `  http: ${r.http.requests} requests, ${r.http.retries ?? 0} retries, ${r.http.rateLimited ?? 0} rate-limited (429)`,
    );
  }
  const exampleKinds = DECISION_KINDS.filter(
    (k) => r.examples[k]?.length && k !== 'duplicate_in_input' && k !== 'duplicate',
  );
  if (exampleKinds.length) {
    lines.push('');
    lines.push('  examples:');
    for (const k of exampleKinds) {
      for (const e of r.examples[k]!) lines.push(c.dim(`    ${k}: ${example(e)}`));
    }
  }
  if (r.warnings.records) {
    lines.push('');
    lines.push(
      c.yellow(
        `  warnings: ${r.warnings.records} record${r.warnings.records === 1 ? '' : 's'} read with something to know`,
      ),
    );
    for (const [reason, n] of Object.entries(r.warnings.byReason))
      lines.push(c.yellow(`    ×${n} ${printable(reason)}`));
    for (const e of r.warnings.examples) lines.push(c.dim(`    e.g. ${example(e)}`));
  }
  if (r.counts.conflict) {
    lines.push('');
    lines.push(
      c.yellow(
        `  conflict (exit code 6): ${r.counts.conflict} event${r.counts.conflict === 1 ? ' whose key came' : 's whose keys came'} with another lead (in the ledger or earlier in the input), never sent: a person must look (the examples above; every one with --report)`,
      ),
    );
  }
  if (r.noMatch?.length) {
    lines.push('');
    for (const p of r.noMatch) lines.push(c.yellow(`  nothing to do for '${printable(p)}': no file matches it`));
  }
  if (r.unread.length) {
    lines.push('');
    lines.push(c.red('  not read (exit code 3): the rest of the inputs was decided'));
    for (const u of r.unread)
      lines.push(c.red(`    ${printable(u.source)} ${unreadPart(u)}: ${printable(u.reason, 400)}`));
  }
  if (r.interrupted) lines.push(c.yellow(`  ${interruptedLine(r)}`));
  lines.push('');
  lines.push(c.dim(`done in ${(r.durationMs / 1000).toFixed(2)} s`));
  return lines.join('\n') + '\n';
}

/** How a summary names the config file: ./name under the working directory, else its absolute path. */
export function configShown(path: string, cwd = process.cwd()): string {
  const r = relative(cwd, path);
  return r && !r.startsWith('..') && !isAbsolute(r) ? `.${sep}${r}` : path;
}

// What the stop did to the sends, in events: settled in the grace period, cut after it, never sent.
function interruptedLine(r: RunReport): string {
  const s = r.stopped;
  if (!s) return 'interrupted: nothing was being sent; run again to continue';
  const parts = [
    `${s.settled} in-flight send${s.settled === 1 ? '' : 's'} settled in the grace period`,
    `${s.cut} cut after it (in doubt)`,
    `${s.released} never sent (released: the next run sends ${s.released === 1 ? 'it' : 'them'})`,
  ];
  return `interrupted: ${parts.join('; ')}`;
}

// Which country national phone numbers were read in, and where it came from; or that there was none to read them in.
function phonesLine(p: NonNullable<RunReport['phones']>, c: ChalkInstance): string {
  const n = p.nationalNumbers;
  if (p.defaultCountry === undefined)
    return c.yellow(
      `  phones: no default country to read national numbers in: ${n} in this run could not be read (set --default-country, e.g. BR; defaultCountry in the config; or a locale with a region, e.g. LANG=pt_BR.UTF-8)`,
    );
  const from = p.from ? ` (from ${printable(p.from, 80)})` : '';
  return `  phones: national numbers read as ${p.defaultCountry}${from}: ${n === 0 ? 'none' : n} in this run`;
}

// How one field's times were read: the order of its dates, and the zone of its times that have none.
function fieldDatesLine(d: FieldDates, dates: DatesRead | undefined): string {
  const parts: string[] = [];
  if (d.order) parts.push(`dates read ${d.order} (${printable(d.orderFrom ?? '', 200)})`);
  if (d.zoneless)
    parts.push(`times without a zone read in ${dates ? dates.timezone : "the config's timezone, else UTC"}`);
  return `${printable(d.field, 80)}: ${parts.join('; ')}`;
}

// How the run read times: the zone of those without one, and the order of day and month, each with where it came from.
function datesLine(d: DatesRead): string {
  const zone = d.timezoneFrom === 'the default' ? 'the default; --timezone to change it' : `from ${d.timezoneFrom}`;
  const order = d.orderFrom === 'the default' ? 'the default; --date-order to change it' : `from ${d.orderFrom}`;
  return `  dates: times without a zone read in ${d.timezone} (${zone}); dates with the year last read ${d.order} where a field's dates do not show the order (${order})`;
}

// One example record, as a line: where it is, its key, why; every value escaped and cut to a width.
function example(e: Example): string {
  return `${printable(e.source)}:${e.line}${e.item === undefined ? '' : ` (item ${e.item})`}${e.key ? ` [${printable(e.key, 80)}]` : ''} ${printable(e.reason, 240)}`;
}

// Where a part not read is: a line, lines, the rest of the input, or the records past those listed one by one.
function unreadPart(u: Unread): string {
  if (u.records !== undefined)
    return `${u.records} more record${u.records === 1 ? '' : 's'} not read from line ${u.line} to ${u.toLine ?? u.line}, the first`;
  if (u.toLine === undefined) return `from line ${u.line} to the end`;
  return u.toLine === u.line ? `line ${u.line}` : `lines ${u.line}-${u.toLine}`;
}

// Parts not read named on the --quiet line; the rest counted.
const QUIET_UNREAD = 3;

/**
 * What --quiet still prints of a run that did not end 0 (and was not interrupted, which says so itself): a line for
 * each kind of reason it ended so, in the order of the exit codes' precedence (not read; failed or in doubt;
 * conflicts), each ending with the run's exit code, so that a cron mail says why (the summary, which says it at
 * length, is not printed). None for a run that ended 0.
 */
export function quietErrorLines(r: RunReport): string[] {
  if (r.interrupted) return [];
  const lines: string[][] = [];
  if (r.configMismatch) lines.push([r.configMismatch]);
  if (r.unread.length) {
    const named = r.unread.slice(0, QUIET_UNREAD).map((u) => `${u.source} ${unreadPart(u)}: ${u.reason}`);
    const more = r.unread.length - named.length;
    lines.push([`not read: ${named.join('; ')}${more ? `; and ${more} more part${more === 1 ? '' : 's'}` : ''}`]);
  }
  const parts: string[] = [];
  const d = r.delivery;
  const top = (m: Record<string, number> | undefined) => Object.entries(m ?? {}).sort((a, b) => b[1] - a[1])[0]?.[0];
  if (d?.failed) parts.push(`${d.failed} failed (${top(r.failures) ?? 'see --json'})`);
  const fix = r.inDoubtResolution ? `; to settle them: ${r.inDoubtResolution.command}` : '';
  if (d?.inDoubt) parts.push(`${d.inDoubt} in doubt (${top(r.inDoubtReasons) ?? 'see --json'})`);
  if (r.inDoubtInLedger)
    parts.push(
      `${r.inDoubtInLedger} events of the input in doubt on another sink since an earlier run, not sent again`,
    );
  if ((d?.inDoubt || r.inDoubtInLedger) && fix) parts[parts.length - 1] += fix;
  if (parts.length) lines.push(parts);
  const n = r.counts.conflict;
  if (n) {
    const e = r.examples.conflict?.[0];
    const where = e ? ` (e.g. ${e.source}:${e.line}${e.key ? ` [${e.key}]` : ''} ${e.reason})` : '';
    lines.push([
      `${n} conflict${n === 1 ? ': an event whose key came' : 's: events whose keys came'} with another lead, never sent: a person must look${where}`,
    ]);
  }
  if (r.exitCode === 0) return [];
  return lines.map((l) => `leadledger: error: ${printable(l.join('; '), 1000)} (exit ${r.exitCode})`);
}
