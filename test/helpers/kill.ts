// Killing the built CLI at chosen moments: spawn it, watch the ledger read-only, SIGKILL it when a condition holds.
import { spawn, type ChildProcess, type StdioOptions } from 'node:child_process';
import { existsSync } from 'node:fs';
import Database from 'better-sqlite3';
import { BIN, inheritedEnv, ROOT } from './cli.js';

/** Counts of a ledger that tell how far a run got. */
export interface LedgerState {
  sent: number;
  pending: number;
  inDoubt: number;
  running: number;
}

/**
 * Runs fn on a read-only connection to the ledger, closed right after; undefined while the file is missing or not
 * a ledger yet (not created, not migrated), or when SQLite is busy.
 */
export function readLedger<T>(path: string, fn: (db: Database.Database) => T): T | undefined {
  if (!existsSync(path)) return undefined;
  let db: Database.Database | undefined;
  try {
    db = new Database(path, { readonly: true, fileMustExist: true });
    return fn(db);
  } catch {
    return undefined;
  } finally {
    db?.close();
  }
}

/** The counts of LedgerState, read on an open connection to the ledger. */
export function ledgerStateOf(db: Database.Database): LedgerState {
  const c = (sql: string) => (db.prepare(sql).get() as { n: number }).n;
  return {
    sent: c(`SELECT count(*) n FROM events WHERE status = 'sent'`),
    pending: c(`SELECT count(*) n FROM events WHERE status = 'pending'`),
    inDoubt: c(`SELECT count(*) n FROM events WHERE status = 'in_doubt'`),
    running: c(`SELECT count(*) n FROM runs WHERE status = 'running'`),
  };
}

/** Events by status, and runs still marked running; undefined until the ledger is there. */
export function ledgerState(path: string): LedgerState | undefined {
  return readLedger(path, ledgerStateOf);
}

/** The ledger's events counted by status (status → count; a status no event has is absent). */
export function countByStatus(db: Database.Database): Record<string, number> {
  const rows = db.prepare(`SELECT status, count(*) n FROM events GROUP BY status`).all() as Array<{
    status: string;
    n: number;
  }>;
  return Object.fromEntries(rows.map((r) => [r.status, r.n]));
}

/** Starts bin/leadledger.js with args; by default only stderr is piped (the caller drains or ignores it). */
export function start(
  args: string[],
  env: Record<string, string> = {},
  stdio: StdioOptions = ['ignore', 'ignore', 'pipe'],
): ChildProcess {
  return spawn(process.execPath, [BIN, ...args], {
    cwd: ROOT,
    env: { ...inheritedEnv(), ...env },
    stdio,
  });
}

/** Resolves with the exit code (null when killed by a signal) once the child has exited. */
export const exited = (c: ChildProcess) =>
  new Promise<number | null>((r) =>
    c.exitCode !== null || c.signalCode !== null ? r(c.exitCode) : c.on('exit', (code) => r(code)),
  );

/** SIGKILLs the child `ms` from now (during its start-up, say); false if it had exited by then. */
export async function killAfter(child: ChildProcess, ms: number): Promise<boolean> {
  await new Promise((r) => setTimeout(r, ms));
  if (child.exitCode !== null || child.signalCode !== null) return false;
  child.kill('SIGKILL');
  await exited(child);
  return true;
}

/**
 * SIGKILLs the child as soon as probe() returns a state that satisfies `when`; returns that state, or undefined if
 * the child exited first. probe() returning undefined (nothing to read yet) never satisfies `when`; it may be async
 * (a query to PostgreSQL), and is awaited before the next look. It is called every `everyMs`: a probe that scans a
 * large table should be polled less often, not to slow the child down.
 */
export async function killWhen<S>(
  child: ChildProcess,
  probe: () => S | undefined | Promise<S | undefined>,
  when: (s: S) => boolean,
  everyMs = 3,
): Promise<S | undefined> {
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) return undefined;
    const s = await probe();
    if (s !== undefined && when(s)) {
      child.kill('SIGKILL');
      await exited(child);
      return s;
    }
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
