// Every mapped field reaches every sink that has a place for it, and one that has none says so (fieldsNotHeld in
// --json, a line of the summary): the built CLI pushes a lead with every field set, and the lead is read back from
// the HubSpot emulator, the webhook receiver, the JSONL file and a PostgreSQL table.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { jsonReport, runCli, type CliResult } from '../helpers/cli.js';
import { emulator } from '../helpers/emulator.js';
import { pgDatabase } from '../helpers/postgres.js';
import { tmpDir } from '../helpers/tmp.js';

const db = await pgDatabase();
const TOKEN = 'pat-na1-fields-0b7c2d5e-9a1f-4c3b-8e6d-1eadledger001';

/** One record with every field, as an input gives it. */
const RECORD = {
  id: 'f1',
  email: 'Ana.Souza@Example.com',
  phone: '+55 11 98765-4321',
  full_name: 'Ana Souza',
  first_name: 'Ana',
  last_name: 'Souza',
  company: 'ACME Ltda',
  utm_source: 'newsletter',
  plan: 'pro',
  extra: { tier: 'gold' },
  created_at: '2026-03-04T05:06:07.000Z',
};

/** The lead leadledger makes of it, under CONFIG. */
const LEAD = {
  email: 'ana.souza@example.com',
  phone: '+5511987654321',
  name: 'Ana Souza',
  first_name: 'Ana',
  last_name: 'Souza',
  company: 'ACME Ltda',
  source: 'newsletter',
  plan: 'pro',
  tier: 'gold',
};
const TIME = '2026-03-04T05:06:07.000Z';

const FIELDS = {
  email: 'email',
  phone: 'phone',
  name: 'full_name',
  firstName: 'first_name',
  lastName: 'last_name',
  company: 'company',
  source: 'utm_source',
  time: 'created_at',
  custom: { plan: 'plan', tier: 'extra.tier' },
};

function setUp(config: object, record: object = RECORD) {
  const dir = tmpDir();
  const input = join(dir, 'in.jsonl');
  writeFileSync(input, JSON.stringify(record) + '\n');
  const file = join(dir, 'leadledger.config.json');
  writeFileSync(file, JSON.stringify(config));
  return { dir, input, config: file, ledger: join(dir, 'l.db') };
}

/** The flags of a push with this set-up's config and ledger. */
function rest(s: ReturnType<typeof setUp>): string[] {
  return ['--config', s.config, '--ledger', s.ledger];
}

/** The summary's lines about fields the sink had no place for. */
function notHeldLines(r: CliResult): string[] {
  return r.stderr.split('\n').filter((l) => /^ {4}\S+ ×\d+: /.test(l));
}

test('hubspot: every field reaches its property; the source only through sinks.hubspot.sourceProperty', async () => {
  const emu = await emulator({ token: TOKEN, customProperties: ['plan', 'tier', 'lead_source'] });
  const push = (s: ReturnType<typeof setUp>) =>
    runCli(['push', s.input, '--sink', 'hubspot', '--hubspot-url', emu.url, '--json', ...rest(s)], {
      env: { HUBSPOT_TOKEN: TOKEN },
    });
  const r = await push(setUp({ fields: FIELDS, sinks: { hubspot: { sourceProperty: 'lead_source' } } }));
  assert.equal(r.code, 0, r.stderr);
  assert.equal(jsonReport(r).fieldsNotHeld, undefined);
  assert.deepEqual(emu.contacts()[0]!.properties, {
    email: LEAD.email,
    phone: LEAD.phone,
    firstname: LEAD.first_name,
    lastname: LEAD.last_name,
    company: LEAD.company,
    lead_source: LEAD.source,
    plan: LEAD.plan,
    tier: LEAD.tier,
  });

  // Without a property for it the source is not sent, and the run says so.
  emu.reset();
  const w = await push(setUp({ fields: FIELDS }));
  assert.equal(w.code, 0, w.stderr);
  assert.deepEqual(jsonReport(w).fieldsNotHeld, [
    {
      field: 'source',
      why: 'HubSpot has no standard property for it: name one in sinks.hubspot.sourceProperty',
      leads: 1,
    },
  ]);
  assert.deepEqual(notHeldLines(w), [
    '    source ×1: HubSpot has no standard property for it: name one in sinks.hubspot.sourceProperty',
  ]);
  assert.equal(emu.contacts()[0]!.properties.firstname, 'Ana');
});

