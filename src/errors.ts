// Errors that carry the exit code the CLI ends with. Only cli/main.ts turns them into a message and an exit.

/** Exit codes, one table for the whole tool (documented in --help and the README). */
export const ExitCode = {
  ok: 0,
  incomplete: 1,
  usage: 2,
  input: 3,
  credentials: 4,
  ledger: 5,
  interrupted: 130,
} as const;
export type ExitCode = (typeof ExitCode)[keyof typeof ExitCode];

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

/** The ledger is locked by another run or cannot be used: exit 5. */
export class LedgerError extends LeadledgerError {
  constructor(message: string) {
    super(message, ExitCode.ledger);
  }
}

/** The run was stopped by SIGINT/SIGTERM: exit 130. */
export class InterruptedError extends LeadledgerError {
  constructor(message = 'interrupted') {
    super(message, ExitCode.interrupted);
  }
}
