// The checkpointer thread of a writing connection (checkpoint-thread.ts): the WAL copied back into the file every
// CHECKPOINT_EVERY_MS off the thread that commits, so that no commit of the writer pays for a whole checkpoint. A push
// starts it beside its writer thread (threaded.ts); the receiver beside its main connection, whose commits hold the
// event loop every request waits on.
import type { Worker } from 'node:worker_threads';
import { startWorker } from '../thread.js';

/** What the checkpointer thread (checkpoint-thread.ts) is started with. */
export interface CheckpointerInit {
  /** The ledger file, absolute. */
  file: string;
  /** Milliseconds between two checkpoints. */
  everyMs: number;
}

/**
 * How often the checkpointer copies the WAL back into the file. Replaying a push's claims and settles of a million
 * events, checkpoints taken every 50 ms on a thread of their own took the writer's time from 10.6 to 9.7 s (four
 * pairs); every 200 or 500 ms gained less.
 */
export const CHECKPOINT_EVERY_MS = 50;

/**
 * A writing connection's own autocheckpoint while a checkpointer runs beside it (a WAL copied every 50 ms holds a
 * few MiB): 256 MiB, so that the connection checkpoints only should the checkpointer fail or fall far behind.
 */
export const WRITER_CHECKPOINT_PAGES = 65_536;

/** A running checkpointer thread. */
export class Checkpointer {
  private gone = false;

  private constructor(private readonly worker: Worker) {
    worker.on('error', () => undefined);
    worker.once('exit', () => {
      this.gone = true;
    });
    worker.unref();
  }

  /**
   * Starts one on the ledger file; undefined when no thread can be had (the connection's autocheckpoint then copies
   * the WAL, as for a short run). Its failures are no run's: nothing waits for it.
   */
  static start(file: string): Checkpointer | undefined {
    try {
      return new Checkpointer(
        startWorker('checkpoint-thread', import.meta.url, {
          workerData: { file, everyMs: CHECKPOINT_EVERY_MS } satisfies CheckpointerInit,
        }),
      );
    } catch {
      return undefined;
    }
  }

  /** Stops it between two checkpoints, and closes its connection (or ends the thread, if it is stuck). */
  async stop(): Promise<void> {
    const c = this.worker;
    // A thread that is gone already (it failed, or was ended) would answer nothing: there is nothing to wait for.
    if (this.gone) return;
    await new Promise<void>((resolve) => {
      // Kept referenced: the wait is what holds the process until the thread answers (or 5 s pass).
      const timer = setTimeout(done, 5000);
      function done(): void {
        clearTimeout(timer);
        resolve();
      }
      c.once('message', done);
      c.once('exit', done);
      c.once('error', done);
      try {
        c.postMessage('close');
      } catch {
        done();
      }
    });
    await c.terminate();
  }
}
