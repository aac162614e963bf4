// Table and column names reach SQL only quoted: parsed as PostgreSQL reads them, quoted so that no name can end the
// identifier and start SQL of its own.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { displayName, parseQualifiedName, quoteIdent, quoteQualified } from '../../src/sinks/postgres/identifier.js';

test('quoteIdent: always double quotes, a quote inside doubled, NUL and empty refused', () => {
  assert.equal(quoteIdent('leads'), '"leads"');
  assert.equal(quoteIdent('My Leads'), '"My Leads"');
  assert.equal(quoteIdent('a"b'), '"a""b"');
  assert.equal(quoteIdent('x"; DROP TABLE leads; --'), '"x""; DROP TABLE leads; --"');
  assert.equal(quoteIdent('ação'), '"ação"');
  assert.throws(() => quoteIdent(''), /empty/);
  assert.throws(() => quoteIdent('a\0b'), /NUL/);
});

test('parseQualifiedName reads names as PostgreSQL does: unquoted parts fold to lower case, quoted ones are kept', () => {
  assert.deepEqual(parseQualifiedName('leads'), { name: 'leads' });
  assert.deepEqual(parseQualifiedName('Leads'), { name: 'leads' });
  assert.deepEqual(parseQualifiedName('crm.Leads'), { schema: 'crm', name: 'leads' });
  assert.deepEqual(parseQualifiedName('"Sales"."Leads"'), { schema: 'Sales', name: 'Leads' });
  assert.deepEqual(parseQualifiedName('"My ""Quoted"" Leads"'), { name: 'My "Quoted" Leads' });
  assert.deepEqual(parseQualifiedName('"a.b".c'), { schema: 'a.b', name: 'c' });
  assert.deepEqual(parseQualifiedName('_t$1'), { name: '_t$1' });
});

test('parseQualifiedName refuses what is not one table name, naming the flag', () => {
  for (const bad of [
    '',
    'a.b.c',
    'leads; DROP TABLE x',
    'lea ds',
    '"unclosed',
    '""',
    'a.',
    '.a',
    '1leads',
    'a-b',
    '"a"b',
  ])
    assert.throws(() => parseQualifiedName(bad), /--table .* is not a table name/, bad);
});

test('a parsed name quoted again is the same name to PostgreSQL', () => {
  for (const [text, sql] of [
    ['leads', '"leads"'],
    ['CRM.Leads', '"crm"."leads"'],
    ['"Sales"."Leads"', '"Sales"."Leads"'],
    ['"a""b".c', '"a""b"."c"'],
  ] as const)
    assert.equal(quoteQualified(parseQualifiedName(text)), sql);
});

test('names in messages are quoted only where PostgreSQL would need it', () => {
  assert.equal(displayName({ schema: 'public', name: 'leads' }), 'public.leads');
  assert.equal(displayName({ schema: 'Sales', name: 'my leads' }), '"Sales"."my leads"');
});
