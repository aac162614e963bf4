// One person, one natural key, whatever form their address was typed in: the built CLI on real files. `josé` in NFC
// and in NFD, a Unicode domain and its punycode; addresses RFC 5321/5322 refuse; and a ledger written before, on
// SQLite and on PostgreSQL, upgraded so that a push of the same people in their other forms sends nobody again.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { jsonReport, runCli } from '../helpers/cli.js';
import { emulator } from '../helpers/emulator.js';
import { imported, pgV1Ledger, sentByContent, sentById, sqliteV3Ledger, type OldRow } from '../helpers/old-ledger.js';
import { pgDatabase } from '../helpers/postgres.js';
import { tmpDir } from '../helpers/tmp.js';

const NFC = 'jos\u00e9@x.com';
const NFD = 'jose\u0301@x.com';
const IDN = 'foo@bücher.example';
const PUNYCODE = 'foo@xn--bcher-kva.example';

interface ReportLine {
  line: number;
  key: string;
  email: string;
  decision: string;
  reason: string;
}

/** Pushes `lines` (JSONL) to the jsonl sink; the per-record report, the leads written, and the run. */
async function push(
  dir: string,
  lines: object[],
  opts: { ledger?: string; env?: NodeJS.ProcessEnv } = {},
): Promise<{ report: ReportLine[]; sent: Array<{ email?: string }>; code: number | null; stderr: string }> {
  const n = randomBytes(3).toString('hex');
  const input = join(dir, `in-${n}.jsonl`);
  const report = join(dir, `report-${n}.jsonl`);
  const output = join(dir, `out-${n}.jsonl`);
  writeFileSync(input, lines.map((l) => JSON.stringify(l)).join('\n') + '\n');
  const r = await runCli(
    [
      'push',
      input,
      '--sink',
      'jsonl',
      '--output',
      output,
      '--ledger',
      opts.ledger ?? join(dir, 'ledger.db'),
      '--report',
      report,
      '--json',
    ],
    { env: opts.env },
  );
  const read = <T>(f: string): T[] =>
    existsSync(f)
      ? readFileSync(f, 'utf8')
          .split('\n')
          .filter(Boolean)
          .map((l) => JSON.parse(l) as T)
      : [];
  const sent = read<{ lead?: { email?: string }; email?: string }>(output).map((l) => l.lead ?? l);
  // The report lists records as they are settled: in input order here.
  const rows = read<ReportLine>(report).sort((a, b) => a.line - b.line);
  return { report: rows, sent, code: r.code, stderr: r.stderr };
}

const decisions = (report: ReportLine[]) => report.map((r) => `${r.key} ${r.decision}`);

test('one person typed in NFC and in NFD is one person: the second event is a known lead', async () => {
  const dir = tmpDir();
  const r = await push(dir, [
    { event_id: 'e1', email: NFC, name: 'José' },
    { event_id: 'e2', email: NFD, name: 'José' },
  ]);
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual(decisions(r.report), ['e1 new', 'e2 known_lead']);
  assert.deepEqual(
    r.sent.map((l) => l.email),
    [NFC],
  );
  // And in a later run, either form is that person.
  const again = await push(dir, [{ event_id: 'e3', email: NFD.toUpperCase() }]);
  assert.deepEqual(decisions(again.report), ['e3 known_lead']);
});

test('a Unicode domain and its punycode are one person, written in punycode', async () => {
  const dir = tmpDir();
  const r = await push(dir, [
    { event_id: 'e1', email: IDN },
    { event_id: 'e2', email: PUNYCODE },
    { event_id: 'e3', email: 'Foo@BÜCHER.example' },
  ]);
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual(decisions(r.report), ['e1 new', 'e2 known_lead', 'e3 known_lead']);
  assert.deepEqual(
    r.sent.map((l) => l.email),
    [PUNYCODE],
  );
});

test('ledger import --as emails of one form, then a push of the other form: a known lead', async () => {
  const dir = tmpDir();
  const ledger = join(dir, 'ledger.db');
  const list = join(dir, 'crm-contacts.txt');
  writeFileSync(list, [NFD, IDN].join('\n') + '\n');
  const imp = await runCli(['ledger', 'import', list, '--as', 'emails', '--ledger', ledger]);
  assert.equal(imp.code, 0, imp.stderr);
  const r = await push(dir, [
    { event_id: 'e1', email: NFC },
    { event_id: 'e2', email: PUNYCODE },
  ]);
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual(decisions(r.report), ['e1 known_lead', 'e2 known_lead']);
  assert.deepEqual(r.sent, []);
});

