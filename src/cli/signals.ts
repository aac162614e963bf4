// Ctrl-C / SIGTERM / SIGHUP: the first signal stops new work and gives in-flight sends a grace period to settle; a
// second signal, or the end of the grace period, cuts them (their events end in doubt, never lost). SIGHUP is a
// closed terminal or a dropped SSH session: left to Node's default, it ended the process mid-send, its claims
// pending and its run never recorded. Its output has nowhere to go by then: closed-output.ts drops it quietly.

/** The signals that stop a command as Ctrl-C does. */
export const STOP_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

/** Signals for a command: `stop` on the first SIGINT/SIGTERM/SIGHUP, `hardStop` on the second or after graceMs. */
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
  for (const s of STOP_SIGNALS) process.on(s, handler);
  return {
    stop: stop.signal,
    hardStop: hard.signal,
    dispose() {
      clearTimeout(timer);
      for (const s of STOP_SIGNALS) process.off(s, handler);
    },
  };
}
