// Leads the user's table refuses for reasons of its own (a trigger's RAISE EXCEPTION, a CHECK, an index row too large,
// a SQLSTATE a trigger makes up), in batches of a thousand: each refused lead fails alone, with its own error, and
// the rest of its batch is written. The built CLI against a real PostgreSQL 15 (test/helpers/postgres.ts); with the
// ledger in a file, and in the same database (one transaction per batch, rolled back, then the ordinary way).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { jsonReport, runCli } from '../helpers/cli.js';
import { pgDatabase } from '../helpers/postgres.js';
import { tmpDir } from '../helpers/tmp.js';

const db = await pgDatabase();
const env = { PGPASSWORD: db.cluster.password, PGPASSFILE: undefined, LEADLEDGER_PG_URL: undefined };

/** What each refused lead must fail with: its own error, and no other lead's. */
const REFUSED: Record<string, RegExp> = {
  'blocked@example.com': /^PostgreSQL refused the lead: lead blocked@example\.com is on the block list \(P0001\)$/,
  'evil@example.com':
    /^PostgreSQL refused the lead: new row for relation "\w+" violates check constraint "\w+_company_check" \(23514\)$/,
  'madeup@example.com': /^PostgreSQL refused the lead: no leads from this campaign \(LL001\)$/,
  'huge@example.com': /^PostgreSQL refused the lead: index row .*maximum .*\(54000\)$/,
};

/** A table with a CHECK, an index on name and a trigger that refuses two people, each in its own words. */
async function createTable(table: string): Promise<void> {
  await db.query(`CREATE TABLE ${table} (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, email text NOT NULL UNIQUE, name text,
    company text CHECK (company IS DISTINCT FROM 'Evil Corp'), source text)`);
  await db.query(`CREATE INDEX ${table}_name ON ${table} (name)`);
  await db.query(`CREATE FUNCTION ${table}_guard() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF NEW.email = 'blocked@example.com' THEN RAISE EXCEPTION 'lead % is on the block list', NEW.email; END IF;
      IF NEW.email = 'madeup@example.com' THEN
        RAISE EXCEPTION USING ERRCODE = 'LL001', MESSAGE = 'no leads from this campaign';
      END IF;
      RETURN NEW;
    END $$`);
  await db.query(
    `CREATE TRIGGER ${table}_guard BEFORE INSERT ON ${table} FOR EACH ROW EXECUTE FUNCTION ${table}_guard()`,
  );
}

/** 2,500 leads (three batches), the refused ones at the given positions. */
function input(dir: string, at: Record<string, number>): string {
  const leads: Array<Record<string, string>> = Array.from({ length: 2500 }, (_, i) => ({
    id: `r${i}`,
    email: `p${i}@example.com`,
    name: `Person ${i}`,
    company: 'Good',
  }));
  const set = (email: string, extra: Record<string, string> = {}) =>
    Object.assign(leads[at[email]!]!, { email, ...extra });
  set('blocked@example.com');
  set('madeup@example.com');
  set('evil@example.com', { company: 'Evil Corp' });
  // Past what a btree index row holds, even compressed: 54000.
  const noise = Array.from({ length: 3000 }, (_, i) => ((i * 7919) % 65536).toString(16).padStart(4, '0')).join('');
  set('huge@example.com', { name: noise });
  const file = join(dir, 'in.jsonl');
  writeFileSync(file, leads.map((l) => JSON.stringify(l)).join('\n') + '\n');
  return file;
}

function checkReasons(failed: Array<{ email: string; reason: string }>): void {
  assert.deepEqual(failed.map((f) => f.email).sort(), Object.keys(REFUSED).sort());
  for (const { email, reason } of failed) {
    assert.match(reason, REFUSED[email]!, `${email}: ${reason}`);
    const others = (reason.match(/[\w.]+@example\.com/g) ?? []).filter((e) => e !== email);
    assert.deepEqual(others, [], `${email}'s reason names another person`);
  }
}

test('refused leads fail alone with their own error, whatever the SQLSTATE; the rest of their batches is written', async () => {
  await createTable('guarded');
  const dir = tmpDir();
  const file = input(dir, {
    'blocked@example.com': 10,
    'evil@example.com': 1500,
    'madeup@example.com': 1501,
    'huge@example.com': 2200,
  });
  const ledger = join(dir, 'l.db');
  const r = await runCli(
    ['push', file, '--sink', 'postgres', '--pg-url', db.url, '--table', 'guarded', '--ledger', ledger, '--json'],
    { env },
  );
  assert.equal(r.code, 1, r.stderr);
  const report = jsonReport(r);
  assert.equal(report.delivery.sent, 2496);
  assert.equal(report.delivery.failed, 4);
  assert.equal((await db.query(`SELECT 1 FROM guarded`)).rowCount, 2496);
  const l = new Database(ledger, { readonly: true });
  const failed = l
    .prepare(`SELECT natural_key AS email, failure, last_error AS reason FROM events WHERE status = 'failed'`)
    .all() as Array<{ email: string; failure: string; reason: string }>;
  l.close();
  checkReasons(failed);
  assert.ok(
    failed.every((f) => f.failure === 'permanent'),
    'refused for good',
  );
});

test('with the ledger in the same database: batches with a refused lead roll back, then each refused lead fails alone', async () => {
  await createTable('guarded_shared');
  const dir = tmpDir();
  const file = input(dir, {
    'blocked@example.com': 10,
    'evil@example.com': 999,
    'madeup@example.com': 1000,
    'huge@example.com': 1999,
  });
  const r = await runCli(
    ['push', file, '--sink', 'postgres', '--pg-url', db.url, '--table', 'guarded_shared', '--ledger', db.url, '--json'],
    { env },
  );
  assert.equal(r.code, 1, r.stderr);
  const report = jsonReport(r);
  assert.equal(report.delivery.sent, 2496);
  assert.equal(report.delivery.failed, 4);
  // The third batch holds no refused lead: it committed with its ledger records.
  assert.equal(report.sharedTransactions!.committed, 1);
  assert.equal(
    Object.values(report.sharedTransactions!.rolledBack).reduce((a, b) => a + b, 0),
    2,
    JSON.stringify(report.sharedTransactions),
  );
  assert.equal((await db.query(`SELECT 1 FROM guarded_shared`)).rowCount, 2496);
  const failed = (
    await db.query<{ email: string; reason: string }>(
      `SELECT natural_key AS email, last_error AS reason FROM leadledger.events WHERE status = 'failed'`,
    )
  ).rows;
  checkReasons(failed);
  const pending = await db.query(`SELECT 1 FROM leadledger.events WHERE status IN ('pending', 'in_doubt')`);
  assert.equal(pending.rowCount, 0);
});
