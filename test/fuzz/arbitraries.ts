// Generated inputs for the differential suites: records as exports and webhook logs hold them (and as they go
// wrong: nulls, booleans, numbers, objects and arrays where text was, odd strings, shapes that change midway, key
// orders, escapes, broken lines), written as JSONL, a JSON array or CSV, and a ledger that already holds some of
// their keys and people.
import fc from 'fast-check';

// Few ids and people, so that retries, conflicts, known leads and ledger hits happen often.
const IDS = ['e1', 'e2', 'e3', 'e4', 'e5', 'e6', 'evt_01JA0007', 'E1'];
const EMAILS = [
  'ana@example.com',
  'Ana@Example.COM',
  'bia@example.com.br',
  'caio@exemplo.com.br',
  ' dora@example.com ',
  'mailto:edu@example.com',
  'joão@example.com',
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
  '+5511987654321',
  '+55 11 98765-4321',
  '(11) 98765-4321',
  '+1 202 555 0143',
  '+55 21 99876-5432',
  '+44 20 7946 0958',
  // As spreadsheets leave them: kept as text by an apostrophe, or turned into a number in scientific notation.
  "'+55 11 98765-4321",
  "'(11) 98765-4321",
  '5,5119E+12',
  '5.51199E+12',
  '1E+10',
  // Unreadable in any country: left out, or sent as written.
  '12345',
  '+55 11 9300',
];
const BAD = [
  '',
  ' ',
  'x@',
  '@x.com',
  'ana@@x.com',
  '12',
  '+999 1',
  'NaN',
  '\u0000',
  'a\tb',
  'é',
  '\ud800',
  '日本',
  'line\nbreak',
  '"quoted"',
  'a,b',
  'a;b',
  'back\\slash',
];
const NAMES = ['Ana Lima', 'ana  lima', ' Ana', 'José Conceição', 'Ωmega', "O'Brien", 'Lima, Ana', '"Ana"', 'x'];
const TIMES = [
  '2026-10-01T00:00:01.000Z',
  '2026-10-01T00:00:01Z',
  '1759276801',
  '01/10/2026 10:00',
  '2026-02-30T00:00:00.000Z',
  'soon',
  // Dates whose day and month show their order (or contradict it), impossible ones, and times without a zone.
  '25/12/2026 10:00',
  '12/25/2026',
  '13/13/2026',
  '31/04/2026',
  '2026-10-01 10:00:00',
  '2026-10-01T25:00:00',
  '2026-10-01T10:00:00-03:00',
];
const TYPES = ['lead.created', 'lead.updated', 'contact.created'];

/** A value where a field's text usually is: mostly text, sometimes anything JSON can hold (empty and null most). */
const odd = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom<unknown>('', null) },
  { weight: 2, arbitrary: fc.constantFrom<unknown>(true, false, 0, 5511987654321, 5.5, {}, [], ['x'], { v: 'x' }) },
  { weight: 2, arbitrary: fc.constantFrom(...BAD) },
  { weight: 1, arbitrary: fc.string({ maxLength: 6 }) },
);
// A field's value: from its pool of what exports hold (clean values the fast paths map, and the odd spellings
// they leave to the general path), empty or null at times, and in a dirty record anything at all.
const text = (clean: readonly string[], spelled: readonly string[] = []) => ({
  clean: fc.oneof(
    { weight: 8, arbitrary: fc.constantFrom(...clean) },
    { weight: 2, arbitrary: fc.constantFrom<unknown>('', null) },
    ...(spelled.length ? [{ weight: 2, arbitrary: fc.constantFrom(...spelled) }] : []),
  ),
  dirty: fc.oneof({ weight: 1, arbitrary: fc.constantFrom(...clean, ...spelled) }, { weight: 1, arbitrary: odd }),
});