test('addresses RFC 5321/5322 refuse are invalid, with what is wrong; a punycode top-level domain is taken', async () => {
  const dir = tmpDir();
  const bad: Array<[string, string]> = [
    ['a..b@x.com', 'two dots in a row'],
    ['a@x..com', 'two dots in a row'],
    ['.a@x.com', 'it starts with a dot'],
    ['a.@x.com', 'a dot right before the @'],
    ['a@-x.com', "the domain's label '-x' starts with a hyphen"],
    ['a@x-.com', "the domain's label 'x-' ends with a hyphen"],
  ];
  const r = await push(dir, [
    ...bad.map(([email], i) => ({ event_id: `bad${i}`, email })),
    { event_id: 'rf', email: 'ana@xn--80ak6aa92e.xn--p1ai' },
  ]);
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual(
    r.report.map((x) => [x.decision, x.reason]),
    [
      ...bad.map(([email, why]) => ['invalid', `email: '${email}' is not a valid email address: ${why}`]),
      ['new', 'not in the ledger'],
    ],
  );
  assert.deepEqual(
    r.sent.map((l) => l.email),
    ['ana@xn--80ak6aa92e.xn--p1ai'],
  );
});

test('HubSpot gets the punycode address, and finds the person by it', async () => {
  const TOKEN = 'pat-email-identity-test';
  const emu = await emulator({ token: TOKEN });
  const dir = tmpDir();
  const input = join(dir, 'in.jsonl');
  writeFileSync(input, JSON.stringify({ event_id: 'e1', email: IDN, name: 'Foo' }) + '\n');
  const args = ['push', input, '--sink', 'hubspot', '--hubspot-url', emu.url, '--ledger', join(dir, 'l.db'), '--json'];
  const r = await runCli(args, { env: { HUBSPOT_TOKEN: TOKEN } });
  assert.equal(r.code, 0, r.stderr);
  assert.equal(jsonReport(r).delivery.sent, 1);
  assert.deepEqual(
    emu.contacts().map((c) => c.properties.email),
    [PUNYCODE],
  );
});

test('ledger forget --email in one form erases the person pushed in the other', async () => {
  const dir = tmpDir();
  const ledger = join(dir, 'ledger.db');
  const r = await push(dir, [{ event_id: 'e1', email: NFD, name: 'José' }]);
  assert.equal(r.code, 0, r.stderr);
  const f = await runCli(['ledger', 'forget', '--email', NFC, '--yes', '--ledger', ledger, '--json']);
  assert.equal(f.code, 0, f.stderr);
  assert.equal((JSON.parse(f.stdout) as { erasure: { deleted: number } }).erasure.deleted, 1);
  const file = readFileSync(ledger);
  for (const form of [NFC, NFD]) assert.ok(!file.includes(Buffer.from(form)), `no ${form} left in the ledger`);
});

// An older ledger holding people as the old mapper wrote them, and a push of the same events and people in the other
// forms: nothing is sent again, nothing is a conflict.
const pgdb = await pgDatabase('leadledger_email_cli');
const OLD: OldRow[] = [
  sentById('evt-jose', { email: NFD, name: 'José' }, 1),
  sentByContent({ email: IDN, name: 'Foo' }, 2),
  imported('ana@bücher.example', 3),
  imported('zoe\u0301@x.com', 4),
  { ...sentById('evt-pruned', { email: 'rene\u0301@x.com' }, 5), lead_json: null },
];
const AGAIN = [
  { event_id: 'evt-jose', email: NFC, name: 'José' }, // the same event, the other form
  { event_id: 'evt-jose-2', email: NFC }, // another event of José
  { email: PUNYCODE, name: 'Foo' }, // the same record without an id
  { event_id: 'evt-foo-2', email: 'FOO@bücher.example' },
  { event_id: 'evt-ana', email: 'ana@xn--bcher-kva.example' },
  { event_id: 'evt-zoe', email: 'zo\u00e9@x.com' },
  { event_id: 'evt-pruned', email: 'ren\u00e9@x.com' },
];

for (const kind of ['sqlite', 'postgres'] as const) {
  test(`${kind}: an older ledger, upgraded by the next push, sends none of its people again and finds no conflict`, async () => {
    const dir = tmpDir();
    let ledger = join(dir, 'ledger.db');
    let env: NodeJS.ProcessEnv = {};
    if (kind === 'sqlite') sqliteV3Ledger(ledger, OLD);
    else {
      const schema = 'c_' + randomBytes(4).toString('hex');
      await pgV1Ledger(pgdb, schema, OLD);
      ledger = `${pgdb.url}?schema=${schema}`;
      env = { PGPASSWORD: pgdb.cluster.password };
    }
    const r = await push(dir, AGAIN, { ledger, env });
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(
      r.report.map((x) => x.decision),
      ['duplicate', 'known_lead', 'duplicate', 'known_lead', 'known_lead', 'known_lead', 'duplicate'],
      JSON.stringify(r.report, null, 1),
    );
    assert.deepEqual(r.sent, []);
  });
}
