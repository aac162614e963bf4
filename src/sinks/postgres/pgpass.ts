// The password file of libpq (https://www.postgresql.org/docs/15/libpq-pgpass.html), read as psql reads it. The pg
// driver's own reading of it (the pgpass package) is deprecated and goes in pg 9, writes its warnings straight to
// stderr, takes only `#` after a space as a comment and ignores the Unix-socket rule; leadledger reads it here:
//
// - the file is PGPASSFILE, else ~/.pgpass (HOME);
// - one entry a line, hostname:port:database:username:password; each of the first four may be * (anything);
//   `\:` and `\\` stand for : and \; a line starting with # is a comment; the first line that matches wins;
// - the host matched is the host connected to; a Unix socket in the default directory matches `localhost`;
// - a file that is not a regular file, or that group or others may read (mode wider than 0600), is ignored.
import { readFileSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';

/** What a connection is made to, as the password file matches it. */
export interface PgpassTarget {
  host: string;
  port: number;
  database: string;
  user: string;
}

/** The password of the first matching entry; `ignored` says why the file was not read, when it exists but was not. */
export interface PgpassResult {
  file: string;
  password?: string;
  ignored?: string;
}

/** Socket directories that count as libpq's default (Debian's, and the upstream default). */
const DEFAULT_SOCKET_DIRS = new Set(['/var/run/postgresql', '/run/postgresql', '/tmp']);

/** The password file's path for this environment. */
export function pgpassFile(env: Record<string, string | undefined>): string {
  if (env.PGPASSFILE) return env.PGPASSFILE;
  return join(env.HOME || homedir(), '.pgpass');
}

/**
 * Splits one line into its fields, undoing \: and \\; undefined for a comment, a blank or a line of fewer than five
 * fields. As in libpq, the password too ends at an unescaped colon (what follows it is ignored).
 */
export function parsePgpassLine(line: string): string[] | undefined {
  if (line === '' || line.startsWith('#')) return undefined;
  const fields: string[] = [];
  let cur = '';
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (c === '\\' && i + 1 < line.length) cur += line[++i];
    else if (c === ':') {
      fields.push(cur);
      cur = '';
    } else cur += c;
  }
  fields.push(cur);
  return fields.length >= 5 ? fields.slice(0, 5) : undefined;
}

/** Looks the target up in the password file of `env`. */
export function passwordFromPgpass(target: PgpassTarget, env: Record<string, string | undefined>): PgpassResult {
  const file = pgpassFile(env);
  let text: string;
  try {
    const st = statSync(file);
    if (!st.isFile()) return { file, ignored: `${file} is not a regular file` };
    if (process.platform !== 'win32' && (st.mode & 0o077) !== 0)
      return {
        file,
        ignored: `${file} has group or world access (mode ${(st.mode & 0o777).toString(8).padStart(4, '0')}); libpq and leadledger ignore it until it is 0600 or less`,
      };
    text = readFileSync(file, 'utf8');
  } catch {
    return { file };
  }
  const host = target.host.startsWith('/')
    ? DEFAULT_SOCKET_DIRS.has(target.host.replace(/\/+$/, ''))
      ? 'localhost'
      : target.host
    : target.host;
  const want = [host, String(target.port), target.database, target.user];
  for (const raw of text.split('\n')) {
    const fields = parsePgpassLine(raw.replace(/\r$/, ''));
    if (!fields) continue;
    if (want.every((w, i) => fields[i] === '*' || fields[i] === w)) return { file, password: fields[4] };
  }
  return { file };
}
