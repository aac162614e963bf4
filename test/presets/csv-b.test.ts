// The exports users download from Salesforce, Zoho CRM, Elementor, Contact Form 7 (CFDB7) and RD Station, pushed
// with no flags: the built CLI must say what it read each as, decide every row as the source means it (a report's
// footer, a header repeated inside the export: filtered with the reason), send each new lead once, and send nothing
// when the same export is pushed again.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tmpDir } from '../helpers/tmp.js';
import { decided, dryRun, fx, nonZero, phones, pushTwice, readAs, run } from './helpers.js';

const FOOTER = "not a record: the report's footer";

test('Salesforce lead report: read as such, its footer lines filtered, rows without Lead ID keyed by content', async () => {
  const dir = tmpDir();
  const input = fx('salesforce-report/leads-report.csv');
  const { doc, rows } = await dryRun(dir, input, '--default-country', 'US');
  assert.deepEqual(readAs(doc), [{ as: 'Salesforce lead report', events: 8 }]);
  assert.deepEqual(nonZero(doc), { read: 8, new: 2, duplicate_in_input: 1, known_lead: 1, invalid: 1, filtered: 3 });
  assert.deepEqual(decided(rows, 'filtered'), [
    [8, '', FOOTER],
    [10, '', FOOTER],
    [11, '', FOOTER],
  ]);
  assert.deepEqual(decided(rows, 'invalid'), [[6, '', 'no email and no phone: nothing identifies the person']]);
  assert.deepEqual(decided(rows, 'duplicate_in_input'), [[4, '', `same event as ${input} line 2`]]);
  const news = rows.filter((r) => r.decision === 'new');
  assert.deepEqual(
    news.map((r) => r.email),
    ['jane.miller@example.com', 'omar.haddad@example.com'],
  );
  assert.ok(
    news.every((r) => r.key.startsWith('c:')),
    'no Lead ID column: keyed by content',
  );
  // Jane again, as a second lead record (another source, the address in capitals): the same person.
  assert.equal(rows.find((r) => r.line === 5)?.decision, 'known_lead');

  const sent = await pushTwice(dir, input, 2, '--default-country', 'US');
  assert.deepEqual(phones(sent), {
    'jane.miller@example.com': '+12025550143',
    'omar.haddad@example.com': '+12025550188',
  });
  assert.deepEqual(sent[1]!.lead, {
    email: 'omar.haddad@example.com',
    phone: '+12025550188',
    name: 'Omar Haddad',
    first_name: 'Omar',
    last_name: 'Haddad',
    company: 'Haddad "Hardware" LLC',
    source: 'Trade Show',
  });
});

test('Salesforce lead report with the Lead ID column: keyed by it; the copyright line with © is footer too', async () => {
  const dir = tmpDir();
  const input = fx('salesforce-report/leads-report-lead-id.csv');
  const { doc, rows } = await dryRun(dir, input);
  assert.deepEqual(readAs(doc), [{ as: 'Salesforce lead report', events: 7 }]);
  assert.deepEqual(nonZero(doc), { read: 7, new: 2, duplicate_in_input: 1, invalid: 1, filtered: 3 });
  assert.deepEqual(
    rows.filter((r) => r.decision === 'new').map((r) => [r.key, r.email]),
    [
      ['00Q5g00000JmTa1EAF', 'jane.miller@example.com'],
      ['00Q5g00000JmTa2EAF', 'omar.haddad@example.com'],
    ],
  );
  assert.deepEqual(decided(rows, 'invalid'), [
    [5, '', "email: 'lee.park@example' is not a valid email address: the domain 'example' has no dot (name.tld)"],
  ]);
  assert.deepEqual(
    decided(rows, 'filtered').map(([line, , reason]) => [line, reason]),
    [
      [7, FOOTER],
      [9, FOOTER],
      [10, FOOTER],
    ],
  );
  const sent = await pushTwice(dir, input, 2);
  assert.deepEqual(phones(sent), {
    'jane.miller@example.com': '+12025550143',
    'omar.haddad@example.com': '+12025550188',
  });
});

