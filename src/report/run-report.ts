// The result of a run as data: what every command returns and every output format is made from.
import { DECISION_KINDS, type Decision, type DecisionKind, type DecisionTally } from '../decide/types.js';
import type { DeliveryCounts, FieldNotHeldCount, SharedBatches, StopCounts } from '../deliver/delivery-counts.js';
import type { InDoubtResolution } from '../deliver/resolve-command.js';
import { ExitCode, exitCodeOf } from '../errors.js';
import type { DefaultCountry } from '../mapping/default-country.js';
import { warningKind } from '../mapping/phones.js';
import type { InputRead, RawUnread } from '../sources/types.js';
import { isUnreadable } from '../sources/unreadable.js';

/** Counts of decisions; `read` is their sum (every record read gets exactly one). */
export type DecisionCounts = { read: number } & Record<DecisionKind, number>;

/** One example record for a reason, for the human summary. */
export interface Example {
  source: string;
  line: number;
  /** Which event of its line, where the line held several. */
  item?: number;
  key?: string;
  reason: string;
}

/**
 * A part of an input that could not be read: from `line` to `toLine`, or to the end of that input. A record that
 * could not be read (a broken JSON line, a CSV row with broken quoting) is a part of its own, line to line, as well
 * as an invalid decision.
 */
export interface Unread {
  source: string;
  line: number;
  toLine?: number;
  reason: string;
  /**
   * Past the first parts listed one by one, the records of an input that could not be read are counted in one part:
   * this many, the first at `line` and the last at `toLine` (the lines between them that could be read were read);
   * `reason` is the first one's.
   */
  records?: number;
}

/** A reader's unread part, as the report keeps it. */
export function unreadPart(u: RawUnread): Unread {
  return u.toLine === undefined
    ? { source: u.source, line: u.line, reason: u.reason }
    : { source: u.source, line: u.line, toLine: u.toLine, reason: u.reason };
}

/** Records read with something a person should know (a value altered by decoding, a field left out). */
export interface Warnings {
  /** Records with at least one warning. */
  records: number;
  /** Kind of warning → how many records have it (the value a phone warning quotes is '…' here: see warningKind). */
  byReason: Record<string, number>;
  examples: Example[];
}

/** How national phone numbers (written without a calling code) were read, in a run where it mattered. */
export interface PhoneCountry {
  /** The country they were read in (ISO 3166); absent when there was none. */
  defaultCountry?: string;
  /** Where it came from: --default-country, LEADLEDGER_DEFAULT_COUNTRY, the config's defaultCountry, LANG=... */
  from?: string;
  /** Records read whose phone was national. */
  nationalNumbers: number;
}

/** The report's phones: only when it matters, that is when a default country was in effect or a national number read. */
export function phoneCountry(d: DefaultCountry, nationalNumbers: number): PhoneCountry | undefined {
  if (d.country === undefined && nationalNumbers === 0) return undefined;
  return d.country === undefined ? { nationalNumbers } : { defaultCountry: d.country, from: d.from, nationalNumbers };
}

/** How a run read event times: the zone of those without one, and the order of day and month, and why. */
export interface DatesRead {
  /** The zone times without one were read in (an IANA name, or UTC). */
  timezone: string;
  /** Where it came from: --timezone, the config's timezone, or the default. */
  timezoneFrom: string;
  /** The order of day and month of dates written with their year last, where a field's own dates did not show it. */
  order: 'day/month' | 'month/day';
  /** Where it came from: --date-order, the config's dateOrder, the default country, or the default. */
  orderFrom: string;
}

/**
 * The report's dates: only when they mattered, that is when an input's first records held times without a zone or
 * dates with their year last, or the run was told how to read them.
 */
export function datesRead(
  d: Omit<DatesRead, 'order'> & { order: 'dmy' | 'mdy' },
  inputs: readonly InputRead[],
): DatesRead | undefined {
  const told = d.timezoneFrom !== 'the default' || d.orderFrom !== 'the default';
  if (!told && !inputs.some((i) => i.dates?.length)) return undefined;
  return {
    timezone: d.timezone,
    timezoneFrom: d.timezoneFrom,
    order: d.order === 'dmy' ? 'day/month' : 'month/day',
    orderFrom: d.orderFrom,
  };
}

