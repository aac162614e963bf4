// Zoho CRM's Leads module exported as CSV (Setup › Data Administration › Export): one row per lead as it stands,
// titled with the fields' labels, its "Record Id" the lead's id written with a zcrm_ prefix.
import type { CsvSource } from '../types.js';

export const zohoLeads: CsvSource = {
  name: 'zoho-leads',
  title: 'Zoho CRM leads export',
  docs: [
    'no Zoho page documents the export file: its columns and the zcrm_ ids are those real exports have, as public code that reads them shows',
  ],
  reads: 'csv',
  // "Record Id" alone would also be HubSpot's "Record ID" (names are compared without case): Zoho's has a Lead Owner
  // and Created or Modified Time beside it.
  signature: { headers: ['Record Id', 'Lead Owner'], anyOf: ['Created Time', 'Modified Time'] },
  mapping: {
    fields: {
      time: 'Created Time',
      email: ['Email', 'Secondary Email'],
      phone: ['Phone', 'Mobile'],
      firstName: 'First Name',
      lastName: 'Last Name',
      name: 'Full Name',
      company: 'Company',
      source: 'Lead Source',
    },
    // The id as exported, prefix and all: every export writes it alike, so the key is stable from one to the next.
    key: { path: 'Record Id' },
  },
  note: "Rows are keyed by their Record Id (zcrm_ and the lead id). Headers are the labels in the exporting user's language: an export in another language is read by field names unless mapped in the config.",
};