/** The fields a record may have, by the names exports give them (every one optional). */
const FIELDS = {
  event_id: text(IDS),
  id: text(IDS),
  email: text(['ana@example.com', 'bia@example.com.br', 'caio@exemplo.com.br'], EMAILS),
  'E-mail': text(['ana@example.com', 'dora@example.com'], EMAILS),
  mail: text(['bia@example.com.br'], EMAILS),
  phone: text(['+5511987654321', '+55 21 99876-5432', '+55 11 98765-4321'], PHONES),
  telefone: text(['+5521998765432'], PHONES),
  // Localized columns with a label or an owner (column-roles.ts): plans of several columns, tried in order.
  Celular: text(['+5511912345678', '+55 11 91234-5678'], PHONES),
  'Pessoa - E-mail - Trabalho': text(['ana@example.com', 'edu@example.com'], EMAILS),
  'Proprietário - E-mail': text(['owner@example.com']),
  name: text(['Ana Lima', 'José Conceição', 'Ωmega'], NAMES),
  nome: text(['Bia Souza'], NAMES),
  first_name: text(['Ana', 'Bia']),
  last_name: text(['Lima', 'Souza']),
  company: text(['Acme'], ['Acme  Inc', 'Açme']),
  utm_source: text(['facebook-ads', 'site']),
  created_at: text(['2026-10-01T00:00:01.000Z', '2026-11-02T10:30:00.000Z'], TIMES),
  type: text(TYPES),
  notes: text(['x'], ['', 'a,b', 'two\nlines']),
};
type FieldName = keyof typeof FIELDS;
const NAMES_OF_FIELDS = Object.keys(FIELDS) as FieldName[];
// First and last names make the general path join them (the fast paths leave such shapes to it): less common.
const COMMON_FIELDS = NAMES_OF_FIELDS.filter((n) => n !== 'first_name' && n !== 'last_name');

/** The shape of records: which fields, in which order, and whether (and which of them) sit inside a wrapper. */
interface RecordShape {
  names: FieldName[];
  wrapper: string | undefined;
  top: FieldName[];
}

// Most events have an id (the fast paths serve only those), and most shapes put it first.
const shape: fc.Arbitrary<RecordShape> = fc
  .record({
    names: fc.oneof(
      { weight: 5, arbitrary: fc.shuffledSubarray(COMMON_FIELDS, { minLength: 1, maxLength: 7 }) },
      { weight: 1, arbitrary: fc.shuffledSubarray(NAMES_OF_FIELDS, { minLength: 1, maxLength: 7 }) },
    ),
    withId: fc.constantFrom(true, true, true, true, false),
    wrapper: fc.constantFrom<string | undefined>(undefined, undefined, 'data', 'payload', 'properties'),
    top: fc.array(fc.constantFrom<FieldName>('type', 'created_at', 'email'), { maxLength: 2 }),
  })
  .map(({ names, withId, wrapper, top }) => ({
    names: withId && !names.includes('event_id') ? (['event_id', ...names] as FieldName[]) : names,
    wrapper,
    // The envelope's id stays at the top, as webhooks send it (a wrapped id is the lead's, not the event's).
    top: withId ? (['event_id', ...top] as FieldName[]) : top,
  }));

/** A record of a shape, with generated values (a dirty one's may be anything). */
const recordOf = (sh: RecordShape, dirty = false): fc.Arbitrary<Record<string, unknown>> =>
  fc
    .tuple(...sh.names.map((n) => (dirty ? FIELDS[n].dirty : FIELDS[n].clean) as fc.Arbitrary<unknown>))
    .map((values) => {
      const inner: Record<string, unknown> = {};
      sh.names.forEach((n, i) => (inner[n] = values[i]));
      if (!sh.wrapper) return inner;
      const outer: Record<string, unknown> = {};
      for (const t of sh.top) if (t in inner) outer[t] = inner[t];
      for (const t of sh.top) delete inner[t];
      outer[sh.wrapper] = inner;
      return outer;
    });

/** A record of any shape. */
export const record: fc.Arbitrary<Record<string, unknown>> = fc
  .tuple(shape, fc.boolean())
  .chain(([sh, dirty]) => recordOf(sh, dirty));

/**
 * Records as exports hold them: runs of one shape (the fast paths learn a shape and keep it while it lasts), a few
 * dirty ones among them, and a shape that changes now and then.
 */
