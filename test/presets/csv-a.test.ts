// The exports users download from HubSpot, Meta Lead Ads, Pipedrive and Mailchimp, pushed with no flags: the built
// CLI must say what it read them as, decide each row as the source means it (a test lead, an unsubscribed member
// filtered with the reason), send each new lead once, and send nothing when the same export is pushed again.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runCli } from '../helpers/cli.js';
import { tmpDir } from '../helpers/tmp.js';
import { audit, fx, jsonLines, runJson, type Doc, type Row, type Sent } from './helpers.js';

const ZERO = { duplicate: 0, duplicate_in_input: 0, conflict: 0, known_lead: 0, invalid: 0, filtered: 0 };

/** A real push to the JSONL sink, then the same input pushed again: what each sent, and the second run's counts. */
async function pushTwice(input: string): Promise<{ sent: Sent[]; again: Doc; sentAgain: Sent[] }> {
  const dir = tmpDir();
  const out = join(dir, 'out.jsonl');
  const args = ['push', input, '--sink', 'jsonl', '--output', out, '--ledger', join(dir, 'l.db'), '--quiet'];
  await runJson(args);
  const sent = jsonLines<Sent>(out);
  const { doc: again } = await runJson(args);
  return { sent, again, sentAgain: jsonLines<Sent>(out).slice(sent.length) };
}

/** Pushed twice, the input sends these leads once: the second push sends none of them again, each a duplicate. */
async function sendsOnce(input: string, leads: Array<Sent['lead']>): Promise<void> {
  const { sent, again, sentAgain } = await pushTwice(input);
  assert.deepEqual(
    sent.map((s) => s.lead),
    leads,
  );
  assert.equal(again.counts.new, 0);
  assert.equal(again.counts.duplicate, leads.length);
  assert.deepEqual(sentAgain, []);
}

const readAs = (doc: Doc) => doc.readAs.map((i) => i.readAs);
const byDecision = (rows: Row[], decision: string) =>
  rows.filter((r) => r.decision === decision).map(({ line, key, email, reason }) => ({ line, key, email, reason }));
const newEmails = (rows: Row[]) => rows.filter((r) => r.decision === 'new').map((r) => [r.line, r.key, r.email]);

