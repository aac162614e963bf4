// The fast CSV path must write exactly the block the general path (the well-formed reader, then the mapper) writes,
// row for row and byte for byte: it may only decline rows, never map one differently, and the rows after it stops
// (at a quote) must keep their lines.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BlockEncoder, INTS, I_LINE, STRS, type MappedBlock } from '../../src/engine/block.js';
import { FastCsv, mapCsvBlock } from '../../src/engine/fast-csv.js';
import { createMapper, mapItem } from '../../src/mapping/map-record.js';
import type { Mapped } from '../../src/mapping/types.js';
import type { ReaderContext } from '../../src/sources/reader-context.js';
import type { RawItem } from '../../src/sources/types.js';
import { seededRandom } from '../../src/sandbox/faults.js';

const HEADER = 'event_id,type,created_at,email,name,phone,source,notes\n';

async function encode(
  header: Buffer,
  body: Buffer,
  fast: boolean,
  last = false,
  delimiter = ',',
  hashLater = true,
): Promise<{ block: MappedBlock; hits: number }> {
  const mapper = createMapper({ config: {} }, { hashLater });
  const toMapped = (item: RawItem): Mapped => mapItem(mapper, item);
  const ctx: ReaderContext = { source: '', selector: null, progress: { line: 0 }, lineOffset: 1000, batchSize: 64 };
  const enc = new BlockEncoder(16);
  const f = fast ? new FastCsv(mapper) : undefined;
  await mapCsvBlock(header, body, last, { encoding: 'utf-8', delimiter }, ctx, enc, toMapped, f);
  return { block: enc.finish(), hits: f?.hits ?? 0 };
}

async function assertSame(
  header: string | Buffer,
  body: string | Buffer,
  minHits: number,
  last = false,
  delimiter = ',',
  hashLater = true,
): Promise<void> {
  const h = Buffer.isBuffer(header) ? header : Buffer.from(header);
  const b = Buffer.isBuffer(body) ? body : Buffer.from(body);
  const general = (await encode(h, b, false, last, delimiter, hashLater)).block;
  const { block: fast, hits } = await encode(h, b, true, last, delimiter, hashLater);
  assert.equal(fast.n, general.n, 'records');
  const rows = b.toString().split('\n');
  for (let r = 0; r < general.n; r++) {
    const line = general.ints[r * INTS + I_LINE]!;
    const s = (x: MappedBlock) => x.bytes.toString('utf8', x.offs[r * STRS], x.offs[r * STRS + STRS]);
    const what = `record ${r} (line ${line}: ${rows[line - 1002]}) ${s(general)} / ${s(fast)}`;
    assert.equal(
      fast.ints.subarray(r * INTS, r * INTS + INTS).join(),
      general.ints.subarray(r * INTS, r * INTS + INTS).join(),
      what,
    );
    assert.equal(
      fast.bytes.toString('utf8', fast.offs[r * STRS], fast.offs[r * STRS + STRS]),
      general.bytes.toString('utf8', general.offs[r * STRS], general.offs[r * STRS + STRS]),
      what,
    );
  }
  assert.ok(hits >= minHits, `the fast path mapped ${hits} rows`);
}

const EMAILS = [
  'Ana@Example.com',
  'ana@example',
  'ana lima@x.com',
  ' ana@x.co',
  'ánä@x.com',
  'mailto:a@x.co',
  '',
  'a;b@x.com',
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
  '11 93002-9883',
  '+55 11 9300',
  '',
  '+55 (11) 93002-9883',
  ' +55 11 930029883',
  '+44 20 7946 0958',
];
const TEXT = ['Ana Lima', 'Ana  Lima', ' Ana', 'Ana ', '', 'João', 'nb\u00a0sp', '日本', 'tab\there'];
const TIMES = [
  '2026-10-01T00:00:01.000Z',
  '2026-02-30T00:00:00.000Z',
  '2026-10-01',
  '',
  '01/10/2026 10:00',
  '2026-13-01T00:00:00.000Z',
];

