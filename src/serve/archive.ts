// --archive: every request the receiver committed, one JSON line each ({receivedAt, endpoint, headers, body}: the
// log of webhook requests push and replay --from read), one file a day (requests-YYYY-MM-DD.jsonl, UTC), the days
// before gzipped (requests-YYYY-MM-DD.jsonl.gz). The live path produces the logs the batch path consumes.
import {
  closeSync,
  openSync,
  createReadStream,
  createWriteStream,
  existsSync,
  mkdirSync,
  readdirSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import { UsageError } from '../errors.js';

const DAY_FILE = /^requests-(\d{4}-\d{2}-\d{2})\.jsonl$/;

/** The archive of one folder. */
export class Archive {
  private day = '';
  private fd: number | undefined;
  /** Gzips of earlier days still being written (awaited on close). */
  private readonly rotating = new Set<Promise<void>>();

  constructor(
    readonly dir: string,
    private readonly onError: (message: string) => void,
  ) {
    try {
      mkdirSync(dir, { recursive: true });
    } catch (e) {
      throw new UsageError(
        `--archive ${dir}: cannot create it (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`,
      );
    }
  }

  /** Appends the lines of a committed group (synchronously: they are on disk before the group is answered). */
  write(lines: Array<Record<string, unknown>>, at = new Date()): void {
    if (!lines.length) return;
    const day = at.toISOString().slice(0, 10);
    if (day !== this.day) this.open(day);
    writeSync(this.fd!, lines.map((l) => JSON.stringify(l)).join('\n') + '\n');
  }

  private open(day: string): void {
    if (this.fd !== undefined) closeSync(this.fd);
    this.day = day;
    this.fd = openSync(join(this.dir, `requests-${day}.jsonl`), 'a', 0o600);
    // Every earlier day's file left plain (this one's yesterday, or a run stopped before it rotated) is gzipped.
    for (const f of readdirSync(this.dir)) {
      const m = DAY_FILE.exec(f);
      if (m && m[1]! < day) this.gzip(join(this.dir, f));
    }
  }

  private gzip(file: string): void {
    const gz = `${file}.gz`;
    if (existsSync(gz)) return;
    const p = pipeline(createReadStream(file), createGzip(), createWriteStream(`${gz}.part`, { mode: 0o600 }))
      .then(async () => {
        const { rename } = await import('node:fs/promises');
        await rename(`${gz}.part`, gz);
        unlinkSync(file);
      })
      .catch((e: unknown) => this.onError(`archive: could not gzip ${file}: ${(e as Error).message}`))
      .finally(() => this.rotating.delete(p));
    this.rotating.add(p);
  }

  /** Closes the day's file once the gzips under way are done. */
  async close(): Promise<void> {
    await Promise.all(this.rotating);
    if (this.fd !== undefined) closeSync(this.fd);
    this.fd = undefined;
  }
}
