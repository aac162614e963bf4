// The ledger in the postgres sink's own database: each batch's leads and the records of their events commit in one
// transaction (deliver.ts claimWriteSettle). Watched from outside with one snapshot per look (a single statement
// counts the table and the ledger), the two always agree: no event is ever pending, no row is ever in the table
// without its event sent in the ledger, and SIGKILLs at many points leave nothing in doubt for the next run.
// The built CLI against a real PostgreSQL 15 (test/helpers/postgres.ts); never skipped.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { jsonReport, runCli } from '../helpers/cli.js';
import { expectedPeople, generateEvents } from '../helpers/events.js';
import { killWhen, start } from '../helpers/kill.js';
import { createLeadsTable, pgDatabase } from '../helpers/postgres.js';
import { tmpDir } from '../helpers/tmp.js';

const db = await pgDatabase();
const env = { PGPASSWORD: db.cluster.password };

/** The table's rows and the ledger's events by status, from one snapshot; undefined before the ledger exists. */
async function look(table: string): Promise<Record<string, number> | undefined> {
  const r = await db
    .query<Record<string, string>>(
      `SELECT (SELECT count(*) FROM ${table}) AS rows,
         (SELECT count(*) FROM leadledger.events WHERE status = 'sent') AS sent,
         (SELECT count(*) FROM leadledger.events WHERE status = 'failed') AS failed,
         (SELECT count(*) FROM leadledger.events WHERE status = 'pending') AS pending,
         (SELECT count(*) FROM leadledger.events WHERE status = 'in_doubt') AS in_doubt,
         (SELECT count(*) FROM leadledger.runs WHERE status = 'running') AS running`,
    )
    .catch(() => undefined);
  if (!r) return undefined;
  return Object.fromEntries(Object.entries(r.rows[0]!).map(([k, v]) => [k, Number(v)]));
}

test('ledger in the sink’s database: table and ledger agree at every look, none pending; kills leave nothing in doubt', async (t) => {
  await createLeadsTable(db, 'one_tx');
  const dir = tmpDir();
  // A batch or more (up to a thousand leads, PG_MAX_BATCH) between each two kill points, three in flight at once;
  // each killed run reads the whole input again, so more only costs time.
  const events = generateEvents(dir, 12_000, 43);
  const want = await expectedPeople(events, dir);
  // The killed runs push the first 10,800 events; the rerun pushes all 12,000, so that it always has new people to
  // write, however late the last kill came (on a busy machine one came after the killed run had sent everything).
  const head = join(dir, 'head.jsonl');
  writeFileSync(head, readFileSync(events, 'utf8').split('\n').slice(0, 10_800).join('\n') + '\n');
  const pushOf = (input: string) => {
    const a = ['push', input, '--sink', 'postgres', '--pg-url', db.url, '--table', 'one_tx'];
    // --no-lock: a killed run's lease would hold the ledger for 30 s; there is no pending claim of it to wait for.
    a.push('--ledger', db.url, '--no-lock', '--concurrency', '3');
    return a;
  };
  const args = [...pushOf(head), '--quiet'];
  const headPeople = (await expectedPeople(head, dir)).size;
  const total = want.size;
  assert.ok(total > headPeople, 'the rerun has people the killed runs never had');
  let looks = 0;
  let midRun = 0;
  const kills: string[] = [];
  for (let i = 1; i <= 6; i++) {
    const at = Math.floor((headPeople * i) / 7);
    const child = start(args, env);
    child.stderr?.resume();
    // Every look is checked, up to the one that kills.
    const killed = await killWhen(
      child,
      async () => {
        const s = await look('one_tx');
        if (s) {
          looks++;
          if (s.running > 0 && s.sent > 0) midRun++;
          assert.equal(s.pending, 0, `an event was pending: ${JSON.stringify(s)}`);
          assert.equal(s.rows, s.sent, `the table and the ledger disagree: ${JSON.stringify(s)}`);
        }
        return s;
      },
      (s) => s.sent >= at,
      2,
    );
    if (killed) kills.push(`killed at sent ${killed.sent} (goal ${at})`);
    const after = await look('one_tx');
    assert.equal(after?.in_doubt, 0, 'a kill left events in doubt');
    assert.equal(after?.rows, after?.sent);
  }
  for (const k of kills) t.diagnostic(k);
  t.diagnostic(`looks: ${looks}, of which mid-run: ${midRun}`);
  assert.ok(kills.length >= 5, `kills: ${kills.join('; ')}`);
  assert.ok(midRun >= 20, `looked while batches were committing: ${midRun}`);

  const final = await runCli([...pushOf(events), '--json'], { env });
  assert.equal(final.code, 0, final.stderr);
  const doc = jsonReport(final);
  const d = doc.delivery;
  assert.equal(d.inDoubt, 0);
  assert.ok(doc.sharedTransactions!.committed > 0, 'the rerun wrote its batches with their ledger records');
  assert.deepEqual(doc.sharedTransactions!.rolledBack, {});
  assert.equal(d.recovered, 0, 'nothing needed a lookup: nothing was in doubt');
  const s = await look('one_tx');
  assert.deepEqual(
    { rows: s?.rows, sent: s?.sent, pending: s?.pending, in_doubt: s?.in_doubt },
    { rows: total, sent: total, pending: 0, in_doubt: 0 },
  );
  const emails = (await db.query<{ email: string }>(`SELECT email FROM one_tx`)).rows.map((r) => r.email);
  assert.deepEqual(new Set(emails), want, 'one row per person, none missing, none doubled');
  const verify = await runCli(['ledger', 'verify', '--ledger', db.url, '--json'], { env });
  assert.equal(verify.code, 0, verify.stdout + verify.stderr);
});

