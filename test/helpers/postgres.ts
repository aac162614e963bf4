// A throw-away PostgreSQL 15 cluster for the tests that need a real one: initdb into a temporary directory, the
// server on 127.0.0.1 at a free port (password authentication over TCP, trust only on its private Unix socket),
// fsync off and small buffers so that it starts in about a second. One cluster per test process, started on first
// use; a database per test file, dropped when the file ends; the cluster stopped and its directory removed when the
// process ends (and the server told to stop should the process die: it is started with a parent-death signal).
//
// A missing PostgreSQL fails the test, in CI and anywhere else: these tests never skip.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, chownSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { after } from 'node:test';
import pg from 'pg';

/** The cluster's superuser and its password (TCP connections need it). */
export const PG_ADMIN = 'leadledger_admin';

export interface PgCluster {
  host: string;
  port: number;
  user: string;
  password: string;
  /** The directory of its Unix socket (trust authentication). */
  socketDir: string;
  version: string;
}

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

const BIN_NAMES = ['initdb', 'postgres', 'pg_ctl'] as const;

/**
 * The directory holding initdb, postgres and pg_ctl: LEADLEDGER_PG_BIN when set (and then only it), else the first on
 * PATH, else Debian's PostgreSQL 15.
 */
export function findPgBin(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const candidates = env.LEADLEDGER_PG_BIN
    ? [env.LEADLEDGER_PG_BIN]
    : [...(env.PATH ?? '').split(delimiter), '/usr/lib/postgresql/15/bin'].filter((d) => !!d);
  return candidates.find((d) => BIN_NAMES.every((b) => existsSync(join(d, b))));
}

/** The error every postgres test fails with when there is no PostgreSQL to start. */
export function missing(): Error {
  return new Error(
    'PostgreSQL server binaries (initdb, postgres, pg_ctl) were not found on PATH, in LEADLEDGER_PG_BIN or in ' +
      '/usr/lib/postgresql/15/bin. The postgres tests need a real PostgreSQL 15 and never skip' +
      (process.env.CI ? ' (CI is set: this is a failure of the CI machine)' : '') +
      ': install it (Debian: apt-get install postgresql-15) or point LEADLEDGER_PG_BIN at its bin directory.',
  );
}

const isRoot = () => process.getuid?.() === 0;

/** argv run as the postgres user when we are root (initdb and the server refuse root), else as is. */
function asPostgres(argv: string[], pdeathsig = false): string[] {
  if (!isRoot()) return pdeathsig ? ['setpriv', '--pdeathsig', 'INT', '--', ...argv] : argv;
  // setpriv execs (runuser forks and waits), so the server's parent is this process and the death signal holds.
  return pdeathsig
    ? ['setpriv', '--reuid=postgres', '--regid=postgres', '--init-groups', '--pdeathsig', 'INT', '--', ...argv]
    : ['runuser', '-u', 'postgres', '--', ...argv];
}

function postgresIds(): { uid: number; gid: number } {
  const id = (flag: string) => Number(spawnSync('id', [flag, 'postgres'], { encoding: 'utf8' }).stdout.trim());
  const uid = id('-u');
  const gid = id('-g');
  if (!Number.isInteger(uid) || uid <= 0)
    throw new Error('running as root, the PostgreSQL tests need a "postgres" system user to run initdb as');
  return { uid, gid };
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.unref();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

let starting: Promise<PgCluster> | undefined;

/** The cluster of this test process, started on first call. */
export function pgCluster(): Promise<PgCluster> {
  return (starting ??= startCluster());
}

async function startCluster(): Promise<PgCluster> {
  const bin = findPgBin();
  if (!bin) throw missing();
  const dir = mkdtempSync(join(tmpdir(), 'leadledger-pg-'));
  const data = join(dir, 'data');
  const password = randomBytes(12).toString('hex');
  writeFileSync(join(dir, 'pw'), `${password}\n`, { mode: 0o600 });
  if (isRoot()) {
    const { uid, gid } = postgresIds();
    chownSync(dir, uid, gid);
    chownSync(join(dir, 'pw'), uid, gid);
  }
  chmodSync(dir, 0o700);
  let server: ChildProcess | undefined;
  const cleanup = () => {
    if (server && server.exitCode === null && server.signalCode === null) {
      // Immediate shutdown: the data is thrown away anyway. SIGQUIT to the postmaster is pg_ctl's "immediate".
      server.kill('SIGQUIT');
      spawnSync('sh', ['-c', `for i in $(seq 50); do kill -0 ${server.pid} 2>/dev/null || exit 0; sleep 0.1; done`]);
    }
    rmSync(dir, { recursive: true, force: true });
  };
  process.once('exit', cleanup);

  const initArgv = asPostgres([
    join(bin, 'initdb'),
    '-D',
    data,
    '-U',
    PG_ADMIN,
    `--pwfile=${join(dir, 'pw')}`,
    '--auth-local=trust',
    '--auth-host=scram-sha-256',
    '--no-sync',
    '-E',
    'UTF8',
    '--locale=C.UTF-8',
  ]);
  const init = spawnSync(initArgv[0]!, initArgv.slice(1), { encoding: 'utf8' });
  if (init.status !== 0) {
    cleanup();
    throw new Error(`initdb failed (${init.status}): ${init.stderr || init.error?.message}`);
  }
  rmSync(join(dir, 'pw'));

  // A free port can be taken between the probe and the bind: a few tries.
  for (let attempt = 0; ; attempt++) {
    const port = await freePort();
    const argv = asPostgres(
      [
        join(bin, 'postgres'),
        '-D',
        data,
        '-c',
        'listen_addresses=127.0.0.1',
        '-c',
        `port=${port}`,
        '-c',
        `unix_socket_directories=${dir}`,
        '-c',
        'fsync=off',
        '-c',
        'full_page_writes=off',
        '-c',
        'synchronous_commit=off',
        '-c',
        'shared_buffers=16MB',
        '-c',
        'max_connections=60',
        '-c',
        'log_min_messages=warning',
        '-c',
        'logging_collector=off',
      ],
      true,
    );
    let log = '';
    server = spawn(argv[0]!, argv.slice(1), { stdio: ['ignore', 'ignore', 'pipe'] });
    server.stderr!.setEncoding('utf8').on('data', (d: string) => {
      if (log.length < 20_000) log += d;
    });
    // The server is ours to stop; it must not keep the test process alive.
    server.unref();
    (server.stderr as unknown as { unref?: () => void }).unref?.();
    const cluster: PgCluster = { host: '127.0.0.1', port, user: PG_ADMIN, password, socketDir: dir, version: '' };
    const ready = await waitReady(cluster, server);
    if (ready) {
      cluster.version = ready;
      return cluster;
    }
    if (attempt >= 3 || !/could not bind|Address already in use/i.test(log)) {
      cleanup();
      throw new Error(`PostgreSQL did not start: ${log.trim() || 'no output'}`);
    }
  }
}

/** Polls until the server answers (its version), or undefined once it has exited. */
async function waitReady(c: PgCluster, server: ChildProcess): Promise<string | undefined> {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    if (server.exitCode !== null || server.signalCode !== null) return undefined;
    const client = new pg.Client({
      host: c.host,
      port: c.port,
      user: c.user,
      password: c.password,
      database: 'postgres',
    });
    try {
      await client.connect();
      const r = await client.query<{ v: string }>("SELECT current_setting('server_version') AS v");
      return r.rows[0]!.v;
    } catch {
      await new Promise((r) => setTimeout(r, 50));
    } finally {
      await client.end().catch(() => undefined);
    }
  }
  throw new Error('PostgreSQL did not become ready within 30 s');
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
