// Waiting on an input that may never send more: a quiet stdin, a FIFO nobody writes (whose open() blocks in the
// thread pool and cannot be cancelled). The wait is abandoned when the run is stopped (Ctrl-C / SIGTERM), instead
// of the run waiting with it; and while nothing arrives the stream says so, so that the records already read are
// decided and sent rather than held back for bytes that may not come.

/** Thrown by a watched input once the run was stopped: the input was abandoned where it was. */
export class ReadStopped extends Error {
  constructor() {
    super('reading stopped: the run was interrupted');
    this.name = 'ReadStopped';
  }
}

/** How long a stream may send nothing before it is said to be idle (again, every as long, while it stays so). */
export const IDLE_MS = 200;

/**
 * The chunk a watched stream yields when it is idle: empty, so that a reader that does not care reads nothing,
 * and a reader that does passes on what it holds (a JSONL reader, its whole lines).
 */
export const IDLE_CHUNK: Buffer = Buffer.alloc(0);

/** What a watched stream needs. */
export interface WatchOptions {
  /** Aborted when the run is stopped: the wait ends at once, in ReadStopped. */
  signal?: AbortSignal;
  /** Say when the stream sends nothing for IDLE_MS (inputs that can go quiet: stdin, FIFOs; not files). */
  idle: boolean;
  /** Releases the stream (destroys it) without waiting for a read that may never end. */
  abandon: () => void;
}

const ABORTED = Symbol('aborted');
const IDLE = Symbol('idle');

/** Wraps a stream's chunk iterator so that a wait for the next chunk can be stopped, and reports idleness. */
export function watchStream<T extends Buffer | string>(it: AsyncIterator<T>, o: WatchOptions): AsyncIterator<T> {
  // The read of the stream under way: kept across idle reports, which do not consume it.
  let pending: Promise<IteratorResult<T>> | undefined;
  let abandoned = false;
  const abandon = (): void => {
    if (abandoned) return;
    abandoned = true;
    o.abandon();
  };
  return {
    async next(): Promise<IteratorResult<T>> {
      if (abandoned || o.signal?.aborted) {
        abandon();
        throw new ReadStopped();
      }
      if (!pending) {
        pending = it.next();
        // Its rejection is met when it is awaited below, or not at all once the stream is abandoned.
        pending.catch(() => {});
      }
      let r: IteratorResult<T> | typeof ABORTED | typeof IDLE;
      try {
        r = await wait(pending, o.signal, o.idle ? IDLE_MS : undefined);
      } catch (err) {
        pending = undefined;
        throw err;
      }
      if (r === ABORTED) {
        abandon();
        throw new ReadStopped();
      }
      if (r === IDLE) return { done: false, value: IDLE_CHUNK as T };
      pending = undefined;
      return r;
    },
    async return(): Promise<IteratorResult<T>> {
      // A read still under way may never end (a FIFO's open): the stream is destroyed rather than waited for.
      if (pending || abandoned) abandon();
      else await it.return?.();
      return { done: true, value: undefined };
    },
  };
}

// The read's result, or ABORTED when the signal fires first, or IDLE when idleMs pass first.
function wait<R>(
  read: Promise<R>,
  signal: AbortSignal | undefined,
  idleMs: number | undefined,
): Promise<R | typeof ABORTED | typeof IDLE> {
  return new Promise((resolve, reject) => {
    let timer: NodeJS.Timeout | undefined;
    const settle = (f: () => void) => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      f();
    };
    const onAbort = () => settle(() => resolve(ABORTED));
    if (idleMs !== undefined) timer = setTimeout(() => settle(() => resolve(IDLE)), idleMs);
    signal?.addEventListener('abort', onAbort, { once: true });
    read.then(
      (r) => settle(() => resolve(r)),
      (e: unknown) => settle(() => reject(e)),
    );
  });
}
