// The per-record report (--report file.csv | file.jsonl): one row per record read, with its decision and reason.
import { createWriteStream, type WriteStream } from 'node:fs';
import { stringify } from 'csv-stringify/sync';
import { UsageError } from '../errors.js';

/** One row of the per-record report. */
export interface ReportRow {
  source: string;
  line: number;
  key: string;
  email: string;
  decision: string;
  reason: string;
  /** For sends: sent | updated | exists | failed | in_doubt | claimed_elsewhere. */
  result: string;
  crm_id: string;
}

export const REPORT_COLUMNS: Array<keyof ReportRow> = [
  'source',
  'line',
  'key',
  'email',
  'decision',
  'reason',
  'result',
  'crm_id',
];

/** Spreadsheet apps run cells starting with these as formulas (CSV injection): such cells get a leading quote. */
export function neutralizeCell(v: string): string {
  return /^[=+\-@\t\r]/.test(v) ? `'${v}` : v;
}

/** A report file being written; rows are buffered and written in chunks. */
export class ReportFile {
  private buf: string[] = [];
  private readonly out: WriteStream;
  private readonly csv: boolean;

  private constructor(readonly path: string) {
    this.csv = path.toLowerCase().endsWith('.csv');
    this.out = createWriteStream(path, { mode: 0o600 });
    if (this.csv) this.buf.push(stringify([REPORT_COLUMNS]));
  }

  /** Opens a report file; the format follows the extension (.csv, or .jsonl / .ndjson). */
  static open(path: string): ReportFile {
    const lower = path.toLowerCase();
    if (!lower.endsWith('.csv') && !lower.endsWith('.jsonl') && !lower.endsWith('.ndjson')) {
      throw new UsageError(`--report ${path}: use a .csv or .jsonl file name`);
    }
    return new ReportFile(path);
  }

  /** Adds one row. */
  write(row: ReportRow): void {
    if (this.csv) {
      this.buf.push(stringify([REPORT_COLUMNS.map((c) => neutralizeCell(String(row[c])))]));
    } else {
      this.buf.push(JSON.stringify(row) + '\n');
    }
    if (this.buf.length >= 2000) this.flush();
  }

  private flush(): void {
    if (this.buf.length) this.out.write(this.buf.join(''));
    this.buf = [];
  }

  /** Writes what is buffered and closes the file. */
  async close(): Promise<void> {
    this.flush();
    await new Promise<void>((res, rej) => this.out.end((err?: Error | null) => (err ? rej(err) : res())));
  }
}
