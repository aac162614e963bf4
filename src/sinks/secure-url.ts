// Credentials and lead data must not travel in clear text over a network: plain http is for loopback only.
import { UsageError } from '../errors.js';

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
    throw new UsageError(`${what} URL is not a valid URL: ${raw}`);
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
