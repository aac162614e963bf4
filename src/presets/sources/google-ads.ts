// Google Ads lead form webhook: one lead per body, its answers a list read by column_id (EMAIL, PHONE_NUMBER,
// FULL_NAME, ...), never by position. Older deliveries name the columns by column_name only. The body carries the
// advertiser's google_key (a secret): no field leadledger maps or keys on reads it.
import { is } from '../conditions.js';
import type { JsonSource } from '../types.js';

const column = (ids: string, names?: string) => {
  const byId = `user_column_data[column_id=${ids}].string_value`;
  return names ? [byId, `user_column_data[column_name=${names}].string_value`] : byId;
};

export const googleAdsLeadForm: JsonSource = {
  name: 'google-ads-lead-form',
  title: 'Google Ads lead form webhook',
  docs: ['https://developers.google.com/google-ads/webhook/docs/implementation'],
  reads: 'json',
  signature: { has: ['lead_id', 'user_column_data[*].string_value'] },
  mapping: {
    fields: {
      // ISO 8601 UTC; older deliveries have no time at all.
      time: 'lead_submit_time',
      email: [column('EMAIL', 'User Email'), column('WORK_EMAIL')].flat(),
      phone: [column('PHONE_NUMBER', 'User Phone'), column('WORK_PHONE')].flat(),
      name: column('FULL_NAME', 'Full Name'),
      firstName: column('FIRST_NAME'),
      lastName: column('LAST_NAME'),
      company: column('COMPANY_NAME', 'Company Name'),
    },
    // "Use this to dedupe leads which are received. This will be unique across all forms."
    key: { path: 'lead_id' },
  },
  skip: [
    {
      when: is('is_test', true),
      reason: 'a test lead (is_test: true, sent by "Send test data" in Google Ads): not a person',
    },
  ],
  note: 'Custom questions (QUESTION_1, ...) are not mapped; map one in the config: "fields": {"company": "user_column_data[column_id=QUESTION_1].string_value"}.',
};
