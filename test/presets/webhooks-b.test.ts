// Pipedrive webhooks (v1, v2), Segment / RudderStack events and batches, and LinkedIn Lead Sync responses, read
// with no flags as users download or log them: what each input was read as, how each record was decided and why,
// the leads a push sends, and that pushing the same file again sends nothing (keys are stable).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tmpDir } from '../helpers/tmp.js';
import { audit, decided, emailsOfNew, jsonLines, runJson, type Doc, type Sent } from './helpers.js';

const FIXTURES = 'fixtures/sources';

/** The audit of a fixture, named by its path under the repository (the path the reasons of duplicates quote). */
const dryRun = (fixture: string, ...extra: string[]) => audit(`${FIXTURES}/${fixture}`, ...extra);

/** What the input was read as: [title, events] in the order first seen. */
const readAs = (doc: Doc) => (doc.readAs[0]?.readAs ?? []).map((x) => [x.as, x.events]);

/** The counts that matter for a source's records, with the zero ones left out. */
function decisions(doc: Doc): Record<string, number> {
  const out: Record<string, number> = {};
  for (const k of ['new', 'duplicate', 'duplicate_in_input', 'conflict', 'known_lead', 'invalid', 'filtered'])
    if (doc.counts[k]) out[k] = doc.counts[k];
  return out;
}

/**
 * A real push of the fixture to the JSONL sink, then the same push again: the leads the first sent, and proof that
 * the second sent nothing (every event it had sent is a duplicate in the ledger).
 */
async function pushTwice(fixture: string): Promise<Array<Sent['lead']>> {
  const dir = tmpDir();
  const out = join(dir, 'out.jsonl');
  const args = ['push', `${FIXTURES}/${fixture}`, '--sink', 'jsonl', '--output', out, '--ledger', join(dir, 'l.db')];
  const first = await runJson(args);
  const sent = jsonLines<Sent>(out).map((l) => l.lead);
  assert.equal(first.doc.delivery?.sent, sent.length);
  const { doc: again } = await runJson(args);
  assert.equal(again.counts.new, 0);
  assert.equal(again.counts.duplicate, sent.length);
  assert.equal(again.delivery?.sent, 0);
  assert.equal(jsonLines(out).length, sent.length, 'the second push appended nothing');
  return sent;
}

const NOT_A_PERSON =
  'not about a person: a Pipedrive webhook about a deal, an organization, an activity or another object; leadledger sends persons (subscribe a webhook to person events)';

test('Pipedrive v1: the primary email and phone, a retry is the same event, deals and deletions are filtered', async () => {
  const { doc, rows } = await dryRun('pipedrive/webhook-v1.jsonl');
  assert.deepEqual(readAs(doc), [['Pipedrive webhook (v1)', 7]]);
  assert.deepEqual(decisions(doc), { new: 2, duplicate_in_input: 1, known_lead: 1, invalid: 1, filtered: 2 });
  // Carlos's primary email is listed second; his primary phone is empty, so his mobile is read.
  assert.deepEqual(emailsOfNew(rows), ['ana.souza@exemplo.com.br', 'carlos@oficina.exemplo.com.br']);
  assert.deepEqual(decided(rows, 'duplicate_in_input'), [
    [2, '', 'same event as fixtures/sources/pipedrive/webhook-v1.jsonl line 1'],
  ]);
  assert.equal(rows[1]!.key, rows[0]!.key, 'retry 1 has the key of the first delivery');
  assert.deepEqual(
    decided(rows, 'known_lead').map((r) => r[0]),
    [4],
  );
  assert.deepEqual(decided(rows, 'filtered'), [
    [5, '', NOT_A_PERSON],
    [6, '', 'a deletion (deleted.person): a person removed in Pipedrive is not a lead to send'],
  ]);
  assert.deepEqual(decided(rows, 'invalid'), [[7, '', 'no email and no phone: nothing identifies the person']]);

  const sent = await pushTwice('pipedrive/webhook-v1.jsonl');
  assert.deepEqual(
    sent.map((l) => [l.email, l.phone, l.name, l.company]),
    [
      ['ana.souza@exemplo.com.br', '+5511987654321', 'Ana Souza', 'Padaria Pão Quente'],
      ['carlos@oficina.exemplo.com.br', '+5511998765432', 'Carlos Pereira', 'Oficina Dois Irmãos'],
    ],
  );
});

