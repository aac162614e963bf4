// Columns of exports no source definition knows, found by what their names say: an object prefix and a label per
// column, in English, Portuguese and Spanish; the person's before an organization's, an owner's never; an email or a
// phone by its label; a person's name, not a deal's title.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { columnRole, headerWords } from '../../src/mapping/column-roles.js';
import { planFields, pathText, type FieldName } from '../../src/mapping/fields.js';
import { createMapper } from '../../src/mapping/map-record.js';
import type { Mapped } from '../../src/mapping/types.js';

// The plan's paths of a field for records with these columns, as written.
function planOf(headers: string[]): Record<string, string[]> {
  const plan = planFields(Object.fromEntries(headers.map((h) => [h, ''])), {});
  const out: Record<string, string[]> = {};
  for (const f of ['id', 'email', 'phone', 'name', 'firstName', 'lastName', 'company'] as FieldName[])
    out[f] = plan[f].map(pathText);
  return out;
}

test('a header is read word by word: separators, camelCase, accents, e-mail and WhatsApp as one word', () => {
  assert.deepEqual(headerWords('Persona - Correo electrónico - Trabajo'), [
    'persona',
    'correo',
    'electronico',
    'trabajo',
  ]);
  assert.deepEqual(headerWords('E-mail do comprador'), ['email', 'do', 'comprador']);
  assert.deepEqual(headerWords('mobilePhoneNumber'), ['mobile', 'phone', 'number']);
  assert.deepEqual(headerWords('WhatsApp com DDD'), ['whatsapp', 'com', 'ddd']);
  assert.deepEqual(headerWords('Telefone2'), ['telefone', '2']);
  assert.deepEqual(headerWords('telefonecelular'), ['telefone', 'celular']);
});

test('localized columns say whose they are and their label; an owner is someone else', () => {
  const cases: Array<[string, unknown]> = [
    ['Person - Email - Work', { field: 'email', whose: 'person', label: 'work' }],
    ['Pessoa - E-mail - Trabalho', { field: 'email', whose: 'person', label: 'work' }],
    ['Persona - Correo electrónico - Casa', { field: 'email', whose: 'person', label: 'home' }],
    ['Persona - Teléfono - Móvil', { field: 'phone', whose: 'person', label: 'mobile' }],
    ['Contato principal: Telefone comercial', { field: 'phone', whose: 'person', label: 'work' }],
    ['Teléfono móvil (contacto)', { field: 'phone', whose: 'person', label: 'mobile' }],
    ['Otro correo electrónico (contacto)', { field: 'email', whose: 'person', label: 'other' }],
    ['Organização - E-mail', { field: 'email', whose: 'org', label: 'plain' }],
    ['Proprietário - E-mail', { field: 'email', whose: 'other', label: 'plain' }],
    ['Owner email', { field: 'email', whose: 'other', label: 'plain' }],
    ['Telefone (WhatsApp)', { field: 'phone', whose: 'plain', label: 'mobile' }],
    ['Default Address Phone', { field: 'phone', whose: 'plain', label: 'address' }],
    ['Endereço de e-mail', { field: 'email', whose: 'plain', label: 'plain' }],
    ['Seu melhor e-mail', { field: 'email', whose: 'plain', label: 'plain' }],
    ['Email 2', { field: 'email', whose: 'plain', label: 'other' }],
    ['Phone #', { field: 'phone', whose: 'plain', label: 'plain' }],
    ['Persona - Nombre', { field: 'name', whose: 'person', label: 'plain', bareName: true }],
    ['Organización - Nombre', { field: 'company', whose: 'org', label: 'plain' }],
    ['Nome da empresa', { field: 'company', whose: 'org', label: 'plain' }],
    ['Comprador', { field: 'name', whose: 'person', label: 'plain', roleOnly: true }],
    ['Contacto principal', { field: 'name', whose: 'person', label: 'plain', roleOnly: true }],
    ['Sobrenome', { field: 'lastName', whose: 'plain', label: 'plain' }],
    ['Primeiro nome', { field: 'firstName', whose: 'plain', label: 'plain' }],
    ['Qual é o seu nome?', { field: 'name', whose: 'plain', label: 'plain' }],
  ];
  for (const [h, want] of cases) assert.deepEqual(columnRole(h), want, h);
});

test('a name with a word outside the vocabulary, a title, a fax or a middle name says nothing', () => {
  for (const h of [
    'Accepts Email Marketing',
    'email_verified',
    'Documento do comprador',
    'Negocio - Título',
    'Nome do lead',
    'Nombre del lead',
    'Job Title',
    'Nome do produto',
    'Fax',
    'Segundo nome',
    'Attendee #',
    'Responsável',
    'Usuario responsable',
    'Email or phone',
    // A lower-case key holding a role (a JSON "customer") is an id or an object, not a name.
    'customer',
  ])
    assert.equal(columnRole(h), undefined, h);
});

test('every column name found before is still found as the same field', () => {
  const before: Record<string, string[]> = {
    email: ['email', 'emailaddress', 'mail', 'correio', 'enderecodeemail', 'emailprincipal', 'E-mail', 'EMAIL_ADDRESS'],
    phone: [
      'phone',
      'phonenumber',
      'telefone',
      'celular',
      'whatsapp',
      'mobile',
      'mobilephone',
      'mobilephonenumber',
      'tel',
      'fone',
      'telefonecelular',
      'numerodetelefone',
    ],
    name: ['name', 'fullname', 'nome', 'nomecompleto', 'contactname', 'leadname', 'displayname', 'Full Name'],
    firstName: ['firstname', 'givenname', 'primeironome', 'prenome', 'first_name'],
    lastName: ['lastname', 'surname', 'familyname', 'sobrenome', 'ultimonome', 'lastName'],
    company: [
      'company',
      'companyname',
      'empresa',
      'organization',
      'organisation',
      'organizacao',
      'nomedaempresa',
      'account',
      'accountname',
    ],
  };
  for (const [field, names] of Object.entries(before))
    for (const n of names) assert.equal(columnRole(n)?.field, field, n);
});

