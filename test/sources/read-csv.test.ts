import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import iconv from 'iconv-lite';
import { fakeStdin, fixture, readAll, records, rejects, scratch } from './helpers.js';

describe('CSV', () => {
  it('reads the HubSpot export: BOM stripped, quoted comma, doubled quotes, embedded newline, start lines', async () => {
    const { items } = await readAll([fixture('hubspot-contacts-export.csv')]);
    assert.equal(rejects(items).length, 0);
    const recs = records(items);
    assert.equal(recs.length, 12);
    assert.deepEqual(Object.keys(recs[0]?.fields ?? {}).slice(0, 4), ['Record ID', 'First Name', 'Last Name', 'Email']);
    assert.equal(recs[1]?.fields['Company Name'], 'Silva, Ribeiro & Cia');
    assert.equal(recs[2]?.fields['Street Address'], 'Rua Augusta, 1500\nConjunto 42');
    assert.equal(recs[4]?.fields['Company Name'], 'Nogueira "Premium" Cosméticos');
    // the row with the embedded newline starts on line 4 and ends on 5, so the next one starts on 6
    assert.deepEqual(
      recs.map((r) => r.line),
      [2, 3, 4, 6, 7, 8, 9, 10, 11, 12, 13, 14],
    );
  });

  it('reads the Portuguese export: Windows-1252 detected, `;` sniffed, CRLF, values kept as written', async () => {
    let seen: unknown;
    const { items } = await readAll([fixture('crm-export-pt.csv')], { onInput: (i) => (seen = i) });
    assert.deepEqual(seen, {
      source: fixture('crm-export-pt.csv'),
      path: fixture('crm-export-pt.csv'),
      format: 'csv',
      gzip: false,
      encoding: 'windows-1252',
      delimiter: ';',
    });
    const recs = records(items);
    assert.equal(recs.length, 11);
    assert.deepEqual(Object.keys(recs[0]?.fields ?? {}), [
      'Nome',
      'E-mail',
      'Telefone',
      'Empresa',
      'Origem',
      'Data de criação',
    ]);
    assert.equal(recs[0]?.fields['Nome'], 'João da Silva');
    assert.equal(recs[0]?.fields['Data de criação'], '01/10/2026 09:12'); // no trailing \r
    assert.equal(recs[1]?.fields['Telefone'], '011 98765-4322'); // leading zero kept
    assert.equal(recs[1]?.fields['Empresa'], 'Café São Jorge Ltda – ME'); // en dash: Windows-1252, not Latin-1
    assert.equal(recs[10]?.fields['Empresa'], 'Lemos “Premium” Carnes');
    assert.deepEqual(
      recs.map((r) => r.line),
      [2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12],
    );
  });

  it('reads TSV (by extension) and pipe-delimited CSV (sniffed)', async () => {
    const tsv = records((await readAll([fixture('leads.tsv')])).items);
    assert.equal(tsv.length, 6);
    assert.equal(tsv[1]?.fields['company'], 'Costa, Costa e Filhos');
    assert.equal(tsv[1]?.fields['phone'], '011 96001-4002');
    const pipe = records((await readAll([fixture('pipe-delimited.csv')])).items);
    assert.equal(pipe.length, 6);
    assert.equal(pipe[2]?.fields['empresa'], 'Kalil, Kalil & Associados');
    assert.equal(pipe[0]?.fields['id'], '1001');
  });

  it('rejects a row with the wrong column count, and gives up a row whose quote never closes, reading the rows after it', async () => {
    const { items } = await readAll([fixture('broken-export.csv'), fixture('leads.tsv')]);
    const broken = items.filter((i) => i.source === fixture('broken-export.csv'));
    assert.deepEqual(
      broken.map((i) => [i.kind, i.line]),
      [
        ['record', 2],
        ['record', 3],
        ['reject', 4],
        ['record', 5],
        ['record', 6],
        ['reject', 7],
        ['record', 8],
        ['record', 9],
      ],
    );
    const [count, quote] = rejects(broken);
    assert.equal(count?.reason, 'expected 7 columns, found 5');
    assert.equal(
      quote?.reason,
      'stray quote? a quote opened at line 7 is never closed: row 7 is left out, and reading goes on at line 8',
    );
    // the next input is still read
    assert.equal(records(items.filter((i) => i.source === fixture('leads.tsv'))).length, 6);
  });

  it('normalizes headers: trimmed, empty → column_N, duplicates → name_2; values stay strings exactly', async () => {
    const csv = ' Email , Phone,,phone,Email\nana@example.com,+55 11 91234-5678,x,0011,007\n';
    const { items } = await readAll(['-'], { stdin: fakeStdin(csv) });
    assert.deepEqual(records(items)[0]?.fields, {
      Email: 'ana@example.com',
      Phone: '+55 11 91234-5678',
      column_3: 'x',
      phone_2: '0011',
      Email_2: '007',
    });
  });

  it('skips blank lines and rows of bare delimiters; accepts trailing empty cells beyond the header', async () => {
    const csv = 'a;b;c\r\n\r\n1;2;3\r\n;;\r\n   \r\n4;5;6;;\r\n7;8\r\n';
    const { items } = await readAll(['-'], { stdin: fakeStdin(csv) });
    assert.deepEqual(
      items.map((i) => (i.kind === 'record' ? [i.line, i.fields] : [i.line, i.reason])),
      [
        [3, { a: '1', b: '2', c: '3' }],
        [6, { a: '4', b: '5', c: '6' }],
        [7, 'expected 3 columns, found 2'],
      ],
    );
  });

  it('counts lines right with CRLF inside quoted fields', async () => {
    const csv = 'name,notes\r\n"A","line1\r\nline2\r\nline3"\r\n"B","x"\r\n';
    const { items } = await readAll(['-'], { stdin: fakeStdin(csv), format: 'csv' });
    assert.deepEqual(
      items.map((i) => i.line),
      [2, 5],
    );
    assert.equal(records(items)[0]?.fields['notes'], 'line1\nline2\nline3');
  });

  it('honours --encoding and --delimiter over detection', async () => {
    const s = scratch();
    // valid UTF-8 bytes, but the user says Latin-1: decode as told
    const file = s.write('forced.csv', Buffer.from('nome|cidade\nJoão|São Paulo\n', 'utf8'));
    const forced = records((await readAll([file], { encoding: 'latin1', delimiter: ',' })).items);
    assert.deepEqual(Object.keys(forced[0]?.fields ?? {}), [iconv.decode(Buffer.from('nome|cidade'), 'latin1')]);
    assert.equal(forced[0]?.fields['nome|cidade'], iconv.decode(Buffer.from('João|São Paulo'), 'latin1'));
    const tab = records(
      (await readAll(['-'], { stdin: fakeStdin('a\tb\n1\t2\n'), delimiter: 'tab', format: 'csv' })).items,
    );
    assert.deepEqual(tab[0]?.fields, { a: '1', b: '2' });
  });

  it('applies --select to a CSV column holding JSON (a webhook log exported as CSV)', async () => {
    const csv = 'received_at,body\n2026-10-01,"{""event_id"":""evt_c1""}"\n2026-10-02,\n';
    const { items } = await readAll(['-'], { stdin: fakeStdin(csv), select: 'body' });
    assert.deepEqual(
      items.map((i) => (i.kind === 'record' ? i.fields : i.reason)),
      [{ event_id: 'evt_c1' }, '--select body: field is empty'],
    );
  });
});
