import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createMapper, parseTimeBound } from '../../src/mapping/map-record.js';
import { parseConfig } from '../../src/mapping/config.js';
import { UsageError } from '../../src/errors.js';
import type { LeadEvent, Mapped } from '../../src/mapping/types.js';
import { seededRandom } from '../../src/sandbox/faults.js';

const rec = (fields: Record<string, unknown>, line = 1) => ({
  kind: 'record' as const,
  source: 'in.jsonl',
  line,
  fields,
});
const ev = (m: Mapped): LeadEvent => {
  assert.equal(m.kind, 'event', JSON.stringify(m));
  return m as LeadEvent;
};

test('finds nested event fields without configuration and normalizes them', () => {
  const map = createMapper({ config: {} });
  const e = ev(
    map(
      rec({
        event_id: 'evt_1',
        type: 'lead.created',
        created_at: '2026-10-01T12:00:00Z',
        data: {
          email: '  Ana.Lima@Example.COM ',
          name: ' Ana   Lima ',
          phone: '+55 11 98765-4321',
          company: 'Acme',
          source: 'webinar',
        },
      }),
    ),
  );
  assert.equal(e.key, 'evt_1');
  assert.equal(e.keyKind, 'id');
  assert.equal(e.type, 'lead.created');
  assert.equal(e.occurredAt, '2026-10-01T12:00:00.000Z');
  assert.deepEqual(e.lead, {
    email: 'ana.lima@example.com',
    name: 'Ana Lima',
    phone: '+5511987654321',
    company: 'Acme',
    source: 'webinar',
  });
  assert.equal(e.naturalKey, 'ana.lima@example.com');
});

test('recognizes Portuguese column names and national phones with a default country', () => {
  const map = createMapper({ config: {}, defaultCountry: 'BR' });
  const e = ev(
    map(
      rec({
        Nome: 'João  da Silva',
        'E-mail': 'JOAO@exemplo.com.br',
        Telefone: '(11) 98765-4321',
        Empresa: 'Padaria',
        Origem: 'indicação',
        'Data de criação': '05/10/2026 14:30',
      }),
    ),
  );
  assert.equal(e.lead.email, 'joao@exemplo.com.br');
  assert.equal(e.lead.phone, '+5511987654321');
  assert.equal(e.lead.name, 'João da Silva');
  assert.equal(e.lead.company, 'Padaria');
  assert.equal(e.lead.source, 'indicação');
  assert.equal(e.occurredAt, '2026-10-05T14:30:00.000Z');
  assert.equal(e.keyKind, 'content', 'no id column: a content key');
  assert.match(e.key, /^c:[0-9a-f]{32}$/);
});

test('builds the name from first and last name columns', () => {
  const map = createMapper({ config: {} });
  const e = ev(map(rec({ 'First Name': 'Ana', 'Last Name': 'Lee', Email: 'a@b.co' })));
  assert.equal(e.lead.name, 'Ana Lee');
  assert.equal(e.lead.firstName, 'Ana');
  assert.equal(e.lead.lastName, 'Lee');
});

test('a retry with a different envelope has the same payload hash; a changed lead does not', () => {
  const map = createMapper({ config: {} });
  const a = ev(
    map(rec({ event_id: 'e1', attempt: 1, delivered_at: '2026-10-01T12:00:00Z', data: { email: 'a@b.co' } })),
  );
  const b = ev(
    map(rec({ event_id: 'e1', attempt: 2, delivered_at: '2026-10-01T12:05:00Z', data: { email: 'A@B.CO ' } })),
  );
  const c = ev(map(rec({ event_id: 'e1', data: { email: 'a@b.co', phone: '+14155552671' } })));
  assert.equal(a.payloadHash, b.payloadHash);
  assert.notEqual(a.payloadHash, c.payloadHash);
});

test('invalid records say why and name the field', () => {
  const map = createMapper({ config: {} });
  const bad = map(rec({ event_id: 'e1', data: { email: 'x@' } }));
  assert.equal(bad.kind, 'invalid');
  assert.match((bad as { reason: string }).reason, /email: 'x@' is not a valid email address/);
  assert.equal((bad as { field?: string }).field, 'data.email');
  const none = map(rec({ event_id: 'e2', data: { name: 'Ana' } }));
  assert.equal(none.kind, 'invalid');
  assert.match((none as { reason: string }).reason, /no email and no phone/);
  const phone = map(rec({ event_id: 'e3', phone: '98765-4321' }));
  assert.match((phone as { reason: string }).reason, /phone: .*--default-country/);
  const noId = map(rec({ event_id: '', email: 'a@b.co' }));
  assert.equal(noId.kind, 'invalid');
  assert.match((noId as { reason: string }).reason, /no event id in 'event_id'/);
});