test('Pipedrive v2: meta.id is the key, attempt 2 is the same event, a merge is a deletion', async () => {
  const { doc, rows } = await dryRun('pipedrive/webhook-v2.jsonl');
  assert.deepEqual(readAs(doc), [['Pipedrive webhook (v2)', 7]]);
  assert.deepEqual(decisions(doc), { new: 2, duplicate_in_input: 1, known_lead: 1, invalid: 1, filtered: 2 });
  // Ana's primary email is her work one, listed after her home one; Carlos has a phone only.
  assert.deepEqual(emailsOfNew(rows), ['ana@paoquente.exemplo.com.br', '']);
  assert.deepEqual(
    rows.slice(0, 2).map((r) => [r.key, r.decision]),
    [
      ['8f1c2d3e-0000-4000-8000-000000000702', 'new'],
      ['8f1c2d3e-0000-4000-8000-000000000702', 'duplicate_in_input'],
    ],
  );
  assert.deepEqual(
    decided(rows, 'known_lead').map((r) => r[0]),
    [4],
  );
  assert.deepEqual(decided(rows, 'filtered'), [
    [5, '', NOT_A_PERSON],
    [
      6,
      '',
      'a deletion (action delete): a person removed in Pipedrive, or merged into another (meta.merged_to_id), is not a lead to send',
    ],
  ]);
  assert.deepEqual(decided(rows, 'invalid'), [[7, '', "no event id in 'meta.id'"]]);

  const sent = await pushTwice('pipedrive/webhook-v2.jsonl');
  assert.deepEqual(
    sent.map((l) => [l.email, l.phone, l.name]),
    [
      ['ana@paoquente.exemplo.com.br', undefined, 'Ana Souza'],
      [undefined, '+5511998765432', 'Carlos Pereira'],
    ],
  );
});

test('--preset forces a source; --preset generic finds the same people by looking through each record', async () => {
  const forced = await dryRun('pipedrive/webhook-v1.jsonl', '--preset', 'pipedrive-webhook');
  assert.deepEqual(readAs(forced.doc), [['Pipedrive webhook (v1)', 7]]);
  assert.deepEqual(decisions(forced.doc), { new: 2, duplicate_in_input: 1, known_lead: 1, invalid: 1, filtered: 2 });
  const generic = await dryRun('pipedrive/webhook-v1.jsonl', '--preset', 'generic');
  assert.deepEqual(readAs(generic.doc), []);
  // No field plan names the person (current.email): discovery finds them, and says where. Without the source's key
  // (meta.id ...) the events are keyed by content, so the preset still tells more (a known lead, its filters).
  assert.deepEqual(emailsOfNew(generic.rows), ['ana.souza@exemplo.com.br', 'carlos.p@exemplo.com.br']);
  assert.ok(
    generic.rows.filter((r) => r.decision === 'new').every((r) => /email at current\.email/.test(String(r.warnings))),
  );
});

const NO_CONTACT =
  'not about a person: a track, page, screen, group or alias event with no email or phone in traits, context.traits, properties or at its top level (what someone did, not who to reach)';

