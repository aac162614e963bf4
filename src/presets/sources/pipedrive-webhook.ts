// Pipedrive webhooks, v1 (`"v": 1`, the person in `current`) and v2 (`meta.version` "2.0", the person in `data`). A
// person's emails and phones are lists of {value, primary, label}: the primary one is read first, then the first
// that is not empty, never one by its position. A redelivery (v1 `retry` > 0, v2 `meta.attempt` > 1) is the same
// event: nothing that makes its key changes.
import { is, isNot, matches } from '../conditions.js';
import type { JsonSource, Skip } from '../types.js';

const notAPerson = (at: string): Skip => ({
  when: isNot(at, 'person'),
  reason:
    'not about a person: a Pipedrive webhook about a deal, an organization, an activity or another object; leadledger sends persons (subscribe a webhook to person events)',
});

const listed = (list: string) => [`${list}[primary=true].value`, `${list}[*].value`];

export const pipedriveWebhook: JsonSource = {
  name: 'pipedrive-webhook',
  title: 'Pipedrive webhook (v1)',
  docs: [
    'https://pipedrive.readme.io/docs/guide-for-webhooks',
    'https://devcommunity.pipedrive.com/t/troubleshooting-webhook-delivery-and-payload-structure/4964',
  ],
  reads: 'json',
  signature: { has: ['event', 'meta.object', 'meta.id'], equals: { v: [1] } },
  mapping: {
    fields: {
      type: 'event',
      // meta.timestamp is in epoch seconds; current.add_time is written without a zone, so it is not read.
      time: 'meta.timestamp',
      // Older v1 bodies write a person's email and phone as one string.
      email: [...listed('current.email'), 'current.email'],
      phone: [...listed('current.phone'), 'current.phone'],
      name: 'current.name',
      firstName: 'current.first_name',
      lastName: 'current.last_name',
      company: 'current.org_name',
    },
    // v1 bodies have no event id: a notification is its object, its event, its webhook and the time of the change
    // (what Pipedrive's staff advise to tell notifications apart). `retry` is left out: a redelivery is the same.
    key: { paths: ['meta.id', 'meta.object', 'event', 'meta.webhook_id', 'meta.timestamp_micro'] },
  },
  skip: [
    notAPerson('meta.object'),
    {
      when: matches('event', /^deleted\./),
      reason: 'a deletion (deleted.person): a person removed in Pipedrive is not a lead to send',
    },
  ],
  note: 'The email and phone are the primary ones of the person, else the first that is set. A v1 webhook may deliver one edit twice under two change times: the second is then a known lead, not sent again.',
};

export const pipedriveWebhookV2: JsonSource = {
  name: 'pipedrive-webhook-v2',
  title: 'Pipedrive webhook (v2)',
  docs: [
    'https://pipedrive.readme.io/docs/guide-for-webhooks-v2',
    'https://pipedrive.readme.io/docs/webhooks-v2-migration-guide',
  ],
  reads: 'json',
  signature: { has: ['meta.entity', 'meta.action'], equals: { 'meta.version': ['2.0'] } },
  mapping: {
    fields: {
      type: 'meta.action',
      // An ISO time or epoch seconds, as deliveries write it.
      time: ['meta.timestamp', 'data.update_time', 'data.add_time'],
      email: listed('data.emails'),
      phone: listed('data.phones'),
      name: 'data.name',
      firstName: 'data.first_name',
      lastName: 'data.last_name',
    },
    // meta.id is the event's own id; a redelivery has the same one with a higher meta.attempt.
    key: { path: 'meta.id' },
  },
  skip: [
    notAPerson('meta.entity'),
    {
      when: is('meta.action', 'delete'),
      reason:
        'a deletion (action delete): a person removed in Pipedrive, or merged into another (meta.merged_to_id), is not a lead to send',
    },
  ],
  note: 'v2 bodies hold no organization name (only data.org_id), so no company is sent. The email and phone are the primary ones of the person, else the first that is set.',
};
