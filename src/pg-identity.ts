// What names a PostgreSQL database and role on the server's side, whatever URL reached it (localhost or 127.0.0.1,
// another spelling of the same host, a pooler in front): the cluster (its start time and port), the database's oid and
// the role. The ledger and the postgres sink compare theirs to know whether one transaction can hold both writes.
import type pg from 'pg';

const IDENTITY_SQL = `SELECT concat_ws('/', pg_postmaster_start_time()::text, inet_server_port()::text,
  (SELECT oid::text FROM pg_database WHERE datname = current_database()), current_user::text) AS id`;

/** The identity of the database and role a connection (or a pool's next one) is on. */
export async function databaseIdentity(q: pg.ClientBase | pg.Pool): Promise<string> {
  const r = await q.query<{ id: string }>(IDENTITY_SQL);
  return r.rows[0]!.id;
}
