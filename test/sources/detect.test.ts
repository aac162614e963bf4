import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import iconv from 'iconv-lite';
import { normalizeHeaders } from '../../src/sources/csv-headers.js';
import { detectEncoding, normalizeEncoding } from '../../src/sources/detect-encoding.js';
import { formatFromName, sniffFormat } from '../../src/sources/detect-format.js';
import { segmentToRegExp } from '../../src/sources/expand-glob.js';
import { describeJsonError, findJsonErrorOffset, lineAndColumn } from '../../src/sources/json-error.js';
import { sniffDelimiter } from '../../src/sources/sniff-delimiter.js';

describe('format detection', () => {
  it('reads the extension, ignoring .gz and case', () => {
    assert.deepEqual(formatFromName('a/events.JSONL'), { format: 'jsonl' });
    assert.deepEqual(formatFromName('events.ndjson.gz'), { format: 'jsonl' });
    assert.deepEqual(formatFromName('dump.json'), { format: 'json' });
    assert.deepEqual(formatFromName('x.csv.gz'), { format: 'csv' });
    assert.deepEqual(formatFromName('x.tsv'), { format: 'csv', delimiter: '\t' });
    assert.deepEqual(formatFromName('x.txt'), {});
    assert.deepEqual(formatFromName('export'), {});
  });

  it('sniffs the content: [ → json, { → jsonl unless a pretty-printed object, else csv', () => {
    const b = (s: string) => Buffer.from(s);
    assert.equal(sniffFormat(b('\uFEFF  \n[{"a":1}]'), true), 'json');
    assert.equal(sniffFormat(b('{"a":1}\n{"a":2}\n'), true), 'jsonl');
    assert.equal(sniffFormat(b('{"a":1}'), true), 'jsonl');
    assert.equal(sniffFormat(b('{\n  "a": 1\n}\n'), true), 'json');
    assert.equal(sniffFormat(b('{\n  "a": 1,\n  "b": '), false), 'json'); // head cut inside a big object
    assert.equal(sniffFormat(b('{"a":1, broken}\n{"a":2}\n'), true), 'jsonl'); // broken first line: still JSONL
    assert.equal(sniffFormat(b('email,name\nx@example.com,X\n'), true), 'csv');
    assert.equal(sniffFormat(b(''), true), 'csv');
  });
});

describe('encoding detection', () => {
  it('takes valid UTF-8 as UTF-8, tolerating a character cut at the end of the sample', () => {
    const utf8 = Buffer.from('Nome;Cidade\nJoão;São Paulo\n');
    assert.equal(detectEncoding(utf8, true), 'utf-8');
    const cut = Buffer.from('Conceição').subarray(0, 7); // ends inside "ç" (c3 a7)
    assert.equal(detectEncoding(cut, false), 'utf-8');
    assert.equal(detectEncoding(cut, true), 'windows-1252');
  });

  it('falls back to Windows-1252 for accented single-byte text', () => {
    assert.equal(detectEncoding(iconv.encode('Nome;Cidade\nJoão;São Paulo\n', 'windows-1252'), true), 'windows-1252');
  });

  it('normalizes user encoding names and refuses unknown ones', () => {
    assert.equal(normalizeEncoding('UTF8'), 'utf-8');
    assert.equal(normalizeEncoding('cp1252'), 'windows-1252');
    assert.equal(normalizeEncoding('latin1'), 'latin1');
    assert.equal(normalizeEncoding('klingon'), null);
  });
});

describe('delimiter sniffing', () => {
  it('picks the delimiter that is consistent across lines, ignoring ones inside quotes', () => {
    assert.equal(sniffDelimiter('a,b,c\n1,2,3\n', true), ',');
    assert.equal(sniffDelimiter('Nome;Empresa;Cidade\n"Silva, João";"A, B e C";SP\nMaria;X;RJ\n', true), ';');
    assert.equal(sniffDelimiter('a\tb\tc\n1\t2,5\t3\n', true), '\t');
    assert.equal(sniffDelimiter('id|nome|obs\n1|Ana|a, b; c\n', true), '|');
    // commas in the values of one row do not outvote a consistent `;`
    assert.equal(sniffDelimiter('a;b\n1,5;2,5\n3;4\n', true), ';');
    // a quoted value spanning lines does not break the count
    assert.equal(sniffDelimiter('a;b\n"x\ny,z";2\n3;4\n', true), ';');
    assert.equal(sniffDelimiter('email\nx@example.com\n', true), ',');
    // the last line of an incomplete sample is ignored
    assert.equal(sniffDelimiter('a;b;c\n1;2;3\n4,5', false), ';');
  });
});

describe('CSV headers', () => {
  it('trims, names empty headers by position and suffixes duplicates case-insensitively', () => {
    assert.deepEqual(normalizeHeaders([' E-mail ', '', 'Nome', 'nome', 'NOME', 'nome_2', '  ']), [
      'E-mail',
      'column_2',
      'Nome',
      'nome_2',
      'NOME_3',
      'nome_2_2',
      'column_7',
    ]);
  });
});

describe('JSON helpers', () => {
  it('locates syntax errors that V8 reports without a position', () => {
    const text = '[\n {"a": 1},\n {"b": tru}\n]';
    const offset = findJsonErrorOffset(text);
    assert.deepEqual(lineAndColumn(text, offset), { line: 3, column: 8 });
    assert.equal(findJsonErrorOffset('{"a":1} x'), 8);
    assert.equal(findJsonErrorOffset('{"a":"x\\q"}'), 8);
  });

  it('describes errors without quoting the input', () => {
    let err: unknown;
    try {
      JSON.parse('{"email":"ana@example.com"}x');
    } catch (e) {
      err = e;
    }
    const d = describeJsonError(err, '{"email":"ana@example.com"}x');
    assert.doesNotMatch(d.message, /ana@/);
    assert.equal(d.offset, 27);
  });
});

describe('glob segments', () => {
  it('translates *, ?, character classes and escapes the rest', () => {
    const re = segmentToRegExp('leads-2026-1[0-2]-??.c*v');
    assert.ok(re.test('leads-2026-10-01.csv'));
    assert.ok(!re.test('leads-2026-13-01.csv'));
    assert.ok(!re.test('leads-2026-10-01Xcsv'));
    assert.ok(segmentToRegExp('[!a]*.json').test('b.json'));
    assert.ok(!segmentToRegExp('[!a]*.json').test('a.json'));
  });
});
