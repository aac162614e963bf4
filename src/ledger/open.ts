// Opens the ledger --ledger names: a SQLite file (the default), or a PostgreSQL database (postgres://...), whose
// driver is loaded only then.
import { resolve } from 'node:path';
import { shownLedgerUrl } from '../pg-url.js';
import { InterruptedError } from '../errors.js';
import { MigrationBusy, openLedger, type Ledger } from './ledger.js';
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
  /** Ends the wait for another process's upgrade of the ledger (Ctrl-C): InterruptedError. */
  stop?: AbortSignal;
}

/** How long an open waits for another process's schema upgrade of the same SQLite ledger (10 minutes). */
const UPGRADE_WAIT_MS = 600_000;

/**
 * Opens (creating when writable and missing) a ledger; undefined when read-only and it does not exist or holds
 * nothing yet, as openLedger does for files.
 */
export async function openLedgerStore(ledger: string, opts: OpenOptions = {}): Promise<LedgerStore | undefined> {
  if (isPostgresUrl(ledger)) {
    const { openPostgresLedger } = await import('./postgres/store.js');
    return openPostgresLedger(ledger, { readonly: !!opts.readonly, env: opts.env ?? process.env });
  }
  const local = await openWaitingForUpgrade(resolve(opts.cwd ?? process.cwd(), ledger), opts);
  if (!local || local.readonly || !opts.writeThread) return local;
  const { ThreadedLedger } = await import('./threaded.js');
  return new ThreadedLedger(local);
}

/** A ledger as messages and reports name it: a file's path, or a database URL without its password. */
export function ledgerName(ledger: string): string {
  return isPostgresUrl(ledger) ? shownLedgerUrl(ledger) : ledger;
}

// An upgrade by another process holds the write lock for seconds (v3: about 5 s per million events): wait for it,
// opening again every quarter of a second, with the event loop free for the signals that end the wait.
async function openWaitingForUpgrade(file: string, opts: OpenOptions): Promise<Ledger | undefined> {
  const deadline = Date.now() + UPGRADE_WAIT_MS;
  for (;;) {
    try {
      return openLedger(file, { readonly: opts.readonly });
    } catch (e) {
      if (!(e instanceof MigrationBusy) || Date.now() >= deadline) throw e;
    }
    const stopped = () => {
      if (opts.stop?.aborted)
        throw new InterruptedError(`stopped while waiting for another process to upgrade ${file}`);
    };
    stopped();
    await new Promise((r) => setTimeout(r, 250));
    stopped();
  }
}
