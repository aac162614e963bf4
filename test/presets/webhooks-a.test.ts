// Webhook bodies and API events users download from HubSpot, Meta Lead Ads, Google Ads lead forms and Stripe:
// `push --dry-run` recognizes each with no flags, says what it read them as, sends the leads they hold once, and
// files every record that holds no lead (ids-only notifications, test leads, other events) as filtered with why.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runCli } from '../helpers/cli.js';
import { tmpDir } from '../helpers/tmp.js';
import { parsePath } from '../../src/mapping/fields.js';
import { eventList } from '../../src/presets/recognize.js';
import {
  audit,
  emailsOfNew,
  jsonLines,
  parseJsonLines,
  readAs,
  runJson,
  type Doc,
  type Row,
  type Sent,
} from './helpers.js';

const FIX = 'fixtures/sources';

function counts(doc: Doc) {
  const { new: n, duplicate, duplicate_in_input, known_lead, invalid, filtered } = doc.counts;
  return { new: n, duplicate, duplicate_in_input, known_lead, invalid, filtered };
}

/** Where each decision was made, as line or line.item, with the rows' reasons. */
const at = (r: Row) => (r.item === '' ? `${r.line}` : `${r.line}.${r.item}`);
const where = (rows: Row[], decision: string) => rows.filter((r) => r.decision === decision).map(at);
const reasons = (rows: Row[], decision: string) => rows.filter((r) => r.decision === decision).map((r) => r.reason);

/**
 * A real push to the JSONL sink, then the same again: the leads sent (email, phone), the times the ledger holds
 * for them, and that the second push sends nothing.
 */
async function pushTwice(fixture: string, sent: number) {
  const dir = tmpDir('leadledger-webhooks-a-sink-');
  const db = join(dir, 'l.db');
  const out = join(dir, 'out.jsonl');
  const args = ['push', fixture, '--ledger', db, '--sink', 'jsonl', '--output', out];
  const reports = [join(dir, 'r1.jsonl'), join(dir, 'r2.jsonl')];
  const first = await runJson(args, { report: reports[0] });
  assert.equal(first.doc.counts.new, sent);
  const leads = jsonLines<Sent>(out).map((s) => s.lead);
  assert.equal(leads.length, sent);
  const second = await runJson(args, { report: reports[1] });
  assert.equal(second.doc.counts.new, 0);
  assert.equal(second.doc.counts.duplicate, sent);
  assert.equal(jsonLines(out).length, sent, 'the second push sent nothing');
  const exported = await runCli(['ledger', 'export', '--ledger', db, '--format', 'jsonl', '--output', '-']);
  assert.equal(exported.code, 0, exported.stderr);
  const times = Object.fromEntries(
    parseJsonLines<{ key: string; event_time: string }>(exported.stdout).map((e) => [e.key, e.event_time]),
  );
  return { leads: leads.map((l) => [l.email, l.phone]), times, dir, db, out, first, second, reports };
}

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

// --- HubSpot -------------------------------------------------------------------------------------------------------

const HUBSPOT = `${FIX}/hubspot-webhook/deliveries.jsonl`;
const CREATION =
  "a contact creation holds the contact's id only (objectId), no email: subscribe to contact.propertyChange for email, fetch the contact (GET /crm/v3/objects/contacts/{objectId}), or push a HubSpot contacts export";
const NOT_HUBSPOT_LEAD =
  'not a lead event: a HubSpot event other than a contact created or changed (a deletion, merge, restore, association or privacy deletion)';

