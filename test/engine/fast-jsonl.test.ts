// The fast JSONL path must write exactly the block the general path (JSON.parse, then the mapper) writes, line for
// line and byte for byte, whatever the line: it may only decline lines, never map one differently.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  BlockEncoder,
  INTS,
  I_KIND,
  I_LINE,
  Kind,
  setDownstreamNamespace,
  str,
  STRS,
  S_DK,
  S_HASH,
  S_KEY,
  S_TYPE,
  type MappedBlock,
} from '../../src/engine/block.js';
import { downstreamKey } from '../../src/mapping/keys.js';
import { FastJsonl, mapJsonlBlock } from '../../src/engine/fast-jsonl.js';
import { createMapper, type MapOptions } from '../../src/mapping/map-record.js';
import { parseConfig } from '../../src/mapping/config.js';
import { seededRandom } from '../../src/sandbox/faults.js';

function blocks(
  text: string | Buffer,
  opts: MapOptions = { config: {} },
  hashLater = true,
): { general: MappedBlock; fast: MappedBlock; hits: number } {
  const buf = Buffer.isBuffer(text) ? text : Buffer.from(text);
  const e1 = new BlockEncoder(16);
  mapJsonlBlock(buf, true, e1, createMapper(opts, { hashLater }), undefined, null);
  const mapper = createMapper(opts, { hashLater });
  const fast = new FastJsonl(mapper);
  const e2 = new BlockEncoder(16);
  mapJsonlBlock(buf, true, e2, mapper, FastJsonl.allowed(mapper, undefined) ? fast : undefined, null);
  return { general: e1.finish(), fast: e2.finish(), hits: fast.hits };
}

function assertSameBlocks(a: MappedBlock, b: MappedBlock, lines: string[]): void {
  assert.equal(b.n, a.n, 'records');
  for (let r = 0; r < a.n; r++) {
    const ra = a.ints.subarray(r * INTS, r * INTS + INTS).join();
    const rb = b.ints.subarray(r * INTS, r * INTS + INTS).join();
    const sa = a.bytes.toString('utf8', a.offs[r * STRS], a.offs[r * STRS + STRS]);
    const sb = b.bytes.toString('utf8', b.offs[r * STRS], b.offs[r * STRS + STRS]);
    const line = a.ints[r * INTS + I_LINE]!;
    const what = `record ${r} (line ${line}: ${lines[line - 1]})`;
    assert.equal(rb, ra, what);
    assert.equal(sb, sa, what);
    assert.deepEqual(
      [...b.offs.subarray(r * STRS, r * STRS + STRS + 1)].map((x) => x - b.offs[r * STRS]!),
      [...a.offs.subarray(r * STRS, r * STRS + STRS + 1)].map((x) => x - a.offs[r * STRS]!),
      what,
    );
  }
}

