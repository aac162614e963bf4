// Mailchimp's audience export: a ZIP of three CSVs, the subscribed, unsubscribed and cleaned members. Headers are
// the audience's merge-field labels ("Email Address", "First Name", ...) then Mailchimp's own upper-case columns
// (MEMBER_RATING, OPTIN_TIME, ..., LEID, EUID). Only the subscribed members are leads: a member who unsubscribed or
// whose address Mailchimp cleaned is filtered, never pushed.
import { present } from '../conditions.js';
import type { CsvSource } from '../types.js';

const SUBSCRIBED = 'push subscribed_members_export_….csv, from the same ZIP, for the audience’s leads';

export const mailchimpExport: CsvSource = {
  name: 'mailchimp-audience-export',
  title: 'Mailchimp audience export',
  docs: [
    'http://kb.mailchimp.com/lists/managing-subscribers/view-unsubscribed-and-cleaned-addresses',
    'no public page documents the columns: they are those real exports have, as public code that reads them shows',
  ],
  reads: 'csv',
  signature: { headers: ['Email Address', 'MEMBER_RATING', 'OPTIN_TIME', 'CONFIRM_TIME'], anyOf: ['LEID', 'EUID'] },
  mapping: {
    fields: {
      // The key: the member's id in the audience (LEID, else EUID), else the address.
      id: ['LEID', 'EUID', 'Email Address'],
      // Members imported without an opt-in have no OPTIN_TIME.
      time: ['OPTIN_TIME', 'CONFIRM_TIME', 'LAST_CHANGED'],
      email: 'Email Address',
      phone: 'Phone Number',
      firstName: 'First Name',
      lastName: 'Last Name',
      company: 'Company',
    },
  },
  // By the time, not by the column: an audience can have a merge field named like these (one built by importing an
  // unsubscribed export), empty for its subscribed members.
  skip: [
    { when: present('UNSUB_TIME'), reason: `unsubscribed in Mailchimp: not a lead to push (${SUBSCRIBED})` },
    {
      when: present('CLEAN_TIME'),
      reason: `cleaned in Mailchimp (it stopped sending to the address): not a lead to push (${SUBSCRIBED})`,
    },
  ],
  note: 'Only subscribed members are leads: the rows of the unsubscribed and cleaned exports are filtered with the reason. Phone and company are the merge fields "Phone Number" and "Company": map others in the config.',
};