test('a Salesforce footer is filtered whatever its line ends, and read by field names it is three broken rows', async () => {
  const dir = tmpDir();
  // The same report as Excel on Windows saves it back: CRLF, and the quotes it does not need dropped.
  const crlf = join(dir, 'report-resaved.csv');
  const text = readFileSync(fx('salesforce-report/leads-report.csv'), 'utf8')
    .replaceAll('\n', '\r\n')
    .replace(/(?<=^|,)"([^",\r\n]*)"(?=,|\r$)/gm, '$1');
  writeFileSync(crlf, text);
  const resaved = await dryRun(dir, crlf, '--default-country', 'US');
  assert.deepEqual(readAs(resaved.doc), [{ as: 'Salesforce lead report', events: 8 }]);
  assert.deepEqual(
    decided(resaved.rows, 'filtered').map(([line]) => line),
    [8, 10, 11],
  );
  // --preset generic reads it by field names alone: the footer lines are short rows, nothing filters them, and
  // rows whose cells do not line up with the header could not be read: exit 3.
  const generic = await run(
    dir,
    'generic',
    [
      'push',
      fx('salesforce-report/leads-report.csv'),
      '--dry-run',
      '--ledger',
      join(dir, 'g.db'),
      '--preset',
      'generic',
    ],
    [3],
  );
  assert.deepEqual(readAs(generic.doc), []);
  assert.equal(generic.doc.counts.filtered, 0);
  assert.deepEqual(
    decided(generic.rows, 'invalid').map(([line, , reason]) => [line, reason]),
    [
      [6, 'no email and no phone: nothing identifies the person'],
      [8, 'expected 11 columns, found 1'],
      [10, 'expected 11 columns, found 1'],
      [11, 'expected 11 columns, found 1'],
    ],
  );
});

test('Zoho CRM leads export: read as such, keyed by Record Id (zcrm_ and all)', async () => {
  const dir = tmpDir();
  const input = fx('zoho-crm/leads-export.csv');
  const { doc, rows } = await dryRun(dir, input);
  assert.deepEqual(readAs(doc), [{ as: 'Zoho CRM leads export', events: 5 }]);
  assert.deepEqual(nonZero(doc), { read: 5, new: 2, duplicate_in_input: 1, known_lead: 1, invalid: 1 });
  assert.deepEqual(
    rows.map((r) => [r.line, r.key, r.decision]),
    [
      [2, 'zcrm_5725767000000524101', 'new'],
      [3, 'zcrm_5725767000000524102', 'new'],
      [4, 'zcrm_5725767000000524177', 'known_lead'],
      [5, 'zcrm_5725767000000524101', 'duplicate_in_input'],
      [6, 'zcrm_5725767000000524199', 'invalid'],
    ],
  );
  assert.equal(rows[4]!.reason, "email: 'bad@' is not a valid email address: nothing after the @");
  const sent = await pushTwice(dir, input, 2);
  assert.deepEqual(phones(sent), {
    'jane.miller@example.com': '+12025550143',
    'omar.haddad@example.com': '+12025550188',
  });
  assert.equal(sent[0]!.lead.company, 'Miller & Sons');
  assert.equal(sent[0]!.lead.source, 'Web Download');
});

test("HubSpot's contacts export (Record ID, Contact owner) is not read as Zoho's or Salesforce's", async () => {
  const dir = tmpDir();
  const { doc } = await dryRun(dir, join(fx('..'), 'hubspot-contacts-export.csv'));
  const as = readAs(doc).map((a) => a.as);
  assert.ok(!as.includes('Zoho CRM leads export') && !as.includes('Salesforce lead report'), as.join(', '));
});

