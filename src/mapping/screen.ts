// Records that are not leads, told generically, for sources no definition knows: a test event (`test: true`,
// `livemode: false`, an event named `ping` or `*.test`), a person who did not opt in or took it back (a refund, a
// chargeback, an unsubscribe, an entry marked spam), and an event about something other than a person (a product, the
// store, the site, a campaign). Such a record is filtered with the reason, never sent and never dropped silently.
import { normalizeHeader } from './fields.js';

// Keys whose true value marks a test, and the key whose false value does.
const TEST_KEYS = new Set([
  'test',
  'istest',
  'testlead',
  'testmode',
  'testevent',
  'istestevent',
  'testorder',
  'sandbox',
  'issandbox',
]);
const LIVE_KEYS = new Set(['livemode', 'islive', 'live']);
// Keys holding a record's state, and states that say the person is not (or no longer) a lead.
const STATUS_KEYS = new Set([
  'status',
  'state',
  'financialstatus',
  'paymentstatus',
  'orderstatus',
  'subscriptionstatus',
  'situacao',
  'estado',
  'statusdatransacao',
  'statusdavenda',
]);
const OPTED_OUT = new Set([
  'refunded',
  'refund',
  'reembolsado',
  'reembolso',
  'reembolsada',
  'chargeback',
  'chargedback',
  'unsubscribed',
  'unsubscribe',
  'cleaned',
  'spam',
  'canceled',
  'cancelled',
  'cancelado',
  'cancelada',
  'trash',
]);
// Keys saying how far a form's response got (Typeform's CSV "Response Type"), and the values of one not finished.
const RESPONSE_KEYS = new Set(['responsetype', 'responsestatus', 'submissiontype', 'submissionstatus']);
const UNFINISHED = new Set(['partial', 'started', 'incomplete', 'abandoned']);
// Boolean keys that say the same: `refunded: true`, `subscribed: false`.
const TRUE_OPTED_OUT = new Set(['refunded', 'chargebacked', 'unsubscribed', 'isspam', 'spam', 'disputed']);
const FALSE_OPTED_OUT = new Set(['subscribed', 'optin', 'optedin', 'consent', 'marketingconsent']);
// Keys naming the event, and the words of an event name that make it something other than a new lead.
const TYPE_KEYS = new Set(['type', 'event', 'eventtype', 'eventname', 'topic', 'action', 'trigger']);
const TYPE_NOT_LEAD = new Set([
  'test',
  'ping',
  'refund',
  'refunded',
  'chargeback',
  'unsubscribe',
  'unsubscribed',
  'cleaned',
  'spam',
  'cancel',
  'canceled',
  'cancelled',
  'delete',
  'deleted',
  'destroy',
  'destroyed',
]);
// The first word of an event name that is about a thing, not a person ("products/update", "site_publish").
const THING = new Set([
  'product',
  'products',
  'shop',
  'store',
  'site',
  'campaign',
  'campaigns',
  'collection',
  'collections',
  'inventory',
  'theme',
  'themes',
  'domain',
  'domains',
  'app',
  'eventtype',
  'admin',
  'coupon',
  'coupons',
  'page',
  'pages',
]);

/** Why a key/value pair makes its record no lead, or undefined. `key` as written; the value as the record has it. */
export function screenPair(key: string, value: unknown): string | undefined {
  const k = normalizeHeader(key);
  if (k.endsWith('topic') || k.endsWith('event') || TYPE_KEYS.has(k)) {
    if (typeof value === 'string') {
      const why = screenType(value);
      if (why) return why;
    }
  }
  // A message's delivery status (Twilio's MessageStatus, WhatsApp's statuses): a notification, not a lead.
  if (k === 'messagestatus' || (k === 'statuses' && Array.isArray(value) && value.length > 0))
    return `a message's delivery status (${key}), not a lead`;
  const t = truth(value);
  if (TEST_KEYS.has(k) && t === true) return `a test event (${key}: ${String(value)})`;
  if (LIVE_KEYS.has(k) && t === false) return `a test-mode event (${key}: ${String(value)})`;
  if (TRUE_OPTED_OUT.has(k) && t === true) return `not a lead: ${key} is ${String(value)}`;
  if (FALSE_OPTED_OUT.has(k) && t === false)
    return `not a lead: ${key} is ${String(value)} (the person did not opt in)`;
  if (RESPONSE_KEYS.has(k) && typeof value === 'string' && UNFINISHED.has(normalizeHeader(value)))
    return `a ${value.trim().toLowerCase()} response (${key}: ${value}): the completed response is the lead`;
  if (STATUS_KEYS.has(k) && typeof value === 'string' && OPTED_OUT.has(normalizeHeader(value)))
    return `not a lead: ${key} ${value}`;
  return undefined;
}

/** Why an event of this name is no new lead (a test, a ping, a refund, an event about a product), or undefined. */
export function screenType(type: string): string | undefined {
  const words = type
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter(Boolean);
  if (words.length === 0 || words.length > 8) return undefined;
  const word = words.find((w) => TYPE_NOT_LEAD.has(w));
  if (word) return `not a lead event: ${type} (${word})`;
  // The object of "products/update", "site_publish", "event_type.updated": its first part, joined.
  const first = normalizeHeader(type.split(/[./:]/)[0]!);
  if (THING.has(first) || THING.has(words[0]!)) return `not about a person: ${type}`;
  return undefined;
}

/**
 * Whether screenPair looks at a key of this name other than as the event's type (which the fast paths check
 * themselves): a record shape holding one is screened record by record by the general path.
 */
export function screenedKey(key: string): boolean {
  const k = normalizeHeader(key);
  return (
    TEST_KEYS.has(k) ||
    LIVE_KEYS.has(k) ||
    TRUE_OPTED_OUT.has(k) ||
    FALSE_OPTED_OUT.has(k) ||
    STATUS_KEYS.has(k) ||
    RESPONSE_KEYS.has(k) ||
    k.endsWith('topic') ||
    k.endsWith('event') ||
    k === 'messagestatus' ||
    k === 'statuses'
  );
}

// A value read as a boolean: true, "true", 1, "1", "yes", "sim"; false, "false", 0, "0", "no", "não"; else undefined.
function truth(v: unknown): boolean | undefined {
  if (typeof v === 'boolean') return v;
  if (typeof v === 'number') return v === 1 ? true : v === 0 ? false : undefined;
  if (typeof v !== 'string') return undefined;
  const s = normalizeHeader(v);
  if (s === 'true' || s === '1' || s === 'yes' || s === 'sim' || s === 'si') return true;
  if (s === 'false' || s === '0' || s === 'no' || s === 'nao') return false;
  return undefined;
}