/** Everything a run did, as data. */
export interface RunReport {
  command: string;
  dryRun: boolean;
  ledger: string;
  /** The config file in use (absolute path; found by --config, LEADLEDGER_CONFIG, the working directory, the user's config directory), or null. */
  config: string | null;
  /**
   * Every record of a non-empty input was invalid under a config that maps fields (fields, key or preset): most likely
   * a config written for another kind of input. Why, naming the config; the run then ends 2 (a config error).
   */
  configMismatch?: string;
  runId?: number;
  sink?: string;
  inputs: string[];
  /** The options the run used (no secrets). */
  options: Record<string, unknown>;
  counts: DecisionCounts;
  perSource: Record<string, DecisionCounts>;
  examples: Partial<Record<DecisionKind, Example[]>>;
  /** How each input was read (format, encoding, delimiter), with notes a person should read. */
  readAs: InputRead[];
  /** Parts of the inputs that could not be read, records among them (the run then ends with exit code 3). */
  unread: Unread[];
  /** Globs that matched no file: nothing to do for them (a note; with --require-input the run fails instead). */
  noMatch?: string[];
  warnings: Warnings;
  /** The country national phone numbers were read in, when there was one or one was read. */
  phones?: PhoneCountry;
  /** How event times were read, when it mattered (the fields of each input: readAs[].dates). */
  dates?: DatesRead;
  delivery?: DeliveryCounts;
  /** Failed sends grouped by reason: reason → count. */
  failures?: Record<string, number>;
  /** Events left in doubt grouped by reason: reason → count (they add up to delivery.inDoubt). */
  inDoubtReasons?: Record<string, number>;
  /**
   * The lead fields the sink had no place for (a HubSpot source without sourceProperty, a custom field with no column,
   * a field a webhook template leaves out): each with why, and how many leads were written without it. Absent when
   * every field of every lead written reached the sink.
   */
  fieldsNotHeld?: FieldNotHeldCount[];
  /** A sink in the ledger's own database: batches committed with their ledger records, and those rolled back. */
  sharedTransactions?: SharedBatches;
  /** HTTP statistics of the sink (requests, retries, 429s), when it talks HTTP. */
  http?: Record<string, number>;
  interrupted?: boolean;
  /**
   * After a stop: of the events being sent, how many were settled in the grace period, how many were cut after it
   * (in doubt), how many never left (released: the next run sends them).
   */
  stopped?: StopCounts;
  /** When events are left in doubt: the command that settles them, and what it does. */
  inDoubtResolution?: InDoubtResolution;
  /**
   * A push's input events that the ledger holds in doubt since an earlier run on another sink (an output renamed
   * since, a date in its name): decided duplicates, not sent again, and not known to be delivered, so the run does
   * not end 0. Those in doubt on this run's sink are in delivery.inDoubt.
   */
  inDoubtInLedger?: number;
  /** A dry-run's line of what sending its new leads costs at a CRM that charges by the record (Zoho's credits). */
  spend?: string;
  /** Why the --report file could not be written (the run itself went on: its sends are settled in the ledger). */
  reportError?: string;
  startedAt: string;
  durationMs: number;
  exitCode: number;
}

/**
 * The exit code of a run: 130 when interrupted; 3 when part of an input could not be read (a file, the rest of one,
 * a record: what could be read was decided and sent, but cron must be able to tell); 1 when a send failed or is in
 * doubt, an event of the input is in doubt in the ledger on another sink, or the --report file could not be written
 * (the run finished and its sends are settled, but not all it was asked for was done); 6 when events conflict with
 * the ledger or the input (the same key, another lead: never sent, a person must look); else 0. The first that
 * applies, in EXIT_PRECEDENCE's order.
 */
export function runExitCode(
  delivery: DeliveryCounts | undefined,
  interrupted: boolean,
  unread: readonly Unread[] = [],
  reportFailed = false,
  inDoubtInLedger = 0,
  conflicts = 0,
  configMismatch = false,
): number {
  const apply = new Set<ExitCode>();
  // Nothing of the input could be sent because of the config: a config error, which cron must be able to tell.
  if (configMismatch) apply.add(ExitCode.usage);
  if (interrupted) apply.add(ExitCode.interrupted);
  if (unread.length > 0) apply.add(ExitCode.input);
  if (reportFailed || inDoubtInLedger > 0 || (delivery && (delivery.failed > 0 || delivery.inDoubt > 0)))
    apply.add(ExitCode.incomplete);
  if (conflicts > 0) apply.add(ExitCode.conflict);
  return exitCodeOf(apply);
}

/**
 * Why every record may be invalid because of the config (the caller checks that they map without it): a config that maps fields (fields, key or preset)
 * under which every record of a non-empty input was invalid, none of them for being unreadable (a broken line is the
 * input's fault: exit 3). Undefined otherwise.
 */
export function configMismatch(
  loaded: { path?: string; from?: string; config: { fields?: unknown; key?: unknown; preset?: unknown } },
  counts: DecisionCounts,
  unread: readonly Unread[] = [],
): string | undefined {
  const c = loaded.config;
  if (!loaded.path || (c.fields === undefined && c.key === undefined && c.preset === undefined)) return undefined;
  if (counts.read === 0 || counts.invalid !== counts.read || unread.length > 0) return undefined;
  const how: Record<string, string> = {
    '--config': 'named by --config',
    LEADLEDGER_CONFIG: 'named by LEADLEDGER_CONFIG',
    'working directory': 'found in the working directory',
    'user config directory': "found in the user's config directory",
  };
  return `every record read (${counts.read}) was invalid under the config ${loaded.path} (${how[loaded.from ?? '--config'] ?? loaded.from}): its mapping (fields, key, preset) was written for another kind of input (without it, records of this input are leads); give the right one with --config <file>, or write one for this input with \`leadledger init <input> --output <file>\``;
}

