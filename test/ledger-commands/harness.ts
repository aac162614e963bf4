// A stand-in for src/cli/main.ts while it does not yet call registerLedgerCommands: the same `ledger` command,
// the same error reporting and exit codes. Run as `node --import tsx harness.ts ledger <subcommand> ...`.
import { Command, CommanderError } from 'commander';
import { registerLedgerCommands } from '../../src/cli/ledger-commands.js';
import { reportError } from '../../src/cli/errors.js';

const program = new Command('leadledger').exitOverride();
registerLedgerCommands(program.command('ledger').description('inspect and manage the ledger'));
try {
  await program.parseAsync(process.argv);
} catch (e) {
  process.exitCode = e instanceof CommanderError ? (e.exitCode === 0 ? 0 : 2) : reportError(e, false);
}
