// Turns an error into one message on stderr and an exit code. Stack traces only with --verbose.
import { ExitCode, LeadledgerError } from '../errors.js';
import { printableLines } from '../report/printable.js';

/** Prints an error for a person and returns the exit code to end with. */
export function reportError(e: unknown, verbose: boolean): number {
  if (e instanceof LeadledgerError) {
    // Messages quote what the user gave (paths, keys): control characters in them are shown escaped.
    process.stderr.write(`leadledger: ${printableLines(e.message)}\n`);
    if (verbose && e.stack) process.stderr.write(e.stack + '\n');
    return e.exitCode;
  }
  const err = e as Error;
  process.stderr.write(`leadledger: unexpected error: ${printableLines(err?.message ?? String(e))}\n`);
  process.stderr.write(
    verbose && err?.stack ? err.stack + '\n' : 'run again with --verbose for details, and please report it\n',
  );
  return ExitCode.incomplete;
}