/** The words of a --report file's write failure, for the run report; undefined when it was written whole. */
export function reportFileError(file: { path: string; error?: Error } | undefined): string | undefined {
  if (!file?.error) return undefined;
  return `the report ${file.path} could not be written: ${file.error.message}`;
}

/** Empty decision counts. */
export function emptyCounts(): DecisionCounts {
  const c = { read: 0 } as DecisionCounts;
  for (const k of DECISION_KINDS) c[k] = 0;
  return c;
}

const EXAMPLES_PER_KIND = 3;
// Records that could not be read listed one by one in a run's unread parts; the rest are counted, a part per input.
const UNREAD_RECORDS_LISTED = 20;
const INVALID = DECISION_KINDS.indexOf('invalid');

/** Accumulates decisions into counts, per-source counts and a few examples per decision. */
export class ReportCollector implements DecisionTally {
  readonly counts = emptyCounts();
  readonly perSource: Record<string, DecisionCounts> = {};
  readonly examples: Partial<Record<DecisionKind, Example[]>> = {};
  /**
   * The kinds (in DECISION_KINDS order) that a counting decider makes whole: those that still want an example, and
   * every invalid one (whether its record could be read at all is in its reason).
   */
  readonly wanted = DECISION_KINDS.map((k) => k !== 'new');
  readonly unread: Unread[] = [];
  readonly readAs: InputRead[] = [];
  readonly warnings: Warnings = { records: 0, byReason: {}, examples: [] };

  // Per input, the part that counts its records past the first UNREAD_RECORDS_LISTED.
  private readonly unreadRecords = new Map<string, Unread & { records: number }>();
  private unreadListed = 0;

  /** A part of an input that could not be read (a record: one line, `toLine` equal to `line`). */
  addUnread(u: Unread): void {
    if (u.toLine !== u.line || this.unreadListed < UNREAD_RECORDS_LISTED) {
      if (u.toLine === u.line) this.unreadListed++;
      this.unread.push(u);
      return;
    }
    const counted = this.unreadRecords.get(u.source);
    if (counted) {
      counted.records++;
      counted.toLine = Math.max(counted.toLine!, u.line);
      return;
    }
    const part = { source: u.source, line: u.line, toLine: u.line, reason: u.reason, records: 1 };
    this.unreadRecords.set(u.source, part);
    this.unread.push(part);
  }

  /** The warnings of one record read. */
  addWarnings(source: string, line: number, key: string | undefined, warnings: readonly string[]): void {
    if (warnings.length === 0) return;
    const w = this.warnings;
    w.records++;
    for (const x of warnings) {
      const kind = warningKind(x);
      w.byReason[kind] = (w.byReason[kind] ?? 0) + 1;
    }
    if (w.examples.length < EXAMPLES_PER_KIND) w.examples.push({ source, line, key, reason: warnings.join('; ') });
  }

  /** Counts decisions by kind (DECISION_KINDS order) that were not made whole. */
  addCounts(source: string, counts: Int32Array): void {
    const per = (this.perSource[source] ??= emptyCounts());
    for (let i = 0; i < DECISION_KINDS.length; i++) {
      const n = counts[i]!;
      if (n === 0) continue;
      const k = DECISION_KINDS[i]!;
      this.counts[k] += n;
      this.counts.read += n;
      per[k] += n;
      per.read += n;
    }
  }

  /** Counts one decision. */
  add(d: Decision): void {
    const warnings = d.event?.warnings;
    if (warnings) this.addWarnings(d.source, d.line, d.key, warnings);
    this.counts.read++;
    this.counts[d.kind]++;
    const per = (this.perSource[d.source] ??= emptyCounts());
    per.read++;
    per[d.kind]++;
    if (d.kind !== 'new') {
      const ex = (this.examples[d.kind] ??= []);
      if (ex.length < EXAMPLES_PER_KIND)
        ex.push(
          d.item === undefined
            ? { source: d.source, line: d.line, key: d.key, reason: d.reason }
            : { source: d.source, line: d.line, item: d.item, key: d.key, reason: d.reason },
        );
      const k = DECISION_KINDS.indexOf(d.kind);
      if (ex.length >= EXAMPLES_PER_KIND && k !== INVALID) this.wanted[k] = false;
    }
    // A record that could not be read is also a part of the input not read: the run ends 3, and says where.
    if (d.kind === 'invalid' && isUnreadable(d.reason))
      this.addUnread({ source: d.source, line: d.line, toLine: d.line, reason: d.reason });
  }
}