test('HubSpot webhook: each event of a delivery is decided on its own; only email changes are leads', async () => {
  const { doc, rows } = await audit(HUBSPOT);
  assert.deepEqual(readAs(doc), [{ as: 'HubSpot webhook', events: 14 }]);
  assert.deepEqual(counts(doc), {
    new: 3,
    duplicate: 0,
    duplicate_in_input: 1,
    known_lead: 1,
    invalid: 1,
    filtered: 8,
  });
  assert.deepEqual(emailsOfNew(rows), [
    'jane.miller@example.com',
    'omar.haddad@example.com',
    'ana.souza@exemplo.com.br',
  ]);
  assert.deepEqual(where(rows, 'new'), ['1.2', '5.2', '6.1']);
  // The retry (attemptNumber 1) of Jane's email change; the same email on a second contact of hers.
  assert.deepEqual(where(rows, 'duplicate_in_input'), ['2.1']);
  assert.deepEqual(where(rows, 'known_lead'), ['3.2']);
  // Ana's change has Jane's eventId and subscriptionId, in another HubSpot account: its own event.
  const ana = rows.find((r) => r.email === 'ana.souza@exemplo.com.br')!;
  assert.equal(ana.key, '1900000102|2244002|40067890|3101|1741782000000');
  assert.equal(rows.find((r) => at(r) === '1.2')!.key, '1900000102|2244002|40012345|95001|1741608764402');
  // An email cleared.
  assert.deepEqual(where(rows, 'invalid'), ['7.1']);
  assert.deepEqual(reasons(rows, 'invalid'), ['no email and no phone: nothing identifies the person']);
  assert.deepEqual(where(rows, 'filtered'), ['1.1', '2.2', '3.1', '4.1', '5.1', '5.3', '8.1', '8.2']);
  const byAt = Object.fromEntries(rows.map((r) => [at(r), r.reason]));
  for (const c of ['1.1', '2.2', '3.1', '5.1']) assert.equal(byAt[c], CREATION);
  assert.equal(byAt['4.1'], NOT_HUBSPOT_LEAD); // a merge
  assert.equal(byAt['8.1'], NOT_HUBSPOT_LEAD); // a deletion
  assert.equal(
    byAt['5.3'],
    'a change of a contact property other than email: HubSpot names the contact by its id only, so there is no one to send (the email change is the lead)',
  );
  assert.equal(byAt['8.2'], 'not a lead event: a HubSpot object that is not a contact (objectTypeId is not 0-1)');
});

test('HubSpot webhook: sent once, occurredAt read as milliseconds; one delivery as a JSON document too', async () => {
  const { leads, times } = await pushTwice(HUBSPOT, 3);
  assert.deepEqual(leads, [
    ['jane.miller@example.com', undefined],
    ['omar.haddad@example.com', undefined],
    ['ana.souza@exemplo.com.br', undefined],
  ]);
  assert.equal(times['1900000102|2244002|40012345|95001|1741608764402'], '2025-03-10T12:12:44.402Z');

  const dir = tmpDir('leadledger-webhooks-a-doc-');
  const delivery = join(dir, 'delivery.json');
  const first = readFileSync(HUBSPOT, 'utf8').split('\n')[0]!;
  writeFileSync(delivery, JSON.stringify(JSON.parse(first), null, 2));
  const { doc, rows } = await audit(delivery);
  assert.deepEqual(readAs(doc), [{ as: 'HubSpot webhook', events: 2 }]);
  assert.deepEqual(
    rows.map((r) => [r.decision, r.email]),
    [
      ['filtered', ''],
      ['new', 'jane.miller@example.com'],
    ],
  );
});

// --- Meta ----------------------------------------------------------------------------------------------------------

const META_WEBHOOK = `${FIX}/meta-leadgen/webhook.jsonl`;
const META_GRAPH = `${FIX}/meta-leadgen/graph-leads.jsonl`;
const META_PAGE = `${FIX}/meta-leadgen/form-leads-page.json`;
const IDS_ONLY =
  'a leadgen notification holds ids only (leadgen_id, form_id), no lead data: download the leads (Meta Business Suite → Instant Forms → Download) and push that file, or fetch each lead from the Graph API (GET /{leadgen_id}?fields=created_time,field_data)';
const META_TEST =
  'a test lead: Meta\'s Lead Ads Testing Tool wrote it (email test@meta.com, answers "<test lead: dummy data for …>"), no person filled the form';

