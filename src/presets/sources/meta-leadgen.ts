// Meta (Facebook / Instagram) Lead Ads as JSON: the Page webhook's leadgen notifications, which hold ids only, and
// the lead the Graph API returns for such an id (one, or a page of a form's leads), its answers read by name.
// The Graph lead's id is the webhook's leadgen_id, so a lead is one event whichever of them leadledger reads.
import { all, is, isNot, matches, missing, present } from '../conditions.js';
import type { JsonSource, SourceMapping } from '../types.js';

const answer = (names: string, under = '') => `${under}field_data[name=${names}].values[*]`;

// Answers are listed by name (Meta's keys: email, phone_number, full_name, ...), each with a list of values.
const answers = (under = ''): SourceMapping['fields'] => ({
  email: [answer('email', under), answer('work_email', under)],
  phone: answer('phone_number', under),
  name: answer('full_name', under),
  firstName: answer('first_name', under),
  lastName: answer('last_name', under),
  company: answer('company_name', under),
});

const FETCH =
  'download the leads (Meta Business Suite → Instant Forms → Download) and push that file, or fetch each lead from the Graph API (GET /{leadgen_id}?fields=created_time,field_data)';

export const metaLeadgenWebhook: JsonSource = {
  name: 'meta-leadgen-webhook',
  title: 'Meta leadgen webhook',
  docs: [
    'https://developers.facebook.com/docs/graph-api/webhooks/getting-started/webhooks-for-leadgen',
    'https://developers.facebook.com/docs/marketing-api/guides/lead-ads/retrieving',
  ],
  reads: 'json',
  signature: { has: ['entry[*].changes[*].field'], equals: { object: ['page'] } },
  // A body may hold several entries, each with several changes: each change is an event.
  events: 'entry[*].changes',
  mapping: {
    fields: {
      type: 'field',
      // Epoch seconds.
      time: 'value.created_time',
      // Meta sends ids only; a relay that fetched the lead may have put its answers in the change.
      ...answers('value.'),
    },
    key: { path: 'value.leadgen_id' },
  },
  skip: [
    {
      when: isNot('field', 'leadgen'),
      reason: 'not a lead event: a change of another field of the Page than leadgen (its feed, ...)',
    },
    {
      when: all(is('field', 'leadgen'), present('value.leadgen_id'), missing('value.field_data')),
      reason: `a leadgen notification holds ids only (leadgen_id, form_id), no lead data: ${FETCH}`,
    },
  ],
  note: 'Each change of a body is reported as line N (item i). The notifications hold no email or phone: push the downloaded leads or the Graph API leads instead.',
};

// Meta's Lead Ads Testing Tool fills every answer with this, and the email with test@meta.com (test@fb.com before).
const TEST_VALUE = /^<test lead: dummy data for /;
const TEST_EMAIL = /^test@(meta|fb)\.com$/i;
// Said as the leads download (meta-lead-ads-export.ts) says it: the same lead may come from either.
const TEST_REASON =
  'a test lead: Meta\'s Lead Ads Testing Tool wrote it (email test@meta.com, answers "<test lead: dummy data for …>"), no person filled the form';

const graphLead: Pick<JsonSource, 'mapping' | 'skip'> = {
  mapping: {
    fields: { time: 'created_time', ...answers() },
    key: { path: 'id' },
  },
  skip: [
    { when: matches(answer('email'), TEST_EMAIL), reason: TEST_REASON },
    { when: matches('field_data[*].values[*]', TEST_VALUE), reason: TEST_REASON },
  ],
};

export const metaGraphLead: JsonSource = {
  name: 'meta-graph-lead',
  title: 'Meta lead (Graph API)',
  docs: [
    'https://developers.facebook.com/docs/marketing-api/guides/lead-ads/retrieving',
    'https://developers.facebook.com/docs/marketing-api/reference/user-lead-gen-info/',
  ],
  reads: 'json',
  signature: { has: ['id', 'created_time', 'field_data[*].name'] },
  ...graphLead,
  note: 'Answers are read by their name (email, phone_number, full_name, first_name, last_name, company_name); map a question of your own in the config: "fields": {"company": "field_data[name=your_question].values[*]"}.',
};

export const metaGraphLeadList: JsonSource = {
  name: 'meta-graph-leads',
  title: "Meta form's leads (Graph API)",
  docs: ['https://developers.facebook.com/docs/marketing-api/guides/lead-ads/retrieving'],
  reads: 'json',
  // GET /{form_id}/leads: a page of leads, and the cursor to the next.
  signature: { has: ['data[*].field_data[*].name', 'data[*].id'] },
  events: 'data',
  ...graphLead,
  note: 'Each lead of a page is reported as line N (item i).',
};
