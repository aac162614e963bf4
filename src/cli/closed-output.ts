// A reader that goes away closes what stdout or stderr writes to: `leadledger ledger export --output - | head` once
// head has its lines, a terminal closed or an SSH session dropped (SIGHUP). What is left to write has nowhere to go,
// and that is a normal end: nothing half-written matters on a closed pipe. Without a listener, the stream's 'error'
// event was thrown as an uncaught exception, or reached cli/main.ts as an "unexpected error ... please report it".
import { ExitCode } from '../errors.js';

// A write to a pipe whose reader has gone (EPIPE), to a terminal that has gone (EIO), and every later write to the
// stream then destroyed.
const GONE = new Set(['EPIPE', 'EIO', 'ERR_STREAM_DESTROYED']);

let stdoutGone = false;

const gone = (e: unknown) => GONE.has(String((e as { code?: unknown } | null)?.code));

/**
 * Listens for the 'error' events of stdout and stderr: a reader that has gone is remembered and its writes dropped.
 * Any other write error (a full disk behind `> file`) is left to the stream's other listeners (the jsonl sink's, an
 * export's); with none, it is said on stderr and the command ends 1, instead of an uncaught exception.
 */
export function watchClosedOutput(): void {
  process.stdout.on('error', (e: Error) => {
    if (gone(e)) stdoutGone = true;
    else if (process.stdout.listenerCount('error') === 1) {
      process.stderr.write(`leadledger: error: cannot write stdout: ${e.message}\n`);
      process.exitCode = ExitCode.incomplete;
    }
  });
  process.stderr.on('error', (e: Error) => {
    if (!gone(e) && process.stderr.listenerCount('error') === 1) process.exitCode = ExitCode.incomplete;
  });
}

/** Whether e is a failed write to a stdout whose reader has gone: the command ends there, and that is a normal end. */
export function isClosedStdout(e: unknown): boolean {
  return stdoutGone && gone(e);
}
