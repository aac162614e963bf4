// --ledger may name any file. One that is not a leadledger ledger is refused with exit 5 and left byte for byte as it
// was (no -wal or -shm left beside it); a file with nothing in it yet may become a ledger.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { openLedger } from '../../src/ledger/ledger.js';
import { LedgerError } from '../../src/errors.js';
import { MIGRATIONS, SCHEMA_VERSION } from '../../src/ledger/schema.js';
import { snapshot } from '../helpers/files.js';
import { tmpDir } from '../helpers/tmp.js';

/** Another program's SQLite database: a table of its own, and the user_version or application_id it sets. */
function foreignDb(path: string, opts: { userVersion?: number; applicationId?: number; wal?: boolean } = {}): string {
  const db = new Database(path);
  if (opts.wal) db.pragma('journal_mode = WAL');
  db.exec(`CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT); INSERT INTO notes (body) VALUES ('keep me')`);
  if (opts.userVersion !== undefined) db.pragma(`user_version = ${opts.userVersion}`);
  if (opts.applicationId !== undefined) db.pragma(`application_id = ${opts.applicationId}`);
  db.close();
  return path;
}

function assertRefused(path: string, readonly: boolean): void {
  const before = snapshot(path);
  assert.throws(
    () => openLedger(path, { readonly })?.close(),
    (e: Error) => {
      assert.ok(e instanceof LedgerError, `a LedgerError, not ${e.name}: ${e.message}`);
      assert.equal(e.exitCode, 5);
      assert.match(e.message, /not a leadledger ledger/);
      assert.ok(e.message.includes(path), `names the file: ${e.message}`);
      assert.ok(!e.message.includes('\n'), 'one line');
      return true;
    },
  );
  assert.deepEqual(snapshot(path), before, `${readonly ? 'read-only' : 'writable'}: left as it was`);
}

const cases: Array<[string, (dir: string) => string]> = [
  ['a SQLite database with other tables', (d) => foreignDb(join(d, 'app.db'))],
  ['a SQLite database whose app set a user_version', (d) => foreignDb(join(d, 'app.db'), { userVersion: 7 })],
  ['a SQLite database at user_version 1', (d) => foreignDb(join(d, 'app.db'), { userVersion: 1 })],
  ['a SQLite database of another application_id', (d) => foreignDb(join(d, 'app.db'), { applicationId: 42 })],
  ['a SQLite database in WAL mode', (d) => foreignDb(join(d, 'app.db'), { wal: true, userVersion: 3 })],
  [
    'a text file',
    (d) => {
      writeFileSync(join(d, 'notes.txt'), 'event_id,email\ne1,ana@example.com\n');
      return join(d, 'notes.txt');
    },
  ],
  [
    'random bytes',
    (d) => {
      writeFileSync(join(d, 'noise.bin'), randomBytes(10_000));
      return join(d, 'noise.bin');
    },
  ],
  [
    'a file shorter than a SQLite header',
    (d) => {
      writeFileSync(join(d, 'short.db'), 'SQLite format 3\0');
      return join(d, 'short.db');
    },
  ],
];

for (const [what, make] of cases) {
  test(`${what} is refused, read-only or writable, and left untouched`, () => {
    const path = make(tmpDir());
    assertRefused(path, true);
    assertRefused(path, false);
  });
}

test('an empty file (what leadledger creates before SQLite opens it) becomes a ledger; read-only it is no ledger yet', () => {
  const path = join(tmpDir(), 'ledger.db');
  writeFileSync(path, '');
  assert.equal(openLedger(path, { readonly: true }), undefined, 'nothing to read: as for a missing file');
  assert.equal(statSync(path).size, 0);
  assert.equal(existsSync(path + '-wal') || existsSync(path + '-shm'), false);
  const l = openLedger(path)!;
  assert.equal(l.db.pragma('user_version', { simple: true }), SCHEMA_VERSION);
  l.close();
});

test('a run stopped before its first migration (WAL mode set, no table yet) leaves a file that becomes a ledger', () => {
  const path = join(tmpDir(), 'ledger.db');
  writeFileSync(path, '');
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  db.close();
  assert.ok(statSync(path).size > 0);
  const l = openLedger(path)!;
  assert.equal(l.db.pragma('user_version', { simple: true }), SCHEMA_VERSION);
  l.close();
});

test('a ledger whose writes are still in its WAL (its run was killed before a checkpoint) is a ledger', () => {
  for (const v1 of [false, true]) {
    const path = join(tmpDir(), 'ledger.db');
    // A connection left open keeps every write in the WAL: the file's own header is still that of an empty file.
    const db = new Database(path);
    db.pragma('journal_mode = WAL');
    db.pragma('wal_autocheckpoint = 0');
    db.exec(MIGRATIONS[0]!);
    db.pragma('user_version = 1');
    if (!v1) {
      db.exec(MIGRATIONS[1]!);
      db.pragma('user_version = 2');
    }
    db.exec(`INSERT INTO tombstones VALUES ('h')`);
    assert.equal(readFileSync(path).readInt32BE(68), 0, 'the mark, if any, is in the WAL only');
    const ro = openLedger(path, { readonly: true })!;
    assert.equal(ro.db.prepare('SELECT count(*) FROM tombstones').pluck().get(), 1);
    ro.close();
    openLedger(path)!.close();
    db.close();
  }
});

test('a database with tables named as a v1 ledger but other columns is not one', () => {
  const path = join(tmpDir(), 'app.db');
  const db = new Database(path);
  db.exec(MIGRATIONS[0]!.replace('sent_at        TEXT', 'sent_on TEXT'));
  db.pragma('user_version = 1');
  db.close();
  assertRefused(path, true);
  assertRefused(path, false);
});