// The usual event, and variations of each of its parts: every one is either mapped the same way by the fast path
// or declined by it.
const BASE = {
  event_id: 'evt_1',
  utm: 'spring-sale',
  type: 'lead.created',
  created_at: '2026-10-01T00:00:01.000Z',
  data: {
    email: 'joao.pereira.1@example.com',
    name: 'João Pereira',
    phone: '+55 11 930029883',
    source: 'facebook-ads',
  },
};
const ODD_TEXT = [
  '',
  ' ',
  'x',
  ' lead',
  'lead ',
  'two  spaces',
  'tab\there',
  'nb\u00a0sp',
  'ümlaut',
  'ção',
  'Ωmega',
  '日本',
  'emoji 😀',
  'quote"inside',
  'back\\slash',
  'line\nbreak',
  '\u2028',
  '\ud800',
  'a/b',
  '\u0085nel',
  '\ufeffbom',
];
const EMAILS = [
  'Ana@Example.COM',
  'Ana.Lima@Example.com',
  'mailto:ana@example.com',
  'MAILTO:ana@x.io',
  'ana@example',
  'ana@@example.com',
  '@example.com',
  'ana@.com',
  'ana@x.c',
  'ana@x.c0m',
  'ana@x.com.',
  'a.b@x.y.zz',
  'ana lima@x.com',
  'ana@x.co ',
  ' ana@x.co',
  'ánä@x.com',
  'ana@x.COM',
  'a"b@x.com',
  'a<b@x.com',
  'a,b@x.com',
  'a;b@x.com',
  'a:b@x.com',
  'a(b)@x.com',
  'K\u212a@x.com',
  'ana@x.ｃom',
  'İ@x.com',
  'a\\b@x.com',
  'a\u0001b@x.com',
  'a\u007fb@x.com',
  // RFC 5321/5322 and one canonical form (normalize.ts): dots, hyphens, LDH labels, top-level domains, IDNA, NFC.
  'a..b@x.com',
  'a@x..com',
  '.a@x.com',
  'a.@x.com',
  'a@.x.com',
  'a@-x.com',
  'a@x-.com',
  'a@x.123',
  'a@1x.co',
  'a@x_y.com',
  'a@x%41.com',
  'a@ab--cd.com',
  'a@xn--abc.com',
  'ana@xn--80ak6aa92e.xn--p1ai',
  'Ana@XN--80AK6AA92E.XN--P1AI',
  'foo@bücher.example',
  'foo@xn--bcher-kva.example',
  'jos\u00e9@x.com',
  'jose\u0301@x.com',
  "o'brien+tag!#$%&*/=?^_`{|}~-@x.com",
  'a[b]@x.com',
  'a@' + 'd'.repeat(63) + '.com',
  'a@' + 'd'.repeat(64) + '.com',
  'a@x.' + 'c'.repeat(63),
];
const PHONES = [
  '+55 11 930029883',
  '+55 (11) 93002-9883',
  '+5511930029883',
  '11 93002-9883',
  '+1 202 555 0143',
  '+44 20 7946 0958',
  '+55 11 9300',
  '+55 11 930029883 ',
  ' +55 11 930029883',
  '+55 11 930029883 x12',
  '+55-11-930.029.883',
  '+０５５ 11 930029883',
  '+999 1234567',
  '0055 11 930029883',
  '+49 (0)30 1234567',
  '+39 06 1234 5678',
  '',
  '+',
  '++55 11 930029883',
];
const TIMES = [
  '2026-10-01T00:00:01.000Z',
  '2026-10-01T00:00:01Z',
  '2026-02-30T00:00:00.000Z',
  '2024-02-29T23:59:59.999Z',
  '2023-02-29T00:00:00.000Z',
  '2026-13-01T00:00:00.000Z',
  '2026-10-01T24:00:00.000Z',
  '2026-10-01 00:00:01.000Z',
  '1759276801',
  '01/10/2026 10:00',
  'soon',
  '2026-10-01T00:00:01.000z',
  '2026-10-01T00:00:01.00xZ',
  '2026-1x-01T00:00:01.000Z',
  '2026-10-01T00:0/:01.000Z',
  '20x6-10-01T00:00:01.000Z',
];

// Keys renamed to others of the same length: only the bytes of a key tell them apart.
const SAME_LENGTH: Array<[string, string]> = [
  ['event_id', 'event_ix'],
  ['email', 'Email'],
  ['name', 'nome'],
  ['data', 'body'],
  ['type', 'tipo'],
  ['source', 'origem'],
  ['phone', 'fonex'],
  // and differing in a key's last bytes, past its whole 32-bit words (which are compared a word at a time)
  ['email', 'emaiL'],
  ['source', 'sourcf'],
  ['created_at', 'created_aT'],
];

function renamed(v: unknown, [from, to]: [string, string]): Record<string, unknown> {
  return JSON.parse(JSON.stringify(v).replace(`"${from}":`, `"${to}":`)) as Record<string, unknown>;
}