test('Elementor submissions: the UTF-8 BOM export read as such, its labels mapped, keyed by Submission ID', async () => {
  const dir = tmpDir();
  const input = fx('elementor/submissions.csv');
  const { doc, rows } = await dryRun(dir, input, '--default-country', 'BR');
  assert.deepEqual(readAs(doc), [{ as: 'Elementor form submissions', events: 5 }]);
  assert.deepEqual(nonZero(doc), { read: 5, new: 2, duplicate_in_input: 1, known_lead: 1, invalid: 1 });
  assert.deepEqual(
    rows.map((r) => [r.line, r.key, r.decision]),
    [
      [2, '101', 'new'],
      [3, '102', 'new'],
      // Bruno's message holds a line break: Ana's second submission starts on line 5.
      [5, '117', 'known_lead'],
      [6, '101', 'duplicate_in_input'],
      [7, '118', 'invalid'],
    ],
  );
  assert.equal(rows[4]!.reason, 'no email and no phone: nothing identifies the person');
  const sent = await pushTwice(dir, input, 2, '--default-country', 'BR');
  assert.deepEqual(phones(sent), {
    'ana.souza@exemplo.com.br': '+5511987654321',
    'bruno.lima@exemplo.com.br': '+5511912345678',
  });
  assert.equal(sent[0]!.lead.name, 'Ana Souza');
});

test('Elementor labels in English (Name, Email, Phone) are mapped too; --preset forces the source', async () => {
  const dir = tmpDir();
  const input = join(dir, 'elementor-en.csv');
  const text = readFileSync(fx('elementor/submissions.csv'), 'utf8').replace(
    '"Nome","E-mail","WhatsApp","Mensagem"',
    '"Name","Email","Phone","Message"',
  );
  writeFileSync(input, text);
  const { doc, rows } = await dryRun(dir, input, '--default-country', 'BR');
  assert.deepEqual(readAs(doc), [{ as: 'Elementor form submissions', events: 5 }]);
  assert.deepEqual(nonZero(doc), { read: 5, new: 2, duplicate_in_input: 1, known_lead: 1, invalid: 1 });
  // Elementor's own columns renamed (a translated site): not recognized, but --preset reads it as the source.
  const renamed = join(dir, 'elementor-renamed.csv');
  writeFileSync(renamed, text.replace('User Agent', 'Navegador'));
  const plain = await dryRun(dir, renamed);
  assert.deepEqual(readAs(plain.doc), []);
  const forced = await dryRun(dir, renamed, '--preset', 'elementor-submissions', '--default-country', 'BR');
  assert.deepEqual(readAs(forced.doc), [{ as: 'Elementor form submissions', events: 5 }]);
  assert.deepEqual(
    forced.rows.map((r) => r.key),
    rows.map((r) => r.key),
  );
});

test('CFDB7 export: read as such, the repeated header filtered, keyed by Form_id (the submission)', async () => {
  const dir = tmpDir();
  const input = fx('cfdb7/contact-form.csv');
  const { doc, rows } = await dryRun(dir, input, '--default-country', 'BR');
  assert.deepEqual(readAs(doc), [{ as: 'Contact Form 7 submissions (CFDB7 export)', events: 6 }]);
  assert.deepEqual(nonZero(doc), { read: 6, new: 2, duplicate_in_input: 1, known_lead: 1, invalid: 1, filtered: 1 });
  assert.deepEqual(
    rows.map((r) => [r.line, r.decision, r.key]),
    [
      [2, 'new', '58'],
      [3, 'invalid', '57'],
      [4, 'new', '41'],
      [6, 'known_lead', '40'],
      [7, 'filtered', 'Form_id'],
      [8, 'duplicate_in_input', '40'],
    ],
  );
  assert.equal(
    rows[1]!.reason,
    "phone: '11 9' is not a valid phone number, and there is no email: nothing identifies the person",
  );
  assert.equal(rows[4]!.reason, 'not a record: the header repeated (CFDB7 writes it again every 1,000 rows)');
  const sent = await pushTwice(dir, input, 2, '--default-country', 'BR');
  assert.deepEqual(phones(sent), {
    'ana.souza@exemplo.com.br': '+5511987654321',
    'bruno.lima@exemplo.com.br': '+5511912345678',
  });
});

