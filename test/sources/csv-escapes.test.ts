// A CSV whose cells are written with backslash escapes (a PHP export's json_encode per cell: \" inside quotes, \/,
// \u00e1, a bare null), which RFC 4180 reads as more columns than the header: told from its first rows, read as
// written, said in the input's note; an RFC 4180 file with backslashes in it is still read as RFC 4180.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { detectBackslashEscapes, splitEscapedRow } from '../../src/sources/csv-escapes.js';
import type { InputRead } from '../../src/sources/types.js';
import { chunked, fakeStdin, readAll, records, rejects, scratch } from './helpers.js';

// PHP's json_encode with its default flags.
const phpJson = (v: string | number | null): string =>
  v === null
    ? 'null'
    : typeof v === 'number'
      ? String(v)
      : JSON.stringify(v)
          .replace(/\//g, '\\/')
          .replace(/[\u007f-\uffff]/g, (c) => '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0'));
const phpCsv = (rows: Array<Array<string | number | null>>, eol = '\n'): string =>
  rows.map((r) => r.map(phpJson).join(',')).join(eol) + eol;

const ROWS: Array<Array<string | number | null>> = [
  ['id', 'nome', 'email', 'telefone', 'dados'],
  [17, 'João Batista', 'joao@example.com.br', '+55 11 99999-9001', JSON.stringify({ utm: 'lp/pro' })],
  [18, 'Letícia Prado', 'leticia@example.com.br', null, JSON.stringify({ plano: 'básico' })],
  [19, 'Marcos "Marquinhos" Souza', 'marcos@example.com.br', '+55 11 99999-9003', 'linha 1\nlinha 2'],
];

test('a row read with backslash escapes: quotes, slashes, \\u escapes and line breaks decoded, a bare null empty', () => {
  assert.deepEqual(splitEscapedRow('17,"Jo\\u00e3o","a\\/b",null,"say \\"hi\\"",', ','), {
    cells: ['17', 'João', 'a/b', '', 'say "hi"', ''],
    escaped: true,
  });
  assert.deepEqual(splitEscapedRow('"a";"b";\\N', ';'), { cells: ['a', 'b', ''], escaped: false });
  assert.equal(splitEscapedRow('"open', ','), undefined);
  assert.equal(splitEscapedRow('"a" b,c', ','), undefined);
  assert.equal(splitEscapedRow('a"b,c', ','), undefined);
});

test('escapes are told from the first rows; RFC 4180 with backslashes in it, or doubled quotes, is not', () => {
  assert.equal(detectBackslashEscapes(phpCsv(ROWS), ',', true), true);
  assert.equal(detectBackslashEscapes(phpCsv(ROWS, '\r\n'), ',', true), true);
  // No escape anywhere: the same either way, left to RFC 4180.
  assert.equal(detectBackslashEscapes('"a","b"\n"1","2"\n', ',', true), false);
  // A Windows path ending in a backslash, and RFC 4180's doubled quotes.
  assert.equal(detectBackslashEscapes('name,path\n"Ana","C:\\temp\\"\n"Bia","D:\\x"\n', ',', true), false);
  assert.equal(detectBackslashEscapes('name,note\n"Ana","say ""hi"" \\o/"\n', ',', true), false);
  // Rows that do not read so: RFC 4180.
  assert.equal(detectBackslashEscapes('a,b\n"x\\"y",1\n"p" q,2\n', ',', true), false);
  // A header alone says nothing.
  assert.equal(detectBackslashEscapes('"a\\/b","c"\n', ',', true), false);
});

test('a PHP export of JSON literals is read whole, row by row, its lines kept, and the input says how', async () => {
  const { write } = scratch();
  const path = write('leads.csv', phpCsv(ROWS));
  const reads: InputRead[] = [];
  const { items } = await readAll([path], { onInputRead: (r) => reads.push(r) });
  assert.deepEqual(rejects(items), []);
  const recs = records(items);
  assert.deepEqual(
    recs.map((r) => [r.line, r.fields.nome, r.fields.telefone]),
    [
      [2, 'João Batista', '+55 11 99999-9001'],
      [3, 'Letícia Prado', ''],
      [4, 'Marcos "Marquinhos" Souza', '+55 11 99999-9003'],
    ],
  );
  assert.equal(recs[0]!.fields.dados, '{"utm":"lp/pro"}');
  assert.equal(recs[2]!.fields.dados, 'linha 1\nlinha 2');
  assert.equal(reads[0]!.escapes, 'backslash');
  assert.match(reads[0]!.notes.join('\n'), /written with backslash escapes/);
});

test('read in small chunks from stdin, with CRLF; a row not so written is read as RFC 4180, or rejected', async () => {
  const more = Array.from({ length: 20 }, (_, i) => [30 + i, `Pessoa ${i}`, `p${i}@example.com`, null, '{}']);
  const text =
    phpCsv([...ROWS.slice(0, 3), ...more], '\r\n') +
    'plain,"RFC ""row""",x@example.com,1,2\r\n"broken\r\n' +
    phpCsv([ROWS[3]!]);
  const { items } = await readAll(['-'], { stdin: fakeStdin(...chunked(Buffer.from(text), 7)), format: 'csv' });
  assert.deepEqual(
    items.slice(-3).map((i) => [i.kind, i.line]),
    [
      ['record', 24],
      ['reject', 25],
      ['record', 26],
    ],
  );
  assert.equal(records(items).length, 24);
  assert.equal(records(items).at(-2)!.fields.nome, 'RFC "row"');
  assert.equal(records(items).at(-1)!.fields.nome, 'Marcos "Marquinhos" Souza');
  assert.equal(records(items)[0]!.fields.nome, 'João Batista');
});