test('--type, --since and --until filter with a reason', () => {
  const map = createMapper({
    config: {},
    types: ['lead.created'],
    since: new Date('2026-10-01T00:00:00Z'),
    until: new Date('2026-10-02T00:00:00Z'),
  });
  assert.equal(map(rec({ id: '1', type: 'lead.created', ts: '2026-10-01T10:00:00Z', email: 'a@b.co' })).kind, 'event');
  const t = map(rec({ id: '2', type: 'contact.deleted', ts: '2026-10-01T10:00:00Z', email: 'a@b.co' }));
  assert.deepEqual([t.kind, (t as { reason: string }).reason], ['filtered', 'type contact.deleted not accepted']);
  assert.equal(
    (map(rec({ id: '3', type: 'lead.created', ts: '2026-09-30T10:00:00Z', email: 'a@b.co' })) as { reason: string })
      .reason,
    'before --since',
  );
  assert.equal(
    (map(rec({ id: '4', type: 'lead.created', ts: 1790935200, email: 'a@b.co' })) as { reason: string }).reason,
    'at or after --until',
  );
});

test('a config maps fields explicitly, picks a content key and custom fields', () => {
  const config = parseConfig({
    fields: { email: 'contact.mail', custom: { plan: 'meta.plan' } },
    key: { fields: ['email'] },
    defaultCountry: 'BR',
  });
  const map = createMapper({ config });
  const a = ev(map(rec({ id: 'x1', contact: { mail: 'z@q.io' }, meta: { plan: 'pro' } })));
  const b = ev(map(rec({ id: 'x2', contact: { mail: 'Z@q.io' }, meta: { plan: 'free' } })));
  assert.equal(a.lead.email, 'z@q.io');
  assert.deepEqual(a.lead.custom, { plan: 'pro' });
  assert.equal(a.keyKind, 'content');
  assert.equal(a.key, b.key, 'key over email only');
  assert.notEqual(a.payloadHash, b.payloadHash);
});

test('a bad config is a usage error naming the field', () => {
  assert.throws(
    () => parseConfig({ fields: { emial: 'x' } }),
    (e: Error) => e instanceof UsageError && /fields\.emial: unknown key \(did you mean email\?\)/.test(e.message),
  );
  assert.throws(() => parseConfig({ defaultCountry: 'XX' }), /defaultCountry: not an ISO 3166/);
  assert.throws(() => parseConfig({ key: { fields: [] } }), /key/);
});

test('relative --since/--until bounds count back from now', () => {
  assert.equal(parseTimeBound('7d', 10 * 86_400_000)!.getTime(), 3 * 86_400_000);
  assert.equal(parseTimeBound('12h', 86_400_000)!.getTime(), 43_200_000);
});

test('the payload hash text of a lead is exactly its canonical JSON, whatever fields it has', async () => {
  const { canonicalJson, canonicalLeadJson } = await import('../../src/mapping/keys.js');
  const leads = [
    {},
    { email: 'a@b.io' },
    { phone: '+5511987654321', email: 'a@b.io', name: 'Ana "Quote" \u2028 Lima', source: 'ads' },
    {
      source: 's',
      name: 'n',
      lastName: 'l',
      firstName: 'f',
      email: 'e@x.io',
      custom: { z: '1', a: '\n' },
      company: 'c',
      phone: '+1',
    },
    { email: 'a@b.io', name: undefined },
    { email: 'a@b.io', extra: 'not a lead key' },
  ];
  for (const lead of leads) assert.equal(canonicalLeadJson(lead as never), canonicalJson(lead), JSON.stringify(lead));
});

