// Meta Lead Ads' leads download (Ads Manager / Business Suite: Leads Center or the form's "Download"): a TSV even
// when it is called CSV, one row per form submission, its fixed columns (id, created_time, ad_id, ..., is_organic,
// platform) then one per question of the form. Meta writes ids and phones with a prefix so that spreadsheets keep
// them as text: they are taken off before mapping.
import { matches } from '../conditions.js';
import type { CsvSource } from '../types.js';

// The prefixes Meta writes, each on the one column that carries it.
const PREFIXES: ReadonlyArray<readonly [column: string, prefix: string]> = [
  ['id', 'l:'],
  ['ad_id', 'ag:'],
  ['adset_id', 'as:'],
  ['campaign_id', 'c:'],
  ['form_id', 'f:'],
  ['phone_number', 'p:'],
];

const TEST_LEAD =
  'a test lead: Meta\'s Lead Ads Testing Tool wrote it (email test@meta.com, answers "<test lead: dummy data for …>"), no person filled the form';

// The Testing Tool gives no flag column: its leads are told by Meta's placeholder email and dummy answers.
const DUMMY = /^<test lead: dummy data for /;

export const metaLeadAdsExport: CsvSource = {
  name: 'meta-lead-ads-export',
  title: 'Meta Lead Ads leads download',
  docs: ['https://developers.facebook.com/docs/marketing-api/guides/lead-ads/retrieving'],
  reads: 'csv',
  signature: { headers: ['id', 'created_time', 'ad_id', 'adset_id', 'form_id', 'is_organic', 'platform'] },
  mapping: {
    fields: {
      time: 'created_time',
      email: ['email', 'work_email'],
      phone: 'phone_number',
      name: 'full_name',
      firstName: 'first_name',
      lastName: 'last_name',
      company: 'company_name',
    },
    // The lead id, one per submission: the same lead in two downloads (overlapping date ranges) is one event.
    key: { path: 'id' },
  },
  prepare: (event) => {
    let out: Record<string, unknown> | undefined;
    for (const [column, prefix] of PREFIXES) {
      const v = event[column];
      if (typeof v === 'string' && v.startsWith(prefix)) (out ??= { ...event })[column] = v.slice(prefix.length);
    }
    return out ?? event;
  },
  skip: [
    { when: matches('email', /^test@(?:meta|fb)\.com$/i), reason: TEST_LEAD },
    { when: matches('full_name', DUMMY), reason: TEST_LEAD },
    { when: matches('phone_number', DUMMY), reason: TEST_LEAD },
  ],
  note: 'Read as Meta writes it (UTF-16 with tabs, or UTF-8). The l:, ag:, as:, c:, f: and p: prefixes are taken off their columns. Organic leads (is_organic 1 or TRUE, no ad ids) are leads like any other. The campaign and form are left to the config, e.g. "fields": {"source": "campaign_name"}.',
};
