// Stripe events (webhook deliveries, `stripe events list`, the API's list of events). Only the events whose object
// is a person are leads: a customer created or updated, and a completed Checkout Session's customer_details.
import { is, isNot } from '../conditions.js';
import type { JsonSource } from '../types.js';

const LEAD_TYPES = ['customer.created', 'customer.updated', 'checkout.session.completed'];

const events: Pick<JsonSource, 'mapping' | 'skip'> = {
  mapping: {
    fields: {
      type: 'type',
      // Epoch seconds.
      time: 'created',
      email: ['data.object.customer_details.email', 'data.object.email', 'data.object.customer_email'],
      phone: ['data.object.customer_details.phone', 'data.object.phone'],
      name: ['data.object.customer_details.name', 'data.object.name'],
      company: 'data.object.customer_details.business_name',
      // Only where the integration put it in the object's metadata.
      source: 'data.object.metadata.utm_source',
    },
    // A retry re-sends the same event id.
    key: { path: 'id' },
  },
  skip: [
    {
      when: isNot('type', ...LEAD_TYPES),
      reason: `not a lead event: a Stripe event that carries no person (the leads are ${LEAD_TYPES.join(', ')})`,
    },
    {
      when: is('livemode', false),
      reason: "a test-mode event (livemode: false, made with Stripe's test keys): not a real customer",
    },
  ],
};

export const stripeEvent: JsonSource = {
  name: 'stripe-event',
  title: 'Stripe event',
  docs: ['https://docs.stripe.com/api/events/object', 'https://docs.stripe.com/webhooks/process-undelivered-events'],
  reads: 'json',
  signature: { has: ['id', 'type', 'created', 'data'], equals: { object: ['event'] } },
  ...events,
  note: 'Leads are customer.created, customer.updated and checkout.session.completed events of live mode; the source is metadata.utm_source where the integration sets it.',
};

export const stripeEventList: JsonSource = {
  name: 'stripe-event-list',
  title: 'Stripe list of events',
  docs: ['https://docs.stripe.com/api/events/object'],
  reads: 'json',
  signature: { has: ['data'], equals: { object: ['list'], 'data[*].object': ['event'] } },
  events: 'data',
  ...events,
  note: 'Each event of the list is reported as line N (item i).',
};
