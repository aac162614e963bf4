import Database from 'better-sqlite3';
import { MIGRATIONS } from '../../src/ledger/schema.js';

/**
 * A ledger as leadledger wrote it at schema v2 (events WITHOUT ROWID, in key order), WAL mode, left open for the
 * test to fill; close it before leadledger opens the file.
 */
export function schemaV2Ledger(path: string): Database.Database {
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  db.exec(MIGRATIONS[0]!);
  db.exec(MIGRATIONS[1]!);
  db.pragma('user_version = 2');
  return db;
}