test('HubSpot contacts export: read by Record ID, the same contact exported twice is one event', async () => {
  const input = fx('hubspot/contacts-export.csv');
  const { doc, rows } = await audit(input);
  assert.deepEqual(readAs(doc), [[{ as: 'HubSpot contacts export', events: 5 }]]);
  assert.deepEqual(doc.counts, { ...ZERO, read: 5, new: 2, duplicate_in_input: 1, known_lead: 1, invalid: 1 });
  assert.deepEqual(newEmails(rows), [
    [2, '95001', 'jane.miller@example.com'],
    [3, '95003', 'omar.haddad@example.com'],
  ]);
  assert.match(
    rows[1]!.warnings,
    /phone: '\(202\) 555-0188' is not a valid phone number \(national number: set --default-country/,
  );
  assert.deepEqual(byDecision(rows, 'known_lead'), [
    { line: 4, key: '95002', email: 'jane.miller@example.com', reason: 'same person as event 95001' },
  ]);
  assert.deepEqual(
    byDecision(rows, 'duplicate_in_input').map((r) => [r.line, r.key]),
    [[5, '95001']],
  );
  assert.deepEqual(byDecision(rows, 'invalid'), [
    { line: 6, key: '95004', email: '', reason: 'no email and no phone: nothing identifies the person' },
  ]);

  await sendsOnce(input, [
    {
      email: 'jane.miller@example.com',
      phone: '+12025550143',
      name: 'Jane Miller',
      first_name: 'Jane',
      last_name: 'Miller',
      company: 'Miller & Sons, LLC',
    },
    { email: 'omar.haddad@example.com', name: 'Omar Haddad', first_name: 'Omar', last_name: 'Haddad' },
  ]);
});

test('a Zoho CRM export, whose "Record Id" reads as HubSpot\'s "Record ID", is not read as HubSpot', async () => {
  const input = join(tmpDir(), 'Leads_2025_03_20.csv');
  writeFileSync(
    input,
    [
      '"Record Id","Lead Owner","Company","First Name","Last Name","Email","Phone","Lead Status","Created Time"',
      '"zcrm_5725767000000524101","Sam Owner","Miller & Sons","Jane","Miller","jane.miller@example.com","(202) 555-0143","Not Contacted","2025-03-10 10:12:44"',
      '',
    ].join('\n'),
  );
  const { doc } = await audit(input);
  assert.ok(!JSON.stringify(readAs(doc)).includes('HubSpot'), JSON.stringify(readAs(doc)));
});

test('Meta Lead Ads download (UTF-16, tabs): prefixes taken off, the test lead filtered, keyed by lead id', async () => {
  const input = fx('meta-lead-ads/leads-download.csv');
  const { doc, rows } = await audit(input);
  assert.deepEqual(readAs(doc), [[{ as: 'Meta Lead Ads leads download', events: 6 }]]);
  assert.deepEqual(doc.counts, {
    ...ZERO,
    read: 6,
    new: 2,
    duplicate_in_input: 1,
    known_lead: 1,
    invalid: 1,
    filtered: 1,
  });
  assert.deepEqual(newEmails(rows), [
    [2, '1110000000000001', 'ana.souza@exemplo.com.br'],
    [3, '1110000000000002', 'bruno.lima@exemplo.com.br'],
  ]);
  assert.deepEqual(
    byDecision(rows, 'known_lead').map((r) => [r.line, r.key, r.reason]),
    [[4, '1110000000000003', 'same person as event 1110000000000001']],
  );
  assert.deepEqual(byDecision(rows, 'filtered'), [
    {
      line: 5,
      key: '1110000000000004',
      email: '',
      reason:
        'a test lead: Meta\'s Lead Ads Testing Tool wrote it (email test@meta.com, answers "<test lead: dummy data for …>"), no person filled the form',
    },
  ]);
  assert.deepEqual(
    byDecision(rows, 'duplicate_in_input').map((r) => [r.line, r.key]),
    [[6, '1110000000000001']],
  );
  assert.deepEqual(byDecision(rows, 'invalid'), [
    {
      line: 7,
      key: '1110000000000005',
      email: '',
      reason: "email: 'carla.dias@exemplo' is not a valid email address: the domain 'exemplo' has no dot (name.tld)",
    },
  ]);

  await sendsOnce(input, [
    { email: 'ana.souza@exemplo.com.br', phone: '+5511987654321', name: 'Ana Souza' },
    { email: 'bruno.lima@exemplo.com.br', phone: '+5511912345678', name: 'Bruno Lima' },
  ]);
});

test('Meta Lead Ads download: the ids and phone a config maps as custom fields come without their prefixes', async () => {
  const dir = tmpDir();
  const config = join(dir, 'leadledger.config.json');
  const custom = {
    lead: 'id',
    ad: 'ad_id',
    adset: 'adset_id',
    campaign: 'campaign_id',
    form: 'form_id',
    tel: 'phone_number',
  };
  writeFileSync(config, JSON.stringify({ fields: { custom } }));
  const out = join(dir, 'out.jsonl');
  const input = fx('meta-lead-ads/leads-download.csv');
  const r = await runCli([
    'push',
    input,
    '--config',
    config,
    '--sink',
    'jsonl',
    '--output',
    out,
    '--ledger',
    join(dir, 'l.db'),
    '--quiet',
  ]);
  assert.equal(r.code, 0, r.stderr);
  const ids = jsonLines<Sent & { lead: Record<string, string> }>(out).map(({ lead }) =>
    Object.fromEntries(
      Object.keys(custom)
        .filter((k) => k in lead)
        .map((k) => [k, lead[k]]),
    ),
  );
  assert.deepEqual(ids, [
    {
      lead: '1110000000000001',
      ad: '120200000000000101',
      adset: '120200000000000201',
      campaign: '120200000000000301',
      form: '900000000000001',
      tel: '+5511987654321',
    },
    // An organic lead: no ad, no ad set.
    { lead: '1110000000000002', campaign: '120200000000000301', form: '900000000000001', tel: '+5511912345678' },
  ]);
});

test('Meta Lead Ads download trimmed to its contact columns: --preset reads it as Meta all the same', async () => {
  // A spreadsheet that kept only some columns no longer has the download's signature (ad_id, form_id, ...).
  const dir = tmpDir();
  const input = join(dir, 'leads-trimmed.csv');
  writeFileSync(
    input,
    [
      'id,created_time,full_name,phone_number,email',
      'l:1110000000000001,2025-03-10T09:12:44-03:00,Ana Souza,p:+5511987654321,ana.souza@exemplo.com.br',
      'l:1110000000000004,2025-03-19T08:00:00-03:00,<test lead: dummy data for full_name>,<test lead: dummy data for phone_number>,test@meta.com',
      // Test leads of older forms (Meta's placeholder was test@fb.com), and of a form that asks no email.
      'l:1110000000000006,2025-03-19T08:05:00-03:00,,,test@fb.com',
      'l:1110000000000007,2025-03-19T08:10:00-03:00,<test lead: dummy data for full_name>,<test lead: dummy data for phone_number>,',
      '',
    ].join('\n'),
  );
  const generic = await audit(input);
  assert.deepEqual(readAs(generic.doc), [undefined], 'not recognized: read by field names');
  assert.equal(generic.rows[0]!.key, 'l:1110000000000001');
  assert.equal(generic.doc.counts.filtered, 0);

  const { doc, rows } = await audit(input, '--preset', 'meta-lead-ads-export');
  assert.deepEqual(readAs(doc), [[{ as: 'Meta Lead Ads leads download', events: 4 }]]);
  assert.deepEqual(doc.counts, { ...ZERO, read: 4, new: 1, filtered: 3 });
  assert.deepEqual(
    rows.map((r) => [r.key, r.decision]),
    [
      ['1110000000000001', 'new'],
      ['1110000000000004', 'filtered'],
      ['1110000000000006', 'filtered'],
      ['1110000000000007', 'filtered'],
    ],
  );
  for (const r of rows.slice(1)) assert.match(r.reason, /^a test lead: /);
});

test('Pipedrive people export in Portuguese: emails and phones by label, the first of a shared cell, the apostrophe off', async () => {
  const input = fx('pipedrive/people-export-pt-br.csv');
  const { doc, rows } = await audit(input);
  assert.deepEqual(readAs(doc), [[{ as: 'Pipedrive people export', events: 6 }]]);
  assert.deepEqual(doc.counts, { ...ZERO, read: 6, new: 3, duplicate_in_input: 1, known_lead: 1, invalid: 1 });
  assert.deepEqual(newEmails(rows), [
    [2, '701', 'ana.souza@exemplo.com.br'],
    [3, '702', 'ana@paoquente.exemplo.com.br'],
    [4, '703', 'carlos@oficina.exemplo.com.br'],
  ]);
  assert.deepEqual(byDecision(rows, 'invalid'), [
    { line: 5, key: '704', email: '', reason: 'no email and no phone: nothing identifies the person' },
  ]);
  assert.deepEqual(byDecision(rows, 'known_lead'), [
    { line: 6, key: '705', email: 'ana.souza@exemplo.com.br', reason: 'same person as event 701' },
  ]);
  assert.deepEqual(
    byDecision(rows, 'duplicate_in_input').map((r) => [r.line, r.key]),
    [[7, '701']],
  );

  await sendsOnce(input, [
    { email: 'ana.souza@exemplo.com.br', phone: '+5511987654321', name: 'Ana Souza', company: 'Padaria Pão Quente' },
    { email: 'ana@paoquente.exemplo.com.br', name: 'Ana Souza' },
    // The mobile before the work phone, which is national and could not be read without a default country.
    {
      email: 'carlos@oficina.exemplo.com.br',
      phone: '+5511998765432',
      name: 'Carlos Pereira',
      company: 'Oficina Dois Irmãos',
    },
  ]);
});

test('Pipedrive people export in English: the home email where there is no work one', async () => {
  const input = fx('pipedrive/people-export-en.csv');
  const { doc, rows } = await audit(input);
  assert.deepEqual(readAs(doc), [[{ as: 'Pipedrive people export', events: 5 }]]);
  assert.deepEqual(doc.counts, { ...ZERO, read: 5, new: 2, duplicate_in_input: 1, known_lead: 1, invalid: 1 });
  assert.deepEqual(newEmails(rows), [
    [2, '901', 'jane.miller@example.com'],
    [3, '902', 'omar.haddad@example.com'],
  ]);
  assert.deepEqual(
    byDecision(rows, 'known_lead').map((r) => [r.line, r.key, r.reason]),
    [[4, '903', 'same person as event 901']],
  );
  assert.deepEqual(byDecision(rows, 'invalid'), [
    { line: 5, key: '904', email: '', reason: "email: 'lee at example.com' is not a valid email address: no @" },
  ]);
  assert.deepEqual(
    byDecision(rows, 'duplicate_in_input').map((r) => [r.line, r.key]),
    [[6, '901']],
  );

  await sendsOnce(input, [
    {
      email: 'jane.miller@example.com',
      phone: '+12025550143',
      name: 'Jane Miller',
      first_name: 'Jane',
      last_name: 'Miller',
      company: 'Miller & Sons',
    },
    {
      email: 'omar.haddad@example.com',
      phone: '+12025550188',
      name: 'Omar Haddad',
      first_name: 'Omar',
      last_name: 'Haddad',
    },
  ]);
});

test('Mailchimp subscribed members: keyed by LEID, the same member in a second export is one event', async () => {
  const input = fx('mailchimp/subscribed_members_export_0a1b2c3d4e.csv');
  const { doc, rows } = await audit(input);
  assert.deepEqual(readAs(doc), [[{ as: 'Mailchimp audience export', events: 5 }]]);
  assert.deepEqual(doc.counts, { ...ZERO, read: 5, new: 2, duplicate_in_input: 1, known_lead: 1, invalid: 1 });
  assert.deepEqual(newEmails(rows), [
    [2, '210000001', 'jane.miller@example.com'],
    [3, '210000002', 'omar.haddad@example.com'],
  ]);
  assert.deepEqual(
    byDecision(rows, 'known_lead').map((r) => [r.line, r.key, r.reason]),
    [[4, '210000003', 'same person as event 210000001']],
  );
  assert.deepEqual(
    byDecision(rows, 'duplicate_in_input').map((r) => [r.line, r.key]),
    [[5, '210000001']],
  );
  assert.deepEqual(byDecision(rows, 'invalid'), [
    { line: 6, key: '210000004', email: '', reason: "email: 'not-an-email' is not a valid email address: no @" },
  ]);

  await sendsOnce(input, [
    {
      email: 'jane.miller@example.com',
      phone: '+12025550143',
      name: 'Jane Miller',
      first_name: 'Jane',
      last_name: 'Miller',
      company: 'Miller & Sons',
    },
    { email: 'omar.haddad@example.com', name: 'Omar Haddad', first_name: 'Omar', last_name: 'Haddad' },
  ]);
});

test('Mailchimp unsubscribed and cleaned members: filtered with the reason, none sent', async () => {
  const unsub = fx('mailchimp/unsubscribed_members_export_0a1b2c3d4e.csv');
  const cleaned = fx('mailchimp/cleaned_members_export_0a1b2c3d4e.csv');
  const instead = 'push subscribed_members_export_….csv, from the same ZIP, for the audience’s leads';

  const u = await audit(unsub);
  assert.deepEqual(readAs(u.doc), [[{ as: 'Mailchimp audience export', events: 2 }]]);
  assert.deepEqual(u.doc.counts, { ...ZERO, read: 2, new: 0, filtered: 2 });
  assert.deepEqual(
    byDecision(u.rows, 'filtered').map((r) => [r.line, r.key, r.reason]),
    [
      [2, '210000002', `unsubscribed in Mailchimp: not a lead to push (${instead})`],
      [3, '210000001', `unsubscribed in Mailchimp: not a lead to push (${instead})`],
    ],
  );

  const c = await audit(cleaned);
  assert.deepEqual(readAs(c.doc), [[{ as: 'Mailchimp audience export', events: 1 }]]);
  assert.deepEqual(c.doc.counts, { ...ZERO, read: 1, new: 0, filtered: 1 });
  assert.deepEqual(
    byDecision(c.rows, 'filtered').map((r) => [r.line, r.key, r.reason]),
    [[2, '210000003', `cleaned in Mailchimp (it stopped sending to the address): not a lead to push (${instead})`]],
  );

  for (const input of [unsub, cleaned]) {
    const { sent, again } = await pushTwice(input);
    assert.deepEqual(sent, [], input);
    assert.equal(again.counts.new, 0);
  }
});
