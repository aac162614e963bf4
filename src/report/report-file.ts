// The per-record report (--report file.csv | file.jsonl | file.html): one row per record read, with its decision and
// reason; the HTML page (html-report.ts) adds a summary of the run.
import { closeSync, constants, lstatSync, openSync, writeSync } from 'node:fs';
import { stringify } from 'csv-stringify/sync';
import type { Decision } from '../decide/types.js';
import { UsageError } from '../errors.js';
import { HtmlReport } from './html-report.js';
import type { RunReport } from './run-report.js';

/** One row of the per-record report. */
export interface ReportRow {
  source: string;
  line: number;
  /** Which event of its line, where the line held several (a JSON array, a body with leads[]); else empty. */
  item: number | '';
  key: string;
  email: string;
  decision: string;
  reason: string;
  /** For sends: sent | updated | exists | failed | in_doubt | claimed_elsewhere. */
  result: string;
  crm_id: string;
  /** What a person should know about how the record was read (a field left out, a value altered), joined by '; '. */
  warnings: string;
}

export const REPORT_COLUMNS: Array<keyof ReportRow> = [
  'source',
  'line',
  'item',
  'key',
  'email',
  'decision',
  'reason',
  'result',
  'crm_id',
  'warnings',
];

/** Spreadsheet apps run cells starting with these as formulas (CSV injection): such cells get a leading quote. */
export function neutralizeCell(v: string): string {
  return /^[=+\-@\t\r]/.test(v) ? `'${v}` : v;
}

/**
 * Write, create 0600 (rows hold emails) or truncate, and refuse a symlink as the last path component: a report
 * written through a link would overwrite whatever the link points at (O_NOFOLLOW is absent on Windows).
 */
const WRITE_NO_FOLLOW = constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC | (constants.O_NOFOLLOW ?? 0);

/**
 * A report file being written; rows are buffered and written in chunks. The file is opened, and written, with
 * synchronous calls: a path that cannot be opened fails before the run starts, a write that fails (a full disk) is
 * known where it happens instead of surfacing later as an unhandled stream error, and a run that ends in
 * process.exit (interrupted while an input blocks) loses no row already written.
 */
export class ReportFile {
  private buf: string[] = [];
  private fd: number | undefined;
  /** The first write that failed: no row is written after it, and the run says so when it ends. */
  error: Error | undefined;

  /** The HTML page being written, for a .html report. */
  private readonly html: HtmlReport | undefined;

  private constructor(
    readonly path: string,
    private readonly csv: boolean,
    html: boolean,
    fd: number,
    /** Stdout's descriptor (--report -): written, never closed. */
    private readonly stdout = false,
  ) {
    this.fd = fd;
    if (this.csv) this.buf.push(stringify([REPORT_COLUMNS]));
    if (html) {
      this.html = new HtmlReport((text) => this.buf.push(text));
      this.html.begin();
    }
  }

  /**
   * Opens a report file; the format follows the extension (.csv, .jsonl / .ndjson, or .html / .htm), and a character
   * device (/dev/null, /dev/full) is written JSONL. A symlink, a missing folder or a file that cannot be written is a
   * UsageError naming the path.
   */
  static open(path: string): ReportFile {
    // - and /dev/stdout: the rows (JSONL) on stdout, written to its descriptor as it is (a pipe, a file, a terminal);
    // /dev/stdout is a link, which the refusal of links below would turn down.
    if (path === '-' || path === '/dev/stdout') return new ReportFile(path, false, false, 1, true);
    const lower = path.toLowerCase();
    const csv = lower.endsWith('.csv');
    const html = lower.endsWith('.html') || lower.endsWith('.htm');
    if (!csv && !html && !lower.endsWith('.jsonl') && !lower.endsWith('.ndjson') && !isCharacterDevice(path)) {
      throw new UsageError(`--report ${path}: use a .csv, .jsonl or .html file name`);
    }
    let fd: number;
    try {
      fd = openSync(path, WRITE_NO_FOLLOW, 0o600);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      // ELOOP (Linux, macOS) or EMLINK (FreeBSD) also come from looping directories: only a link itself is named so.
      if ((code === 'ELOOP' || code === 'EMLINK') && isSymlink(path)) {
        throw new UsageError(
          `--report ${path} is a symbolic link; leadledger does not write through links (give the file's own path)`,
        );
      }
      throw new UsageError(`--report ${path} cannot be written: ${describeOpenError(err)}`);
    }
    return new ReportFile(path, csv, html, fd);
  }

  /** Adds one row; its decision, where given, lends the HTML page an event time and a conflict's field values. */
  write(row: ReportRow, decision?: Decision): void {
    if (this.error) return;
    if (this.html) {
      // The page gives out its records in blocks: each is written as it comes.
      this.html.add(row, decision);
      if (this.buf.length > 0) this.flush();
      return;
    }
    if (this.csv) {
      this.buf.push(stringify([REPORT_COLUMNS.map((c) => neutralizeCell(String(row[c])))]));
    } else {
      this.buf.push(JSON.stringify(row) + '\n');
    }
    if (this.buf.length >= 2000) this.flush();
  }

  private flush(): void {
    const text = this.buf.join('');
    this.buf = [];
    if (!text || this.error || this.fd === undefined) return;
    const bytes = Buffer.from(text, 'utf8');
    try {
      // writeSync may take fewer bytes than asked: loop until the chunk is in the file.
      for (let done = 0; done < bytes.length;) {
        try {
          done += writeSync(this.fd, bytes, done, bytes.length - done);
        } catch (err) {
          // Stdout may be a non-blocking pipe (Node makes it one) that a slow reader has filled: wait and write on.
          if (!this.stdout || (err as NodeJS.ErrnoException).code !== 'EAGAIN') throw err;
          Atomics.wait(PAUSE, 0, 0, 5);
        }
      }
    } catch (err) {
      this.error = err as Error;
    }
  }

  /**
   * Writes what is buffered and closes the file; a failure is kept in `error`, never thrown. An HTML page ends with a
   * summary of the run, which `run` gives (called only then).
   */
  close(run?: () => RunReport): void {
    if (this.html && this.fd !== undefined && !this.error) {
      this.flush();
      this.html.finish(run?.());
    }
    this.flush();
    if (this.fd === undefined) return;
    const fd = this.fd;
    this.fd = undefined;
    if (this.stdout) return;
    try {
      closeSync(fd);
    } catch (err) {
      this.error ??= err as Error;
    }
  }
}

// What a write to a full stdout pipe waits on (a few milliseconds, then it writes again).
const PAUSE = new Int32Array(new SharedArrayBuffer(4));

function isSymlink(path: string): boolean {
  try {
    return lstatSync(path).isSymbolicLink();
  } catch {
    return false;
  }
}

function isCharacterDevice(path: string): boolean {
  try {
    return lstatSync(path).isCharacterDevice();
  } catch {
    return false;
  }
}

function describeOpenError(err: unknown): string {
  const e = err as NodeJS.ErrnoException;
  if (e.code === 'ENOENT') return 'its folder does not exist';
  if (e.code === 'EACCES' || e.code === 'EPERM') return 'permission denied';
  if (e.code === 'EISDIR') return 'it is a directory';
  return e.message;
}