test('Meta leadgen webhook: every change of every entry is an event, filtered as ids only', async () => {
  const { doc, rows } = await audit(META_WEBHOOK);
  assert.deepEqual(readAs(doc), [{ as: 'Meta leadgen webhook', events: 7 }]);
  assert.deepEqual(counts(doc), {
    new: 0,
    duplicate: 0,
    duplicate_in_input: 0,
    known_lead: 0,
    invalid: 1,
    filtered: 6,
  });
  // Line 3: two leads in one change list; line 4: two entries, a feed change then a lead.
  assert.deepEqual(
    rows.map((r) => [at(r), r.decision, r.key]),
    [
      ['1.1', 'filtered', '1110000000000001'],
      ['2.1', 'filtered', '1110000000000001'],
      ['3.1', 'filtered', '1110000000000003'],
      ['3.2', 'filtered', '1110000000000002'],
      ['4.1', 'filtered', ''],
      ['4.2', 'filtered', '1110000000000004'],
      ['5.1', 'invalid', ''],
    ],
  );
  for (const c of ['1.1', '2.1', '3.1', '3.2', '4.2']) assert.equal(rows.find((r) => at(r) === c)!.reason, IDS_ONLY);
  assert.equal(
    rows.find((r) => at(r) === '4.1')!.reason,
    'not a lead event: a change of another field of the Page than leadgen (its feed, ...)',
  );
  assert.deepEqual(reasons(rows, 'invalid'), ["no event id in 'value.leadgen_id'"]);
});

test('Meta leadgen webhook: a change a relay filled with the lead (field_data in value) is the lead', async () => {
  const dir = tmpDir('leadledger-webhooks-a-meta-');
  const file = join(dir, 'enriched.jsonl');
  const change = {
    field: 'leadgen',
    value: {
      leadgen_id: '1110000000000001',
      form_id: '900000000000001',
      created_time: 1741608764,
      field_data: [
        { name: 'full_name', values: ['Ana Souza'] },
        { name: 'email', values: ['ana.souza@exemplo.com.br'] },
      ],
    },
  };
  writeFileSync(file, JSON.stringify({ object: 'page', entry: [{ id: '100000000000777', changes: [change] }] }) + '\n');
  const { doc, rows } = await audit(file);
  assert.deepEqual(readAs(doc), [{ as: 'Meta leadgen webhook', events: 1 }]);
  assert.deepEqual(
    rows.map((r) => [at(r), r.decision, r.email]),
    [['1.1', 'new', 'ana.souza@exemplo.com.br']],
  );
});

test('Meta Graph API leads: answers read by name, the test lead filtered, sent once', async () => {
  const { doc, rows } = await audit(META_GRAPH);
  assert.deepEqual(readAs(doc), [{ as: 'Meta lead (Graph API)', events: 6 }]);
  assert.deepEqual(counts(doc), {
    new: 2,
    duplicate: 0,
    duplicate_in_input: 1,
    known_lead: 1,
    invalid: 1,
    filtered: 1,
  });
  assert.deepEqual(emailsOfNew(rows), ['ana.souza@exemplo.com.br', 'bruno.lima@exemplo.com.br']);
  assert.deepEqual(where(rows, 'duplicate_in_input'), ['4']);
  assert.deepEqual(where(rows, 'known_lead'), ['3']);
  assert.deepEqual(where(rows, 'filtered'), ['5']);
  assert.deepEqual(reasons(rows, 'filtered'), [META_TEST]);
  assert.deepEqual(where(rows, 'invalid'), ['6']);
  assert.deepEqual(reasons(rows, 'invalid'), ['no email and no phone: nothing identifies the person']);

  const { leads, times } = await pushTwice(META_GRAPH, 2);
  assert.deepEqual(leads, [
    ['ana.souza@exemplo.com.br', '+5511987654321'],
    ['bruno.lima@exemplo.com.br', '+5511912345678'],
  ]);
  // created_time is written "+0000".
  assert.equal(times['1110000000000001'], '2025-03-10T12:12:44.000Z');
});

test("Meta Graph API: a page of a form's leads is read lead by lead", async () => {
  const { doc, rows } = await audit(META_PAGE);
  assert.deepEqual(readAs(doc), [{ as: "Meta form's leads (Graph API)", events: 3 }]);
  assert.deepEqual(
    rows.map((r) => [at(r), r.decision, r.key, r.email]),
    [
      ['1.1', 'new', '1110000000000001', 'ana.souza@exemplo.com.br'],
      ['1.2', 'new', '1110000000000002', 'bruno.lima@exemplo.com.br'],
      ['1.3', 'filtered', '1110000000000004', ''],
    ],
  );
  assert.equal(rows[2]!.reason, META_TEST);
});

// --- Google Ads ----------------------------------------------------------------------------------------------------

