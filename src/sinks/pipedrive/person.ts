// A lead as a Pipedrive person (API v2 PersonRequestBody: name, emails and phones as [{value, primary, label}],
// owner_id, visible_to, custom_fields keyed by the field's 40-character key) and as the title of a Pipedrive lead.
import type { Lead } from '../../mapping/types.js';
import type { FieldNotHeld } from '../types.js';

/** How lead fields land in Pipedrive: labels, ownership, and which custom field receives what. */
export interface PipedriveFieldMap {
  /** Label of the email (default 'work'). */
  emailLabel?: string;
  /** Label of the phone (default 'mobile'). */
  phoneLabel?: string;
  /** owner_id of the persons created. */
  ownerId?: number;
  /** visible_to of the persons created. */
  visibleTo?: number;
  /** Key of the person custom field that receives lead.source. */
  sourceField?: string;
  /** Key of the person custom field that receives lead.company (Pipedrive links organizations by id only). */
  companyField?: string;
  /** The lead's custom fields (by the name the config gives them) to person custom field keys. */
  customFields?: Record<string, string>;
  /** The lead title template when a Pipedrive lead is created with each person ({name}, {email}, {source}...). */
  leadTitle?: string;
}

/** The body of POST /api/v2/persons (and, without emails, of PATCH /api/v2/persons/{id}). */
export interface PersonBody {
  name: string;
  emails?: Array<{ value: string; primary: boolean; label: string }>;
  phones?: Array<{ value: string; primary: boolean; label: string }>;
  owner_id?: number;
  visible_to?: number;
  custom_fields?: Record<string, string>;
}

/**
 * The person's name: the lead's full name, or its first and last names; a full name that does not hold the last
 * name given beside it (an export's "Nome" and "Sobrenome") is the first name. A lead without any name is named by
 * its email (or phone): Pipedrive refuses a person without a name.
 */
export function personName(lead: Lead): string {
  const full = lead.name?.trim();
  const last = lead.lastName?.trim();
  const first = lead.firstName?.trim();
  if (full) {
    if (last && !full.toLowerCase().includes(last.toLowerCase())) return `${full} ${last}`;
    return full;
  }
  const spelled = [first, last].filter(Boolean).join(' ');
  return spelled || lead.email || lead.phone || 'Unnamed lead';
}

/** A lead as a person body, and the fields of the lead the person has no place for. */
export function pipedrivePerson(
  lead: Lead,
  map: PipedriveFieldMap = {},
): { body: PersonBody; notHeld: FieldNotHeld[] } {
  const body: PersonBody = { name: personName(lead) };
  const notHeld: FieldNotHeld[] = [];
  if (lead.email) body.emails = [{ value: lead.email, primary: true, label: map.emailLabel ?? 'work' }];
  if (lead.phone) body.phones = [{ value: lead.phone, primary: true, label: map.phoneLabel ?? 'mobile' }];
  if (map.ownerId !== undefined) body.owner_id = map.ownerId;
  if (map.visibleTo !== undefined) body.visible_to = map.visibleTo;
  const custom: Record<string, string> = {};
  if (lead.source) {
    if (map.sourceField) custom[map.sourceField] = lead.source;
    else if (!map.leadTitle?.includes('{source}')) notHeld.push(SOURCE_NOT_HELD);
  }
  if (lead.company) {
    if (map.companyField) custom[map.companyField] = lead.company;
    else if (!map.leadTitle?.includes('{company}')) notHeld.push(COMPANY_NOT_HELD);
  }
  for (const [name, value] of Object.entries(lead.custom ?? {})) {
    if (value === '') continue;
    const key = map.customFields?.[name];
    if (key !== undefined && custom[key] === undefined) custom[key] = value;
    else notHeld.push(customNotHeld(name));
  }
  if (Object.keys(custom).length) body.custom_fields = custom;
  return { body, notHeld };
}

/** The lead title from its template: {name}, {email}, {phone}, {company}, {source}; empty brackets left out. */
export function leadTitle(template: string, lead: Lead): string {
  const values: Record<string, string | undefined> = {
    name: personName(lead),
    email: lead.email,
    phone: lead.phone,
    company: lead.company,
    source: lead.source,
  };
  const filled = template
    .replace(/\{(\w+)\}/g, (_, k: string) => values[k] ?? '')
    .replace(/\(\s*\)|\[\s*\]/g, '')
    .replace(/\s+/g, ' ')
    .trim()
    .replace(/[\s\-–—:|,]+$/, '');
  return filled || personName(lead);
}

const SOURCE_NOT_HELD: FieldNotHeld = {
  field: 'source',
  why: 'Pipedrive has no standard person field for it: name a person custom field in sinks.pipedrive.sourceField',
};
const COMPANY_NOT_HELD: FieldNotHeld = {
  field: 'company',
  why: 'Pipedrive links a person to an organization by id only: name a person custom field in sinks.pipedrive.companyField',
};
const customs = new Map<string, FieldNotHeld>();
function customNotHeld(name: string): FieldNotHeld {
  let f = customs.get(name);
  if (!f) {
    f = {
      field: `custom.${name}`,
      why: 'Pipedrive names custom fields by a 40-character key: map it in sinks.pipedrive.customFields',
    };
    customs.set(name, f);
  }
  return f;
}
