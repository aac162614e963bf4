// Is a file a leadledger ledger? Asked before SQLite writes a byte of it: --ledger may name another program's
// database, a CSV or a typo'd path, and switching such a file to WAL mode and migrating it would change what its owner
// keeps there. The answer is read without writing anything: the header's bytes, and where they do not settle it, the
// schema through a connection that takes no lock and creates no -wal or -shm.
import Database from 'better-sqlite3';
import { closeSync, openSync, readSync } from 'node:fs';
import { LedgerError } from '../errors.js';
import { openImmutable, openReadOnly, walHasFrames } from './connect.js';
import { LEDGER_APPLICATION_ID, MIGRATIONS } from './schema.js';

/** A ledger (marked, or of schema v1 with its tables), or a file with nothing in it yet, which may become one. */
export type LedgerFileKind = 'ledger' | 'empty';

const HEADER_BYTES = 100;
const MAGIC = Buffer.from('SQLite format 3\0', 'latin1');
// The big-endian word of the SQLite header that holds the application_id.
const APPLICATION_ID_AT = 68;

/** What the file at `file` holds; a LedgerError (exit 5) that names it when it is not a leadledger ledger. */
export function identifyLedgerFile(file: string): LedgerFileKind {
  const header = readHeader(file);
  const walFrames = walHasFrames(file);
  // A 0-byte file is what openLedger creates before SQLite first opens it, unless a run's first writes are in the WAL.
  if (header.length === 0 && !walFrames) return 'empty';
  if (header.length > 0) {
    if (header.length < HEADER_BYTES || !header.subarray(0, MAGIC.length).equals(MAGIC))
      throw notALedger(file, 'not a SQLite database');
    const appId = header.readInt32BE(APPLICATION_ID_AT);
    if (appId === LEDGER_APPLICATION_ID) return 'ledger';
    if (appId !== 0) throw notALedger(file, `the SQLite database of another program, application_id ${appId}`);
  }
  return fromSchema(file, walFrames);
}

// Not marked: a ledger of schema v1, one whose first writes are still in the WAL, nothing yet, or someone else's.
function fromSchema(file: string, walFrames: boolean): LedgerFileKind {
  // The file alone is the whole database unless the WAL holds frames; then a plain reader sees them (it may create
  // a -shm, but a -wal with frames belongs to a live or stopped writer that has one too).
  const db = walFrames ? openReadOnly(file) : openImmutable(file);
  try {
    const appId = db.pragma('application_id', { simple: true }) as number;
    if (appId === LEDGER_APPLICATION_ID) return 'ledger';
    if (appId !== 0) throw notALedger(file, `the SQLite database of another program, application_id ${appId}`);
    const version = db.pragma('user_version', { simple: true }) as number;
    const objects = db
      .prepare(`SELECT type, name FROM sqlite_master WHERE name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name`)
      .raw()
      .all() as Array<[string, string]>;
    // Nothing in it could be lost: a run stopped between setting WAL mode and its first migration leaves just this.
    if (objects.length === 0 && version === 0) return 'empty';
    const tables = objects.filter(([type]) => type === 'table').map(([, name]) => name);
    if (version === 1 && isV1Ledger(db, tables)) return 'ledger';
    const shown = tables.length > 5 ? `${tables.slice(0, 5).join(', ')}, … (${tables.length})` : tables.join(', ');
    throw notALedger(
      file,
      `a SQLite database with ${tables.length ? `tables ${shown}` : 'no tables'}, user_version ${version}`,
    );
  } finally {
    db.close();
  }
}

function notALedger(file: string, what: string): LedgerError {
  return new LedgerError(`${file} is not a leadledger ledger (${what}); it was left untouched`);
}

// The first 100 bytes (fewer when the file is shorter).
function readHeader(file: string): Buffer {
  const fd = openSync(file, 'r');
  try {
    const b = Buffer.alloc(HEADER_BYTES);
    return b.subarray(0, readSync(fd, b, 0, HEADER_BYTES, 0));
  } finally {
    closeSync(fd);
  }
}

// The columns of each table, in order: migration 1's, the first time they are asked for.
let v1Columns: Map<string, string> | undefined;

// A ledger written before the mark holds the tables of migration 1, with their columns, and no other table.
function isV1Ledger(db: Database.Database, tables: string[]): boolean {
  if (!v1Columns) {
    const mem = new Database(':memory:');
    mem.exec(MIGRATIONS[0] as string);
    const names = mem.prepare(`SELECT name FROM sqlite_master WHERE type = 'table'`).pluck().all() as string[];
    v1Columns = new Map(names.map((t) => [t, columnsOf(mem, t)]));
    mem.close();
  }
  // Table names first: columns are asked only of tables named as a ledger's are.
  const expected = v1Columns;
  return (
    tables.length === expected.size &&
    tables.every((t) => expected.has(t)) &&
    tables.every((t) => columnsOf(db, t) === expected.get(t))
  );
}

function columnsOf(db: Database.Database, table: string): string {
  return (db.prepare('SELECT name FROM pragma_table_info(?) ORDER BY cid').pluck().all(table) as string[]).join(',');
}
