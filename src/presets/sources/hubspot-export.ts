// HubSpot's contacts export (Contacts → Export view): every header and cell quoted, headers are the properties'
// labels. A row is a contact as it stood when exported, keyed by its Record ID, so the same contact in a later
// export is the same event.
import type { CsvSource } from '../types.js';

export const hubspotExport: CsvSource = {
  name: 'hubspot-contacts-export',
  title: 'HubSpot contacts export',
  docs: [
    'no public page documents the export: its columns are those of the default "All contacts" view as public code that reads real exports shows',
  ],
  reads: 'csv',
  // Zoho CRM's export has a "Record Id" column too (the same name once normalized) but no "Create Date": it writes
  // "Created Time". Create Date is what tells the two apart.
  signature: {
    headers: ['Record ID', 'Create Date'],
    anyOf: [
      'Contact owner',
      'Lead Status',
      'Marketing contact status',
      'Primary Associated Company ID',
      'Associated Company',
    ],
  },
  mapping: {
    fields: {
      time: 'Create Date',
      email: 'Email',
      phone: ['Phone Number', 'Mobile Phone Number'],
      firstName: 'First Name',
      lastName: 'Last Name',
      company: ['Company Name', 'Associated Company'],
    },
    key: { path: 'Record ID' },
  },
  note: 'Headers follow the language of the HubSpot account: an export in another language than English is read by field names (map its columns in the config). The name is First Name and Last Name together.',
};