test('hubspot: an export with Nome and Sobrenome, as init maps it, makes a contact with its first name', async () => {
  const emu = await emulator({ token: TOKEN });
  const dir = tmpDir();
  const csv = join(dir, 'leads.csv');
  writeFileSync(
    csv,
    'Nome;Sobrenome;E-mail;Empresa\nAna;Souza;ana@example.com.br;ACME\nBia;Lima;bia@example.com.br;\n',
  );
  const init = await runCli(['init', csv, '--yes'], { cwd: dir });
  assert.equal(init.code, 0, init.stderr);
  const written = JSON.parse(readFileSync(join(dir, 'leadledger.config.json'), 'utf8')) as {
    fields: Record<string, string>;
  };
  // Beside a last-name column, Nome is the first name (mapping/column-roles.ts).
  assert.equal(written.fields.firstName, 'Nome');
  assert.equal(written.fields.lastName, 'Sobrenome');
  const r = await runCli(
    ['push', csv, '--sink', 'hubspot', '--hubspot-url', emu.url, '--ledger', join(dir, 'l.db'), '--json'],
    { cwd: dir, env: { HUBSPOT_TOKEN: TOKEN } },
  );
  assert.equal(r.code, 0, r.stderr);
  assert.equal(jsonReport(r).fieldsNotHeld, undefined);
  const byEmail = new Map(emu.contacts().map((c) => [c.properties.email, c.properties]));
  assert.deepEqual(byEmail.get('ana@example.com.br'), {
    email: 'ana@example.com.br',
    firstname: 'Ana',
    lastname: 'Souza',
    company: 'ACME',
  });
  assert.deepEqual(byEmail.get('bia@example.com.br'), {
    email: 'bia@example.com.br',
    firstname: 'Bia',
    lastname: 'Lima',
  });
});

test('webhook: the default body carries every field and the event time; a template that leaves one out is told', async () => {
  const emu = await emulator();
  const s = setUp({ fields: FIELDS });
  const url = `${emu.url}/webhook`;
  const r = await runCli(['push', s.input, '--sink', 'webhook', '--url', url, '--json', ...rest(s)]);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(jsonReport(r).fieldsNotHeld, undefined);
  const body = emu.webhookReceived().deliveries[0]!.body as Record<string, unknown>;
  assert.deepEqual(body.lead, LEAD);
  assert.equal(body.occurred_at, TIME);
  assert.match(String(body.event_key_hash), /^[0-9a-f]{64}$/);

  // A template with a placeholder for some fields: the others are counted, each by name.
  const t = setUp({
    fields: FIELDS,
    sinks: {
      webhook: {
        template: {
          contact: { mail: '{{lead.email}}', first: '{{lead.firstName}}', last: '{{lead.last_name}}' },
          plan: '{{lead.custom.plan}}',
          at: '{{occurred_at}}',
        },
      },
    },
  });
  const w = await runCli(['push', t.input, '--sink', 'webhook', '--url', url, '--json', ...rest(t)]);
  assert.equal(w.code, 0, w.stderr);
  assert.deepEqual(emu.webhookReceived().deliveries[1]!.body, {
    contact: { mail: LEAD.email, first: 'Ana', last: 'Souza' },
    plan: 'pro',
    at: TIME,
  });
  const why = 'the webhook template has no placeholder for it';
  assert.deepEqual(
    jsonReport(w).fieldsNotHeld,
    ['company', 'custom.tier', 'name', 'phone', 'source'].map((field) => ({ field, why, leads: 1 })),
  );
  assert.equal(notHeldLines(w).length, 5, w.stderr);
});