const GOOGLE = `${FIX}/google-ads/webhook.jsonl`;
const GOOGLE_KEY = 'gk-7Qm2x9LwVb4Rt8Zp';

test('Google Ads lead form webhook: columns read by column_id, keyed by lead_id, the test lead filtered', async () => {
  assert.ok(readFileSync(GOOGLE, 'utf8').includes(GOOGLE_KEY), 'the fixture carries the key the test looks for');
  const { doc, rows, stdout, stderr, report } = await audit(GOOGLE);
  assert.deepEqual(readAs(doc), [{ as: 'Google Ads lead form webhook', events: 6 }]);
  assert.deepEqual(counts(doc), {
    new: 2,
    duplicate: 0,
    duplicate_in_input: 1,
    known_lead: 1,
    invalid: 1,
    filtered: 1,
  });
  assert.deepEqual(emailsOfNew(rows), ['jane.miller@example.com', 'omar.haddad@example.com']);
  assert.deepEqual(
    rows.map((r) => [at(r), r.decision, r.key]),
    [
      ['1', 'new', 'Lk9sPq2mT0aXcV8bN1'],
      ['2', 'duplicate_in_input', 'Lk9sPq2mT0aXcV8bN1'],
      // WORK_EMAIL, FIRST_NAME/LAST_NAME, another form: the same person.
      ['3', 'known_lead', 'Mx3vBb7yQ4kLd2Hs9'],
      ['4', 'filtered', 'TeSter-123-ABCDEFGHIJ'],
      ['5', 'new', 'Pq8wEr5tYu1IoP3aS7'],
      ['6', 'invalid', 'Zt6yUi2oPa9sDf4gH1'],
    ],
  );
  assert.deepEqual(reasons(rows, 'filtered'), [
    'a test lead (is_test: true, sent by "Send test data" in Google Ads): not a person',
  ]);
  assert.deepEqual(reasons(rows, 'invalid'), ['no email and no phone: nothing identifies the person']);
  for (const [what, text] of [
    ['--json', stdout],
    ['stderr', stderr],
    ['the report', readFileSync(report, 'utf8')],
  ])
    assert.ok(!text!.includes(GOOGLE_KEY), `google_key in ${what}`);
});

test('Google Ads lead form webhook: sent once; google_key reaches no output, report or ledger', async () => {
  const { leads, times, dir, db, out, first, second, reports } = await pushTwice(GOOGLE, 2);
  assert.deepEqual(leads, [
    ['jane.miller@example.com', '+12025550143'],
    ['omar.haddad@example.com', '+12025550188'],
  ]);
  assert.equal(times['Lk9sPq2mT0aXcV8bN1'], '2025-03-10T15:12:44.000Z');
  const texts: Array<[string, string | Buffer]> = [
    ['--json', first.stdout + second.stdout],
    ['stderr', first.stderr + second.stderr],
    ['the report', reports.map((f) => readFileSync(f, 'utf8')).join('')],
    ['the sink output', readFileSync(out)],
  ];
  for (const f of [db, `${db}-wal`, `${db}-shm`]) if (existsSync(f)) texts.push([f, readFileSync(f)]);
  const show = await runCli(['ledger', 'show', 'Lk9sPq2mT0aXcV8bN1', '--ledger', db, '--json']);
  assert.equal(show.code, 0, show.stderr);
  texts.push(['ledger show', show.stdout]);
  for (const [what, text] of texts)
    assert.ok(
      !(typeof text === 'string' ? text.includes(GOOGLE_KEY) : text.includes(GOOGLE_KEY)),
      `google_key in ${what}`,
    );
  assert.ok(dir);
});

// --- Stripe --------------------------------------------------------------------------------------------------------

const STRIPE = `${FIX}/stripe/events.jsonl`;
const STRIPE_LIST = `${FIX}/stripe/events-list.json`;
const NOT_STRIPE_LEAD =
  'not a lead event: a Stripe event that carries no person (the leads are customer.created, customer.updated, checkout.session.completed)';