function row(rnd: () => number, i: number): string {
  const pick = <T>(xs: T[]): T => xs[Math.floor(rnd() * xs.length)]!;
  const cells = [
    `evt_${i}`,
    'lead.created',
    '2026-10-01T00:00:01.000Z',
    `p${i}@example.com`,
    'Ana Lima',
    '+55 11 930029883',
    'ads',
    'x',
  ];
  const r = rnd();
  if (r < 0.75) return cells.join(',');
  if (r < 0.8) cells[3] = pick(EMAILS);
  else if (r < 0.84) cells[5] = pick(PHONES);
  else if (r < 0.88) cells[pick([4, 6, 1])] = pick(TEXT);
  else if (r < 0.9) cells[2] = pick(TIMES);
  else if (r < 0.92) cells[0] = pick(['', ' evt', 'évt_1', 'evt 2']);
  else if (r < 0.94)
    return cells.slice(0, 7).join(','); // a column short
  else if (r < 0.95)
    return cells.join(',') + ',,'; // trailing empty cells
  else if (r < 0.96) return cells.join(',') + ',extra';
  else if (r < 0.97) return pick(['', ',,,,,,,', '   ']);
  else if (r < 0.98) return cells.join(',') + '\r';
  else return cells.join(',').replace('ads', 'a\rds'); // a CR inside a row: the rest goes the general way
  return cells.join(',');
}

test('quote-free rows: the fast path writes what the general path writes, on 20,000 rows of variations', async () => {
  const rnd = seededRandom(17);
  const rows: string[] = [];
  for (let i = 0; i < 20_000; i++) rows.push(row(rnd, i));
  // The CR inside a row stops the fast path: keep it near the end so most rows are compared on the fast path.
  const body =
    rows.filter((r) => !/\r./.test(r)).join('\n') + '\n' + 'evt_x,t,,a@b.co,Ana,,s,x\r\nevt_y,t,,c@d.co,Ana,,s,a\rb\n';
  await assertSame('\ufeff' + HEADER, body, 10_000);
});

// A push's workers take each payload hash themselves (hashLater off): hashed from the bytes the fast path wrote, it
// must be the hash the general path takes of the lead's string.
test('with payload hashes taken in the worker: the same rows, hashes and all, on 20,000 rows', async () => {
  const rnd = seededRandom(23);
  const rows: string[] = [];
  for (let i = 0; i < 20_000; i++) rows.push(row(rnd, i));
  await assertSame(HEADER, rows.filter((r) => !/\r./.test(r)).join('\n') + '\n', 10_000, false, ',', false);
});

test('from the first quote on, the rest of the block is read by the general readers, lines and all', async () => {
  const lines = [
    'evt_1,t,,a@x.co,Ana,,s,n',
    'evt_2,t,,b@x.co,Bia,,s,n',
    'evt_3,t,,c@x.co,"Lima, Ana",,s,"multi',
    'line"',
    'evt_4,t,,d@x.co,Duda,,s,n',
    'evt_5,t,,e@x.co,Eva,,s,n',
  ];
  await assertSame(HEADER, lines.join('\n') + '\n', 1);
  // The input's last block: read by csv-parse after the quote, an unclosed quote included.
  await assertSame(HEADER, lines.join('\n') + '\nevt_6,t,,f@x.co,"never closed,,s,n\n', 1, true);
  // A quote that is not RFC 4180 (the well-formed reader refuses it): csv-parse reads the rest, the fast rows stay.
  await assertSame(
    HEADER,
    'evt_0,t,,z@x.co,Zoe,,s,n\nevt_1,t,,a@x.co,Ana,,s,n\nevt_2,t,,b@x.co,5" screen,,s,n\nevt_3,t,,c@x.co,Cy,,s,n\n',
    1,
  );
});

test('other delimiters and headers: semicolons, a tab, header names in Portuguese, blank lines before the header', async () => {
  const rnd = seededRandom(5);
  const rows: string[] = [];
  for (let i = 0; i < 2000; i++) rows.push(row(rnd, i).replaceAll(',', ';'));
  await assertSame(
    '\n\nid_evento;tipo;data;E-mail;Nome;Telefone;origem;obs\r\n',
    rows.filter((r) => !/\r./.test(r)).join('\n'),
    1000,
    false,
    ';',
  );
  const tabbed = rows.slice(0, 500).map((r) => r.replaceAll(';', '\t'));
  await assertSame(
    'event_id\ttype\tcreated_at\temail\tname\tphone\tsource\tnotes\n',
    tabbed.filter((r) => !/\r./.test(r)).join('\n'),
    200,
    false,
    '\t',
  );
});