function variant(rnd: () => number): Record<string, unknown> {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
  const e = structuredClone(BASE) as Record<string, unknown> & { data: Record<string, unknown> };
  const r = rnd();
  if (r < 0.75) return e; // mostly plain lines, as in real exports, so templates are learned and used
  const v = rnd();
  if (v < 0.1) e.data.email = pick(EMAILS);
  else if (v < 0.2) e.data.phone = pick(PHONES);
  else if (v < 0.27) e.created_at = pick(TIMES);
  else if (v < 0.35) e.data[pick(['name', 'source'])] = pick(ODD_TEXT);
  else if (v < 0.4) e.event_id = pick([...ODD_TEXT, 'evt 2', 'évt_3']);
  else if (v < 0.44) e.type = pick(ODD_TEXT);
  else if (v < 0.5)
    e.data[pick(['email', 'phone', 'name', 'source'])] = pick([null, 5, 5.5, true, false, [], {}, ['x'], { a: 1 }]);
  else if (v < 0.55)
    (e as Record<string, unknown>)[pick(['event_id', 'type', 'created_at'])] = pick([
      null,
      7,
      true,
      ['evt'],
      { id: 'x' },
    ]);
  else if (v < 0.6) delete e.data[pick(['email', 'phone', 'name', 'source'])];
  else if (v < 0.63) delete (e as Record<string, unknown>)[pick(['event_id', 'type', 'created_at'])];
  else if (v < 0.67) e.data.company = pick(['Acme', 'Acme  Inc', ' Acme', 'Açme']);
  else if (v < 0.72)
    (e as Record<string, unknown>).extra = pick([
      1,
      'x',
      null,
      [1, [2, { a: 'b' }]],
      { nested: { deep: [true] } },
      -0.5e-3,
      1e21,
    ]);
  else if (v < 0.76) e.data = { lead: e.data };
  else if (v < 0.8) (e as Record<string, unknown>).payload = pick(['x', { email: 'other@x.com' }, null]);
  else if (v < 0.84) e.data.firstName = 'Ana';
  else if (v < 0.92) return renamed(e, pick(SAME_LENGTH));
  else (e as Record<string, unknown>).amount = 12; // a number, which text() may misspell
  return e;
}