const records = (max: number): fc.Arbitrary<Array<Record<string, unknown>>> =>
  fc
    .array(
      fc.tuple(shape, fc.integer({ min: 1, max: 20 })).chain(([sh, n]) =>
        fc.array(fc.oneof({ weight: 6, arbitrary: recordOf(sh) }, { weight: 1, arbitrary: recordOf(sh, true) }), {
          minLength: n,
          maxLength: n,
        }),
      ),
      { minLength: 1, maxLength: 4 },
    )
    .map((runs) => runs.flat().slice(0, max));

/** How a line of JSONL may be written: as JSON.stringify writes it, or spaced, escaped, broken. */
const lineStyle = fc.constantFrom(
  'plain',
  'plain',
  'plain',
  'plain',
  'plain',
  'spaced',
  'escaped',
  'crlf',
  'broken',
  'blank-before',
);

function writeLine(r: Record<string, unknown>, style: string): string {
  const s = JSON.stringify(r);
  switch (style) {
    case 'spaced':
      return JSON.stringify(r, null, 1).replace(/\n/g, '');
    case 'escaped':
      // JSON escapes for characters JSON.stringify writes raw: the same record, other bytes.
      return s.replace(/[é@a]/g, (c) => '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0'));
    case 'crlf':
      return s + '\r';
    case 'broken':
      return s.slice(0, Math.max(1, s.length - 3));
    case 'blank-before':
      return '\n' + s;
    default:
      return s;
  }
}

// Retried deliveries: a record again as it was, or again with one field changed (a conflict), a few rows later.
const withRetries = (
  rows: Array<[Record<string, unknown>, string]>,
  picks: number[],
): Array<[Record<string, unknown>, string]> => {
  const out = [...rows];
  picks.forEach((k, i) => {
    if (out.length === 0) return;
    const [r, style] = out[k % out.length]!;
    const copy = k % 3 === 0 ? { ...r, name: `changed ${i}` } : r;
    out.splice(Math.min(out.length, (k % out.length) + 1 + (i % 4)), 0, [copy, style]);
  });
  return out;
};

/** A JSONL input: its records (some of them delivered again) and the bytes they are written as. */
export const jsonlInput = fc
  .tuple(
    records(60).chain((rs) => fc.tuple(...rs.map((r) => fc.tuple(fc.constant(r), lineStyle)))),
    fc.array(fc.nat(), { maxLength: 12 }),
    fc.boolean(),
    fc.boolean(),
  )
  .map(([rows, retries, bom, trailingNewline]) => {
    const text =
      withRetries(rows, retries)
        .map(([r, style]) => writeLine(r, style))
        .join('\n') + (trailingNewline ? '\n' : '');
    return Buffer.from((bom ? '\ufeff' : '') + text, 'utf8');
  });

/** A JSON document: an array of the records (pretty-printed or not), sometimes broken. */
export const jsonInput = fc
  .tuple(
    fc.array(record, { minLength: 1, maxLength: 40 }),
    fc.constantFrom(0, 1, 2),
    fc.constantFrom('whole', 'whole', 'cut', 'bad-element'),
  )
  .map(([rows, indent, shape]) => {
    const parts = rows.map((r) => JSON.stringify(r, null, indent));
    if (shape === 'bad-element' && parts.length > 1) parts[1] = parts[1]!.replace(/:/, ' ');
    let text = '[' + parts.join(',\n') + ']\n';
    if (shape === 'cut') text = text.slice(0, Math.floor(text.length * 0.7));
    return Buffer.from(text, 'utf8');
  });

