// Turns an error into one message on stderr and an exit code. Stack traces only with --verbose. Every error line
// leadledger prints, its own and commander's (usage errors), starts with ERROR_PREFIX, so that a cron mail or a log
// search finds them alike.
import { ExitCode, LeadledgerError } from '../errors.js';
import { printableLines } from '../report/printable.js';

/** How every error line starts. */
export const ERROR_PREFIX = 'leadledger: error: ';

/** Prints an error for a person and returns the exit code to end with. */
export function reportError(e: unknown, verbose: boolean): number {
  if (e instanceof LeadledgerError) {
    // Messages quote what the user gave (paths, keys): control characters in them are shown escaped.
    process.stderr.write(`${ERROR_PREFIX}${printableLines(e.message)}\n`);
    if (verbose && e.stack) process.stderr.write(e.stack + '\n');
    return e.exitCode;
  }
  const err = e as NodeJS.ErrnoException;
  // A file that is not there (or may not be read) is the user's to fix, not a bug to report: name it.
  const missing = fileProblem(err);
  if (missing) {
    process.stderr.write(`${ERROR_PREFIX}${printableLines(missing)}\n`);
    if (verbose && err.stack) process.stderr.write(err.stack + '\n');
    return ExitCode.input;
  }
  process.stderr.write(`${ERROR_PREFIX}unexpected error: ${printableLines(err?.message ?? String(e))}\n`);
  process.stderr.write(
    verbose && err?.stack ? err.stack + '\n' : 'run again with --verbose for details, and please report it\n',
  );
  return ExitCode.incomplete;
}

// "cannot read nope.txt: no such file": an ENOENT / EACCES / EISDIR from the file system, with its path.
function fileProblem(err: NodeJS.ErrnoException | undefined): string | undefined {
  if (!err || typeof err.path !== 'string') return undefined;
  const why = { ENOENT: 'no such file', EACCES: 'permission denied', EISDIR: 'it is a directory' }[err.code ?? ''];
  return why ? `cannot read ${err.path}: ${why}` : undefined;
}