test('bytes that are not UTF-8 in a row: declined, and read as the general path reads them', async () => {
  const body = Buffer.concat([
    Buffer.from('evt_1,t,,a@x.co,Ana,,s,n\n'),
    Buffer.from('evt_2,t,,b@x.co,'),
    Buffer.from([0xff, 0xc3]),
    Buffer.from(',,s,n\n'),
    Buffer.from('evt_3,t,,c@x.co,Cy,,'),
    Buffer.from([0xe2, 0x82]),
    Buffer.from(',n\n'),
    Buffer.from('evt_4,t,,d@x.co,Duda,,s,n'), // no newline at the end
  ]);
  await assertSame(HEADER, body, 1, true);
});

test('a CR inside a row (not before its LF) stops the fast path there; CRLF does not', async () => {
  await assertSame(
    'event_id,email,name,source\r\n',
    'e1,a@x.co,Ana,ads\r\ne2,b@x.co,Bia,ads\r\ne3,c@x.co,An\ra,ads\r\ne4,d@x.co,Duda,ads\r\n',
    1,
  );
  await assertSame(
    'event_id,email,name,source\n',
    'e1,a@x.co,Ana,ads\ne2,b@x.co,Bia,ads\ne3,c@x.co,An\ra,ads\ne4,d@x.co,Duda,ads\n',
    1,
  );
});

test('two columns that may hold one field (Email, then E-mail): the fast path reads the second where the first is empty, as the mapper does (itself: not declining those rows)', async () => {
  const header = 'event_id,Email,E-mail,Phone\n';
  const rows: string[] = [];
  for (let i = 0; i < 2000; i++) {
    const first = i % 4 === 0 ? '' : `a${i}@example.com`;
    const second = i % 3 === 0 ? '' : `b${i}@example.com`;
    const phone = i % 5 === 0 ? '' : `+5511987${String(100000 + i)}`;
    rows.push(`e${i},${first},${second},${phone}`);
  }
  await assertSame(header, rows.join('\n') + '\n', 1900);
});

test("localized columns, several per field (the person's by label, an owner's never): the fast path writes what the general path writes", async () => {
  const header =
    'Negocio - ID,Persona - Correo electrónico - Trabajo,Persona - Correo electrónico - Casa,Persona - Teléfono - Móvil,Persona - Teléfono - Trabajo,Persona - Nombre,Propietario - Correo electrónico,Organización - Nombre\n';
  const rnd = seededRandom(41);
  const pick = <T>(xs: T[]): T => xs[Math.floor(rnd() * xs.length)]!;
  const rows: string[] = [];
  for (let i = 0; i < 4000; i++) {
    const work = rnd() < 0.7 ? `w${i}@example.com` : pick(['', ...EMAILS]);
    const home = rnd() < 0.5 ? `h${i}@example.org` : '';
    const mobile = rnd() < 0.7 ? `+55 11 9${String(10000000 + i)}` : pick(['', ...PHONES]);
    const office = rnd() < 0.5 ? '+55 11 3456-1001' : '';
    const name = rnd() < 0.9 ? 'Diego Ortega' : pick(TEXT);
    rows.push([`d${i}`, work, home, mobile, office, name, 'owner@example.com', pick(['', 'Ortega SL'])].join(','));
  }
  await assertSame(header, rows.join('\n') + '\n', 2300);
});

test('cells written with backslash escapes: the fast path declines them, and the block reads them as csv-escapes.ts does', async () => {
  const mapper = createMapper({ config: {} }, { hashLater: true });
  const header = Buffer.from('"event_id","email","name"\n');
  const body = Buffer.from('"e1","ana@example.com","Ana \\"Aninha\\" Lima"\n"e2","bia@example.com","Jo\\u00e3o"\n');
  const ctx: ReaderContext = { source: '', selector: null, progress: { line: 0 }, lineOffset: 1, batchSize: 64 };
  const enc = new BlockEncoder(16);
  const fast = new FastCsv(mapper);
  const settings = { encoding: 'utf-8', delimiter: ',', escapes: 'backslash' as const };
  await mapCsvBlock(header, body, false, settings, ctx, enc, (item) => mapItem(mapper, item), fast);
  const block = enc.finish();
  assert.equal(fast.hits, 0);
  assert.equal(block.n, 2);
  const lead = (r: number) => block.bytes.toString('utf8', block.offs[r * STRS + 2], block.offs[r * STRS + 3]);
  assert.match(lead(0) + lead(1), /Ana \\"Aninha\\" Lima/);
  assert.match(lead(0) + lead(1), /João/);
});