/** A CSV export: a header of some field names, rows of text values, quoting as spreadsheets (and people) do. */
export const csvInput = fc
  .tuple(
    fc.shuffledSubarray(['event_id', 'email', 'E-mail', 'phone', 'name', 'nome', 'company', 'created_at', 'notes'], {
      minLength: 2,
      maxLength: 6,
    }),
    fc.constantFrom(',', ';', '\t'),
    fc.constantFrom('\n', '\r\n'),
    fc.constantFrom('utf-8', 'utf-8', 'windows-1252', 'mixed'),
    fc.integer({ min: 1, max: 80 }),
    fc.infiniteStream(
      fc.tuple(
        fc.constantFrom('plain', 'plain', 'plain', 'quoted', 'multiline', 'doubled', 'stray', 'empty', 'short-row'),
        fc.nat(),
      ),
    ),
  )
  .map(([header, d, eol, encoding, n, styles]) => {
    const it = styles[Symbol.iterator]();
    const pick = <T>(xs: readonly T[], k: number): T => xs[k % xs.length]!;
    const pools: Record<string, readonly string[]> = {
      event_id: IDS,
      email: EMAILS,
      'E-mail': EMAILS,
      phone: PHONES,
      name: NAMES,
      nome: NAMES,
      company: ['Acme', 'Açme'],
      created_at: TIMES,
      notes: ['x', 'São Paulo'],
    };
    const cell = (col: string): string => {
      const [style, k] = it.next().value as [string, number];
      const v = pick(pools[col] ?? ['x'], k);
      switch (style) {
        case 'quoted':
          return `"${v}${d}x"`;
        case 'multiline':
          return `"${v}\nmais"`;
        case 'doubled':
          return `"say ""${v}"""`;
        case 'stray':
          return k % 2 ? `"${v}` : `5" ${v}`;
        case 'empty':
          return '';
        default:
          return v.includes(d) || v.includes('"') || v.includes('\n') ? `"${v.replace(/"/g, '""')}"` : v;
      }
    };
    const rows = [header.join(d)];
    for (let i = 0; i < n; i++) {
      const cells = header.map(cell);
      const [style] = it.next().value as [string, number];
      rows.push((style === 'short-row' ? cells.slice(0, -1) : cells).join(d));
    }
    const text = rows.join(eol) + eol;
    if (encoding === 'utf-8') return Buffer.from(text, 'utf8');
    if (encoding === 'windows-1252') return Buffer.from(text, 'latin1');
    // UTF-8 with some rows in Windows-1252 (a file joined from two exports).
    return Buffer.concat(rows.map((r, i) => Buffer.from(r + eol, i % 3 === 2 ? 'latin1' : 'utf8')));
  });

/** What the ledger holds for a key the input may have: a status, and whether its stored lead is the input's. */
export interface LedgerChoice {
  key: string;
  status: 'sent' | 'pending' | 'in_doubt' | 'failed-permanent' | 'failed-retryable' | 'imported' | 'tombstone';
  hash: 'same' | 'other' | 'none';
  person: string | null;
  runId: number | null;
}

/** A ledger that already holds some of the ids (and people) the inputs use. */
export const ledgerChoices: fc.Arbitrary<LedgerChoice[]> = fc.uniqueArray(
  fc.record({
    key: fc.constantFrom(...IDS, 'c:other', 'person:x'),
    status: fc.constantFrom(
      'sent',
      'sent',
      'pending',
      'in_doubt',
      'failed-permanent',
      'failed-retryable',
      'imported',
      'tombstone',
    ),
    hash: fc.constantFrom('same', 'other', 'none'),
    person: fc.constantFrom(null, 'ana@example.com', 'bia@example.com.br', '+5511987654321', 'zed@example.com'),
    runId: fc.constantFrom(null, 1, 2),
  }) as fc.Arbitrary<LedgerChoice>,
  { maxLength: 6, selector: (c) => c.key },
);

/** One run's inputs, of any format, read one after another, and the ledger they meet. */
export const fuzzCase = (maxInputs: number) =>
  fc.record({
    inputs: fc.array(
      fc.oneof(
        jsonlInput.map((bytes) => ({ format: 'jsonl' as const, bytes })),
        jsonInput.map((bytes) => ({ format: 'json' as const, bytes })),
        csvInput.map((bytes) => ({ format: 'csv' as const, bytes })),
      ),
      { minLength: 1, maxLength: maxInputs },
    ),
    ledger: ledgerChoices,
    // The phone rules: national numbers read in no country or one, an unreadable phone left out or sent as written.
    map: fc.record(
      {
        defaultCountry: fc.constantFrom('BR', 'US'),
        invalidPhones: fc.constantFrom<'omit' | 'as-written'>('omit', 'as-written'),
      },
      { requiredKeys: [] },
    ),
  });