test('Segment events: messageId is the key, the person from traits then context.traits, analytics filtered', async () => {
  const { doc, rows } = await dryRun('segment/events.jsonl');
  assert.deepEqual(readAs(doc), [['Segment/RudderStack event', 7]]);
  assert.deepEqual(decisions(doc), { new: 2, duplicate_in_input: 1, known_lead: 1, invalid: 1, filtered: 2 });
  assert.deepEqual(emailsOfNew(rows), ['jane.miller@example.com', 'omar.haddad@example.com']);
  assert.deepEqual(decided(rows, 'duplicate_in_input'), [
    [2, '', 'same event as fixtures/sources/segment/events.jsonl line 1'],
  ]);
  // A track whose person is in context.traits: Jane again, under a new messageId.
  assert.deepEqual(
    rows.filter((r) => r.decision === 'known_lead').map((r) => [r.line, r.email]),
    [[3, 'jane.miller@example.com']],
  );
  assert.deepEqual(decided(rows, 'filtered'), [
    [5, '', NO_CONTACT],
    [
      6,
      '',
      'an identify call with no email or phone in its traits: it names a user but not how to reach them; the identify that carries traits.email or traits.phone is the lead',
    ],
  ]);
  assert.deepEqual(decided(rows, 'invalid'), [[7, '', "no event id in 'messageId'"]]);

  const sent = await pushTwice('segment/events.jsonl');
  assert.deepEqual(
    sent.map((l) => [l.email, l.phone, l.name, l.company, l.source]),
    [
      ['jane.miller@example.com', '+12025550143', 'Jane Miller', 'Miller & Sons', 'google'],
      ['omar.haddad@example.com', '+12025550188', 'Omar Haddad', 'Haddad Hardware LLC', undefined],
    ],
  );
});

test('RudderStack events are told from Segment by rudderId; a page with context.traits is a known lead', async () => {
  const { doc, rows } = await dryRun('rudderstack/events.jsonl');
  assert.deepEqual(readAs(doc), [['RudderStack event', 6]]);
  assert.deepEqual(decisions(doc), { new: 2, duplicate_in_input: 1, known_lead: 1, invalid: 1, filtered: 1 });
  assert.deepEqual(emailsOfNew(rows), ['jane.miller@example.com', 'ana.souza@exemplo.com.br']);
  assert.deepEqual(decided(rows, 'duplicate_in_input'), [
    [2, '', 'same event as fixtures/sources/rudderstack/events.jsonl line 1'],
  ]);
  assert.deepEqual(
    rows.filter((r) => r.decision === 'known_lead').map((r) => [r.line, r.email]),
    [[4, 'ana.souza@exemplo.com.br']],
  );
  assert.deepEqual(decided(rows, 'filtered'), [[5, '', NO_CONTACT]]);
  assert.deepEqual(decided(rows, 'invalid'), [
    [6, '', "email: 'bruno.lima(at)exemplo.com.br' is not a valid email address: no @"],
  ]);

  const sent = await pushTwice('rudderstack/events.jsonl');
  assert.deepEqual(
    sent.map((l) => [l.email, l.phone, l.name, l.company, l.source]),
    [
      ['jane.miller@example.com', undefined, 'Jane Miller', 'Miller & Sons', 'newsletter'],
      ['ana.souza@exemplo.com.br', '+5511987654321', 'Ana Souza', 'Padaria Pão Quente', 'instagram'],
    ],
  );
});

test('a Segment batch body: each event decided on its own, by item; a retried batch sends nothing again', async () => {
  const { doc, rows } = await dryRun('segment/batch.jsonl');
  assert.deepEqual(readAs(doc), [['Segment/RudderStack batch', 8]]);
  assert.deepEqual(decisions(doc), { new: 2, duplicate_in_input: 2, known_lead: 1, invalid: 1, filtered: 2 });
  assert.deepEqual(
    rows.map((r) => [r.line, r.item, r.decision]),
    [
      [1, 1, 'new'],
      [1, 2, 'new'],
      [1, 3, 'filtered'],
      [2, 1, 'duplicate_in_input'],
      [2, 2, 'duplicate_in_input'],
      [2, 3, 'filtered'],
      [3, 1, 'known_lead'],
      [3, 2, 'invalid'],
    ],
  );
  assert.deepEqual(emailsOfNew(rows), ['jane.miller@example.com', 'omar.haddad@example.com']);
  assert.deepEqual(decided(rows, 'filtered'), [
    [1, 3, NO_CONTACT],
    [2, 3, NO_CONTACT],
  ]);
  assert.deepEqual(decided(rows, 'invalid'), [
    [3, 2, "email: 'omar.haddad@@example.com' is not a valid email address: more than one @"],
  ]);

  // Omar's track: email from properties.email, phone from context.traits.
  const sent = await pushTwice('segment/batch.jsonl');
  assert.deepEqual(
    sent.map((l) => [l.email, l.phone, l.name]),
    [
      ['jane.miller@example.com', '+12025550143', 'Jane Miller'],
      ['omar.haddad@example.com', '+12025550188', 'Omar Haddad'],
    ],
  );
});