test('jsonl: the line carries every field and the event time; a custom field named like a standard one is told', async () => {
  const s = setUp({ fields: FIELDS });
  const out = join(s.dir, 'out.jsonl');
  const r = await runCli(['push', s.input, '--sink', 'jsonl', '--output', out, '--json', ...rest(s)]);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(jsonReport(r).fieldsNotHeld, undefined);
  const line = JSON.parse(readFileSync(out, 'utf8')) as Record<string, unknown>;
  assert.deepEqual(line.lead, LEAD);
  assert.equal(line.occurred_at, TIME);
  assert.deepEqual(Object.keys(line), ['key', 'occurred_at', 'lead']);

  // A custom field called `company` has no place of its own beside the lead's company.
  const t = setUp({ fields: { ...FIELDS, custom: { ...FIELDS.custom, company: 'plan' } } });
  const out2 = join(t.dir, 'out.jsonl');
  const w = await runCli(['push', t.input, '--sink', 'jsonl', '--output', out2, '--json', ...rest(t)]);
  assert.equal(w.code, 0, w.stderr);
  assert.equal((JSON.parse(readFileSync(out2, 'utf8')) as { lead: { company: string } }).lead.company, 'ACME Ltda');
  assert.deepEqual(jsonReport(w).fieldsNotHeld, [
    {
      field: 'custom.company',
      why: "the JSONL line holds the lead's company as company: rename the custom field",
      leads: 1,
    },
  ]);
});

test('postgres: every field in its column, the event time in created_at; fields with no column are told', async () => {
  const env = { PGPASSWORD: db.cluster.password };
  await db.query(`CREATE TABLE everything (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, email text NOT NULL UNIQUE, name text, first_name text,
    last_name text, phone text, company text, source text, plan text, tier_code text,
    created_at timestamptz NOT NULL DEFAULT now())`);
  const push = (s: ReturnType<typeof setUp>, table: string) =>
    runCli(['push', s.input, '--sink', 'postgres', '--pg-url', db.url, '--table', table, '--json', ...rest(s)], {
      env,
    });
  const s = setUp({ fields: FIELDS, sinks: { postgres: { columns: { tier: 'tier_code' } } } });
  const r = await push(s, 'everything');
  assert.equal(r.code, 0, r.stderr);
  assert.equal(jsonReport(r).fieldsNotHeld, undefined);
  const [row] = (
    await db.query(
      `SELECT email, name, first_name, last_name, phone, company, source, plan, tier_code, created_at FROM everything`,
    )
  ).rows as Array<Record<string, unknown>>;
  const { tier, ...others } = LEAD;
  assert.deepEqual(
    { ...row, created_at: (row!.created_at as Date).toISOString() },
    {
      ...others,
      tier_code: tier,
      created_at: TIME,
    },
  );

  // A table without first_name, last_name or a column for tier: written without them, and the run says which.
  await db.query(`CREATE TABLE fewer (id serial PRIMARY KEY, email text UNIQUE NOT NULL, name text, plan text)`);
  const t = setUp({ fields: FIELDS });
  const w = await push(t, 'fewer');
  assert.equal(w.code, 0, w.stderr);
  const why = (column: string) =>
    `no column of public.fewer takes it: add a "${column}" column, or map one in sinks.postgres.columns`;
  assert.deepEqual(jsonReport(w).fieldsNotHeld, [
    { field: 'company', why: why('company'), leads: 1 },
    { field: 'custom.tier', why: why('tier'), leads: 1 },
    { field: 'firstName', why: why('first_name'), leads: 1 },
    { field: 'lastName', why: why('last_name'), leads: 1 },
    { field: 'phone', why: why('phone'), leads: 1 },
    { field: 'source', why: why('source'), leads: 1 },
  ]);
  assert.equal(notHeldLines(w).length, 6, w.stderr);
  assert.deepEqual((await db.query(`SELECT email, name, plan FROM fewer`)).rows, [
    { email: LEAD.email, name: 'Ana Souza', plan: 'pro' },
  ]);
});

test('replay says too which fields its sink had no place for', async () => {
  const emu = await emulator();
  const t = setUp({ fields: FIELDS, sinks: { webhook: { template: { mail: '{{lead.email}}' } } } });
  const sink = ['--sink', 'webhook', '--url', `${emu.url}/webhook`, '--max-retries', '0', '--json', ...rest(t)];
  emu.setFaults({ script: ['503'] });
  const failed = await runCli(['push', t.input, ...sink]);
  assert.equal(failed.code, 1, failed.stderr);
  emu.setFaults({});
  const r = await runCli(['replay', ...sink]);
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual(
    jsonReport(r).fieldsNotHeld?.map((f) => f.field),
    ['company', 'custom.plan', 'custom.tier', 'firstName', 'lastName', 'name', 'phone', 'source'],
  );
});
