// A lead as a record of Zoho CRM's Leads module: standard fields by their API names (Last_Name and Company are
// required by Leads' standard layout), the source and custom fields where the config names a field for them.
import type { Lead } from '../../mapping/types.js';
import { nameParts } from '../hubspot/sink.js';
import type { FieldNotHeld } from '../types.js';
import type { ZohoConfig } from './config.js';

/** The value sent for a required field the lead lacks, unless the config says otherwise. */
export const NOT_PROVIDED = '[not provided]';

/** A record, or why it cannot be sent (missingRequired: fail), and the lead's fields it has no place for. */
export interface ZohoRecord {
  record?: Record<string, string>;
  refused?: string;
  notHeld: FieldNotHeld[];
}

/** The Leads record of a lead. */
export function zohoRecord(lead: Lead, config: ZohoConfig = {}): ZohoRecord {
  const r: Record<string, string> = {};
  const notHeld: FieldNotHeld[] = [];
  const set = (k: string, v: string | undefined): void => {
    if (v !== undefined && v !== '' && r[k] === undefined) r[k] = v;
  };
  const { first, last, nameHeld } = nameParts(lead);
  if (!nameHeld) notHeld.push(NAME_NOT_HELD);
  set('Email', lead.email);
  set('First_Name', first);
  set('Last_Name', last);
  set('Phone', lead.phone);
  set('Company', lead.company);
  if (lead.source) {
    if (config.sourceField) set(config.sourceField, lead.source);
    else notHeld.push(SOURCE_NOT_HELD);
  }
  for (const [name, value] of Object.entries(lead.custom ?? {})) {
    if (value === '') continue;
    const field = config.fields?.[name];
    if (field !== undefined && r[field] === undefined) r[field] = value;
    else notHeld.push(customNotHeld(name));
  }
  const missing = ['Last_Name', 'Company'].filter((k) => r[k] === undefined);
  if (missing.length && config.missingRequired === 'fail')
    return {
      refused: `Zoho CRM requires ${missing.join(' and ')} on a lead, and this one has no ${missing.map((m) => (m === 'Last_Name' ? 'last name' : 'company')).join(' or ')} (sinks.zoho.missingRequired is fail)`,
      notHeld,
    };
  if (r.Last_Name === undefined) r.Last_Name = config.defaults?.lastName ?? NOT_PROVIDED;
  if (r.Company === undefined) r.Company = config.defaults?.company ?? NOT_PROVIDED;
  return { record: r, notHeld };
}

const NAME_NOT_HELD: FieldNotHeld = {
  field: 'name',
  why: 'Zoho CRM has no full-name field, and this one is not the first name followed by the last name',
};
const SOURCE_NOT_HELD: FieldNotHeld = {
  field: 'source',
  why: 'name the Leads field that receives it in sinks.zoho.sourceField (Lead_Source, say)',
};
const customs = new Map<string, FieldNotHeld>();
function customNotHeld(name: string): FieldNotHeld {
  let f = customs.get(name);
  if (!f) {
    f = { field: `custom.${name}`, why: 'map it to a Leads field (its API name) in sinks.zoho.fields' };
    customs.set(name, f);
  }
  return f;
}
