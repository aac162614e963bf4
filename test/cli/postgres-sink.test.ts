// The postgres sink, end to end: the built CLI pushes into a table of a real PostgreSQL 15 (test/helpers/postgres.ts)
// and the table, the ledger and the output are checked. A missing PostgreSQL fails these tests; they never skip.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { jsonReport, ROOT, runCli, type CliResult, type JsonReport } from '../helpers/cli.js';
import { expectedPeople, generateEvents } from '../helpers/events.js';
import { pgDatabase, type PgDatabase } from '../helpers/postgres.js';
import { tmpDir } from '../helpers/tmp.js';

/** No password reaches the CLI unless a test gives one: not the runner's PGPASSWORD, not its ~/.pgpass. */
const NO_PASSWORD = {
  PGPASSWORD: undefined,
  PGPASSFILE: undefined,
  LEADLEDGER_PG_URL: undefined,
  DATABASE_URL: undefined,
};

const db: PgDatabase = await pgDatabase();
const admin = { ...NO_PASSWORD, PGPASSWORD: db.cluster.password };

function jsonl(rows: Array<Record<string, unknown>>): string {
  return rows.map((r) => JSON.stringify(r)).join('\n') + '\n';
}

/** The run report a --json push printed. */
function json(r: CliResult): JsonReport {
  assert.ok(r.stdout.trim(), `no JSON on stdout; stderr: ${r.stderr}`);
  return jsonReport(r);
}

type Row = Record<string, unknown>;

async function rows<T = Row>(sql: string, params?: unknown[]): Promise<T[]> {
  return (await db.query(sql, params)).rows as T[];
}

test('one row per person, with the ledger holding each row id; a rerun adds none, nor does a rerun on a lost ledger', async () => {
  await db.query(`CREATE TABLE leads (
    id bigserial PRIMARY KEY, email text NOT NULL UNIQUE, name text, phone text, company text, source text,
    created_at timestamptz NOT NULL DEFAULT now())`);
  const dir = tmpDir();
  const events = generateEvents(dir, 5000, 31);
  const want = await expectedPeople(events, dir);
  assert.ok(want.size > 2000, 'more people than two batches');
  const ledger = join(dir, 'l.db');
  const args = ['push', events, '--sink', 'postgres', '--pg-url', db.url, '--ledger', ledger, '--json', '--quiet'];
  const first = await runCli(args, { env: admin });
  assert.equal(first.code, 0, first.stderr);
  assert.equal(json(first).delivery.sent, want.size);
  const table = await rows<{ id: string; email: string }>(`SELECT id::text, email FROM leads`);
  assert.equal(table.length, want.size);
  assert.deepEqual(new Set(table.map((r) => r.email)), want);
  const l = new Database(ledger, { readonly: true });
  const settled = l.prepare(`SELECT natural_key, status, outcome, crm_id, sink FROM events`).all() as Array<
    Record<string, string>
  >;
  l.close();
  const ids = new Map(table.map((r) => [r.email, r.id]));
  assert.ok(
    settled.every((e) => e.status === 'sent' && ids.get(e.natural_key!) === e.crm_id),
    'every event sent, with the id of its row',
  );
  assert.match(
    settled[0]!.sink!,
    /^PostgreSQL postgres:\/\/leadledger_admin@127\.0\.0\.1:\d+\/\w+ table public\.leads$/,
  );

  const again = await runCli(args, { env: admin });
  assert.equal(again.code, 0, again.stderr);
  assert.equal(json(again).delivery.sent, 0);
  // A run without the ledger (a container that lost its disk) finds every person there: `exists`, no new row.
  const lost = await runCli([...args.slice(0, 6), '--ledger', join(dir, 'lost.db'), '--json', '--quiet'], {
    env: admin,
  });
  assert.equal(lost.code, 0, lost.stderr);
  assert.equal(json(lost).delivery.exists, want.size);
  assert.equal((await rows(`SELECT 1 FROM leads`)).length, want.size);
  // created_at is the event's time where the input has one.
  const [oldest] = await rows<{ t: Date }>(`SELECT min(created_at) t FROM leads`);
  assert.ok(
    oldest!.t.getTime() < Date.now() - 86_400_000,
    `created_at from the events, got ${oldest!.t.toISOString()}`,
  );
  await db.query(`DROP TABLE leads`);
});

