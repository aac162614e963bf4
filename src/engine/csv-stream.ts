// The worker side of a CSV input streamed to one map worker: chunks arrive as jobs, in order, and feed one
// readCsv (csv-parse keeps its quote state across chunks, so the file is parsed exactly as in-thread). Each job
// is answered with the records parsed since the previous answer, when the parser asks for the next chunk.
import type { Mapped } from '../mapping/types.js';
import type { Recoded } from '../sources/decode-text.js';
import type { ReaderContext } from '../sources/reader-context.js';
import { readCsv, type CsvSettings } from '../sources/read-csv.js';
import type { Selector } from '../sources/select-path.js';
import type { RawItem } from '../sources/types.js';

/** One CSV input being parsed in this worker. */
export class CsvStream {
  private readonly queue: Array<{ seq: number; bytes: Buffer; end: boolean }> = [];
  private wake: (() => void) | undefined;
  private out: Mapped[] = [];
  private answering: number | undefined;
  readonly done: Promise<void>;
  // Set once the input is read: its lines that were read as Windows-1252, for the last answer.
  private recoded: Recoded | undefined;

  constructor(
    settings: CsvSettings,
    selector: Selector | null,
    lineOffset: number,
    map: (item: RawItem) => Mapped,
    private readonly answer: (seq: number, items: Mapped[], error?: string, recoded?: Recoded) => void,
  ) {
    const ctx: ReaderContext = { source: '', selector, progress: { line: 0 }, lineOffset };
    this.done = (async () => {
      try {
        for await (const batch of readCsv(this.chunks(), ctx, settings))
          for (const item of batch) this.out.push(map(item));
        this.recoded = ctx.recoded;
        this.reply();
      } catch (e) {
        if (this.answering !== undefined) this.answer(this.answering, [], (e as Error).message);
        for (const q of this.queue) this.answer(q.seq, [], (e as Error).message);
      }
    })();
  }

  /** Queues the next chunk (end: the input is over). */
  push(seq: number, bytes: Buffer, end: boolean): void {
    this.queue.push({ seq, bytes, end });
    this.wake?.();
  }

  private reply(): void {
    if (this.answering === undefined) return;
    this.answer(this.answering, this.out, undefined, this.recoded);
    this.out = [];
    this.answering = undefined;
  }

  private async *chunks(): AsyncGenerator<Buffer> {
    for (;;) {
      while (this.queue.length === 0) await new Promise<void>((r) => (this.wake = r));
      this.wake = undefined;
      const next = this.queue.shift()!;
      // The parser wants more: what it produced so far answers the previous chunk's job.
      this.reply();
      this.answering = next.seq;
      if (next.end) return;
      yield next.bytes;
    }
  }
}
