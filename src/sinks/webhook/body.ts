// What a webhook receives: a default body, or a template from the config with {{...}} placeholders.
import type { Lead } from '../../mapping/types.js';
import { SNAKE_FIELDS, snakeLead } from '../lead-body.js';
import type { FieldNotHeld } from '../types.js';
import { PLACEHOLDER } from './placeholders.js';

const WHOLE = /^\{\{\s*([\w.]+)\s*\}\}$/;

/**
 * Default body, snake_case and without empty fields:
 *   {"event_key_hash": "<downstream key>", "occurred_at": "<event time>", "lead": {"email", "phone", "name",
 *    "first_name", "last_name", "company", "source", ...custom}}
 * The event key itself is never sent, only its hash (it may hold PII for content keys). occurred_at is there when
 * the input gives the event's time.
 */
export function buildDefaultBody(downstreamKey: string, lead: Lead, occurredAt?: string): Record<string, unknown> {
  return occurredAt === undefined
    ? { event_key_hash: downstreamKey, lead: snakeLead(lead) }
    : { event_key_hash: downstreamKey, occurred_at: occurredAt, lead: snakeLead(lead) };
}

/** Which of a lead's fields a webhook template places somewhere. */
export interface TemplateUse {
  /** {{lead}}: all of them. */
  all: boolean;
  /** {{lead.custom}}: every custom field. */
  allCustom: boolean;
  /** Standard fields by the lead's names (firstName, ...). */
  fields: Set<string>;
  /** Custom fields by name. */
  custom: Set<string>;
}

/** The fields a template's placeholders name (see renderTemplate for the names). */
export function templateUse(template: unknown): TemplateUse {
  const use: TemplateUse = { all: false, allCustom: false, fields: new Set(), custom: new Set() };
  const note = (name: string): void => {
    if (name === 'lead') use.all = true;
    else if (name === 'lead.custom') use.allCustom = true;
    else if (name.startsWith('lead.custom.')) use.custom.add(name.slice('lead.custom.'.length));
    else if (name.startsWith('lead.')) {
      const rest = name.slice('lead.'.length);
      const std = SNAKE_FIELDS[rest] ?? (rest === 'firstName' || rest === 'lastName' ? rest : undefined);
      // {{lead.plan}}: a custom field by its own name (snakeLead merges them in).
      if (std !== undefined) use.fields.add(std);
      else use.custom.add(rest);
    }
  };
  const walk = (v: unknown): void => {
    if (typeof v === 'string') for (const m of v.matchAll(PLACEHOLDER)) note(m[1]!);
    else if (Array.isArray(v)) v.forEach(walk);
    else if (typeof v === 'object' && v !== null) Object.values(v).forEach(walk);
  };
  walk(template);
  return use;
}

const NONE: readonly FieldNotHeld[] = Object.freeze([]);
const LEAD_FIELDS = ['email', 'phone', 'name', 'firstName', 'lastName', 'company', 'source'] as const;
const unused = new Map<string, FieldNotHeld>();

/** The fields of a lead that a template does not place anywhere: the receiver never sees them. */
export function fieldsOutsideTemplate(lead: Lead, use: TemplateUse): readonly FieldNotHeld[] {
  if (use.all) return NONE;
  let out: FieldNotHeld[] | undefined;
  const miss = (field: string): void => {
    let f = unused.get(field);
    if (!f) {
      f = { field, why: 'the webhook template has no placeholder for it' };
      unused.set(field, f);
    }
    (out ??= []).push(f);
  };
  for (const f of LEAD_FIELDS) if (lead[f] && !use.fields.has(f)) miss(f);
  if (lead.custom && !use.allCustom)
    for (const [k, v] of Object.entries(lead.custom)) if (v !== '' && !use.custom.has(k)) miss(`custom.${k}`);
  return out ?? NONE;
}

/**
 * Fill a template: a string that is exactly one placeholder becomes that value (left out of objects, null in
 * arrays, when missing); placeholders inside longer strings are replaced by the value or ''. Known names:
 * downstream_key, occurred_at (the event's time), lead (the default body's lead), lead.email, lead.phone,
 * lead.name, lead.first_name (lead.firstName), lead.last_name (lead.lastName), lead.company, lead.source,
 * lead.custom (all of them), lead.custom.<field>, and lead.<custom field>.
 */
export function renderTemplate(template: unknown, downstreamKey: string, lead: Lead, occurredAt?: string): unknown {
  const snake = snakeLead(lead);
  const ctx: Record<string, unknown> = {
    downstream_key: downstreamKey,
    event_key_hash: downstreamKey,
    ...(occurredAt !== undefined ? { occurred_at: occurredAt } : {}),
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
