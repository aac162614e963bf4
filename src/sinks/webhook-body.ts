// What a webhook receives: a default body, or a template from the config with {{...}} placeholders.
import type { Lead } from '../mapping/types.js';

/**
 * Default body, snake_case and without empty fields:
 *   {"event_key_hash": "<downstream key>", "lead": {"email", "phone", "name", "first_name", "last_name", "company",
 *    "source", ...custom}}
 * The event key itself is never sent, only its hash (it may hold PII for content keys).
 */
export function buildDefaultBody(downstreamKey: string, lead: Lead): Record<string, unknown> {
  return { event_key_hash: downstreamKey, lead: snakeLead(lead) };
}

/** The lead in snake_case without empty fields; custom fields are merged in as they are (standard fields win). */
export function snakeLead(lead: Lead): Record<string, string> {
  const out: Record<string, string> = {};
  if (lead.custom) for (const [k, v] of Object.entries(lead.custom)) if (v !== '') out[k] = v;
  // Field by field rather than from a table of pairs: a push to a file calls this once per lead.
  if (lead.email) out.email = lead.email;
  if (lead.phone) out.phone = lead.phone;
  if (lead.name) out.name = lead.name;
  if (lead.firstName) out.first_name = lead.firstName;
  if (lead.lastName) out.last_name = lead.lastName;
  if (lead.company) out.company = lead.company;
  if (lead.source) out.source = lead.source;
  return out;
}

const PLACEHOLDER = /\{\{\s*([\w.]+)\s*\}\}/g;
const WHOLE = /^\{\{\s*([\w.]+)\s*\}\}$/;

/**
 * Fill a template: a string that is exactly one placeholder becomes that value (left out of objects, null in
 * arrays, when missing); placeholders inside longer strings are replaced by the value or ''. Known names:
 * downstream_key, lead.email, lead.phone, lead.name, lead.first_name (lead.firstName), lead.last_name
 * (lead.lastName), lead.company, lead.source, lead.custom.<field>, and lead.<custom field>.
 */
export function renderTemplate(template: unknown, downstreamKey: string, lead: Lead): unknown {
  const snake = snakeLead(lead);
  const ctx: Record<string, unknown> = {
    downstream_key: downstreamKey,
    event_key_hash: downstreamKey,
    lead: {
      ...snake,
      ...(lead.firstName ? { firstName: lead.firstName } : {}),
      ...(lead.lastName ? { lastName: lead.lastName } : {}),
      custom: { ...(lead.custom ?? {}) },
    },
  };
  const lookup = (path: string): unknown => {
    let cur: unknown = ctx;
    for (const part of path.split('.')) {
      if (typeof cur !== 'object' || cur === null) return undefined;
      cur = (cur as Record<string, unknown>)[part];
    }
    return cur === '' ? undefined : cur;
  };
  const MISSING = Symbol('missing');
  const walk = (v: unknown): unknown => {
    if (typeof v === 'string') {
      const whole = WHOLE.exec(v);
      if (whole?.[1]) return lookup(whole[1]) ?? MISSING;
      return v.replace(PLACEHOLDER, (_m, p: string) => {
        const found = lookup(p);
        return found === undefined || typeof found === 'object' ? '' : String(found);
      });
    }
    if (Array.isArray(v))
      return v.map((x) => {
        const r = walk(x);
        return r === MISSING ? null : r;
      });
    if (typeof v === 'object' && v !== null) {
      const out: Record<string, unknown> = {};
      for (const [k, x] of Object.entries(v)) {
        const r = walk(x);
        if (r !== MISSING) out[k] = r;
      }
      return out;
    }
    return v;
  };
  const r = walk(template);
  return r === MISSING ? null : r;
}
