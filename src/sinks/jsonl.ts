// JSONL sink: one line per lead, {"key": <downstream key>, "lead": {snake_case lead}}, appended to a file created
// with mode 0600 (leads are PII), or written to stdout for '-'. Each batch is fsynced before send() returns, so
// once deliver/ settles the ledger the lines are on disk.
import { open, type FileHandle } from 'node:fs/promises';
import type { Writable } from 'node:stream';
import type { SendItem, Sink, SinkCapabilities, SinkOutcome } from './types.js';
import { snakeLead } from './webhook-body.js';

export interface JsonlSinkOptions {
  /** File path, or '-' for stdout. */
  output: string;
  /** Stream used for '-' (default process.stdout); injectable for tests. */
  stdout?: Writable;
}

/** One JSONL line (without the newline) for one lead. */
export function jsonlLine(item: SendItem): string {
  return JSON.stringify({ key: item.downstreamKey, lead: snakeLead(item.lead) });
}

/** A file or stdout destination, mostly for audits and piping into other tools. */
export class JsonlSink implements Sink {
  readonly name = 'jsonl';
  readonly capabilities: SinkCapabilities = {
    maxBatch: 500,
    lookupByNaturalKey: false,
    honoursIdempotencyKey: false,
    upsertByNaturalKey: false,
  };
  private file: FileHandle | undefined;
  private opening: Promise<FileHandle> | undefined;

  constructor(private readonly opts: JsonlSinkOptions) {}

  /** "JSONL file out.jsonl" or "JSONL on stdout". */
  describe(): string {
    return this.opts.output === '-' ? 'JSONL on stdout' : `JSONL file ${this.opts.output}`;
  }

  /** Append one line per item and flush them to disk before returning. */
  async send(items: SendItem[]): Promise<SinkOutcome[]> {
    const text = items.map((i) => `${jsonlLine(i)}\n`).join('');
    try {
      if (this.opts.output === '-') await writeStream(this.opts.stdout ?? process.stdout, text);
      else {
        const file = await this.handle();
        await file.appendFile(text, 'utf8');
        await file.sync();
      }
    } catch (err) {
      // A partial write may have left some lines: those leads are in doubt rather than failed.
      const reason = `cannot write ${this.describe()}: ${(err as Error).message}`;
      return items.map(() => ({ kind: 'unknown', reason }));
    }
    return items.map(() => ({ kind: 'created' }));
  }

  /** Close the file. */
  async close(): Promise<void> {
    const file = this.file;
    this.file = undefined;
    this.opening = undefined;
    await file?.close();
  }

  private handle(): Promise<FileHandle> {
    if (this.file) return Promise.resolve(this.file);
    this.opening ??= open(this.opts.output, 'a', 0o600).then((f) => {
      this.file = f;
      return f;
    });
    return this.opening;
  }
}

function writeStream(stream: Writable, text: string): Promise<void> {
  return new Promise((resolve, reject) => {
    stream.write(text, (err) => (err ? reject(err) : resolve()));
  });
}