test('records of changing shapes map as a fresh mapper maps each one (the remembered shape never misleads)', () => {
  const rnd = seededRandom(5);
  const pick = <T>(xs: T[]): T => xs[Math.floor(rnd() * xs.length)]!;
  const person = () => ({
    email: `P${Math.floor(rnd() * 9)}@Example.com`,
    nome: 'Ana  Lima',
    telefone: '+55 11 91234-5678',
  });
  // Wrappers that come and go, change type, or move: each must be seen by sameShape when it matters.
  const shapes: Array<() => Record<string, unknown>> = [
    () => ({ event_id: 'e', type: 't', data: person() }),
    () => ({ event_id: 'e', type: 't', data: { lead: person() } }),
    () => ({ event_id: 'e', type: 't', data: { lead: 'not an object', ...person() } }),
    () => ({ event_id: 'e', type: 't', data: { object: person(), lead: null } }),
    () => ({ event_id: 'e', type: 't', data: { object: [person()], lead: person() } }),
    () => ({ event_id: 'e', type: 't', data: 'a string', payload: person() }),
    () => ({ event_id: 'e', type: 't', data: [person()], payload: person() }),
    () => ({ event_id: 'e', type: 't', payload: person(), data: person() }),
    () => ({ type: 't', event_id: 'e', data: person() }),
    () => ({ event_id: 'e', type: 't', data: { contact: person(), attributes: { email: 'x@y.io' } } }),
    () => ({ event_id: 'e', type: 't', data: { contact: person(), attributes: 'none' } }),
    () => ({ event_id: 'e', ...person(), data: { email: 'other@y.io' } }),
  ];
  const remembering = createMapper({ config: {} });
  for (let i = 0; i < 3000; i++) {
    const fields = pick(shapes)();
    const rec = { kind: 'record' as const, source: 's', line: i + 1, fields };
    assert.deepEqual(remembering(rec), createMapper({ config: {} })(rec), `record ${i}: ${JSON.stringify(fields)}`);
  }
});

test('a time of the canonical form that is no date makes its record invalid, naming the field (never rolled over)', () => {
  const map = createMapper({ config: {} });
  assert.deepEqual(map(rec({ event_id: 'e1', created_at: '2026-13-01T00:00:00.000Z', data: { email: 'a@b.co' } })), {
    kind: 'invalid',
    source: 'in.jsonl',
    line: 1,
    key: 'e1',
    field: 'created_at',
    reason: "created_at: '2026-13-01T00:00:00.000Z' is no date: there is no month 13",
  });
});

test('dates with the year last are read in the order of their field; one impossible in it, or out of range, is invalid', () => {
  const columns = new Map([
    ['data.created', { order: 'mdy' as const, why: "as its dates show: '12/25/2024' at line 1" }],
  ]);
  const map = createMapper({ config: {}, dateColumns: columns });
  const at = (created: string, when?: string) => {
    const fields: Record<string, unknown> = { event_id: 'e', data: { email: 'a@b.co', created } };
    if (when !== undefined) fields.when = when;
    return map(rec(fields));
  };
  assert.equal(ev(at('12/25/2024 10:00')).occurredAt, '2024-12-25T10:00:00.000Z');
  assert.equal(ev(at('03/04/2024')).occurredAt, '2024-03-04T00:00:00.000Z');
  const bad = at('25/12/2024');
  assert.equal(bad.kind, 'invalid');
  assert.equal((bad as { field?: string }).field, 'data.created');
  assert.equal(
    (bad as { reason: string }).reason,
    "data.created: '25/12/2024' is no date: read month/day (as its dates show: '12/25/2024' at line 1): there is no month 25",
  );
  // A field no column order was decided for: the default order (day/month), and why it is the one.
  const other = createMapper({ config: {} });
  const d = (t: string) => other(rec({ event_id: 'e', email: 'a@b.co', created_at: t }));
  assert.equal(ev(d('03/04/2024')).occurredAt, '2024-04-03T00:00:00.000Z');
  assert.match(
    (d('12/25/2024') as { reason: string }).reason,
    /read day\/month \(the default: .*\): there is no month 25$/,
  );
  for (const [t, why] of [
    ['2024-02-30', 'February 2024 has 29 days, not 30'],
    ['31/04/2024', 'April 2024 has 30 days, not 31'],
    ['2024-03-01T25:00:00', 'hour 25 is past 23'],
    ['13/13/2024', 'there is no month 13'],
  ] as const) {
    const m = d(t);
    assert.equal(m.kind, 'invalid', t);
    assert.equal((m as { field?: string }).field, 'created_at', t);
    assert.ok((m as { reason: string }).reason.endsWith(why), `${t}: ${(m as { reason: string }).reason}`);
  }
  // Not a date at all: the lead goes without a time, with a warning that says so.
  const none = ev(d('soon'));
  assert.equal(none.occurredAt, undefined);
  assert.deepEqual(none.warnings, ["created_at: 'soon' is not a date leadledger reads: the event goes without a time"]);
});