test('--existing update updates in place: same row and id, mapped columns set, fields the lead lacks kept', async () => {
  // A table of the user's own shape: another schema, other column names, a case-insensitive email index.
  await db.query(`CREATE SCHEMA crm`);
  await db.query(`CREATE TABLE crm.people (
    person_id int GENERATED ALWAYS AS IDENTITY PRIMARY KEY, email_address varchar(200) NOT NULL, full_name text,
    phone text, plan text, note text NOT NULL DEFAULT 'none', first_seen timestamptz DEFAULT now())`);
  await db.query(`CREATE UNIQUE INDEX people_email ON crm.people (lower(email_address))`);
  await db.query(
    `INSERT INTO crm.people (email_address, full_name, phone, plan, note) VALUES
       ('Ana@Example.com', 'Ana Velha', '+5511900000001', 'free', 'written by hand')`,
  );
  const dir = tmpDir();
  const config = join(dir, 'leadledger.config.json');
  writeFileSync(
    config,
    JSON.stringify({
      fields: { custom: { plan: 'plan' } },
      sinks: { postgres: { columns: { email: 'email_address', name: 'full_name', created_at: 'first_seen' } } },
    }),
  );
  const input = join(dir, 'in.jsonl');
  writeFileSync(
    input,
    jsonl([
      { id: 'u1', email: 'ana@example.com', name: 'Ana Nova', plan: 'gold' },
      { id: 'u2', email: 'bia@example.com', name: 'Bia', phone: '+5511900000002' },
    ]),
  );
  const base = ['push', input, '--sink', 'postgres', '--pg-url', db.url, '--table', 'crm.people', '--config', config];
  const skip = await runCli([...base, '--ledger', join(dir, 'skip.db'), '--json', '--quiet'], { env: admin });
  assert.equal(skip.code, 0, skip.stderr);
  const s = json(skip).delivery;
  assert.deepEqual([s.sent, s.exists, s.updated], [1, 1, 0]);
  assert.equal((await rows(`SELECT full_name FROM crm.people WHERE person_id = 1`))[0]!.full_name, 'Ana Velha');

  await db.query(`DELETE FROM crm.people WHERE email_address = 'bia@example.com'`);
  const upd = await runCli([...base, '--existing', 'update', '--ledger', join(dir, 'upd.db'), '--json', '--quiet'], {
    env: admin,
  });
  assert.equal(upd.code, 0, upd.stderr);
  const u = json(upd).delivery;
  assert.deepEqual([u.sent, u.updated], [1, 1]);
  const people = await rows(
    `SELECT person_id, email_address, full_name, phone, plan, note FROM crm.people ORDER BY person_id`,
  );
  assert.deepEqual(people[0], {
    person_id: 1,
    email_address: 'Ana@Example.com',
    full_name: 'Ana Nova',
    phone: '+5511900000001',
    plan: 'gold',
    note: 'written by hand',
  });
  assert.equal(people.length, 2);
  assert.equal(people[1]!.email_address, 'bia@example.com');
  assert.equal(people[1]!.note, 'none', 'a column leadledger does not fill keeps its default');
  const l = new Database(join(dir, 'upd.db'), { readonly: true });
  const crm = l.prepare(`SELECT crm_id, outcome FROM events WHERE key = 'u1'`).get();
  l.close();
  assert.deepEqual(crm, { crm_id: '1', outcome: 'updated' });
});

