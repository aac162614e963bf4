// Credentials and lead data must not travel in clear text over a network: plain http is for loopback only. And a
// sink URL may carry a key (old HubSpot set-ups put ?hapikey=... in the URL, webhook URLs often hold one): every
// URL that reaches a message, a report or the ledger is shown through redactUrl, and its query values are secrets.
import { UsageError } from '../../errors.js';

/** True for 127.0.0.0/8, ::1 and localhost. */
export function isLoopbackHost(hostname: string): boolean {
  const h = hostname.replace(/^\[|\]$/g, '').toLowerCase();
  return h === 'localhost' || h === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h);
}

/** Parse a sink URL; refuse anything but https, or http to a loopback host, unless allowInsecure. */
export function checkSinkUrl(raw: string, what: string, allowInsecure = false): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new UsageError(`${what} URL is not a valid URL: ${redactUrl(raw)}`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:')
    throw new UsageError(`${what} URL must be http(s), got ${url.protocol}`);
  if (url.username || url.password)
    throw new UsageError(`${what} URL must not carry credentials; use a header or a token file`);
  if (url.protocol === 'http:' && !isLoopbackHost(url.hostname) && !allowInsecure) {
    throw new UsageError(
      `${what} URL ${url.origin} is plain http to a non-local host; use https, or pass --allow-insecure to send leads unencrypted`,
    );
  }
  return url;
}

/**
 * A URL as it may be shown or stored (summary, --json, runs.args_json, events.sink): user and password, the query
 * string and the fragment masked, the rest as given. The one place where URLs are made safe to print.
 */
export function redactUrl(raw: string | URL): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    // Not a URL (a typo in a flag): mask textually what would be userinfo, query or fragment.
    return String(raw)
      .replace(/^([^/?#]*\/\/)[^/?#]*@/, '$1redacted@')
      .replace(/[?#].*$/s, '?redacted');
  }
  if (url.username || url.password) {
    url.username = 'redacted';
    url.password = '';
  }
  if (url.search) url.search = '?redacted';
  if (url.hash) url.hash = '#redacted';
  // A bare host reads "https://api.hubapi.com", not ".../": the form sink descriptions (the ledger's sink column,
  // which in-doubt recovery matches on) always had.
  return url.pathname === '/' && !url.search && !url.hash ? url.href.slice(0, -1) : url.href;
}

/** The values of a URL's query string, as written and as decoded (a bare `?key` counts): secrets to mask. */
export function urlSecrets(url: URL): string[] {
  const out = new Set<string>();
  for (const pair of url.search.slice(1).split('&')) {
    if (pair === '') continue;
    const eq = pair.indexOf('=');
    const raw = eq < 0 ? pair : pair.slice(eq + 1);
    if (raw === '') continue;
    out.add(raw);
    try {
      out.add(decodeURIComponent(raw.replace(/\+/g, ' ')));
    } catch {
      // A malformed escape: the value as written is all a message could show.
    }
  }
  return [...out];
}

export { redactPgUrl } from '../../pg-url.js';
