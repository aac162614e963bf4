// Webhook bodies and API events users download from HubSpot, Meta Lead Ads, Google Ads lead forms and Stripe:
// `push --dry-run` recognizes each with no flags, says what it read them as, sends the leads they hold once, and
// files every record that holds no lead (ids-only notifications, test leads, other events) as filtered with why.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parsePath } from '../../src/mapping/fields.js';
import { eventList } from '../../src/presets/recognize.js';

test('events paths: [*] takes the lists under every element, a path without it the one list', () => {
  const body = {
    leads: [{ a: 1 }],
    entry: [{ changes: [{ c: 1 }, { c: 2 }] }, { changes: [] }, { changes: [{ c: 3 }] }],
    odd: [{ changes: 'none' }],
  };
  assert.deepEqual(eventList(body, parsePath('leads')), [{ a: 1 }]);
  assert.deepEqual(eventList(body, parsePath('entry[*].changes')), [{ c: 1 }, { c: 2 }, { c: 3 }]);
  assert.deepEqual(eventList(body, parsePath('entry[*].changes[*]')), [{ c: 1 }, { c: 2 }, { c: 3 }]);
  assert.equal(eventList(body, parsePath('odd[*].changes')), undefined);
  assert.equal(eventList(body, parsePath('missing[*].changes')), undefined);
  assert.equal(eventList(body, parsePath('leads[*].a')), undefined);
});
