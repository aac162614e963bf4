// Generated leads with any subset of fields set go through each sink (HubSpot and the webhook receiver of the
// emulator, a JSONL file, a real PostgreSQL table), and are read back: every field set reaches the sink's record,
// unless the sink says it has no place for it (fieldsNotHeld); and a field it says so of is indeed not there.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import fc from 'fast-check';
import type { Lead } from '../../src/mapping/types.js';
import { startEmulator, type Emulator } from '../../src/sandbox/emulator.js';
import { HubSpotSink } from '../../src/sinks/hubspot/sink.js';
import { JsonlSink } from '../../src/sinks/jsonl/sink.js';
import { PostgresSink } from '../../src/sinks/postgres/sink.js';
import type { SendItem, Sink } from '../../src/sinks/types.js';
import { WebhookSink } from '../../src/sinks/webhook/sink.js';
import { pgDatabase } from '../helpers/postgres.js';
import { tmpDir } from '../helpers/tmp.js';
import { CANARY, fastClient } from './helpers.js';

// Fixed seed: every run tries the same cases.
const SEED = 20260433;
const RUNS = 30;

/** Custom field names, some of them those of standard fields or properties (a sink may have no place for them). */
const CUSTOM = ['plan', 'tier', 'score', 'company', 'email', 'firstname', 'first_name', 'name'] as const;
const STANDARD = ['email', 'phone', 'name', 'firstName', 'lastName', 'company', 'source'] as const;
type Field = (typeof STANDARD)[number] | `custom.${string}`;

const word = fc.stringMatching(/^[A-Za-zÀ-ÿ]{1,8}$/);
const text = fc.array(word, { minLength: 1, maxLength: 3 }).map((w) => w.join(' '));
/** A lead as the mapper makes them: trimmed, no empty field; an email or a phone. Custom values never equal another's. */
const leadArb = fc
  .record(
    {
      email: fc.boolean(),
      phone: fc.integer({ min: 10_000_000, max: 99_999_999 }).map((n) => `+55119${n}`),
      name: text,
      firstName: word,
      lastName: text,
      company: text,
      source: word,
      custom: fc.dictionary(
        fc.constantFrom(...CUSTOM),
        word.map((w) => `c-${w}`),
        { maxKeys: 4 },
      ),
    },
    { requiredKeys: [] },
  )
  .map(({ email, custom, ...rest }) => {
    const lead: Lead = { ...rest };
    if (email || !lead.phone) lead.email = `p${++people}@example.com`;
    // A custom `email` may land in a CRM's email (HubSpot's, when the lead has none): a valid address of its own.
    if (custom?.email !== undefined) custom.email = `c-${++people}@example.org`;
    if (custom && Object.keys(custom).length) lead.custom = custom;
    return lead;
  });
let people = 0;
let runs = 0;
const batchArb = fc.array(leadArb, { minLength: 1, maxLength: 8 });

/** The fields a lead has. */
function fieldsOf(lead: Lead): Field[] {
  return [
    ...STANDARD.filter((f) => lead[f] !== undefined),
    ...Object.keys(lead.custom ?? {}).map((k) => `custom.${k}` as const),
  ];
}

/** Whether the record a sink holds of the lead holds this field's value. */
type Reached = (lead: Lead, field: Field, record: Record<string, unknown>) => boolean;

const SNAKE: Record<(typeof STANDARD)[number], string> = {
  email: 'email',
  phone: 'phone',
  name: 'name',
  firstName: 'first_name',
  lastName: 'last_name',
  company: 'company',
  source: 'source',
};
const valueOf = (lead: Lead, field: Field): string =>
  field.startsWith('custom.') ? lead.custom![field.slice(7)]! : lead[field as (typeof STANDARD)[number]]!;

/** A body's or a JSONL line's lead, a table's row: a standard field under its snake_case name, a custom one under its own. */
const snakeReached: Reached = (lead, field, record) =>
  record[field.startsWith('custom.') ? field.slice(7) : SNAKE[field as (typeof STANDARD)[number]]] ===
  valueOf(lead, field);

/** A HubSpot contact: no full-name property (firstname and lastname spell it), the source in lead_source. */
const hubspotReached: Reached = (lead, field, p) => {
  const v = valueOf(lead, field);
  const same = (a: unknown) => typeof a === 'string' && a.toLowerCase() === v.toLowerCase();
  switch (field) {
    case 'name':
      return same([p.firstname, p.lastname].filter(Boolean).join(' ')) || same(p.firstname);
    case 'firstName':
      return p.firstname === v;
    case 'lastName':
      return p.lastname === v;
    case 'source':
      return p.lead_source === v;
    default:
      return snakeReached(lead, field, p);
  }
};

/** Sends a batch and checks, lead by lead, what its record holds against what the sink says it left out. */
async function check(
  sink: Sink,
  leads: Lead[],
  records: (items: SendItem[], crmIds: Array<string | undefined>) => Promise<Array<Record<string, unknown>>>,
  reached: Reached,
): Promise<void> {
  // Shrinking hands the same leads out again: each run starts from an empty destination (see fresh), with keys of
  // its own.
  const run = ++runs;
  const items: SendItem[] = leads.map((lead, i) => ({
    key: `k${run}-${i}`,
    downstreamKey: `dk-${run}-${i}`.padEnd(24, '0'),
    lead,
    mode: 'create',
    ...(lead.email ? { naturalKey: lead.email } : {}),
  }));
  const out = await sink.send(items);
  for (const o of out) assert.equal(o.kind, 'created', JSON.stringify(o));
  const got = await records(
    items,
    out.map((o) => ('crmId' in o ? o.crmId : undefined)),
  );
  items.forEach((item, i) => {
    const told = new Set(sink.fieldsNotHeld?.(item).map((f) => f.field));
    for (const field of fieldsOf(item.lead)) {
      const there = reached(item.lead, field, got[i]!);
      assert.equal(
        there,
        !told.has(field),
        `${sink.name}: ${field} ${there ? 'reached the sink, yet was told as not' : 'did not reach the sink, and was not told'}: ${JSON.stringify(item.lead)} → ${JSON.stringify(got[i])}`,
      );
    }
    for (const f of told) assert.ok(fieldsOf(item.lead).includes(f as Field), `${f} told, but the lead has none`);
  });
}

