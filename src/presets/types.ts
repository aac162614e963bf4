// What a source definition is: how leadledger recognizes records of one tool (a Typeform webhook, an RD Station
// export), where their events are, which path holds each lead field, what their key is, and which records are
// not leads to send (a test lead, a partial response). One small definition per source, in sources/.
import type { Config } from '../mapping/config.js';
import type { FieldName } from '../mapping/fields.js';

/** A value a signature or a condition compares with: compared as text, so true matches "true" and 1 matches "1". */
export type Scalar = string | number | boolean;

/** How a JSON record of a source is recognized: every path in `has` holds something, and `equals` agree. */
export interface JsonSignature {
  /** Paths (mapping/fields.ts syntax) that must hold a value other than null. */
  has: readonly string[];
  /** Paths whose value must be one of these. */
  equals?: Readonly<Record<string, readonly Scalar[]>>;
  /** Paths that must not be there: tells a source from a look-alike. */
  lacks?: readonly string[];
  /** Paths of which at least one must hold a value other than null, when given. */
  anyOf?: readonly string[];
}

/** How a CSV export of a source is recognized: its header names (compared as normalizeHeader makes them). */
export interface CsvSignature {
  /** Every one of these columns. */
  headers: readonly string[];
  /** At least one of these columns too, when given (exports in several languages). */
  anyOf?: readonly string[];
}

/** A test on one event, said in words for `leadledger presets`. */
export interface Condition {
  readonly describe: string;
  test(event: Record<string, unknown>): boolean;
}

/** Events a source marks as not leads to send: each is `filtered` with the reason, never silently dropped. */
export interface Skip {
  when: Condition;
  reason: string;
}

/** The part of the config a source sets: its field paths and its key (the user's config wins field by field). */
export type SourceMapping = Pick<Config, 'fields' | 'key'>;

interface SourceBase {
  /** What --preset takes and the config's "preset" names. */
  name: string;
  /** What the summary says ("read as: Typeform webhook"). */
  title: string;
  /** The documentation pages the definition was written from. */
  docs: readonly string[];
  mapping: SourceMapping;
  skip?: readonly Skip[];
  /**
   * Why events of this source come out invalid where the mapper's reason alone would mislead (a LinkedIn response
   * pulled without its form's questions says "no email and no phone"): an invalid event a rule matches is reported
   * with the rule's reason, what to do, before the mapper's. Never makes an event invalid by itself.
   */
  explain?: readonly Skip[];
  /**
   * A value the source writes in its own way, made plain before mapping (Meta's "p:+55..." phones): returns the event
   * to map, the same object when nothing changed.
   */
  prepare?: (event: Record<string, unknown>) => Record<string, unknown>;
  /** What a person should know about this source, shown by `leadledger presets`. */
  note?: string;
}

/** A source whose records are JSON (a webhook body, an event, a line of its log). */
export interface JsonSource extends SourceBase {
  reads: 'json';
  signature: JsonSignature;
  /**
   * The path of the list of events a record holds (RD Station's `leads`), each decided on its own; a `[*]` in it
   * takes the lists under every element of a list (Meta's `entry[*].changes`: every change of every entry).
   */
  events?: string;
}

/** A source whose inputs are CSV exports. */
export interface CsvSource extends SourceBase {
  reads: 'csv';
  signature: CsvSignature;
}

export type SourceDef = JsonSource | CsvSource;

/**
 * A log whose lines (or entries) are containers: an application's (pino, winston, bunyan), a platform's (CloudWatch
 * Logs, Cloud Logging, the systemd journal), a web server's access log. The webhook body a handler logged is found
 * under one of `bodies` (an object, a JSON string or a form), else after the words of one of `messages` (a line of
 * text ending in the body as JSON or a form), then recognized as any other record; a line without one is not an
 * event.
 */
export interface LogDef {
  name: string;
  title: string;
  docs: readonly string[];
  /** What a line of this log has; several: any of them. */
  signature: JsonSignature | readonly JsonSignature[];
  bodies: readonly string[];
  /** Paths of the line's text (a string, or the journal's list of bytes), where a body may follow its words. */
  messages?: readonly string[];
  /**
   * Paths of a structured payload that is the event itself where it holds more than a message (Cloud Logging's
   * `jsonPayload`), tried after the bodies and messages.
   */
  payloads?: readonly string[];
  /** Paths of the request headers logged beside the body: a delivery id there is the event's key, a topic its type. */
  headers?: readonly string[];
  /**
   * Top-level fields that are the log's, not the event's (the ids it gives each line, a cursor): left out where an
   * entry holds the person itself and is read whole, so that none is taken for the event's id. `_*`: a prefix.
   */
  own?: readonly string[];
  /** Only the entries of a document's list under one of these keys are read as this log (`logEvents`). */
  lists?: readonly string[];
  /** What one of its records is called in messages: a line (the default) or an entry (of a JSON document). */
  unit?: string;
  /**
   * Only lines of a text log (the `log` format: sources/read-text-log.ts), or only the entries of a document's list
   * of log entries (RawRecord.within), are read as this log.
   */
  only?: 'text' | 'list';
}

/** The field names a source maps, for listings. */
export type MappedFields = Partial<Record<FieldName, string | readonly string[]>>;