test('refused before anything is claimed: no unique email index, a partial one, a missing mapped column, a NOT NULL column nothing fills', async () => {
  const dir = tmpDir();
  const input = join(dir, 'in.jsonl');
  writeFileSync(input, jsonl([{ id: 'r1', email: 'r1@example.com', name: 'R' }]));
  const ledger = join(dir, 'l.db');
  const push = (table: string, extra: string[] = []) =>
    runCli(['push', input, '--sink', 'postgres', '--pg-url', db.url, '--table', table, '--ledger', ledger, ...extra], {
      env: admin,
    });
  await db.query(`CREATE TABLE plain (id serial PRIMARY KEY, email text, name text)`);
  const noIndex = await push('plain');
  assert.equal(noIndex.code, 2, noIndex.stderr);
  assert.match(noIndex.stderr, /public\.plain has no unique index on "email", so it cannot keep one row per person/);
  assert.match(noIndex.stderr, /ALTER TABLE "public"\."plain" ADD UNIQUE \("email"\)/);

  await db.query(`CREATE UNIQUE INDEX plain_partial ON plain (email) WHERE email LIKE '%@example.com'`);
  const partial = await push('plain');
  assert.equal(partial.code, 2);
  assert.match(partial.stderr, /no unique index on "email"/);

  await db.query(`CREATE TABLE keyed (id serial PRIMARY KEY, email text UNIQUE, tenant int NOT NULL)`);
  const config = join(dir, 'c.json');
  writeFileSync(config, JSON.stringify({ sinks: { postgres: { columns: { name: 'full_name', nope: 'x' } } } }));
  const mapped = await push('keyed', ['--config', config]);
  assert.equal(mapped.code, 2);
  assert.match(
    mapped.stderr,
    /sinks\.postgres\.columns\.name maps to column "full_name", which public\.keyed does not have/,
  );
  assert.match(mapped.stderr, /sinks\.postgres\.columns\.nope: not a lead field/);
  assert.match(
    mapped.stderr,
    /column "tenant" of public\.keyed is NOT NULL without a default, and no lead field fills it/,
  );

  const view = await (async () => {
    await db.query(`CREATE VIEW leads_view AS SELECT * FROM keyed`);
    return push('leads_view');
  })();
  assert.equal(view.code, 2);
  assert.match(view.stderr, /is not a table \(a view\)/);
  assert.ok(!existsSync(ledger), 'nothing was claimed: the ledger was not even created');
  assert.equal((await rows(`SELECT 1 FROM plain UNION ALL SELECT 1 FROM keyed`)).length, 0);
});