test('times without a zone are read in the timezone given (config or option), else UTC, whatever TZ says', () => {
  const t = (o: Partial<Parameters<typeof createMapper>[0]>) =>
    ev(createMapper({ config: {}, ...o })(rec({ event_id: 'e', email: 'a@b.co', created_at: '2024-03-01 10:00:00' })))
      .occurredAt;
  assert.equal(t({}), '2024-03-01T10:00:00.000Z');
  assert.equal(t({ timezone: 'America/Sao_Paulo' }), '2024-03-01T13:00:00.000Z');
  assert.equal(t({ config: parseConfig({ timezone: 'Asia/Tokyo' }, 'c.json') }), '2024-03-01T01:00:00.000Z');
  assert.throws(() => parseConfig({ timezone: 'Mars/Olympus' }, 'c.json'), /timezone: not a time zone/);
  assert.throws(() => parseConfig({ dateOrder: 'ymd' }, 'c.json'), /dateOrder/);
});

test('a plan holds for every record of a shape: a null, a boolean, an object or a number where the first record had text hides nothing from later records', () => {
  const rnd = seededRandom(13);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
  const odd = [null, true, false, { v: 'x' }, ['y'], 5511987654321, '', '  '];
  const values = {
    event_id: () => pick(['e1', 'e2', 7, null]),
    email: () => pick(['ana@example.com', 'BRUNO@example.com', ...odd]),
    mail: () => pick(['carla@example.com', ...odd]),
    phone: () => pick(['+5511987654321', '+55 21 99876-5432', ...odd]),
    name: () => pick(['Ana Lima', ...odd]),
    created_at: () => pick(['2026-10-01T00:00:01.000Z', '01/10/2026 10:00', ...odd]),
  };
  const remembering = createMapper({ config: {} });
  for (let i = 0; i < 4000; i++) {
    // One shape throughout (the same keys in the same order, data always an object): only the values change.
    const fields = {
      event_id: values.event_id(),
      email: values.email(),
      mail: values.mail(),
      created_at: values.created_at(),
      data: { phone: values.phone(), name: values.name(), email: values.email() },
    };
    const r = { kind: 'record' as const, source: 's', line: i + 1, fields };
    assert.deepEqual(remembering(r), createMapper({ config: {} })(r), `record ${i}: ${JSON.stringify(fields)}`);
  }
});

test('field names are matched whatever their case: config paths, whole CSV headers, wrappers, and their shapes', () => {
  const config = parseConfig(
    { fields: { id: 'EventId', email: 'contact.email', phone: 'Person - Phone - Work', name: 'data.full_name' } },
    'c.json',
  );
  const map = createMapper({ config });
  const e = ev(
    map(
      rec({
        eventid: 'e1',
        CONTACT: { Email: 'Ana@Example.com' },
        'PERSON - PHONE - WORK': '+5511987654321',
        Data: { FULL_NAME: 'Ana Lima' },
      }),
    ),
  );
  assert.deepEqual([e.key, e.lead], ['e1', { email: 'ana@example.com', phone: '+5511987654321', name: 'Ana Lima' }]);
  // The exact spelling wins where a record has both.
  const both = ev(
    map(rec({ eventid: 'e2', EventId: 'e3', contact: { email: 'a@example.com', EMAIL: 'b@example.com' } })),
  );
  assert.deepEqual([both.key, both.lead.email], ['e3', 'a@example.com']);
  // Without configuration: a wrapper spelled Data or Properties is a wrapper, and records whose wrapper's keys
  // differ are of different shapes (the plan of one never misleads the other).
  const generic = createMapper({ config: {} });
  const fresh = (fields: Record<string, unknown>) => createMapper({ config: {} })(rec(fields));
  for (const fields of [
    { event_id: 'g1', Data: { EMAIL: 'g1@example.com' } },
    { event_id: 'g2', Data: { Phone: '+5511987654321' } },
    { event_id: 'g3', Properties: { Email: 'g3@example.com', Name: 'G Três' } },
    { event_id: 'g4', Data: { EMAIL: 'g4@example.com' } },
  ]) {
    const m = generic(rec(fields));
    assert.equal(m.kind, 'event', JSON.stringify(m));
    assert.deepEqual(m, fresh(fields));
  }
});
