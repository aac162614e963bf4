// Waiting on an input that may never send more: a quiet stdin, a FIFO nobody writes (whose open() blocks in the
// thread pool and cannot be cancelled). The wait is abandoned when the run is stopped (Ctrl-C / SIGTERM), instead
// of the run waiting with it.

/** Thrown by a watched input once the run was stopped: the input was abandoned where it was. */
export class ReadStopped extends Error {
  constructor() {
    super('reading stopped: the run was interrupted');
    this.name = 'ReadStopped';
  }
}

/** What a watched stream needs. */
export interface WatchOptions {
  /** Aborted when the run is stopped: the wait ends at once, in ReadStopped. */
  signal?: AbortSignal;
  /** Releases the stream (destroys it) without waiting for a read that may never end. */
  abandon: () => void;
}

const ABORTED = Symbol('aborted');

/** Wraps a stream's chunk iterator so that a wait for the next chunk can be stopped. */
export function watchStream<T extends Buffer | string>(it: AsyncIterator<T>, o: WatchOptions): AsyncIterator<T> {
  // The read of the stream under way, if any.
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
      let r: IteratorResult<T> | typeof ABORTED;
      try {
        r = await wait(pending, o.signal);
      } catch (err) {
        pending = undefined;
        throw err;
      }
      if (r === ABORTED) {
        abandon();
        throw new ReadStopped();
      }
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

// The read's result, or ABORTED when the signal fires first.
function wait<R>(read: Promise<R>, signal: AbortSignal | undefined): Promise<R | typeof ABORTED> {
  return new Promise((resolve, reject) => {
    const settle = (f: () => void) => {
      signal?.removeEventListener('abort', onAbort);
      f();
    };
    const onAbort = () => settle(() => resolve(ABORTED));
    signal?.addEventListener('abort', onAbort, { once: true });
    read.then(
      (r) => settle(() => resolve(r)),
      (e: unknown) => settle(() => reject(e)),
    );
  });
}
