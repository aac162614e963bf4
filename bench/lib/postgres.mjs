// A throw-away PostgreSQL 15 cluster for bench scenarios 7-9, started as the test harness starts its own, by the same
// code (test/helpers/pg-server.mjs): initdb into a temporary directory as the `postgres` user when we are root, the
// server on 127.0.0.1 at a free port with password authentication over TCP (trust only on its private Unix socket),
// stopped and removed when the bench ends (and told to stop should the bench die: a parent-death signal).
//
// Unlike the tests' cluster it keeps PostgreSQL's durable defaults (fsync, full_page_writes, synchronous_commit on)
// and the default shared_buffers (128MB): the bench measures what a user's server does. The password never goes into
// an argv: children get it in PGPASSWORD.
import { spawnSync } from 'node:child_process';
import { findPgBin, PG_ADMIN, startPgServer } from '../../test/helpers/pg-server.mjs';
import { track } from './measure.mjs';

export { findPgBin, PG_ADMIN };

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
  const server = await startPgServer({
    bin,
    prefix: 'leadledger-bench-pg-',
    settings: ['max_connections=40'],
    who: 'the bench scenarios 7-9',
    onServer: track,
  });
  const env = { PGPASSWORD: server.password, PGHOST: '127.0.0.1', PGUSER: PG_ADMIN, PGPORT: String(server.port) };
  const c = { ...server, env };
  log(
    `  PostgreSQL ${server.version} on 127.0.0.1:${server.port} (data in ${server.socketDir}; durable defaults: fsync on)`,
  );
  return {
    ...c,
    url: (db) => `postgres://${PG_ADMIN}@127.0.0.1:${server.port}/${db}`,
    /** psql on a database, ON_ERROR_STOP; sync; resolves stdout. */
    psql: (db, sql) => psqlSync(c, db, sql),
  };
}

function psqlSync(c, db, sql) {
  const r = spawnSync('psql', ['-X', '-q', '-A', '-t', '-v', 'ON_ERROR_STOP=1', '-d', db, '-c', sql], {
    encoding: 'utf8',
    env: { ...process.env, ...c.env },
  });
  if (r.status !== 0) throw new Error(`psql ${db}: ${sql.slice(0, 200)}: ${r.stderr || r.error?.message}`);
  return r.stdout.trim();
}