test('Stripe events: customers and completed checkouts are leads, other types and test mode filtered', async () => {
  const { doc, rows } = await audit(STRIPE);
  assert.deepEqual(readAs(doc), [{ as: 'Stripe event', events: 8 }]);
  assert.deepEqual(counts(doc), {
    new: 2,
    duplicate: 0,
    duplicate_in_input: 1,
    known_lead: 1,
    invalid: 1,
    filtered: 3,
  });
  assert.deepEqual(emailsOfNew(rows), ['jane.miller@example.com', 'omar.haddad@example.com']);
  assert.deepEqual(
    rows.map((r) => [at(r), r.decision, r.key]),
    [
      ['1', 'new', 'evt_1QExampleAAAAAAAAAAAAAA1'],
      ['2', 'duplicate_in_input', 'evt_1QExampleAAAAAAAAAAAAAA1'],
      ['3', 'known_lead', 'evt_1QExampleBBBBBBBBBBBBBB2'],
      ['4', 'filtered', 'evt_1QExampleDDDDDDDDDDDDDD4'],
      ['5', 'filtered', 'evt_1QExampleCCCCCCCCCCCCCC3'],
      ['6', 'new', 'evt_1QExampleEEEEEEEEEEEEEE5'],
      ['7', 'invalid', 'evt_1QExampleFFFFFFFFFFFFFF6'],
      ['8', 'filtered', 'evt_1QExampleGGGGGGGGGGGGGG7'],
    ],
  );
  assert.deepEqual(reasons(rows, 'filtered'), [
    NOT_STRIPE_LEAD, // payment_intent.succeeded
    "a test-mode event (livemode: false, made with Stripe's test keys): not a real customer",
    NOT_STRIPE_LEAD, // customer.deleted
  ]);
  assert.deepEqual(reasons(rows, 'invalid'), ['no email and no phone: nothing identifies the person']);

  const { leads, times } = await pushTwice(STRIPE, 2);
  assert.deepEqual(leads, [
    ['jane.miller@example.com', '+12025550143'],
    ['omar.haddad@example.com', '+12025550188'],
  ]);
  // created is epoch seconds.
  assert.equal(times['evt_1QExampleAAAAAAAAAAAAAA1'], '2025-03-10T15:12:45.000Z');
  assert.equal(times['evt_1QExampleEEEEEEEEEEEEEE5'], '2025-03-12T14:33:20.000Z');
});

test('Stripe list of events: each event of the list is decided on its own', async () => {
  const { doc, rows } = await audit(STRIPE_LIST);
  assert.deepEqual(readAs(doc), [{ as: 'Stripe list of events', events: 3 }]);
  assert.deepEqual(
    rows.map((r) => [at(r), r.decision, r.email]),
    [
      ['1.1', 'new', 'omar.haddad@example.com'],
      ['1.2', 'new', 'jane.miller@example.com'],
      ['1.3', 'known_lead', 'jane.miller@example.com'],
    ],
  );
});

// --- --preset ------------------------------------------------------------------------------------------------------

test('--preset forces each of these sources, and reads its fixture as recognizing it does', async () => {
  const cases: Array<[string, string, string]> = [
    ['hubspot-webhook', HUBSPOT, 'HubSpot webhook'],
    ['meta-leadgen-webhook', META_WEBHOOK, 'Meta leadgen webhook'],
    ['meta-graph-lead', META_GRAPH, 'Meta lead (Graph API)'],
    ['meta-graph-leads', META_PAGE, "Meta form's leads (Graph API)"],
    ['google-ads-lead-form', GOOGLE, 'Google Ads lead form webhook'],
    ['stripe-event', STRIPE, 'Stripe event'],
    ['stripe-event-list', STRIPE_LIST, 'Stripe list of events'],
  ];
  for (const [name, fixture, title] of cases) {
    const recognized = await audit(fixture);
    const forced = await audit(fixture, '--preset', name);
    assert.deepEqual(readAs(forced.doc), readAs(recognized.doc), name);
    assert.equal(readAs(forced.doc)[0]!.as, title);
    assert.deepEqual(forced.rows, recognized.rows, name);
  }
  // Forced onto another source's records, a definition finds no leads there: the Stripe events read as Google
  // Ads lead forms have no lead_id.
  const wrong = await audit(STRIPE, '--preset', 'google-ads-lead-form');
  assert.deepEqual(readAs(wrong.doc), [{ as: 'Google Ads lead form webhook', events: 8 }]);
  assert.equal(wrong.doc.counts.invalid, 8);
});
