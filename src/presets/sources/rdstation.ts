// RD Station Marketing: the legacy webhook (API 1.x: one body, several leads in `leads`), the current one
// (WEBHOOK.CONVERTED / WEBHOOK.MARKED_OPPORTUNITY, one contact), and the contacts export in Portuguese. None of
// them carries an event id: the key is the contact's uuid with what identifies the conversion.
import type { CsvSource, JsonSource } from '../types.js';

export const rdstationLegacyWebhook: JsonSource = {
  name: 'rdstation-webhook-legacy',
  title: 'RD Station webhook (API 1.x)',
  docs: [
    'https://developers.rdstation.com/reference/como-migrar-webhooks-rdsm',
    'https://developers.rdstation.com/docs/como-migrar-webhooks',
  ],
  reads: 'json',
  signature: { has: ['leads[*].uuid'] },
  events: 'leads',
  mapping: {
    fields: {
      time: ['last_conversion.created_at', 'created_at'],
      email: ['email', 'last_conversion.content.email_lead', 'first_conversion.content.email_lead'],
      phone: [
        'mobile_phone',
        'personal_phone',
        'last_conversion.content.telefone',
        'first_conversion.content.telefone',
      ],
      name: ['name', 'last_conversion.content.nome', 'first_conversion.content.nome'],
      company: ['company', 'first_conversion.content.empresa'],
      source: ['first_conversion.conversion_origin.source', 'first_conversion.source'],
    },
    // A redelivery is the same body again; a new conversion of the same person has a new last_conversion.
    key: { paths: ['uuid', 'last_conversion.created_at', 'last_conversion.content.identificador'] },
  },
  note: 'Each lead of a body is an event of its own, reported as line N (item i). The key is the contact uuid with its last conversion (time and identifier).',
};

export const rdstationWebhook: JsonSource = {
  name: 'rdstation-webhook',
  title: 'RD Station webhook',
  docs: [
    'https://developers.rdstation.com/reference/webhooks-payload-copy',
    'https://developers.rdstation.com/en/reference/webhooks',
  ],
  reads: 'json',
  signature: {
    has: ['event_type', 'contact.uuid'],
    equals: { entity_type: ['CONTACT'], event_type: ['WEBHOOK.CONVERTED', 'WEBHOOK.MARKED_OPPORTUNITY'] },
  },
  mapping: {
    fields: {
      type: 'event_type',
      time: ['event_timestamp', 'timestamp'],
      email: 'contact.email',
      phone: ['contact.mobile_phone', 'contact.personal_phone'],
      name: 'contact.name',
      company: 'contact.company.name',
      source: ['contact.cf_utm_source', 'contact.funnel.origin'],
    },
    // `timestamp` is when the delivery was sent (a retry has another): the event is its type, contact,
    // conversion identifier and event_timestamp.
    key: { paths: ['contact.uuid', 'event_type', 'event_timestamp', 'event_identifier'] },
  },
};

export const rdstationExport: CsvSource = {
  name: 'rdstation-export',
  title: 'RD Station contacts export',
  docs: [
    'no public page documents the export: its columns are those real exports have, as public code that reads them shows',
  ],
  reads: 'csv',
  signature: {
    headers: ['Email', 'Nome', 'URL pública'],
    anyOf: ['Estágio no funil', 'Origem da primeira conversão', 'Data da última conversão', 'Eventos (Últimos 100)'],
  },
  mapping: {
    fields: {
      time: ['Data da última conversão', 'Data da primeira conversão'],
      email: 'Email',
      phone: ['Celular', 'Telefone'],
      name: 'Nome',
      company: 'Empresa',
      source: ['Origem da primeira conversão', 'Origem da última conversão'],
    },
    // A row is a contact as it stood: the contact (its public URL ends in its uuid) after its last conversion,
    // counted rather than dated: Excel re-renders dates in the user's locale when it re-saves the export, and the
    // same row must keep its key.
    key: { paths: ['URL pública', 'Total de conversões'] },
  },
  note: 'Read as exported (UTF-16 with tabs, or UTF-8) and as Excel pt-BR re-saves it (Windows-1252, ";"). A row is keyed by the contact and its count of conversions (the same in both files), so a later export of the same contact after a new conversion is a new event of a known lead.',
};
