// When a spawned leadledger can be signalled: once it has taken its stop signals over. Before, SIGINT or SIGTERM
// would end it as Node's default does; a test that waits a fixed time instead fails on a machine under load.
import { readFileSync } from 'node:fs';

/**
 * Whether the process catches SIGHUP (its SigCgt mask in /proc: bit n-1 for signal n). Node catches none by itself;
 * leadledger takes SIGINT, SIGTERM and SIGHUP together, in one synchronous call: once it has SIGHUP, it has all three.
 */
export function catchesStopSignals(pid: number): boolean {
  try {
    const m = /^SigCgt:\s*([0-9a-f]+)$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return !!m && (BigInt(`0x${m[1]}`) & 1n) === 1n;
  } catch {
    return false; // exited
  }
}

/** Resolves once `cond` holds, looking every 10 ms; rejects once `alive` says the process has ended first. */
export async function until(cond: () => boolean, alive: () => boolean, what: string): Promise<void> {
  while (!cond()) {
    if (!alive()) throw new Error(`it ended before ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}