test("LinkedIn Lead Sync: answers read by their form's predefined fields, a test lead filtered, a repeat by id", async () => {
  const { doc, rows } = await dryRun('linkedin/lead-form-responses.jsonl');
  assert.deepEqual(readAs(doc), [['LinkedIn Lead Sync responses', 6]]);
  assert.deepEqual(decisions(doc), { new: 2, duplicate_in_input: 1, known_lead: 1, invalid: 1, filtered: 1 });
  assert.deepEqual(
    rows.map((r) => [r.line, r.item, r.decision, r.email]),
    [
      [1, 1, 'new', 'jane.miller@example.com'],
      [1, 2, 'filtered', ''],
      // The same lead from an overlapping pull, its answers in another order.
      [2, 1, 'duplicate_in_input', 'jane.miller@example.com'],
      [2, 2, 'known_lead', 'jane.miller@example.com'],
      // Omar's answers come in reverse order: read by question, not by position.
      [2, 3, 'new', 'omar.haddad@example.com'],
      [3, 1, 'invalid', ''],
    ],
  );
  assert.deepEqual(decided(rows, 'filtered'), [
    [1, 2, 'a test lead (testLead is true): not a person who filled in the form'],
  ]);
  assert.deepEqual(decided(rows, 'invalid'), [
    [
      3,
      1,
      "LinkedIn's answers name their question by id only, and this response holds no form questions to read them by: add form:(hiddenFields,creationLocale,name,id,content) to the fields of the leadFormResponses pull, or map the question ids in the config (no email and no phone: nothing identifies the person)",
    ],
  ]);

  const sent = await pushTwice('linkedin/lead-form-responses.jsonl');
  assert.deepEqual(
    sent.map((l) => [l.email, l.phone, l.name, l.company, l.source]),
    [
      ['jane.miller@example.com', undefined, 'Jane Miller', 'Miller & Sons', 'linkedin'],
      ['omar.haddad@example.com', '+12025550188', 'Omar Haddad', undefined, 'urn:li:sponsoredCampaign:3300002'],
    ],
  );
});

test('LinkedIn: a user who maps the question ids in the config gets the leads of a pull without the form', async () => {
  const dir = tmpDir();
  const config = join(dir, 'leadledger.config.json');
  const answer = (ids: string) => `formResponse.answers[questionId=${ids}].answerDetails.textQuestionAnswer.answer`;
  writeFileSync(config, JSON.stringify({ fields: { email: answer('37001|37002'), firstName: answer('17001|17002') } }));
  const { doc, rows } = await dryRun('linkedin/lead-form-responses.jsonl', '--config', config);
  assert.deepEqual(decisions(doc), { new: 3, duplicate_in_input: 1, known_lead: 1, filtered: 1 });
  assert.deepEqual(rows.at(-1)?.email, 'ana.souza@exemplo.com.br');
});

test('a JSON document on one line whose elements each hold a list of leads numbers every lead of the line (item)', async () => {
  const dir = tmpDir();
  const input = join(dir, 'rd.json');
  const lead = (u: string) => ({ uuid: u, email: `${u}@example.com` });
  writeFileSync(
    input,
    JSON.stringify([{ leads: [lead('u1'), lead('u2')] }, { leads: [lead('u3'), lead('u4')] }, { leads: [lead('u5')] }]),
  );
  const { rows } = await audit(input);
  assert.deepEqual(
    rows.map((r) => [r.line, r.item, r.email]),
    [1, 2, 3, 4, 5].map((i) => [1, i, `u${i}@example.com`]),
  );
});
