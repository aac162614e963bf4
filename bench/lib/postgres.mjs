// A throw-away PostgreSQL 15 cluster for bench scenarios 7-9, started as the test harness starts its own
// (test/helpers/postgres.ts): initdb into a temporary directory as the `postgres` user when we are root, the server
// on 127.0.0.1 at a free port with password authentication over TCP (trust only on its private Unix socket), stopped
// and removed when the bench ends (and told to stop should the bench die: a parent-death signal).
//
// Unlike the tests' cluster it keeps PostgreSQL's durable defaults (fsync, full_page_writes, synchronous_commit on)
// and the default shared_buffers (128MB): the bench measures what a user's server does. The password never goes into
// an argv: children get it in PGPASSWORD.
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, chownSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { track } from './measure.mjs';

export const PG_ADMIN = 'leadledger_admin';
const BIN_NAMES = ['initdb', 'postgres', 'pg_ctl'];

/** LEADLEDGER_PG_BIN, else the first PATH directory with initdb, postgres and pg_ctl, else Debian's 15. */
export function findPgBin(env = process.env) {
  const candidates = env.LEADLEDGER_PG_BIN
    ? [env.LEADLEDGER_PG_BIN]
    : [...(env.PATH ?? '').split(path.delimiter), '/usr/lib/postgresql/15/bin'].filter(Boolean);
  return candidates.find((d) => BIN_NAMES.every((b) => existsSync(path.join(d, b))));
}

const isRoot = () => process.getuid?.() === 0;

function asPostgres(argv, pdeathsig = false) {
  if (!isRoot()) return pdeathsig ? ['setpriv', '--pdeathsig', 'INT', '--', ...argv] : argv;
  return pdeathsig
    ? ['setpriv', '--reuid=postgres', '--regid=postgres', '--init-groups', '--pdeathsig', 'INT', '--', ...argv]
    : ['runuser', '-u', 'postgres', '--', ...argv];
}

function postgresIds() {
  const id = (flag) => Number(spawnSync('id', [flag, 'postgres'], { encoding: 'utf8' }).stdout.trim());
  const uid = id('-u');
  const gid = id('-g');
  if (!Number.isInteger(uid) || uid <= 0) throw new Error('running as root, the bench needs a "postgres" user');
  return { uid, gid };
}

function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.unref();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

/**
 * Starts the cluster; resolves { host, port, user, password, socketDir, version, env, url(db), psql(args), stop() }.
 * env is what a child needs to connect (PGPASSWORD, never argv); url(db) has no password in it.
 */
export async function startPgCluster({ log = () => {} } = {}) {
  const bin = findPgBin();
  if (!bin)
    throw new Error(
      'scenarios 7-9 need PostgreSQL server binaries (initdb, postgres, pg_ctl) on PATH, in LEADLEDGER_PG_BIN or in /usr/lib/postgresql/15/bin (Debian: apt-get install postgresql-15)',
    );
  const dir = mkdtempSync(path.join(tmpdir(), 'leadledger-bench-pg-'));
  const data = path.join(dir, 'data');
  const password = randomBytes(12).toString('hex');
  writeFileSync(path.join(dir, 'pw'), `${password}\n`, { mode: 0o600 });
  if (isRoot()) {
    const { uid, gid } = postgresIds();
    chownSync(dir, uid, gid);
    chownSync(path.join(dir, 'pw'), uid, gid);
  }
  chmodSync(dir, 0o700);
  let server;
  const stop = () => {
    if (server && server.exitCode === null && server.signalCode === null) {
      server.kill('SIGQUIT');
      spawnSync('sh', ['-c', `for i in $(seq 50); do kill -0 ${server.pid} 2>/dev/null || exit 0; sleep 0.1; done`]);
    }
    rmSync(dir, { recursive: true, force: true });
  };
  process.once('exit', stop);
  const initArgv = asPostgres([
    path.join(bin, 'initdb'),
    '-D',
    data,
    '-U',
    PG_ADMIN,
    `--pwfile=${path.join(dir, 'pw')}`,
    '--auth-local=trust',
    '--auth-host=scram-sha-256',
    '--no-sync',
    '-E',
    'UTF8',
    '--locale=C.UTF-8',
  ]);
  const init = spawnSync(initArgv[0], initArgv.slice(1), { encoding: 'utf8' });
  if (init.status !== 0) {
    stop();
    throw new Error(`initdb failed (${init.status}): ${init.stderr || init.error?.message}`);
  }
  rmSync(path.join(dir, 'pw'));
  const env = { PGPASSWORD: password, PGHOST: '127.0.0.1', PGUSER: PG_ADMIN };
  for (let attempt = 0; ; attempt++) {
    const port = await freePort();
    const argv = asPostgres(
      [
        path.join(bin, 'postgres'),
        '-D',
        data,
        '-c',
        'listen_addresses=127.0.0.1',
        '-c',
        `port=${port}`,
        '-c',
        `unix_socket_directories=${dir}`,
        '-c',
        'max_connections=40',
        '-c',
        'log_min_messages=warning',
        '-c',
        'logging_collector=off',
      ],
      true,
    );
    let serverLog = '';
    server = track(spawn(argv[0], argv.slice(1), { stdio: ['ignore', 'ignore', 'pipe'] }));
    server.stderr.setEncoding('utf8').on('data', (d) => {
      if (serverLog.length < 20_000) serverLog += d;
    });
    const c = {
      host: '127.0.0.1',
      port,
      user: PG_ADMIN,
      password,
      socketDir: dir,
      env: { ...env, PGPORT: String(port) },
    };
    const version = await waitReady(c, server);
    if (version) {
      log(`  PostgreSQL ${version} on 127.0.0.1:${port} (data in ${dir}; durable defaults: fsync on)`);
      return {
        ...c,
        version,
        stop,
        url: (db) => `postgres://${PG_ADMIN}@127.0.0.1:${port}/${db}`,
        /** psql on a database, ON_ERROR_STOP; sync; resolves stdout. */
        psql: (db, sql) => psqlSync(c, db, sql),
      };
    }
    if (attempt >= 3 || !/could not bind|Address already in use/i.test(serverLog)) {
      stop();
      throw new Error(`PostgreSQL did not start: ${serverLog.trim() || 'no output'}`);
    }
  }
}

function psqlSync(c, db, sql) {
  const r = spawnSync('psql', ['-X', '-q', '-A', '-t', '-v', 'ON_ERROR_STOP=1', '-d', db, '-c', sql], {
    encoding: 'utf8',
    env: { ...process.env, ...c.env },
  });
  if (r.status !== 0) throw new Error(`psql ${db}: ${sql.slice(0, 200)}: ${r.stderr || r.error?.message}`);
  return r.stdout.trim();
}

async function waitReady(c, server) {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    if (server.exitCode !== null || server.signalCode !== null) return undefined;
    const r = spawnSync(
      'psql',
      ['-X', '-A', '-t', '-d', 'postgres', '-c', "SELECT current_setting('server_version')"],
      { encoding: 'utf8', env: { ...process.env, ...c.env } },
    );
    if (r.status === 0) return r.stdout.trim();
    await new Promise((res) => setTimeout(res, 100));
  }
  throw new Error('PostgreSQL did not become ready within 30 s');
}
