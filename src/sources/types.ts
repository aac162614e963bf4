// What sources/ hands to mapping/: one record per line (JSONL) or row (CSV), or a rejection.

/** Input formats leadledger reads; `log`: lines of text a server or a logger wrote (an access log, syslog). */
export type InputFormat = 'jsonl' | 'json' | 'csv' | 'log';

/** One record read from an input, before any mapping. `line` is 1-based, the line the record starts on. */
export interface RawRecord {
  kind: 'record';
  /** The input's name as the user gave it ('-' is shown as 'stdin'). */
  source: string;
  line: number;
  /** Which of the records of its line this is (1-based), where the line held several (a JSON array). */
  item?: number;
  /** Parsed JSON object, or CSV row keyed by header. CSV values are always strings. */
  fields: Record<string, unknown>;
  /**
   * The key of the list of a document's top-level object the record is an element of (`events` of a CloudWatch Logs
   * export, `entries`, `records`): the object wraps a log's entries, and is no record itself (read-json.ts).
   */
  within?: string;
  /**
   * What the record's wrapper says of its event, where the event was unwrapped from a log line: its delivery id and
   * its type (the headers a receiver logged beside the body). Where no config or source says where the event's id
   * is, that id is its key; that type is its type.
   */
  wrapper?: { id?: string; type?: string };
  /**
   * Bytes of the record that were not valid UTF-8 were replaced by U+FFFD while decoding it: a form body's
   * percent-encoded bytes (select-path.ts). A line that is not UTF-8 is read as Windows-1252 instead (decode-text.ts).
   */
  replaced?: boolean;
}

/** A line or row that could not be parsed; the rest of the input is still read. */
export interface RawReject {
  kind: 'reject';
  source: string;
  line: number;
  item?: number;
  reason: string;
  /** The line is not JSON at all (it does not open with { or [): in an application log, a plain log line. */
  notJson?: boolean;
  /** A CSV row with fewer cells than the header has columns: its cells (a report's footer line is one). */
  cells?: string[];
}

/**
 * A part of an input that could not be read: the rest of it from `line` on (a truncated gzip, a file that vanished,
 * a document that cannot be followed), or lines `line` to `toLine` (a line or an element too large to read). Not a
 * record, so it gets no decision; the run reports it and ends with exit code 3.
 */
export interface RawUnread {
  kind: 'unread';
  source: string;
  line: number;
  /** The last line not read, when the part is not the rest of the input (a line or an element too large). */
  toLine?: number;
  reason: string;
}

export type RawItem = RawRecord | RawReject | RawUnread;

/** Options for reading inputs. */
export interface ReadOptions {
  /** Force a format instead of sniffing it from the extension or content. */
  format?: InputFormat;
  /** Force a text encoding (e.g. 'utf-8', 'windows-1252', 'latin1'); detected when absent. */
  encoding?: string;
  /** Force a CSV delimiter; sniffed from the first lines when absent. */
  delimiter?: string;
  /** A dotted path (e.g. 'body' or 'request.payload') that picks the event out of each JSON record. JSON strings at that path are parsed. */
  select?: string;
  /** Stream used for '-' (tests pass their own). */
  stdin?: NodeJS.ReadableStream;
  /** Aborted when the run is stopped: a wait on stdin or a FIFO is abandoned, and no further input is read. */
  signal?: AbortSignal;
  /** Called once per input, after its format is known and before its first record, e.g. to log how it is read. */
  onInput?: (info: InputInfo) => void;
  /** Called once per input that was opened, when it has been read: how it was read, and what to know about it. */
  onInputRead?: (read: InputRead) => void;
  /**
   * Called once, before the first input is read, with the bytes of every input together as they are on disk
   * (compressed files at their compressed size); undefined when one of them has no size known in advance (stdin, a
   * FIFO).
   */
  onTotalBytes?: (bytes: number | undefined) => void;
  /** Called as bytes are read from the inputs (as on disk, before decompression): progress against onTotalBytes. */
  onBytesRead?: (bytes: number) => void;
  /** --require-input: a glob that matches no file is an error (exit 3), not "nothing to do". */
  requireInput?: boolean;
  /** Called, before the first input is read, with each glob that matched no file (without requireInput). */
  onNoMatch?: (pattern: string) => void;
}

/** How one input is read, as decided from its name, its first bytes and the options. */
export interface InputInfo {
  /** The input's name as shown in records ('stdin' for '-'). */
  source: string;
  /** The file path, or null for stdin. */
  path: string | null;
  format: InputFormat;
  /** True when the bytes were gzip-compressed (seen from the magic bytes, not the name). */
  gzip: boolean;
  /** Text encoding used: a CSV input's always; a JSON or JSONL input's when it is not UTF-8. */
  encoding?: string;
  /** The input was UTF-16 (its BOM said so) and was read as UTF-8 text. */
  transcodedFrom?: string;
  /** Its lines ended with CR alone (classic Mac OS), read as lines all the same. */
  crLines?: boolean;
  /** Field delimiter used (CSV only). */
  delimiter?: string;
  /** Its cells are written with backslash escapes (\" for a quote, JSON literals), not RFC 4180's (CSV only). */
  escapes?: 'backslash';
}

/** How the times of one field of an input were read (mapping/times.ts), as its first records showed them. */
export interface FieldDates {
  /** The field's path. */
  field: string;
  /** Its dates are written with their year last: the order of day and month they are read in. */
  order?: 'day/month' | 'month/day';
  /** Why that order, in words (its dates showed it, or the order given or the default). */
  orderFrom?: string;
  /** Some of its times have no zone: they are read in the run's zone (RunReport.dates). */
  zoneless?: true;
}

/** How an input was read, when it has been: its InputInfo, and notes a person should read (lines re-decoded...). */
export interface InputRead extends InputInfo {
  notes: string[];
  /** How the times of its fields were read, where they had dates to tell about (read from its first records). */
  dates?: FieldDates[];
  /** The sources its records were recognized as, with how many of their events (none: read by field names). */
  readAs?: Array<{ as: string; events: number }>;
}
