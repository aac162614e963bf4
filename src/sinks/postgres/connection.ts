// Where the postgres sink connects, and with which password. A password is a secret by reference, like every token
// of leadledger: never in argv (every user of the machine reads it in `ps`), so --pg-url carrying one is refused.
// It comes, in libpq's order, from a URL held in the environment (LEADLEDGER_PG_URL, DATABASE_URL), PGPASSWORD, or
// the password file (~/.pgpass, read in ./pgpass.ts). The URL as shown or stored (messages, --json, the ledger's
// runs and its sink column) never holds it.
import { userInfo } from 'node:os';
import type { ClientConfig } from 'pg';
import { parse, type ConnectionOptions } from 'pg-connection-string';
import { UsageError } from '../../errors.js';
import { passwordInArgv, pgUrlHoldsPassword } from '../../pg-url.js';
import { passwordFromPgpass, type PgpassTarget } from './pgpass.js';
import { redactPgUrl } from '../transport/secure-url.js';

/** The environment variables, in order, that may hold the whole URL (with its password) when --pg-url is absent. */
export const PG_URL_ENV = ['LEADLEDGER_PG_URL', 'DATABASE_URL'] as const;

/** A resolved connection: the driver's settings, what may be shown of it, and where its password came from. */
export interface PgConnection {
  /** For pg.Pool: host, port, user, database, TLS and the URL's other settings; password set when one was found. */
  config: ClientConfig;
  target: PgpassTarget;
  /** postgres://user@host:port/database: no password, no query string. */
  display: string;
  /** Where the password came from, for messages ("PGPASSWORD", "~/.pgpass"), or undefined when none was found. */
  passwordFrom?: string;
  /** Why a password file was passed over (its mode), when it was. */
  pgpassIgnored?: string;
  pgpassFile: string;
  /** Values to mask in every message (the password). */
  secrets: string[];
}

/** The URL to use and where it came from: --pg-url (no password allowed), else the first variable of PG_URL_ENV. */
export function chooseUrl(
  flag: string | undefined,
  flagFrom: string | undefined,
  env: Record<string, string | undefined>,
): { url: string; from?: string } {
  if (flag !== undefined && flag !== '') return { url: flag, from: flagFrom };
  for (const name of PG_URL_ENV) {
    const v = env[name];
    if (v) return { url: v, from: name };
  }
  throw new UsageError(
    'the postgres sink needs --pg-url postgres://user@host:port/database (or the URL in LEADLEDGER_PG_URL or DATABASE_URL)',
  );
}

/**
 * Resolves the connection. `from` names the environment variable the URL came from; without it the URL came from
 * argv, and a password in it (user:password@, ?password=) is a UsageError that does not repeat the URL.
 */
export function resolvePgConnection(
  raw: string,
  from: string | undefined,
  env: Record<string, string | undefined>,
): PgConnection {
  const where = from ?? '--pg-url';
  if (!/^postgres(ql)?:\/\//i.test(raw))
    throw new UsageError(`${where} must be a postgres://user@host:port/database URL, got ${redactPgUrl(raw)}`);
  let parsed: ConnectionOptions;
  try {
    parsed = parse(raw);
  } catch {
    throw new UsageError(`${where} is not a valid URL: ${redactPgUrl(raw)}`);
  }
  if (!from && (parsed.password || pgUrlHoldsPassword(raw)))
    throw passwordInArgv('--pg-url', 'LEADLEDGER_PG_URL or DATABASE_URL');

  const user = parsed.user || env.PGUSER || userInfo().username;
  const host = parsed.host || env.PGHOST || 'localhost';
  const port = Number(parsed.port || env.PGPORT || 5432);
  if (!Number.isInteger(port) || port <= 0 || port > 65535)
    throw new UsageError(`${where}: port ${parsed.port || env.PGPORT} is not a port number`);
  const database = parsed.database || env.PGDATABASE || user;
  const target: PgpassTarget = { host, port, database, user };

  let password: string | undefined;
  let passwordFrom: string | undefined;
  const pgpass = passwordFromPgpass(target, env);
  if (parsed.password) [password, passwordFrom] = [parsed.password, `the URL in ${from}`];
  else if (env.PGPASSWORD !== undefined) [password, passwordFrom] = [env.PGPASSWORD, 'PGPASSWORD'];
  else if (pgpass.password !== undefined) [password, passwordFrom] = [pgpass.password, pgpass.file];

  // The URL's other settings (sslmode and its files, application_name, options) pass to the driver as parsed.
  const rest: Record<string, unknown> = { ...parsed };
  for (const k of ['user', 'password', 'host', 'port', 'database']) delete rest[k];
  const config: ClientConfig = {
    ...(rest as ClientConfig),
    host,
    port,
    user,
    database,
    application_name: typeof parsed.application_name === 'string' ? parsed.application_name : 'leadledger',
    ...(password !== undefined ? { password } : {}),
  };
  return {
    config,
    target,
    display: displayUrl(target),
    passwordFrom,
    pgpassIgnored: pgpass.ignored,
    pgpassFile: pgpass.file,
    secrets: password ? [password, encodeURIComponent(password)] : [],
  };
}

/** postgres://user@host:port/database, a socket directory percent-encoded as libpq writes it. */
export function displayUrl(t: PgpassTarget): string {
  const host = t.host.startsWith('/') ? encodeURIComponent(t.host) : t.host.includes(':') ? `[${t.host}]` : t.host;
  return `postgres://${encodeURIComponent(t.user)}@${host}:${t.port}/${encodeURIComponent(t.database)}`;
}
