// Ctrl-C / SIGTERM: the first signal stops new work and gives in-flight sends a grace period to settle; a
// second signal, or the end of the grace period, cuts them (their events end in doubt, never lost).

/** Signals for a command: `stop` on the first SIGINT/SIGTERM, `hardStop` on the second or after graceMs. */
export function installStopSignals(
  graceMs = 10_000,
  onStop?: () => void,
): { stop: AbortSignal; hardStop: AbortSignal; dispose(): void } {
  const stop = new AbortController();
  const hard = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const handler = () => {
    if (stop.signal.aborted) {
      hard.abort();
      return;
    }
    stop.abort();
    onStop?.();
    timer = setTimeout(() => hard.abort(), graceMs);
    timer.unref();
  };
  process.on('SIGINT', handler);
  process.on('SIGTERM', handler);
  return {
    stop: stop.signal,
    hardStop: hard.signal,
    dispose() {
      clearTimeout(timer);
      process.off('SIGINT', handler);
      process.off('SIGTERM', handler);
    },
  };
}
