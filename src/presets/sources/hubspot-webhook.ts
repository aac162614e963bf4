// HubSpot webhooks (v3): a delivery is a JSON array of events, read one by one (line N, item i). They name the
// contact by its id only: the one event that carries a person is a change of the contact's email, whose new value
// is propertyValue. A creation, a change of any other property, a deletion or a merge names no one to send.
import { all, is, isNot } from '../conditions.js';
import type { JsonSource } from '../types.js';

const LEAD_TYPES = ['contact.creation', 'contact.propertyChange', 'object.creation', 'object.propertyChange'];

export const hubspotWebhook: JsonSource = {
  name: 'hubspot-webhook',
  title: 'HubSpot webhook',
  docs: [
    'https://developers.hubspot.com/docs/apps/legacy-apps/public-apps/create-generic-webhook-subscriptions',
    'https://developers.hubspot.com/docs/guides/crm/private-apps/webhooks',
  ],
  reads: 'json',
  signature: { has: ['subscriptionType', 'portalId', 'objectId'] },
  mapping: {
    fields: {
      type: 'subscriptionType',
      // Epoch milliseconds.
      time: 'occurredAt',
      // Only a change of the email property is kept (see skip), so its new value is the email.
      email: 'propertyValue',
    },
    // HubSpot says eventId is "not guaranteed to be unique": the event is its id within its subscription and
    // account, for its contact at its time. A retry (attemptNumber 1, 2, ...) repeats every one of them.
    key: { paths: ['eventId', 'subscriptionId', 'portalId', 'objectId', 'occurredAt'] },
  },
  skip: [
    {
      when: isNot('subscriptionType', ...LEAD_TYPES),
      reason:
        'not a lead event: a HubSpot event other than a contact created or changed (a deletion, merge, restore, association or privacy deletion)',
    },
    {
      when: isNot('objectTypeId', '0-1'),
      reason: 'not a lead event: a HubSpot object that is not a contact (objectTypeId is not 0-1)',
    },
    {
      when: is('subscriptionType', 'contact.creation', 'object.creation'),
      reason:
        "a contact creation holds the contact's id only (objectId), no email: subscribe to contact.propertyChange for email, fetch the contact (GET /crm/v3/objects/contacts/{objectId}), or push a HubSpot contacts export",
    },
    {
      when: all(
        is('subscriptionType', 'contact.propertyChange', 'object.propertyChange'),
        isNot('propertyName', 'email'),
      ),
      reason:
        'a change of a contact property other than email: HubSpot names the contact by its id only, so there is no one to send (the email change is the lead)',
    },
  ],
  note: 'Each event of a delivery is reported as line N (item i). Subscribe to contact.propertyChange on email: the other events carry ids only.',
};