test("a field plan tries the person's columns first, by label; an organization's last; an owner's never", () => {
  const pipedrive = planOf([
    'Negocio - ID',
    'Negocio - Título',
    'Persona - ID',
    'Persona - Nombre',
    'Persona - Correo electrónico - Trabajo',
    'Persona - Correo electrónico - Casa',
    'Persona - Correo electrónico - Otro',
    'Persona - Teléfono - Trabajo',
    'Persona - Teléfono - Casa',
    'Persona - Teléfono - Móvil',
    'Persona - Teléfono - Otro',
    'Organización - Nombre',
    'Organización - Correo electrónico',
    'Propietario - Correo electrónico',
  ]);
  assert.deepEqual(pipedrive.id, ['Negocio - ID'], 'the deal, whose columns come first, is the record');
  assert.deepEqual(pipedrive.email, [
    'Persona - Correo electrónico - Trabajo',
    'Persona - Correo electrónico - Casa',
    'Persona - Correo electrónico - Otro',
    'Organización - Correo electrónico',
  ]);
  assert.deepEqual(pipedrive.phone, [
    'Persona - Teléfono - Móvil',
    'Persona - Teléfono - Trabajo',
    'Persona - Teléfono - Casa',
    'Persona - Teléfono - Otro',
  ]);
  assert.deepEqual(pipedrive.name, ['Persona - Nombre']);
  assert.deepEqual(pipedrive.company, ['Organización - Nombre']);

  // An unlabelled email before a labelled one; a mobile (WhatsApp too) before the unlabelled phone; no fax.
  const agendor = planOf(['Nome', 'Empresa', 'Responsável', 'E-mail', 'Telefone', 'Celular', 'Fax', 'WhatsApp']);
  assert.deepEqual(agendor.phone, ['Celular', 'WhatsApp', 'Telefone']);
  assert.deepEqual(agendor.name, ['Nome']);
  assert.deepEqual(planOf(['E-mail pessoal', 'E-mail', 'E-mail comercial']).email, [
    'E-mail',
    'E-mail comercial',
    'E-mail pessoal',
  ]);
});

test("names: the person's, a role alone, first and last; never a deal's title; a bare Nome beside Sobrenome is the first name", () => {
  const bitrix = planOf(['ID', 'Nome do lead', 'Nome', 'Segundo nome', 'Sobrenome', 'Nome da empresa']);
  assert.deepEqual(bitrix.name, []);
  assert.deepEqual(bitrix.firstName, ['Nome']);
  assert.deepEqual(bitrix.lastName, ['Sobrenome']);
  assert.deepEqual(bitrix.company, ['Nome da empresa']);
  const kommo = planOf(['ID', 'Nombre del lead', 'Usuario responsable', 'Contacto principal', 'Empresa del contacto']);
  assert.deepEqual(kommo.name, ['Contacto principal']);
  assert.deepEqual(kommo.company, ['Empresa del contacto']);
  // With a first-name column too, "Name" is the whole name.
  const people = planOf(['Person - ID', 'Person - Name', 'Person - First name', 'Person - Last name']);
  assert.deepEqual(people.name, ['Person - Name']);
  assert.deepEqual(people.firstName, ['Person - First name']);
});

test('a Spanish deals export is mapped to its person: work email, mobile phone, name, keyed by the deal', () => {
  const map = createMapper({ config: {} });
  const row = {
    'Negocio - ID': '501',
    'Negocio - Título': 'Licencias Ortega',
    'Persona - ID': '301',
    'Persona - Nombre': 'Diego Ortega',
    'Persona - Correo electrónico - Trabajo': '',
    'Persona - Correo electrónico - Casa': 'diego@example.org',
    'Persona - Teléfono - Trabajo': "'+34 915 550 101",
    'Persona - Teléfono - Móvil': "'+34 612 000 101",
    'Usuario propietario': 'Marta Ruiz',
    'Propietario - Correo electrónico': 'marta@example.com',
    'Organización - Nombre': 'Ortega Consultores SL',
  };
  const m = map({ source: 'negocios.csv', line: 2, fields: row }) as Extract<Mapped, { kind: 'event' }>;
  assert.equal(m.kind, 'event');
  assert.equal(m.key, '501');
  assert.deepEqual(m.lead, {
    email: 'diego@example.org',
    phone: '+34612000101',
    name: 'Diego Ortega',
    company: 'Ortega Consultores SL',
  });
});

test("a deal with no person is no lead: its owner's email is never taken, by the plan nor by discovery", () => {
  const map = createMapper({ config: {} });
  const m = map({
    source: 'negocios.csv',
    line: 5,
    fields: {
      'Negocio - ID': '504',
      'Persona - Nombre': '',
      'Persona - Correo electrónico - Trabajo': '',
      'Propietario - Correo electrónico': 'marta@example.com',
      'Proprietário - E-mail': 'paulo@example.com.br',
      'Organización - Nombre': 'Grupo Andino',
    },
  });
  assert.equal(m.kind, 'invalid', JSON.stringify(m));
});