test('a CFDB7 export of 2,500 submissions: the header it writes after rows 1,000 and 2,000 is filtered, no row lost', async () => {
  const dir = tmpDir();
  const header = 'Form_id,Form_date,Name,Email,Phone,Subject,Message';
  const lines = [header];
  // Newest first, as CFDB7 writes them, a page of 1,000 at a time, each under the header.
  for (let id = 2500; id >= 1; id--) {
    if (id < 2500 && (2500 - id) % 1000 === 0) lines.push(header);
    lines.push(`${id},"2025-03-10 09:12:44","Pessoa ${id}",pessoa${id}@exemplo.com.br,,Orçamento,Olá`);
  }
  const input = join(dir, 'cfdb7-2025-03-20.csv');
  writeFileSync(input, lines.join('\n') + '\n');
  const { doc, rows } = await dryRun(dir, input);
  assert.deepEqual(readAs(doc), [{ as: 'Contact Form 7 submissions (CFDB7 export)', events: 2502 }]);
  assert.deepEqual(nonZero(doc), { read: 2502, new: 2500, filtered: 2 });
  assert.deepEqual(
    decided(rows, 'filtered').map(([line]) => line),
    [1002, 2003],
  );
});

test('RD Station export as RD writes it (UTF-16LE, tabs) and as Excel pt-BR re-saves it (cp1252, ";", dd/mm/yyyy): decided alike', async () => {
  const dir = tmpDir();
  const utf16 = fx('rdstation-export/contatos.csv');
  const excel = fx('rdstation-export/contatos-excel-ptbr.csv');
  const a = await dryRun(dir, utf16, '--default-country', 'BR');
  const b = await dryRun(dir, excel, '--default-country', 'BR');
  for (const { doc } of [a, b]) {
    assert.deepEqual(readAs(doc), [{ as: 'RD Station contacts export', events: 4 }]);
    assert.deepEqual(nonZero(doc), { read: 4, new: 2, duplicate_in_input: 1, invalid: 1 });
  }
  const keyed = (rows: typeof a.rows) => rows.map((r) => [r.line, r.key, r.decision, r.email]);
  assert.deepEqual(keyed(b.rows), keyed(a.rows), 'the same keys and decisions');
  assert.equal(
    a.rows[0]!.key,
    'https://app.rdstation.com.br/leads/public/0b6f3a52-1d0e-4c1e-9a51-6a1f0c0e0a01|2',
    'the contact and its count of conversions',
  );
  assert.deepEqual(decided(a.rows, 'invalid'), [
    [5, '', "phone: '11 9' is not a valid phone number, and there is no email: nothing identifies the person"],
  ]);
  const sent = await pushTwice(dir, utf16, 2, '--default-country', 'BR');
  assert.deepEqual(phones(sent), {
    'ana.souza@exemplo.com.br': '+5511987654321',
    'bruno.lima@exemplo.com.br': '+5511912345678',
  });
  // After the export was pushed, the Excel re-save of it is the same leads: nothing to send, nothing in conflict.
  const { doc } = await dryRun(dir, excel, '--default-country', 'BR', '--ledger', join(dir, 'push.db'));
  assert.deepEqual(nonZero(doc), { read: 4, duplicate: 2, duplicate_in_input: 1, invalid: 1 });
});

test('a Salesforce report with no rows (a scheduled export on a quiet week): its footer is filtered, not broken rows', async () => {
  const dir = tmpDir();
  const input = join(dir, 'report1742389202900.csv');
  const report = readFileSync(fx('salesforce-report/leads-report.csv'), 'utf8').split('\n');
  writeFileSync(input, [report[0], '', '"Grand Totals (0 records)"', ...report.slice(8)].join('\n'));
  for (const preset of [[], ['--preset', 'salesforce-report']]) {
    const { doc, rows } = await dryRun(dir, input, ...preset);
    assert.deepEqual(readAs(doc), [{ as: 'Salesforce lead report', events: 3 }]);
    assert.deepEqual(nonZero(doc), { read: 3, filtered: 3 });
    assert.deepEqual(
      decided(rows, 'filtered').map(([line, , reason]) => [line, reason]),
      [
        [3, FOOTER],
        [5, FOOTER],
        [6, FOOTER],
      ],
    );
  }
});
