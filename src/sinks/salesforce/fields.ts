// A lead as a Salesforce Lead record: FirstName, LastName, Company, Email, Phone, LeadSource and the configured custom
// fields. LastName and Company are required on Lead: a lead without them gets the placeholder, or fails alone.
import type { Lead } from '../../mapping/types.js';
import type { FieldNotHeld } from '../types.js';
import type { SalesforceConfig } from './config.js';

export const DEFAULT_PLACEHOLDER = '[not provided]';

/** The lead's Lead fields, or why it cannot be sent (a required field missing, by config). */
export type LeadRecord = { ok: true; fields: Record<string, string> } | { ok: false; reason: string };

/** first and last name from the lead: its own, else its full name split at the last space. */
export function splitName(lead: Lead): { first?: string; last?: string } {
  const first = lead.firstName?.trim() || undefined;
  const last = lead.lastName?.trim() || undefined;
  if (last) return { ...(first ? { first } : {}), last };
  const full = lead.name?.trim();
  if (!full) return first ? { first } : {};
  const at = full.lastIndexOf(' ');
  if (at < 0) return first ? { first, last: full } : { last: full };
  return { first: first ?? full.slice(0, at), last: full.slice(at + 1) };
}

/** The Lead record of a lead (without the external id), by the config's rules. */
export function salesforceLead(lead: Lead, config: SalesforceConfig = {}): LeadRecord {
  const { first, last } = splitName(lead);
  const placeholder = config.placeholder ?? DEFAULT_PLACEHOLDER;
  const missing = [!last ? 'LastName' : '', !lead.company ? 'Company' : ''].filter(Boolean);
  if (missing.length && config.missingRequired === 'fail')
    return {
      ok: false,
      reason: `Salesforce requires ${missing.join(' and ')} on a Lead, and this lead has no ${missing.map((m) => (m === 'LastName' ? 'last name' : 'company')).join(' or ')} (sinks.salesforce.missingRequired is "fail")`,
    };
  const fields: Record<string, string> = {
    LastName: (last ?? placeholder).slice(0, 80),
    Company: (lead.company ?? placeholder).slice(0, 255),
  };
  if (first) fields.FirstName = first.slice(0, 40);
  if (lead.email) fields.Email = lead.email;
  if (lead.phone) fields.Phone = lead.phone;
  const sourceField = config.sourceField === undefined ? 'LeadSource' : config.sourceField;
  if (lead.source && sourceField) fields[sourceField] = lead.source;
  for (const [name, value] of Object.entries(lead.custom ?? {})) {
    const to = config.fields?.[name];
    if (to) fields[to] = value;
  }
  return { ok: true, fields };
}

const notHeldCache = new Map<string, FieldNotHeld>();
function notHeld(field: string, why: string): FieldNotHeld {
  const k = `${field}\u0000${why}`;
  let v = notHeldCache.get(k);
  if (!v) notHeldCache.set(k, (v = { field, why }));
  return v;
}

/** The lead's fields a Lead record gets no place for, by this config. */
export function salesforceNotHeld(lead: Lead, config: SalesforceConfig = {}): FieldNotHeld[] {
  const out: FieldNotHeld[] = [];
  if (lead.source && config.sourceField === false) out.push(notHeld('source', 'sinks.salesforce.sourceField is false'));
  for (const name of Object.keys(lead.custom ?? {}))
    if (!config.fields?.[name]) out.push(notHeld(`custom.${name}`, `no Lead field for it in sinks.salesforce.fields`));
  return out;
}
