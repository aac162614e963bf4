// Errors that carry the exit code the CLI ends with. Only cli/main.ts turns them into a message and an exit.

/**
 * Exit codes, one set for the whole tool; what each means (--help and the README) is the table EXIT_CODES in
 * cli/options.ts; when several apply, EXIT_PRECEDENCE says which is the run's.
 */
export const ExitCode = {
  ok: 0,
  incomplete: 1,
  usage: 2,
  input: 3,
  credentials: 4,
  ledger: 5,
  conflict: 6,
  budget: 7,
  interrupted: 130,
} as const;
export type ExitCode = (typeof ExitCode)[keyof typeof ExitCode];

/** When several exit codes apply to one run, the first of these is its code (0 when none applies). */
export const EXIT_PRECEDENCE: readonly ExitCode[] = [
  ExitCode.interrupted,
  ExitCode.credentials,
  ExitCode.budget,
  ExitCode.ledger,
  ExitCode.usage,
  ExitCode.input,
  ExitCode.incomplete,
  ExitCode.conflict,
];

/** The exit code of a run to which the codes `apply` apply: the first of them in EXIT_PRECEDENCE, else 0. */
export function exitCodeOf(apply: ReadonlySet<ExitCode>): ExitCode {
  return EXIT_PRECEDENCE.find((c) => apply.has(c)) ?? ExitCode.ok;
}

/** Base class of every error leadledger reports to its user. */
export class LeadledgerError extends Error {
  readonly exitCode: number;
  constructor(message: string, exitCode: number = ExitCode.usage) {
    super(message);
    this.name = new.target.name;
    this.exitCode = exitCode;
  }
}

/** Bad flags, a bad config file: exit 2. */
export class UsageError extends LeadledgerError {
  constructor(message: string) {
    super(message, ExitCode.usage);
  }
}

/** An input that cannot be read at all (missing file, unknown format): exit 3. */
export class InputError extends LeadledgerError {
  constructor(message: string) {
    super(message, ExitCode.input);
  }
}

/** The CRM refused the credentials (401/403): exit 4. */
export class CredentialsError extends LeadledgerError {
  constructor(message: string) {
    super(message, ExitCode.credentials);
  }
}

/**
 * The CRM's API budget (a daily quota) would run out: the sink stopped before it. What was sent is settled, the
 * claims of what was not are released, and the next run (after the budget resets) sends the rest: exit 7.
 */
export class BudgetError extends LeadledgerError {
  constructor(message: string) {
    super(message, ExitCode.budget);
  }
}

/** The ledger is locked by another run or cannot be used: exit 5. */
export class LedgerError extends LeadledgerError {
  constructor(message: string) {
    super(message, ExitCode.ledger);
  }
}

/**
 * The destination could not be reached, connection after connection, so the run stopped sending: exit 1 (failed,
 * run again later). What was not sent was released, never left in doubt.
 */
export class UnreachableError extends LeadledgerError {
  constructor(message: string) {
    super(message, ExitCode.incomplete);
  }
}

/** The run was stopped by SIGINT/SIGTERM/SIGHUP: exit 130. */
export class InterruptedError extends LeadledgerError {
  constructor(message = 'interrupted') {
    super(message, ExitCode.interrupted);
  }
}
