// One 'abort' listener per signal, however many waits watch it. A run's stop signal (and the circuit breaker's) is
// shared by every request, rate-limiter wait and retry backoff of the run: with --concurrency 32, thirty-two of them
// listening at once, each with a listener of its own, passed Node's limit of ten listeners per EventTarget and
// printed a MaxListenersExceededWarning on every such run. Here the watchers of a signal share one listener, added
// when the first starts watching and removed when the last stops.

type Watchers = Set<() => void>;
const watched = new WeakMap<AbortSignal, { watchers: Watchers; listener: () => void }>();

/**
 * Calls fn once when signal aborts (at once, synchronously, if it already has); returns the function that stops
 * watching, which the caller must call when its wait ends without the abort.
 */
export function onAbort(signal: AbortSignal, fn: () => void): () => void {
  if (signal.aborted) {
    fn();
    return () => undefined;
  }
  let entry = watched.get(signal);
  if (!entry) {
    const watchers: Watchers = new Set();
    const listener = (): void => {
      watched.delete(signal);
      // A copy: a watcher may stop watching (or start another watch) from its callback.
      for (const w of [...watchers]) w();
    };
    entry = { watchers, listener };
    watched.set(signal, entry);
    signal.addEventListener('abort', listener, { once: true });
  }
  const { watchers, listener } = entry;
  // A function of its own per watch: the same fn watched twice is stopped one watch at a time.
  const watcher = (): void => fn();
  watchers.add(watcher);
  return () => {
    if (!watchers.delete(watcher) || watchers.size > 0) return;
    signal.removeEventListener('abort', listener);
    if (watched.get(signal)?.watchers === watchers) watched.delete(signal);
  };
}
