// The lead as a webhook's default body and a JSONL line hold it: snake_case names, no empty fields, custom fields
// merged in beside the standard ones.
import type { Lead } from '../mapping/types.js';
import type { FieldNotHeld } from './types.js';

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

/** The lead's standard fields by their snake_case names in a body. */
export const SNAKE_FIELDS: Record<string, keyof Omit<Lead, 'custom'>> = {
  email: 'email',
  phone: 'phone',
  name: 'name',
  first_name: 'firstName',
  last_name: 'lastName',
  company: 'company',
  source: 'source',
};

const NONE: readonly FieldNotHeld[] = Object.freeze([]);
const shadowed = new Map<string, FieldNotHeld>();

/**
 * The custom fields snakeLead leaves out: those named like a standard field the lead has (`custom.email` beside the
 * lead's email), which holds that name in the body. `where` names the body ("the webhook body", "the JSONL line").
 */
export function shadowedCustomFields(lead: Lead, where: string): readonly FieldNotHeld[] {
  if (!lead.custom) return NONE;
  let out: FieldNotHeld[] | undefined;
  for (const [k, v] of Object.entries(lead.custom)) {
    const std = SNAKE_FIELDS[k];
    if (std === undefined || v === '' || !lead[std]) continue;
    const id = `${where}\0${k}`;
    let f = shadowed.get(id);
    if (!f) {
      f = { field: `custom.${k}`, why: `${where} holds the lead's ${std} as ${k}: rename the custom field` };
      shadowed.set(id, f);
    }
    (out ??= []).push(f);
  }
  return out ?? NONE;
}
