// How many events a SQLite ledger file holds: 0 when there is no file, or no events table yet (nothing claimed).
import { existsSync } from 'node:fs';
import Database from 'better-sqlite3';

export function eventCount(path: string): number {
  if (!existsSync(path)) return 0;
  const db = new Database(path, { readonly: true });
  try {
    return (db.prepare('SELECT count(*) AS n FROM events').get() as { n: number }).n;
  } catch {
    return 0;
  } finally {
    db.close();
  }
}
