// Pipedrive's people export (Contacts → People → Export), in English ("Person - Email - Work") or in Portuguese
// ("Pessoa - E-mail - Trabalho"): headers are "<entity> - <field>[ - <label>]", a person's emails and phones one
// column per label. A row is a person, keyed by the person's ID, so the same person in a later export is the same
// event.
import type { CsvSource } from '../types.js';

// The columns of one field, by label, in the order they are tried.
const EMAILS = [
  'Person - Email - Work',
  'Person - Email - Home',
  'Person - Email - Other',
  'Pessoa - E-mail - Trabalho',
  'Pessoa - E-mail - Residencial',
  'Pessoa - E-mail - Outros',
];
// A mobile first: it is the number a lead answers (and texts on).
const PHONES = [
  'Person - Phone - Mobile',
  'Person - Phone - Work',
  'Person - Phone - Home',
  'Person - Phone - Other',
  'Pessoa - Telefone - Celular',
  'Pessoa - Telefone - Trabalho',
  'Pessoa - Telefone - Residencial',
  'Pessoa - Telefone - Outros',
];

export const pipedriveExport: CsvSource = {
  name: 'pipedrive-people-export',
  title: 'Pipedrive people export',
  docs: [
    'no public page documents the export: its columns are those real exports have (English and Portuguese), as public code that reads them shows',
  ],
  reads: 'csv',
  signature: { headers: [], anyOf: ['Person - ID', 'Pessoa - ID'] },
  mapping: {
    fields: {
      // The key: the person's ID, in the export's language.
      id: ['Person - ID', 'Pessoa - ID'],
      time: ['Person - Person created', 'Pessoa - Pessoa criada'],
      email: EMAILS,
      phone: PHONES,
      name: ['Person - Name', 'Pessoa - Nome'],
      firstName: 'Person - First name',
      lastName: 'Person - Last name',
      company: ['Person - Organization', 'Pessoa - Organização'],
    },
  },
  // Two emails (or phones) of one label may share a cell, comma-separated (no page documents it): the first is the
  // person's, where the whole cell would be no address at all.
  prepare: (event) => {
    let out: Record<string, unknown> | undefined;
    for (const column of [...EMAILS, ...PHONES]) {
      const v = event[column];
      if (typeof v !== 'string' || !v.includes(',')) continue;
      (out ??= { ...event })[column] = v.slice(0, v.indexOf(',')).trim();
    }
    return out ?? event;
  },
  note: 'The email is the first of Work, Home, Other that is set; the phone the first of Mobile, Work, Home, Other (a leading apostrophe, which Pipedrive writes to keep a number as text, is no part of it). A deals export that has the person columns is read as its people.',
};
