// How a postgres:// URL is shown: by the postgres sink (--pg-url) and by the ledger (--ledger postgres://...).
// Neither ever shows a password, whether in the user information or in the query string (?password=,
// ?sslpassword=...).

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
