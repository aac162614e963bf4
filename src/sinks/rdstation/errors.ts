// Reading RD Station Marketing's error bodies, which come in several shapes (the ruby client's Error::Format):
// {"errors": [{error_type, error_message, path}]}, {"errors": {error_type, error_message}}, {"errors": {"<field>":
// [{error_type, error_message}]}}, and a flat {error_type, error_message} from the token endpoint.
import { parseRetryAfter, type HttpResponse } from '../transport/http.js';

export interface RdErrorItem {
  type?: string;
  message?: string;
  path?: string;
}

/** Every error a body holds, in order; [] for a body that is not JSON or holds none. */
export function parseRdErrors(text: string): RdErrorItem[] {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return [];
  }
  const item = (v: unknown, path?: string): RdErrorItem | undefined => {
    if (typeof v !== 'object' || v === null) return undefined;
    const o = v as Record<string, unknown>;
    const out: RdErrorItem = {};
    if (typeof o.error_type === 'string') out.type = o.error_type;
    if (typeof o.error_message === 'string') out.message = o.error_message;
    if (typeof o.path === 'string') out.path = o.path;
    else if (path !== undefined) out.path = path;
    return out.type !== undefined || out.message !== undefined ? out : undefined;
  };
  const list = (v: unknown): RdErrorItem[] => {
    if (Array.isArray(v)) return v.map((x) => item(x)).filter((x): x is RdErrorItem => !!x);
    if (typeof v !== 'object' || v === null) return [];
    const single = item(v);
    if (single) return [single];
    // A hash of arrays: field → its errors.
    return Object.entries(v as Record<string, unknown>).flatMap(([field, errs]) =>
      (Array.isArray(errs) ? errs : [errs]).map((x) => item(x, field)).filter((x): x is RdErrorItem => !!x),
    );
  };
  if (Array.isArray(body)) return list(body);
  if (typeof body === 'object' && body !== null && 'errors' in body) return list(body.errors);
  return list(body);
}

/** "INVALID_FIELDS: The field x does not exist. ($.payload.x); ..." or "HTTP 400" when the body says nothing. */
export function describeRdErrors(items: RdErrorItem[], status: number): string {
  if (!items.length) return `HTTP ${status}`;
  return items
    .map((e) => `${e.type ?? `HTTP ${status}`}${e.message ? `: ${e.message}` : ''}${e.path ? ` (${e.path})` : ''}`)
    .join('; ');
}

/** Longer than this, a 429's wait is a quota (a contact's 24 h budget), not a burst to wait out. */
const QUOTA_WAIT_MS = 10 * 60_000;

/**
 * Whether a 429 is a contact's 24-hours budget (24 conversions, or 24 updates, per contact) rather than the
 * account's per-minute window: its Retry-After is hours away, or its message names the contact. Retrying it would
 * only hold every other lead of the run.
 */
export function isContactQuota(res: HttpResponse, now: number = Date.now()): boolean {
  if (res.status !== 429) return false;
  const wait = parseRetryAfter(res.headers['retry-after'], now);
  if (wait !== undefined && wait > QUOTA_WAIT_MS) return true;
  return parseRdErrors(res.text).some((e) => /\bcontact\b|\bcontato\b|\blead\b/i.test(e.message ?? ''));
}
