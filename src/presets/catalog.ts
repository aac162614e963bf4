// Every source leadledger recognizes, in the order they are tried (the more specific first). Adding a source is a
// definition in sources/ and a line here.
import { LOG_DEFS } from './logs.js';
import { googleAdsLeadForm } from './sources/google-ads.js';
import { hubspotExport } from './sources/hubspot-export.js';
import { hubspotWebhook } from './sources/hubspot-webhook.js';
import { linkedinLeadSync } from './sources/linkedin.js';
import { mailchimpExport } from './sources/mailchimp-export.js';
import { metaLeadAdsExport } from './sources/meta-lead-ads-export.js';
import { metaGraphLead, metaGraphLeadList, metaLeadgenWebhook } from './sources/meta-leadgen.js';
import { pipedriveExport } from './sources/pipedrive-export.js';
import { pipedriveWebhook, pipedriveWebhookV2 } from './sources/pipedrive-webhook.js';
import { rdstationExport, rdstationLegacyWebhook, rdstationWebhook } from './sources/rdstation.js';
import { salesforceReport } from './sources/salesforce.js';
import { rudderstackEvent, segmentBatch, segmentEvent } from './sources/segment.js';
import { stripeEvent, stripeEventList } from './sources/stripe.js';
import { typeform } from './sources/typeform.js';
import { cfdb7Export, elementorSubmissions } from './sources/wordpress-forms.js';
import { zohoLeads } from './sources/zoho.js';
import { UsageError } from '../errors.js';
import type { LogDef, SourceDef } from './types.js';
import { didYouMean } from '../did-you-mean.js';

export const SOURCES: readonly SourceDef[] = [
  typeform,
  rdstationWebhook,
  rdstationLegacyWebhook,
  rdstationExport,
  hubspotExport,
  metaLeadAdsExport,
  pipedriveExport,
  mailchimpExport,
  hubspotWebhook,
  metaLeadgenWebhook,
  metaGraphLead,
  metaGraphLeadList,
  googleAdsLeadForm,
  stripeEvent,
  stripeEventList,
  pipedriveWebhook,
  pipedriveWebhookV2,
  rudderstackEvent,
  segmentEvent,
  segmentBatch,
  linkedinLeadSync,
  salesforceReport,
  zohoLeads,
  elementorSubmissions,
  cfdb7Export,
];

export const LOGS: readonly LogDef[] = LOG_DEFS;

/** The source named `name` (what --preset and the config's "preset" take). */
export function sourceNamed(name: string): SourceDef | undefined {
  return SOURCES.find((s) => s.name === name);
}

/**
 * The source --preset (or the config's "preset") names: 'generic' reads every input by field names alone; none
 * lets each input be recognized. A name that is no source is a usage error that lists them.
 */
export function resolvePreset(name: string | undefined, from = '--preset'): SourceDef | 'generic' | undefined {
  if (name === undefined) return undefined;
  if (name === 'generic') return 'generic';
  const s = sourceNamed(name);
  if (!s)
    throw new UsageError(
      `${from} '${name}' is no source leadledger knows; one of: generic, ${SOURCES.map((x) => x.name).join(', ')} (leadledger presets)${didYouMean(name, ['generic', ...SOURCES.map((x) => x.name)])}`,
    );
  return s;
}
