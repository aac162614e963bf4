// Segment and RudderStack events (the Segment Spec both follow): one event per line as warehouses, S3 dumps and
// logs hold them, or an HTTP API batch body with several. The person is in `traits` (identify) or
// `context.traits` (track and the others); `messageId` is the event's id, the one both vendors dedup on, so a
// client's retry is the same event. Events that carry no email or phone are analytics, not leads: filtered.
import { all, is, isNot, missing, present } from '../conditions.js';
import type { Condition, JsonSource, Skip, SourceMapping } from '../types.js';

const TYPES = ['identify', 'track', 'page', 'screen', 'group', 'alias'];

const fields = (time: readonly string[]): SourceMapping['fields'] => ({
  type: 'type',
  time: [...time],
  // Where senders put them besides the Spec's traits: a track's properties, or the event's top level.
  email: ['traits.email', 'context.traits.email', 'properties.email', 'email'],
  phone: ['traits.phone', 'context.traits.phone', 'properties.phone', 'phone'],
  name: ['traits.name', 'context.traits.name'],
  firstName: ['traits.firstName', 'context.traits.firstName'],
  lastName: ['traits.lastName', 'context.traits.lastName'],
  // The Spec's company trait is an object; much real data writes the name alone.
  company: ['traits.company.name', 'traits.company', 'context.traits.company.name', 'context.traits.company'],
  source: 'context.campaign.source',
});

// Every place an event may carry the person's email or phone (names matched whatever their case: `Email`, `EMAIL`).
const CONTACT = [
  'traits.email',
  'traits.phone',
  'context.traits.email',
  'context.traits.phone',
  'properties.email',
  'properties.phone',
  'email',
  'phone',
];

// An event with an id and no way to reach the person. One without a messageId is left to be invalid: it is broken,
// whatever it holds.
const noContact = (type: Condition) => all(type, present('messageId'), ...CONTACT.map((p) => missing(p)));

const SKIP: readonly Skip[] = [
  {
    when: noContact(is('type', 'identify')),
    reason:
      'an identify call with no email or phone in its traits: it names a user but not how to reach them; the identify that carries traits.email or traits.phone is the lead',
  },
  {
    when: noContact(isNot('type', 'identify')),
    reason:
      'not about a person: a track, page, screen, group or alias event with no email or phone in traits, context.traits, properties or at its top level (what someone did, not who to reach)',
  },
];

const SEGMENT_DOCS = [
  'https://www.twilio.com/docs/segment/connections/spec/common',
  'https://www.twilio.com/docs/segment/connections/spec/identify',
  'https://www.twilio.com/docs/segment/guides/duplicate-data',
];
const RUDDERSTACK_DOC = 'https://rudderstack.com/docs/event-spec/standard-events/common-fields/';

const NOTE =
  'The key is messageId: a retried delivery (a later sentAt) is the same event. Events with no email or phone in traits, context.traits, properties or at their top level (page views, most track calls) are filtered, not invalid. Field names are read whatever their case (Email, EMAIL).';

/**
 * An event RudderStack's server has processed: it carries a rudderId (seen in RudderStack's payloads), a field
 * Segment's Spec does not have.
 */
export const rudderstackEvent: JsonSource = {
  name: 'rudderstack',
  title: 'RudderStack event',
  docs: [RUDDERSTACK_DOC, ...SEGMENT_DOCS],
  reads: 'json',
  signature: { has: ['messageId', 'type', 'rudderId'], equals: { type: TYPES } },
  // RudderStack's originalTimestamp is "the actual time when the event occurred"; timestamp is the server's.
  mapping: { fields: fields(['originalTimestamp', 'timestamp']), key: { path: 'messageId' } },
  skip: SKIP,
  note: NOTE,
};

/** An event in the Segment Spec without RudderStack's stamp: Segment's, or RudderStack's before its server. */
export const segmentEvent: JsonSource = {
  name: 'segment',
  title: 'Segment/RudderStack event',
  docs: [...SEGMENT_DOCS, RUDDERSTACK_DOC],
  reads: 'json',
  signature: { has: ['messageId', 'type'], equals: { type: TYPES } },
  // Segment's timestamp is the client's time corrected for its clock's drift.
  mapping: { fields: fields(['timestamp', 'originalTimestamp']), key: { path: 'messageId' } },
  skip: SKIP,
  note: NOTE,
};

export const segmentBatch: JsonSource = {
  name: 'segment-batch',
  title: 'Segment/RudderStack batch',
  docs: [
    ...SEGMENT_DOCS,
    RUDDERSTACK_DOC,
    'the batch body {"batch": [...]} is that of the HTTP API batch endpoint (its page: https://github.com/segmentio/segment-docs/pull/6966)',
  ],
  reads: 'json',
  signature: { has: ['batch[*].messageId', 'batch[*].type'] },
  events: 'batch',
  mapping: { fields: fields(['timestamp', 'originalTimestamp']), key: { path: 'messageId' } },
  skip: SKIP,
  note: `Each event of a batch is decided on its own, reported as line N (item i). ${NOTE} A context given once for the whole batch is not read: each event's own is.`,
};
