// WordPress form plugins' submission exports: Elementor Pro's (Submissions → Export: the form's own field labels,
// then the columns Elementor adds) and Contact Form 7's as the CFDB7 plugin exports them (Form_id, Form_date, then
// the form's mail-tag names without "your-"). Fields are known only by the labels and names the site owner gave
// them: the common ones in English and Portuguese are mapped; others are mapped in the config.
import { repeatedHeader } from '../conditions.js';
import type { CsvSource } from '../types.js';

export const elementorSubmissions: CsvSource = {
  name: 'elementor-submissions',
  title: 'Elementor form submissions',
  docs: [
    'no Elementor page documents the export file: its columns are those Elementor Pro writes (modules/forms/submissions), as its source code and public code that reads real exports show',
  ],
  reads: 'csv',
  signature: { headers: ['Form Name (ID)', 'Submission ID', 'Created At', 'User Agent', 'User IP', 'Referrer'] },
  mapping: {
    fields: {
      time: 'Created At',
      email: ['E-mail', 'Email', 'Seu e-mail', 'Seu email', 'Seu melhor e-mail', 'Your Email', 'Email Address'],
      phone: [
        'WhatsApp',
        'Telefone',
        'Celular',
        'Phone',
        'Telefone / WhatsApp',
        'Telefone/WhatsApp',
        'Seu WhatsApp',
        'Seu telefone',
        'Phone Number',
        'Your Phone',
        'Mobile',
      ],
      name: ['Nome', 'Name', 'Nome completo', 'Seu nome', 'Full Name', 'Your Name'],
      firstName: ['Primeiro nome', 'First Name'],
      lastName: ['Sobrenome', 'Last Name'],
      company: ['Empresa', 'Company', 'Nome da empresa', 'Company Name'],
    },
    key: { path: 'Submission ID' },
  },
  note: 'Field columns are the form\'s labels: Email/E-mail, Nome/Name, WhatsApp/Telefone/Phone and the like are mapped; map another label in the config ("fields": {"email": "Your label"}). Submission IDs count per site: give each site its own --ledger or namespace.',
};

export const cfdb7Export: CsvSource = {
  name: 'cfdb7-export',
  title: 'Contact Form 7 submissions (CFDB7 export)',
  docs: [
    'no CFDB7 page documents the export file: its columns are those the plugin writes (inc/export-csv.php), as its source code shows',
  ],
  reads: 'csv',
  signature: { headers: ['Form_id', 'Form_date'] },
  mapping: {
    fields: {
      time: 'Form_date',
      // CFDB7 titles a column with its mail-tag minus "your-", first letter upper-cased: your-email → Email.
      email: ['Email', 'E-mail', 'Mail'],
      phone: ['Phone', 'Tel', 'Telefone', 'Whatsapp', 'Celular', 'Mobile'],
      name: ['Name', 'Nome', 'Full-name', 'Nome-completo'],
      firstName: ['First-name', 'Primeiro-nome'],
      lastName: ['Last-name', 'Sobrenome'],
      company: ['Company', 'Empresa'],
    },
    // Form_id is the submission's row in CFDB7's table (counted per site), not the form: one per submission.
    key: { path: 'Form_id' },
  },
  // CFDB7 writes the export a page of 1,000 submissions at a time, each under the header again.
  skip: [
    { when: repeatedHeader, reason: 'not a record: the header repeated (CFDB7 writes it again every 1,000 rows)' },
  ],
  note: 'Columns are the form\'s mail-tags without "your-": your-email, your-name, your-phone are mapped; a tag such as tel-123 is mapped in the config ("fields": {"phone": "Tel-123"}).',
};