// A line written from a value, then perhaps disturbed as text: spacing, key order, escapes, duplicates, damage.
function text(v: Record<string, unknown>, rnd: () => number): string {
  let s = JSON.stringify(v);
  const r = rnd();
  if (r < 0.7) return s;
  if (r < 0.74) return JSON.stringify(v, null, 1).replace(/\n/g, '');
  if (r < 0.77) return ' \t' + s + '\r ';
  if (r < 0.8) return s.replace('"event_id"', '"ev\\u0065nt_id"');
  if (r < 0.82) return s.replace('"name":"', '"name":"\\u00c7');
  if (r < 0.83) return s.replace('"email":"', '"email":"\\u0041');
  if (r < 0.84) return s.replace('{"event_id":"evt_1",', '{"event_id":"evt_1","event_id":"evt_2",');
  if (r < 0.86) return s.replace(/\{"event_id":("[^"]*"),"type":("[^"]*"),/, '{"type":$2,"event_id":$1,');
  if (r < 0.88) return s.slice(0, Math.floor(rnd() * s.length)); // truncated
  if (r < 0.9) return s + pick2(rnd, [',', '}', ' x', '\u0000', '[]']);
  if (r < 0.92) return s.replace(/:"/, ':0').replace(/^/, '');
  if (r < 0.93) return s.replace('"type"', '"type" ').replace(':', ' : ');
  if (r < 0.94)
    return s.replace(
      '"spring-sale"',
      pick2(rnd, [
        '"spr\\xing"',
        '"spr\\u12"',
        '"spr\\u12g4"',
        '"spr\\"',
        '"spr\\\\"',
        '"spr\\u00e9"',
        '"spr\\/"',
        '"a\tb"',
      ]),
    );
  if (r < 0.96)
    return s.replace(
      '"amount":12',
      '"amount":' +
        pick2(rnd, [
          '012',
          '-',
          '1.',
          '.5',
          '1e',
          '+1',
          '0x1f',
          '1E+2',
          '-0',
          '1.5e-3',
          '00',
          '-01',
          '1e5',
          '2.0',
          'NaN',
        ]),
    );
  if (r < 0.98) return '[' + s + ']';
  s = s.replace('Pereira', 'Pereira\t');
  return s;
}
const pick2 = <T>(rnd: () => number, xs: T[]): T => xs[Math.floor(rnd() * xs.length)]!;

test('the fast path writes the same block as the general path, on 40,000 lines of the usual shape and its variations', () => {
  const rnd = seededRandom(42);
  const lines: string[] = [];
  for (let i = 0; i < 40_000; i++) lines.push(text(variant(rnd), rnd));
  const { general, fast, hits } = blocks(lines.join('\n'));
  assertSameBlocks(general, fast, lines);
  assert.ok(hits > 10_000, `the fast path mapped ${hits} lines`);
});

// A push's workers take each payload hash themselves (hashLater off): the fast path hashes the lead's bytes as it
// wrote them, which must give the hash the general path takes of the lead's string.
test('with payload hashes taken in the worker: the same block, hashes and all, on 40,000 lines', () => {
  const rnd = seededRandom(7);
  const lines: string[] = [];
  for (let i = 0; i < 40_000; i++) lines.push(text(variant(rnd), rnd));
  const { general, fast, hits } = blocks(lines.join('\n'), { config: {} }, false);
  assertSameBlocks(general, fast, lines);
  assert.ok(hits > 10_000, `the fast path mapped ${hits} lines`);
  const hash = (b: MappedBlock, r: number) =>
    b.bytes.toString('latin1', b.offs[r * STRS + S_HASH], b.offs[r * STRS + S_TYPE]);
  let hashed = 0;
  for (let r = 0; r < fast.n; r++) if (/^[0-9a-f]{32}$/.test(hash(fast, r))) hashed++;
  assert.ok(hashed >= hits, `every event the fast path mapped has its hash (${hashed} of ${fast.n} records)`);
});

// A push's workers also take each event's downstream key: the general path's and the fast path's are the same, and
// each is the one the sender would take of the key it reads.
test('with downstream keys taken in the worker: the same block, and each key is downstreamKey() of its event', () => {
  const rnd = seededRandom(11);
  const lines: string[] = [];
  for (let i = 0; i < 20_000; i++) lines.push(text(variant(rnd), rnd));
  lines.push(JSON.stringify({ ...BASE, event_id: 'evt_ção_€_😀' }));
  setDownstreamNamespace('acme çé');
  try {
    const { general, fast, hits } = blocks(lines.join('\n'), { config: {} }, false);
    assertSameBlocks(general, fast, lines);
    assert.ok(hits > 5_000, `the fast path mapped ${hits} lines`);
    let events = 0;
    for (let r = 0; r < fast.n; r++) {
      const kind = fast.ints[r * INTS + I_KIND];
      const dk = str(fast, r * STRS + S_DK);
      if (kind !== Kind.IdEvent && kind !== Kind.ContentEvent) {
        assert.equal(dk, '', `record ${r}: no downstream key for a record that is no event`);
        continue;
      }
      events++;
      assert.equal(dk, downstreamKey('acme çé', str(fast, r * STRS + S_KEY)), `record ${r}`);
    }
    assert.ok(events > 10_000, `${events} events`);
  } finally {
    setDownstreamNamespace(undefined);
  }
  // Without a namespace, nothing is taken: the sender takes the key.
  const { fast } = blocks(lines.slice(0, 100).join('\n'));
  for (let r = 0; r < fast.n; r++) assert.equal(str(fast, r * STRS + S_DK), '');
});

test('bytes that are not UTF-8, a BOM, CRLF and blank lines: still the same block', () => {
  const line = JSON.stringify(BASE);
  const parts: Buffer[] = [Buffer.from('\ufeff' + line + '\r\n\n  \n' + line + '\n')];
  for (const bad of [
    [0xff],
    [0xc3],
    [0xe2, 0x82],
    [0xc0, 0xaf],
    [0xed, 0xa0, 0x80],
    [0xf0, 0x9f, 0x98, 0x80],
    [0xc3, 0xa7],
  ]) {
    for (const field of ['name', 'email', 'event_id', 'source', 'extra']) {
      const v = structuredClone(BASE) as Record<string, unknown>;
      if (field === 'extra') v.extra = 'X';
      const s = JSON.stringify(v).replace(field === 'extra' ? '"X"' : new RegExp(`"${field}":"`), (m) => m + 'Y');
      const at = s.indexOf('Y');
      parts.push(Buffer.concat([Buffer.from(s.slice(0, at)), Buffer.from(bad), Buffer.from(s.slice(at + 1) + '\n')]));
      parts.push(Buffer.from(line + '\n'));
    }
  }
  // Keys with bytes that are not UTF-8, or are: a template is only learned from keys that decode one way.
  for (const bad of [[0xff], [0xc3, 0xa7], [0xe2, 0x82, 0xac], [0xc3]]) {
    const s = JSON.stringify(BASE).replace('"utm"', '"utmY"');
    const at = s.indexOf('Y');
    for (let k = 0; k < 3; k++)
      parts.push(Buffer.concat([Buffer.from(s.slice(0, at)), Buffer.from(bad), Buffer.from(s.slice(at + 1) + '\n')]));
    parts.push(Buffer.from(line + '\n'));
  }
  parts.push(Buffer.from(line)); // no newline at the end
  const buf = Buffer.concat(parts);
  const { general, fast, hits } = blocks(buf);
  assertSameBlocks(general, fast, buf.toString().split('\n'));
  assert.ok(hits > 30, `the fast path mapped ${hits} lines`);
});

test('options that make a lead depend on more than the plan turn the fast path off', () => {
  const off = (o: Partial<MapOptions>) => !FastJsonl.allowed(createMapper({ config: {}, ...o }), undefined);
  assert.ok(off({ types: ['lead.created'] }));
  assert.ok(off({ since: new Date(0) }));
  assert.ok(off({ config: parseConfig({ fields: { custom: { plan: 'data.plan' } } }, 'c.json') }));
  assert.ok(off({ config: parseConfig({ key: { fields: ['email'] } }, 'c.json') }));
  assert.ok(!FastJsonl.allowed(createMapper({ config: {} }), 'body'));
  assert.ok(!off({}));
  // Explicit field paths keep it on, and it still writes what the general path writes.
  const opts = { config: parseConfig({ fields: { email: 'data.email', source: 'type' } }, 'c.json') };
  const rnd = seededRandom(3);
  const lines: string[] = [];
  for (let i = 0; i < 3000; i++) lines.push(text(variant(rnd), rnd));
  const { general, fast, hits } = blocks(lines.join('\n'), opts);
  assertSameBlocks(general, fast, lines);
  assert.ok(hits > 500, `the fast path mapped ${hits} lines`);
});

test('keys spelled in another case than the paths of a config: the general path reads them, the fast path declines', () => {
  const opts = {
    config: parseConfig({ fields: { id: 'Event_Id', email: 'DATA.Email', phone: 'data.PHONE' } }, 'c.json'),
  };
  const lines: string[] = [];
  for (let i = 0; i < 2000; i++) {
    const spelled =
      i % 3 === 0
        ? { event_id: `e${i}`, data: { email: `p${i}@example.com`, phone: '+5511987654321' } }
        : i % 3 === 1
          ? { EVENT_ID: `e${i}`, Data: { EMAIL: `p${i}@example.com`, Phone: '+5511987654321' } }
          : { Event_Id: `e${i}`, DATA: { Email: `p${i}@example.com`, PHONE: '+5511987654321' } };
    lines.push(JSON.stringify(spelled));
  }
  const { general, fast } = blocks(lines.join('\n'), opts);
  assertSameBlocks(general, fast, lines);
  assert.equal(general.n, lines.length);
  for (let r = 0; r < general.n; r++) assert.equal(general.ints[r * INTS + I_KIND], Kind.IdEvent, lines[r]);
});

test('numbers of every spelling, valid JSON or not, in lines of one shape: the same block', () => {
  const rnd = seededRandom(9);
  const spellings = [
    '12',
    '0',
    '-0',
    '012',
    '-',
    '1.',
    '.5',
    '1e',
    '+1',
    '0x1f',
    '1E+2',
    '1e-2',
    '1.5e-3',
    '00',
    '-01',
    '1e5',
    '2.0',
    'NaN',
    '1.2.3',
    '1ee2',
    '7 ',
    ' 7',
    '1_0',
  ];
  const lines: string[] = [];
  for (let i = 0; i < 5000; i++) {
    const n = rnd() < 0.5 ? '12' : spellings[Math.floor(rnd() * spellings.length)]!;
    lines.push(JSON.stringify({ ...BASE, event_id: `evt_${i}` }).replace('{', `{"amount":${n},`));
  }
  const { general, fast, hits } = blocks(lines.join('\n'));
  assertSameBlocks(general, fast, lines);
  assert.ok(hits > 2000, `the fast path mapped ${hits} lines`);
});

test('an odd byte at every position of a 32-bit word, in every value the fast path reads: the same block', () => {
  // Strings are scanned and checked four bytes a step (stringEnd, plainText): whatever the offset at which a
  // quote, an escape (valid or not), a control byte, a space or a multi-byte character falls, the verdict is the
  // general path's.
  const odd = [
    '\\"',
    '\\\\',
    '\\u0041',
    '\\n',
    '\\x',
    '\\u12g4',
    '\t',
    '\u0001',
    ' ',
    '  ',
    'ç',
    '\u00a0',
    '日',
    '😀',
    '\u007f',
    '~',
  ];
  const lines: string[] = [];
  const base = JSON.stringify(BASE);
  for (const c of odd) {
    for (let k = 0; k < 9; k++) {
      const pad = 'abcdefghi'.slice(0, k);
      const put = (field: string, value: string) => {
        // the value as JSON text (odd holds JSON escapes as they are written)
        lines.push(base.replace(new RegExp(`"${field}":"[^"]*"`), `"${field}":"${value}"`));
        lines.push(base); // a plain line after each, so the template stays learned
      };
      put('name', `${pad}${c}yz`);
      put('source', `${pad}${c}`);
      put('event_id', `${c}${pad}`);
      put('type', `${pad}${c}${pad}`);
      put('email', `${pad}${c}x@example.com`);
      put('created_at', `2026-10-01T00:00:01.000Z${pad}${c}`.slice(-24));
      put('utm', `${pad}${c}`); // a value no field reads: only the scan vouches for it
    }
  }
  const { general, fast, hits } = blocks(lines.join('\n'));
  assertSameBlocks(general, fast, lines);
  assert.ok(hits > lines.length / 2, `the fast path mapped ${hits} of ${lines.length} lines`);
});

test('lines are matched from their first byte on: a value or a line that runs on past a line end is not joined with the next', () => {
  // The fast path matches a line against a template's literal bytes before looking for the line's end: whatever
  // follows it must not be read as part of it. Each case follows plain lines, which teach the template.
  const base = JSON.stringify(BASE);
  const withArray = JSON.stringify({ ...BASE, tags: [1, 2] });
  const cases: string[][] = [
    [withArray, withArray, withArray.slice(0, withArray.indexOf('[1,2]') + 3), '2]}', withArray], // an array cut by a line end
    [
      base.replace('"João Pereira"', '"João'),
      'Pereira"' + base.slice(base.indexOf('"João Pereira"') + '"João Pereira"'.length),
    ], // a string cut
    [base + ' ', base + 'x', base + '}', base.slice(0, -1)], // what follows the last literal
    [base + '\r', base + '\r\r', base + '\r \r', base], // CRs before the line end
  ];
  for (const lines of cases) {
    const text = [base, base, ...lines, base].join('\n');
    for (const t of [text, text + '\r', text.replace(/\n/g, '\r\n')]) {
      const { general, fast, hits } = blocks(t);
      assertSameBlocks(general, fast, t.split('\n'));
      assert.ok(hits >= 2, `the fast path mapped ${hits} lines`);
    }
  }
});

test('emails at the limits of RFC 5321 (64 before the @, 254 in all): the fast path maps or declines as the general path decides', () => {
  const lines: string[] = [];
  for (const local of [63, 64, 65])
    for (const total of [253, 254, 255]) {
      // Labels of 63 characters at most (RFC 1035), so that only the lengths tell valid from invalid.
      const rest = total - local - 1 - 4;
      const domain = 'd'.repeat(63) + '.' + 'd'.repeat(63) + '.' + 'd'.repeat(rest - 128) + '.com';
      for (let i = 0; i < 30; i++)
        lines.push(
          JSON.stringify({
            ...BASE,
            event_id: `e${local}-${total}-${i}`,
            data: { ...BASE.data, email: 'a'.repeat(local) + '@' + domain },
          }),
        );
    }
  const { general, fast } = blocks(lines.join('\n'));
  assertSameBlocks(general, fast, lines);
});

// What normalizeEmail accepts and how it writes it: the fast path writes an address only where it is sure of both (a
// plain ASCII dot-atom, LDH labels, no xn--), and leaves the rest (NFC, IDNA, every refusal) to the general path.
test('every email, valid or not by RFC 5321/5322, in its canonical form or not: the same block on both paths', () => {
  const lines: string[] = [];
  for (const email of EMAILS)
    for (const form of [email, email.toUpperCase(), email.normalize('NFD')])
      lines.push(JSON.stringify({ ...BASE, event_id: `e${lines.length}`, data: { ...BASE.data, email: form } }));
  const { general, fast, hits } = blocks(lines.join('\n'));
  assertSameBlocks(general, fast, lines);
  // Taken by the fast path: among others, the plain ones at the limits of the rule.
  const plain = [
    "o'brien+tag!#$%&*/=?^_`{|}~-@x.com",
    'a@1x.co',
    'a@' + 'd'.repeat(63) + '.com',
    'a@x.' + 'c'.repeat(63),
  ];
  // Ten lines of one shape (the general path maps the first, which the fast path learns the shape from), the last
  // five with the address: taken, when the fast path maps as many lines as of ten with the usual one.
  const ten = (e: string) =>
    Array.from({ length: 10 }, (_, i) =>
      JSON.stringify({ ...BASE, event_id: `t${i}`, data: { ...BASE.data, email: i < 5 ? BASE.data.email : e } }),
    ).join('\n');
  const usual = blocks(ten(BASE.data.email)).hits;
  const taken = (e: string) => blocks(ten(e)).hits === usual;
  for (const e of plain) assert.ok(taken(e), `the fast path writes ${e}`);
  for (const e of ['a..b@x.com', 'a@x..com', '.a@x.com', 'a.@x.com', 'a@-x.com', 'a@x-.com', 'a@ab--cd.com'])
    assert.ok(!taken(e), `the fast path leaves ${e} to the general path`);
  assert.ok(hits > 20, `the fast path mapped ${hits} lines`);
});
