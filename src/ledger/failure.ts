// SQLite's errors on a ledger file, in words for the person who runs leadledger and with the ledger's exit code (5):
// wherever the ledger is read — opening it, a dry-run's index, a map worker's lookups — a damaged file is a ledger
// problem, never a bad input record or an unexpected crash.
import { LeadledgerError, LedgerError } from '../errors.js';

// SQLite's own errors: better-sqlite3's SqliteError carries a SQLITE_* code.
function isSqliteError(e: unknown): boolean {
  const code = (e as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code.startsWith('SQLITE_');
}

/**
 * The LedgerError for an error met on the ledger `file`: a damaged file (SQLITE_CORRUPT, SQLITE_NOTADB) says so and
 * points at `leadledger ledger verify`; another SQLite error says what `failed` and names the ledger. Errors that are
 * not SQLite's are returned as they are (a LeadledgerError already says what it means; anything else is a bug).
 */
export function ledgerFailure(e: unknown, file: string, failed = 'cannot read'): unknown {
  if (e instanceof LeadledgerError || !isSqliteError(e)) return e;
  const { code, message } = e as { code: string; message: string };
  if (code.startsWith('SQLITE_CORRUPT') || code === 'SQLITE_NOTADB')
    return new LedgerError(
      `ledger ${file} is damaged (${message}); \`leadledger ledger verify --ledger ${file}\` tells what is wrong`,
    );
  return new LedgerError(`${failed} ledger ${file}: ${message}`);
}
