// Opens the ledger --ledger names: a SQLite file (the default), or a PostgreSQL database (postgres://...), whose
// driver is loaded only then.
import { resolve } from 'node:path';
import { shownLedgerUrl } from '../pg-url.js';
import { openLedger } from './ledger.js';
import { isPostgresUrl, type LedgerStore } from './store.js';

/** Options of an open: read-only for a dry-run and the commands that only read. */
export interface OpenOptions {
  readonly?: boolean;
  /** Environment: PGPASSWORD and friends, LEADLEDGER_LEDGER_SCHEMA, the lease timings. */
  env?: Record<string, string | undefined>;
  /** Where a relative file path is taken from. */
  cwd?: string;
  /**
   * SQLite, writable: commit claims, settles and releases on a thread of their own (threaded.ts), for a push, whose
   * batches keep them coming while it reads and sends.
   */
  writeThread?: boolean;
}

/**
 * Opens (creating when writable and missing) a ledger; undefined when read-only and it does not exist or holds
 * nothing yet, as openLedger does for files.
 */
export async function openLedgerStore(ledger: string, opts: OpenOptions = {}): Promise<LedgerStore | undefined> {
  if (isPostgresUrl(ledger)) {
    const { openPostgresLedger } = await import('./postgres/store.js');
    return openPostgresLedger(ledger, { readonly: !!opts.readonly, env: opts.env ?? process.env });
  }
  const local = openLedger(resolve(opts.cwd ?? process.cwd(), ledger), { readonly: opts.readonly });
  if (!local || local.readonly || !opts.writeThread) return local;
  const { ThreadedLedger } = await import('./threaded.js');
  return new ThreadedLedger(local);
}

/** A ledger as messages and reports name it: a file's path, or a database URL without its password. */
export function ledgerName(ledger: string): string {
  return isPostgresUrl(ledger) ? shownLedgerUrl(ledger) : ledger;
}
