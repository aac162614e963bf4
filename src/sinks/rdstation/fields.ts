// A lead as RD Station Marketing fields: the conversion event's payload, or a contact update's body. RD has one
// `name`, one phone per kind, company fields only on conversions, `cf_<api identifier>` custom fields that must exist
// in the account, tags, and LGPD legal bases. What has no place is told (fieldsNotHeld), never dropped silently.
import type { Lead } from '../../mapping/types.js';
import type { FieldNotHeld } from '../types.js';

/** One LGPD legal basis as RD Station takes it on a conversion or a contact. */
export interface RdLegalBasis {
  category: 'communications';
  type:
    | 'consent'
    | 'legitimate_interest'
    | 'judicial_process'
    | 'vital_interest'
    | 'public_interest'
    | 'pre_existent_contract';
  status?: 'granted' | 'declined';
}

/** The config file's sinks.rdstation section. */
export interface RdStationConfig {
  /** The conversion's identifier in RD Station (default `leadledger`; --conversion wins). */
  conversionIdentifier?: string;
  /** Which RD field the lead's phone goes to (default mobile_phone). */
  phoneField?: 'mobile_phone' | 'personal_phone';
  /** A custom field of the lead → an RD field (job_title, city, state, country, tags, ..., or a cf_ custom field). */
  fields?: Record<string, string>;
  /** Tags added to every conversion. */
  tags?: string[];
  /** LGPD legal bases sent with every conversion and update (consent the source collected, say). */
  legalBases?: RdLegalBasis[];
  /**
   * The custom field (created in RD Station) that receives leadledger's downstream key, so that a conversion whose
   * answer was lost can be recognized (default cf_leadledger_key; false: none, then the conversion identifier alone).
   */
  keyField?: string | false;
  /** The account's limit (default 120 per minute, Light/Basic/Pro; 500 on Advanced). */
  requestsPerMinute?: number;
}

/** Fields a conversion takes (reference page "Evento de conversão"), besides email and conversion_identifier. */
export const RD_CONVERSION_FIELDS: ReadonlySet<string> = new Set([
  'name',
  'job_title',
  'state',
  'city',
  'country',
  'personal_phone',
  'mobile_phone',
  'twitter',
  'facebook',
  'linkedin',
  'website',
  'company_name',
  'company_site',
  'company_address',
  'traffic_source',
  'traffic_medium',
  'traffic_campaign',
  'traffic_value',
  'tags',
]);

/** Fields a contact update (PATCH) takes (reference page "Contatos"), besides the email it is addressed by. */
export const RD_CONTACT_FIELDS: ReadonlySet<string> = new Set([
  'name',
  'bio',
  'website',
  'job_title',
  'personal_phone',
  'mobile_phone',
  'city',
  'state',
  'country',
  'twitter',
  'facebook',
  'linkedin',
  'tags',
]);

export const DEFAULT_KEY_FIELD = 'cf_leadledger_key';

/** What the lead becomes: `values` (without email and conversion_identifier) and the fields it has no place for. */
export interface RdFields {
  values: Record<string, unknown>;
  notHeld: FieldNotHeld[];
}

/**
 * The lead's RD Station fields for a conversion (`op` conversion) or a contact update (`op` update). Standard
 * fields first; a custom field goes where sinks.rdstation.fields maps it, else to the RD field of its own name
 * when RD has one (job_title, city, ...) or it is a cf_ field; `tags` (comma-separated) add to the config's tags.
 */
export function rdstationFields(lead: Lead, config: RdStationConfig = {}, op: 'conversion' | 'update'): RdFields {
  const allowed = op === 'conversion' ? RD_CONVERSION_FIELDS : RD_CONTACT_FIELDS;
  const values: Record<string, unknown> = {};
  const notHeld: FieldNotHeld[] = [];
  const name = lead.name ?? ([lead.firstName, lead.lastName].filter(Boolean).join(' ') || undefined);
  if (name) values.name = name;
  if (lead.phone) values[config.phoneField ?? 'mobile_phone'] = lead.phone;
  if (lead.company) {
    if (op === 'conversion') values.company_name = lead.company;
    else notHeld.push(notHeldFor('company', 'an RD Station contact update has no company field (a conversion has)'));
  }
  if (lead.source) {
    if (op === 'conversion') values.traffic_source = lead.source;
    else notHeld.push(notHeldFor('source', 'an RD Station contact update has no traffic source (a conversion has)'));
  }
  const tags = new Set((config.tags ?? []).map((t) => t.trim()).filter(Boolean));
  for (const [k, v] of Object.entries(lead.custom ?? {})) {
    if (v === '') continue;
    const target = config.fields?.[k] ?? (allowed.has(k) || k.startsWith('cf_') ? k : undefined);
    if (target === 'tags') {
      for (const t of v.split(/[,;]/)) if (t.trim()) tags.add(t.trim());
    } else if (target === undefined || (!allowed.has(target) && !target.startsWith('cf_'))) {
      notHeld.push(
        notHeldFor(
          `custom.${k}`,
          target === undefined
            ? `RD Station has no field ${k}: map it to one (or to a cf_ custom field) in sinks.rdstation.fields`
            : `an RD Station ${op === 'conversion' ? 'conversion' : 'contact update'} has no field ${target}`,
        ),
      );
    } else if (values[target] !== undefined) {
      notHeld.push(
        notHeldFor(`custom.${k}`, `${target} holds a standard field of the lead: map the custom field elsewhere`),
      );
    } else values[target] = v;
  }
  if (tags.size) values.tags = [...tags];
  if (config.legalBases?.length)
    values.legal_bases = config.legalBases.map((b) => ({ ...b, status: b.status ?? 'granted' }));
  return { values, notHeld };
}

// One object per field and reason: the run counts them by identity (types.ts FieldNotHeld).
const notHeldCache = new Map<string, FieldNotHeld>();
function notHeldFor(field: string, why: string): FieldNotHeld {
  const k = `${field}\u0000${why}`;
  let f = notHeldCache.get(k);
  if (!f) {
    f = { field, why };
    notHeldCache.set(k, f);
  }
  return f;
}