let emu: Emulator;
before(async () => {
  emu = await startEmulator({
    token: CANARY,
    customProperties: ['plan', 'tier', 'score', 'first_name', 'name', 'lead_source'],
  });
});
after(() => emu.close());

test('hubspot: each field set reaches its property, or is told as having none', async () => {
  const sink = new HubSpotSink({
    http: fastClient().client,
    token: CANARY,
    baseUrl: emu.url,
    sourceProperty: 'lead_source',
  });
  await fc.assert(
    fc.asyncProperty(batchArb, async (leads) => {
      emu.reset();
      const byId = () => new Map(emu.contacts().map((c) => [c.id, c.properties]));
      await check(sink, leads, async (_items, ids) => ids.map((id) => byId().get(id!) ?? {}), hubspotReached);
    }),
    { seed: SEED, numRuns: RUNS },
  );
  await sink.close();
});

test('webhook: each field set reaches the default body, or is told as having no place there', async () => {
  const sink = new WebhookSink({ url: `${emu.url}/webhook`, http: fastClient().client, env: {} });
  await fc.assert(
    fc.asyncProperty(batchArb, async (leads) => {
      emu.reset();
      await check(
        sink,
        leads,
        async (items) => {
          const byKey = new Map(emu.webhookReceived().deliveries.map((d) => [d.idempotencyKey, d.body]));
          return items.map((it) => (byKey.get(it.downstreamKey) as { lead: Record<string, unknown> }).lead);
        },
        snakeReached,
      );
    }),
    { seed: SEED, numRuns: RUNS },
  );
  await sink.close();
});

test('webhook with a template: each field set reaches it, or is told as having no placeholder', async () => {
  const template = {
    who: { mail: '{{lead.email}}', first: '{{lead.firstName}}', last: '{{lead.last_name}}' },
    plan: '{{lead.custom.plan}}',
    company: '{{lead.company}}',
  };
  const sink = new WebhookSink({ url: `${emu.url}/webhook`, http: fastClient().client, env: {}, config: { template } });
  // The record as the template places it, read back under the names the lead's fields have.
  const reached: Reached = (lead, field, b) => {
    const who = b.who as Record<string, unknown>;
    const placed: Record<string, unknown> = {
      email: who.mail,
      firstName: who.first,
      lastName: who.last,
      company: b.company,
      'custom.plan': b.plan,
    };
    return placed[field] === valueOf(lead, field);
  };
  await fc.assert(
    fc.asyncProperty(batchArb, async (leads) => {
      emu.reset();
      await check(
        sink,
        leads,
        async (items) => {
          const byKey = new Map(emu.webhookReceived().deliveries.map((d) => [d.idempotencyKey, d.body]));
          return items.map((it) => byKey.get(it.downstreamKey) as Record<string, unknown>);
        },
        reached,
      );
    }),
    { seed: SEED, numRuns: RUNS },
  );
  await sink.close();
});

test('jsonl: each field set reaches the line, or is told as having no place there', async () => {
  const file = join(tmpDir(), 'out.jsonl');
  const sink = new JsonlSink({ output: file });
  await sink.open();
  await fc.assert(
    fc.asyncProperty(batchArb, async (leads) => {
      await check(
        sink,
        leads,
        async (items) => {
          const lines = readFileSync(file, 'utf8').trim().split('\n');
          const byKey = new Map(
            lines
              .map((l) => JSON.parse(l) as { key: string; lead: Record<string, unknown> })
              .map((l) => [l.key, l.lead]),
          );
          return items.map((it) => byKey.get(it.downstreamKey)!);
        },
        snakeReached,
      );
    }),
    { seed: SEED, numRuns: RUNS },
  );
  await sink.close?.();
});

test('postgres: each field set reaches its column, or is told as having none', async () => {
  const db = await pgDatabase();
  await db.query(`CREATE TABLE every (id serial PRIMARY KEY, email text UNIQUE NOT NULL, name text, first_name text,
    last_name text, phone text, company text, source text, plan text, tier text, score text, firstname text)`);
  await db.query(`CREATE TABLE few (id serial PRIMARY KEY, email text UNIQUE NOT NULL, name text, last_name text,
    company text, plan text)`);
  const customFields = [...CUSTOM];
  for (const table of ['every', 'few']) {
    const sink = await PostgresSink.open({
      url: db.url,
      env: { PGPASSWORD: db.cluster.password },
      table,
      customFields,
    });
    await fc.assert(
      fc.asyncProperty(batchArb, async (leads) => {
        await db.query(`DELETE FROM ${table}`);
        // The table is keyed on email: every lead has one here.
        for (const l of leads) l.email ??= `p${++people}@example.com`;
        await check(
          sink,
          leads,
          async (items) => {
            const rows = (
              await db.query(`SELECT * FROM ${table} WHERE email = ANY($1)`, [items.map((i) => i.lead.email)])
            ).rows as Array<Record<string, unknown>>;
            const byEmail = new Map(rows.map((r) => [r.email, r]));
            return items.map((i) => byEmail.get(i.lead.email)!);
          },
          snakeReached,
        );
      }),
      { seed: SEED, numRuns: RUNS },
    );
    await sink.close();
  }
});