test('ledger in the sink’s database: a lead the database refuses rolls its batch back, which is then written the ordinary way', async () => {
  await db.query(`DROP SCHEMA IF EXISTS leadledger CASCADE`);
  await db.query(`CREATE TABLE one_tx_checked (
    id serial PRIMARY KEY, email text UNIQUE, company text CHECK (company IS DISTINCT FROM 'Evil Corp'))`);
  const dir = tmpDir();
  const input = join(dir, 'in.jsonl');
  const leads = Array.from({ length: 300 }, (_, i) => ({ id: `r${i}`, email: `r${i}@example.com`, company: 'Good' }));
  leads[42]!.company = 'Evil Corp';
  writeFileSync(input, leads.map((l) => JSON.stringify(l)).join('\n') + '\n');
  const args = ['push', input, '--sink', 'postgres', '--pg-url', db.url, '--table', 'one_tx_checked'];
  const r = await runCli([...args, '--ledger', db.url, '--json'], { env });
  assert.equal(r.code, 1, r.stderr);
  const doc = jsonReport(r);
  const d = doc.delivery;
  assert.deepEqual({ sent: d.sent, failed: d.failed, inDoubt: d.inDoubt }, { sent: 299, failed: 1, inDoubt: 0 });
  const rolledBack = Object.entries(doc.sharedTransactions!.rolledBack);
  assert.equal(doc.sharedTransactions!.committed, 0);
  assert.equal(rolledBack.length, 1, JSON.stringify(rolledBack));
  assert.match(rolledBack[0]![0], /violates check constraint "one_tx_checked_company_check"/);
  assert.equal(rolledBack[0]![1], 1);
  assert.match(r.stderr, /violates check constraint "one_tx_checked_company_check"/);
  const s = await look('one_tx_checked');
  assert.deepEqual({ rows: s?.rows, sent: s?.sent, failed: s?.failed }, { rows: 299, sent: 299, failed: 1 });
  const failed = await db.query<{ key: string }>(`SELECT key FROM leadledger.events WHERE status = 'failed'`);
  assert.deepEqual(
    failed.rows.map((x) => x.key),
    ['r42'],
  );
});

test('ledger in the sink’s database: a column of a type of the table’s schema (a domain in public) is written in one transaction too', async () => {
  await db.query(`DROP SCHEMA IF EXISTS leadledger CASCADE`);
  await db.query(`CREATE DOMAIN public.short_text AS text CHECK (length(VALUE) < 200)`);
  await db.query(`CREATE TABLE one_tx_domain (id serial PRIMARY KEY, email text UNIQUE, company public.short_text)`);
  const dir = tmpDir();
  const input = join(dir, 'in.jsonl');
  const leads = Array.from({ length: 50 }, (_, i) => ({ id: `d${i}`, email: `d${i}@example.com`, company: 'Acme' }));
  writeFileSync(input, leads.map((l) => JSON.stringify(l)).join('\n') + '\n');
  const args = ['push', input, '--sink', 'postgres', '--pg-url', db.url, '--table', 'one_tx_domain'];
  const r = await runCli([...args, '--ledger', db.url, '--json'], { env });
  assert.equal(r.code, 0, r.stderr);
  const doc = jsonReport(r);
  assert.equal(doc.delivery.sent, 50);
  assert.deepEqual(doc.sharedTransactions, { committed: 1, rolledBack: {} });
  const s = await look('one_tx_domain');
  assert.deepEqual({ rows: s?.rows, sent: s?.sent }, { rows: 50, sent: 50 });
});

test('the sink as another role of the same database does not share the ledger’s transactions', async () => {
  await db.query(`DROP SCHEMA IF EXISTS leadledger CASCADE`);
  await db.query(`CREATE TABLE one_tx_other (id serial PRIMARY KEY, email text UNIQUE, name text)`);
  await db.query(`DROP ROLE IF EXISTS leadledger_writer`);
  await db.query(`CREATE ROLE leadledger_writer LOGIN PASSWORD 'writer-pw-7731'`);
  await db.query(`GRANT ALL ON one_tx_other, one_tx_other_id_seq TO leadledger_writer`);
  const dir = tmpDir();
  const input = join(dir, 'in.jsonl');
  writeFileSync(input, JSON.stringify({ id: 'o1', email: 'o1@example.com', name: 'Olga' }) + '\n');
  const writer = new URL(db.url);
  writer.username = 'leadledger_writer';
  writer.password = 'writer-pw-7731';
  const r = await runCli(
    ['push', input, '--sink', 'postgres', '--table', 'one_tx_other', '--ledger', db.url, '--json'],
    { env: { ...env, LEADLEDGER_PG_URL: writer.toString() } },
  );
  assert.equal(r.code, 0, r.stderr);
  const doc = jsonReport(r);
  assert.equal(doc.delivery.sent, 1);
  assert.equal(doc.sharedTransactions, undefined, 'another role: the ordinary claim, send and settle');
  assert.doesNotMatch(r.stdout + r.stderr, /writer-pw-7731/);
  await db.query(`DROP OWNED BY leadledger_writer`);
  await db.query(`DROP ROLE leadledger_writer`);
});
