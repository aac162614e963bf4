// Salesforce lead reports exported as CSV (Export → Details Only → .csv): every value quoted, the columns the report's
// author chose, titled with their labels, and after the last row a footer of lines that are no leads (the grand
// total, the confidentiality notice, the copyright).
import { onlyFirstColumn } from '../conditions.js';
import type { CsvSource } from '../types.js';

// The footer Salesforce writes under a report: "(c)" in some exports, "©" in others.
const FOOTER =
  /^(Grand Totals \(\d+ records?\)|Total|Confidential Information - Do Not Distribute|Copyright (\(c\)|©) 2000-\d{4} salesforce\.com, inc\. All rights reserved\.)$/;

export const salesforceReport: CsvSource = {
  name: 'salesforce-report',
  title: 'Salesforce lead report',
  docs: [
    'no Salesforce page documents the report CSV or its footer: its columns and footer are those real exports have, as public code that cleans them shows',
    'http://frombelvideres4thfloor.blogspot.com/2010/08/salesforce-csv-format-for-report.html',
  ],
  reads: 'csv',
  signature: {
    headers: ['Lead Owner', 'Company / Account'],
    anyOf: ['Lead Source', 'Lead Status', 'Create Date', 'Lead ID'],
  },
  mapping: {
    fields: {
      time: 'Create Date',
      email: 'Email',
      phone: ['Phone', 'Mobile'],
      firstName: 'First Name',
      lastName: 'Last Name',
      name: ['Name', 'Lead Name', 'Full Name'],
      company: ['Company / Account', 'Company'],
      source: 'Lead Source',
    },
    // No key here: a report with the Lead ID column is keyed by it (leadledger takes a "Lead ID" column as the id
    // of its rows), one without by the lead's content, so the same row in a later export is the same event.
  },
  skip: [{ when: onlyFirstColumn(FOOTER), reason: "not a record: the report's footer" }],
  note: "With the report's Lead ID column, rows are keyed by it; without, by their content. US phone numbers are national ((202) 555-0143): give --default-country US.",
};
