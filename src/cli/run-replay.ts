// Wiring of `replay`: flags → ReplayOptions, confirmation, signals, and the report.
import { replay, type ReplayOptions } from '../commands/replay.js';
import { formatJson, formatSummary } from '../report/summary.js';
import { createConfirm } from './confirm.js';
import { createOutput, describeHttpEvent } from './output.js';
import { toPushOptions } from './run-push.js';
import { installStopSignals } from './signals.js';

/** Runs `replay` from parsed flags; returns the exit code. */
export async function runReplay(flags: Record<string, unknown>): Promise<number> {
  const out = await createOutput(flags);
  // The shared flags (sink, ledger, times, retries) parse exactly as push's do.
  const p = toPushOptions([], flags);
  const o: ReplayOptions = {
    ...p,
    failed: !!flags.failed, permanent: !!flags.permanent, inDoubt: !!flags.inDoubt, force: !!flags.force,
    keys: flags.keys as string[] | undefined, keysFrom: flags.keysFrom as string | undefined, source: flags.source as string | undefined,
    run: flags.run as number | undefined, limit: flags.limit as number | undefined, from: flags.from as string[] | undefined,
    read: { format: p.format, encoding: p.encoding, delimiter: p.delimiter, select: p.select },
  };
  const signals = installStopSignals(10_000, () => out.info('stopping: no new sends; waiting for in-flight sends to settle'));
  try {
    const report = await replay(o, {
      env: process.env, cwd: process.cwd(), stdin: process.stdin, stop: signals.stop, hardStop: signals.hardStop,
      onProgress: (x) => out.progress(x), warn: (m) => out.warn(m), onHttpEvent: out.verbose ? (e) => e.type !== 'request' && out.info(describeHttpEvent(e)) : undefined, confirm: createConfirm({ yes: !!flags.yes, command: 'replay --force' }),
    });
    out.stopProgress();
    if (flags.json) process.stdout.write(formatJson(report));
    if (!out.quiet) process.stderr.write(formatSummary(report, out.chalk));
    return report.exitCode;
  } finally {
    out.stopProgress();
    signals.dispose();
  }
}