test('a missing table: the CREATE TABLE that fits is printed; --create-table runs it, quoted names and all', async () => {
  await db.query(`CREATE SCHEMA "Sales"`);
  const dir = tmpDir();
  const input = join(dir, 'in.jsonl');
  writeFileSync(
    input,
    jsonl([
      { id: 'c1', email: 'c1@example.com', name: 'Cê Um', plan: 'pro', timestamp: '2026-10-01T12:00:00Z' },
      { id: 'c2', email: 'c2@example.com' },
    ]),
  );
  const config = join(dir, 'c.json');
  writeFileSync(config, JSON.stringify({ fields: { custom: { plan: 'plan' } } }));
  const push = ['push', input, '--sink', 'postgres', '--pg-url', db.url];
  const args = [...push, '--table', '"Sales"."Lead List"', '--config', config, '--ledger', join(dir, 'l.db')];
  const missing = await runCli(args, { env: admin });
  assert.equal(missing.code, 2);
  assert.match(missing.stderr, /table "Sales"\."Lead List" does not exist/);
  assert.match(missing.stderr, /CREATE TABLE "Sales"\."Lead List" \(/);
  assert.match(missing.stderr, /"email" text NOT NULL UNIQUE/);
  assert.match(missing.stderr, /"plan" text/);
  assert.equal((await rows(`SELECT to_regclass('"Sales"."Lead List"') r`))[0]!.r, null, 'not created unasked');

  const created = await runCli([...args, '--create-table'], { env: admin });
  assert.equal(created.code, 0, created.stderr);
  assert.match(created.stderr, /created table "Sales"\."Lead List" \(--create-table\):\nCREATE TABLE/);
  const table = await rows(`SELECT email, name, plan, created_at FROM "Sales"."Lead List" ORDER BY email`);
  assert.equal(table.length, 2);
  assert.deepEqual([table[0]!.email, table[0]!.name, table[0]!.plan], ['c1@example.com', 'Cê Um', 'pro']);
  assert.equal((table[0]!.created_at as Date).toISOString(), '2026-10-01T12:00:00.000Z');
  assert.ok(table[1]!.created_at instanceof Date, 'no event time: the column default');
  // Once there, the table is used as it is, with or without the flag.
  const again = await runCli([...args, '--create-table'], { env: admin });
  assert.equal(again.code, 0, again.stderr);
  assert.doesNotMatch(again.stderr, /created table/);

  // A schema that is not there is the user's to create: a usage error, before anything is claimed.
  const ledger = join(dir, 'noschema.db');
  const noSchema = await runCli([...push, '--table', 'nowhere_schema.leads', '--create-table', '--ledger', ledger], {
    env: admin,
  });
  assert.equal(noSchema.code, 2, noSchema.stderr);
  assert.match(noSchema.stderr, /schema "nowhere_schema" does not exist \(3F000\)/);
  assert.ok(
    !existsSync(ledger) ||
      (new Database(ledger).prepare('SELECT count(*) AS n FROM events').get() as { n: number }).n === 0,
    'nothing claimed',
  );
});

test('a lead the database refuses fails alone, with the reason; the rest of its batch is written', async () => {
  await db.query(`CREATE TABLE checked (
    id serial PRIMARY KEY, email text UNIQUE, company text CHECK (company IS DISTINCT FROM 'Evil Corp'),
    phone varchar(14) UNIQUE)`);
  const dir = tmpDir();
  const input = join(dir, 'in.jsonl');
  const leads = Array.from({ length: 300 }, (_, i) => ({ id: `k${i}`, email: `k${i}@example.com`, company: 'Good' }));
  leads[17]!.company = 'Evil Corp';
  (leads[200] as Record<string, string>).phone = '+5511999990000';
  (leads[250] as Record<string, string>).phone = '+5511999990000';
  writeFileSync(input, jsonl(leads));
  const r = await runCli(
    ['push', input, '--sink', 'postgres', '--pg-url', db.url, '--table', 'checked', '--ledger', join(dir, 'l.db')],
    { env: admin },
  );
  assert.equal(r.code, 1, r.stderr);
  assert.match(r.stdout, /sent 298, .*failed 2/);
  assert.match(r.stdout, /violates check constraint "checked_company_check"/);
  assert.match(r.stdout, /duplicate key value violates unique constraint "checked_phone_key"/);
  assert.doesNotMatch(r.stdout + r.stderr, /\+5511999990000/, 'the reason does not repeat the lead’s values');
  assert.equal((await rows(`SELECT 1 FROM checked`)).length, 298);
});

test('passwords: PGPASSWORD, ~/.pgpass (HOME of the test), a URL in LEADLEDGER_PG_URL or DATABASE_URL; never argv, never shown', async () => {
  const password = 'pw:with\\colon-7c1e';
  await db.query(`CREATE ROLE lead_writer LOGIN PASSWORD '${password.replace(/'/g, "''")}'`);
  await db.query(`CREATE TABLE writer_leads (id serial PRIMARY KEY, email text UNIQUE NOT NULL, name text)`);
  await db.query(`GRANT SELECT, INSERT, UPDATE ON writer_leads TO lead_writer`);
  const home = tmpDir();
  const dir = tmpDir();
  const noSequence = await runCli(
    [
      'push',
      join(ROOT, 'fixtures', 'webhook-events.jsonl'),
      '--sink',
      'postgres',
      '--pg-url',
      `postgres://lead_writer@${db.cluster.host}:${db.cluster.port}/${db.name}`,
      '--table',
      'writer_leads',
    ],
    { env: { ...NO_PASSWORD, HOME: home, PGPASSWORD: password, LEADLEDGER_LEDGER: join(dir, 'seq.db') } },
  );
  assert.equal(noSequence.code, 2, noSequence.stderr);
  assert.match(
    noSequence.stderr,
    /may not use sequence writer_leads_id_seq, which fills column "id": GRANT USAGE ON SEQUENCE writer_leads_id_seq/,
  );
  await db.query(`GRANT USAGE ON SEQUENCE writer_leads_id_seq TO lead_writer`);
  const { host, port } = db.cluster;
  const url = `postgres://lead_writer@${host}:${port}/${db.name}`;
  const withPassword = `postgres://lead_writer:${encodeURIComponent(password)}@${host}:${port}/${db.name}`;
  let n = 0;
  const push = (env: Record<string, string | undefined>, pgUrl: string | null = url, extra: string[] = []) => {
    n++;
    const input = join(dir, `in${n}.jsonl`);
    writeFileSync(input, jsonl([{ id: `p${n}`, email: `p${n}@example.com`, name: `P ${n}` }]));
    const ledger = join(dir, `l${n}.db`);
    const report = join(dir, `r${n}.csv`);
    return runCli(
      [
        'push',
        input,
        '--sink',
        'postgres',
        ...(pgUrl ? ['--pg-url', pgUrl] : []),
        '--table',
        'writer_leads',
        '--ledger',
        ledger,
        '--report',
        report,
        '--json',
        ...extra,
      ],
      { env: { ...NO_PASSWORD, HOME: home, ...env } },
    ).then((r) => ({ ...r, ledger, report }));
  };
  const nowhere = (r: { stdout: string; stderr: string; ledger: string; report: string }) => {
    const files = [r.ledger, `${r.ledger}-wal`, r.report].filter(existsSync).map((f) => readFileSync(f, 'latin1'));
    for (const text of [r.stdout, r.stderr, ...files]) {
      assert.ok(!text.includes(password), 'the password is nowhere');
      assert.ok(!text.includes(encodeURIComponent(password)), 'nor its URL form');
    }
  };

  const none = await push({});
  assert.equal(none.code, 2, none.stderr);
  assert.match(none.stderr, /asks for a password for lead_writer, and none was found: set PGPASSWORD, add a line/);
  assert.match(none.stderr, new RegExp(`to ${home}/\\.pgpass \\(mode 0600\\)`));

  const env = await push({ PGPASSWORD: password });
  assert.equal(env.code, 0, env.stderr);
  nowhere(env);

  const wrong = await push({ PGPASSWORD: 'not-the-password' });
  assert.equal(wrong.code, 4, wrong.stderr);
  assert.match(
    wrong.stderr,
    /rejected the login of lead_writer: password authentication failed .*the password came from PGPASSWORD/,
  );

  // libpq's format: the colon and the backslash of the password escaped.
  const line = `${host}:${port}:*:lead_writer:${password.replace(/[\\:]/g, (c) => `\\${c}`)}\n`;
  writeFileSync(join(home, '.pgpass'), line, { mode: 0o600 });
  const pgpass = await push({});
  assert.equal(pgpass.code, 0, pgpass.stderr);
  nowhere(pgpass);
  chmodSync(join(home, '.pgpass'), 0o644);
  const loose = await push({});
  assert.equal(loose.code, 2);
  assert.match(loose.stderr, /\.pgpass has group or world access \(mode 0644\)/);

  for (const name of ['LEADLEDGER_PG_URL', 'DATABASE_URL']) {
    const fromEnv = await push({ [name]: withPassword }, null);
    assert.equal(fromEnv.code, 0, fromEnv.stderr);
    nowhere(fromEnv);
    assert.equal(json(fromEnv).sink, `PostgreSQL ${url} table public.writer_leads`);
  }

  const argv = await push({}, withPassword);
  assert.equal(argv.code, 2);
  assert.match(argv.stderr, /--pg-url must not hold a password .*PGPASSWORD.*~\/\.pgpass.*LEADLEDGER_PG_URL/);
  nowhere(argv);
  assert.ok(!existsSync(argv.ledger));
  assert.equal((await rows(`SELECT 1 FROM writer_leads`)).length, 4);
});
