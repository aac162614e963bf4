// How a ledger file is opened in SQLite: read-write for a run that writes, read-only for one that does not, and
// immutable to look at a file without writing anything beside it, or to read one in a folder nobody may write.
import Database from 'better-sqlite3';
import { existsSync, statSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

// immutable=1 exists only in a URI filename, and better-sqlite3 leaves URIs off unless SQLITE_USE_URI=1 is set when
// its addon loads (at the first `new Database` of the process, which this module comes before). The ledger's paths
// are absolute (resolved), so no path a user gives is ever taken for a URI.
process.env.SQLITE_USE_URI = '1';

const BUSY_TIMEOUT_MS = 5000;

/** Opens an existing file read-write: the connection of a run that writes the ledger. */
export function openReadWrite(file: string): Database.Database {
  return new Database(file, { fileMustExist: true, timeout: BUSY_TIMEOUT_MS });
}

/**
 * Opens an existing file read-only: the connection of a dry-run and of the commands that only read. A WAL-mode reader
 * needs a -shm beside the file, and creates it where there is none; in a folder the process cannot write, without a
 * -shm and without a WAL to read, the file is opened immutable instead. That is safe exactly when nobody writes the
 * file, and so it is here: a WAL-mode writer keeps a -shm beside the file while it is connected, and none is there.
 */
export function openReadOnly(file: string): Database.Database {
  const db = new Database(file, { readonly: true, fileMustExist: true, timeout: BUSY_TIMEOUT_MS });
  try {
    // The first read is what opens, or fails to create, the -shm.
    db.pragma('user_version', { simple: true });
    return db;
  } catch (e) {
    db.close();
    if (!NO_SHM.has((e as { code?: string }).code ?? '') || walHasFrames(file)) throw e;
    return openImmutable(file);
  }
}

// How a read-only connection says that it found no -shm and could not create one: READONLY_DIRECTORY, or CANTOPEN
// when a -wal is there (measured: SQLite 3.53, better-sqlite3 12).
const NO_SHM = new Set(['SQLITE_READONLY_DIRECTORY', 'SQLITE_CANTOPEN']);

/**
 * Opens a file immutable: SQLite takes no lock and neither reads nor creates a -wal or -shm, so nothing beside the
 * file changes. The answers are true only while nobody writes the file: callers make sure of it.
 */
export function openImmutable(file: string): Database.Database {
  return new Database(`${pathToFileURL(file).href}?immutable=1`, { readonly: true, fileMustExist: true });
}

/** True when a -wal beside the file holds frames: then the file alone is not the whole database. */
export function walHasFrames(file: string): boolean {
  return existsSync(file + '-wal') && statSync(file + '-wal').size > 0;
}
