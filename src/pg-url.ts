// How a postgres:// URL is shown: by the postgres sink (--pg-url) and by the ledger (--ledger postgres://...).
// Neither ever shows a password, whether in the user information or in the query string (?password=,
// ?sslpassword=...). Neither takes one from the command line either: command lines are visible to every user of the
// machine (ps, /proc), so a URL in argv that holds a password is refused.
import { UsageError } from './errors.js';

/** Query parameters that hold a secret: refused in argv like the URL's password. */
const SECRET_PARAMS = /^(password|sslpassword)$/i;

/**
 * Whether a postgres URL holds a password: in its user information (user:password@), or as ?password= or
 * ?sslpassword=.
 */
export function pgUrlHoldsPassword(raw: string): boolean {
  // Read loosely, as redactPgUrl reads it: up to the last @ is user information (a password may hold a / or @).
  const info = /^[a-z][a-z0-9+.-]*:\/\/(.*)@/is.exec(raw)?.[1];
  if (info !== undefined && !/[?#]/.test(info) && info.includes(':')) return true;
  try {
    if (new URL(raw).password) return true;
  } catch {
    // Not a URL a parser reads (an unescaped character in it): the pattern above is what tells.
  }
  const q = raw.indexOf('?');
  if (q < 0) return false;
  return [...new URLSearchParams(raw.slice(q + 1)).keys()].some((k) => SECRET_PARAMS.test(k));
}

/**
 * The refusal of a password given in argv by `flag`; `envVar`, where the whole URL may be kept instead. Its message
 * never repeats the URL.
 */
export function passwordInArgv(flag: string, envVar?: string): UsageError {
  return new UsageError(
    `${flag} must not hold a password (command lines are visible to every user of the machine): ` +
      `set PGPASSWORD, put it in ~/.pgpass (host:port:database:user:password, mode 0600)` +
      (envVar ? `, or put the whole URL in ${envVar}` : ''),
  );
}

/**
 * A postgres URL as it may be shown or stored: the user kept, a password and the query string masked. Read loosely
 * (a password may hold an unescaped @, / or ?): everything up to the last @ is user information, of which only what
 * comes before a colon is shown.
 */
export function redactPgUrl(raw: string): string {
  const m = /^([a-z][a-z0-9+.-]*:\/\/)(.*)$/is.exec(raw);
  if (!m) return '[redacted]';
  const body = m[2]!;
  const at = body.lastIndexOf('@');
  let shown = '';
  let rest = body;
  if (at >= 0) {
    const info = body.slice(0, at);
    const user = info.split(/[:?#]/)[0]!;
    shown = `${/[/]/.test(user) ? '' : user}${info.length > user.length ? ':redacted' : ''}@`;
    rest = body.slice(at + 1);
  }
  const q = rest.search(/[?#]/);
  const masked = q >= 0 || /[?#]/.test(body.slice(0, Math.max(at, 0)));
  return `${m[1]}${shown}${q >= 0 ? rest.slice(0, q) : rest}${masked ? '?redacted' : ''}`;
}

/**
 * A ledger's URL as messages, reports and --json name it: the password masked, and of the query string only the
 * ledger's own ?schema= kept. One that cannot be parsed is shown as redactPgUrl shows it.
 */
export function shownLedgerUrl(raw: string): string {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    return redactPgUrl(raw);
  }
  if (u.password) u.password = '***';
  const schema = u.searchParams.get('schema');
  u.search = '';
  u.hash = '';
  if (schema !== null) u.searchParams.set('schema', schema);
  return u.toString();
}
