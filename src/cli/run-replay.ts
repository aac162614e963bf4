// Wiring of `replay`: flags → ReplayOptions, confirmation, signals, and the report.
import { replay, type ReplayOptions } from '../commands/replay.js';
import { createConfirm } from './confirm.js';
import { toPushOptions } from './run-push.js';
import { runWithReport } from './run-with-report.js';

/** Runs `replay` from parsed flags; returns the exit code. */
export async function runReplay(flags: Record<string, unknown>, fromEnv: Record<string, string> = {}): Promise<number> {
  // The shared flags (sink, ledger, times, retries) parse exactly as push's do.
  const p = toPushOptions([], flags, fromEnv);
  const o: ReplayOptions = {
    ...p,
    failed: !!flags.failed,
    permanent: !!flags.permanent,
    inDoubt: !!flags.inDoubt,
    queued: !!flags.queued,
    resend: !!flags.resend,
    force: !!flags.force,
    keys: flags.keys as string[] | undefined,
    keysFrom: flags.keysFrom as string | undefined,
    source: flags.source as string | undefined,
    run: flags.run as number | undefined,
    limit: flags.limit as number | undefined,
    from: flags.from as string[] | undefined,
    read: {
      format: p.format,
      encoding: p.encoding,
      delimiter: p.delimiter,
      select: p.select,
      requireInput: p.requireInput,
    },
  };
  return runWithReport(flags, (ctx) =>
    replay(o, { ...ctx, confirm: createConfirm({ yes: !!flags.yes, command: 'replay --force' }) }),
  );
}
