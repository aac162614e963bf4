// CSV exports no source definition knows, pushed as a user pushes them: localized columns (an object prefix and a
// label per column) read as their person's, several values in one cell, a form's unfinished responses filtered, and a
// hand-rolled export whose cells are JSON literals read whole.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { jsonReport, runCli } from '../helpers/cli.js';
import { tmpDir } from '../helpers/tmp.js';

interface Row {
  line: number;
  decision: string;
  reason?: string;
  warnings?: string;
}

/** A push of one file to the jsonl sink: the leads sent by line, the report's rows, and the run report. */
async function push(name: string, text: string, ...more: string[]) {
  const dir = tmpDir();
  const input = join(dir, name);
  writeFileSync(input, text);
  const out = join(dir, 'out.jsonl');
  const report = join(dir, 'report.jsonl');
  const r = await runCli(
    [
      'push',
      input,
      '--sink',
      'jsonl',
      '--output',
      out,
      '--ledger',
      join(dir, 'l.db'),
      '--report',
      report,
      '--json',
    ].concat(more),
  );
  assert.ok(r.code === 0 || r.code === 1, r.stderr);
  const lines = (p: string) =>
    readFileSync(p, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  const rows = (lines(report) as unknown as Row[]).sort((a, b) => a.line - b.line);
  // Sent in batches: ordered by email here.
  const leads = lines(out)
    .map((o) => o.lead as Record<string, string>)
    .sort((a, b) => (a.email ?? '').localeCompare(b.email ?? ''));
  return { rows, leads, run: jsonReport(r) };
}

test("a Spanish deals export: the person's work email, mobile, name and organization; never the owner's; keyed by the deal", async () => {
  const csv = [
    '"Negocio - ID","Negocio - Título","Negocio - Estado","Persona - ID","Persona - Nombre","Persona - Correo electrónico - Trabajo","Persona - Correo electrónico - Casa","Persona - Teléfono - Trabajo","Persona - Teléfono - Móvil","Propietario - Correo electrónico","Organización - Nombre"',
    '"501","Licencias Ortega","Abierto","301","Diego Ortega","diego.ortega@example.com","diego@example.org","\'+34 915 550 101","\'+34 612 000 101","marta@example.com","Ortega SL"',
    '"502","Implementación Castro","Abierto","302","Elena Castro","","elena.castro@example.org","\'+52 55 5555 0102","","marta@example.com","Castro y Asociados"',
    '"503","Soporte Ortega","Ganado","301","Diego Ortega","diego.ortega@example.com","diego@example.org","\'+34 915 550 101","\'+34 612 000 101","marta@example.com","Ortega SL"',
    '"504","Grupo Andino - piloto","Abierto","","","","","","","marta@example.com","Grupo Andino"',
  ].join('\n');
  const { rows, leads } = await push('negocios.csv', csv + '\n');
  assert.deepEqual(
    rows.map((r) => r.decision),
    ['new', 'new', 'known_lead', 'invalid'],
  );
  assert.deepEqual(leads, [
    { email: 'diego.ortega@example.com', phone: '+34612000101', name: 'Diego Ortega', company: 'Ortega SL' },
    { email: 'elena.castro@example.org', phone: '+525555550102', name: 'Elena Castro', company: 'Castro y Asociados' },
  ]);
});

test("a Bitrix24 leads export (pt-BR): first and last name, not the lead's title; the first of two phones in a cell", async () => {
  const csv = [
    '\ufeff"ID","Nome do lead","Nome","Segundo nome","Sobrenome","Telefone comercial","Celular","E-mail comercial","E-mail pessoal","Responsável"',
    '"1021","Site - Rafael Gomes","Rafael","","Gomes","+55 11 3333-1001","+55 11 98888-1001","rafael.gomes@example.com.br","rafa@example.org","Luana Prates"',
    '"1022","Formulário CRM - Patrícia","Patrícia","","Nunes","+55 21 3333-1002, +55 21 3333-1003","","","patricia.nunes@example.com.br","Luana Prates"',
  ].join('\r\n');
  const { rows, leads } = await push('leads.csv', csv + '\r\n');
  assert.deepEqual(leads, [
    {
      email: 'patricia.nunes@example.com.br',
      phone: '+552133331002',
      name: 'Patrícia Nunes',
      first_name: 'Patrícia',
      last_name: 'Nunes',
    },
    {
      email: 'rafael.gomes@example.com.br',
      phone: '+5511988881001',
      name: 'Rafael Gomes',
      first_name: 'Rafael',
      last_name: 'Gomes',
    },
  ]);
  assert.match(rows[1]!.warnings ?? '', /Telefone comercial: 2 values in one cell, the first taken/);
});

test("a form's results download: a partial response is filtered, the completed one is the lead", async () => {
  const csv = [
    '#,Qual é o seu nome?,Seu melhor e-mail,WhatsApp com DDD,Response Type,Submit Date (UTC)',
    'k2v7wq0d9s8f,Henrique Lopes,henrique.lopes@example.com.br,,partial,',
    'p4n1c8e2z7x6,Henrique Lopes,henrique.lopes@example.com.br,+5521999993002,completed,2025-03-19 09:04:51',
  ].join('\n');
  const { rows, leads } = await push('responses.csv', csv + '\n');
  assert.deepEqual(
    rows.map((r) => [r.decision, r.reason]),
    [
      ['filtered', 'a partial response (Response Type: partial): the completed response is the lead'],
      ['new', 'not in the ledger'],
    ],
  );
  assert.deepEqual(leads, [
    { email: 'henrique.lopes@example.com.br', phone: '+5521999993002', name: 'Henrique Lopes' },
  ]);
});

test('a CSV whose cells are JSON literals (\\" inside quotes, \\u00e1, a bare null): read whole, and the summary says how', async () => {
  const csv = [
    '"id","nome","email","telefone","dados"',
    '17,"Jo\\u00e3o Batista","joao.batista@example.com.br","+55 11 99999-9001","{\\"utm\\":{\\"campaign\\":\\"lp\\/pro\\"}}"',
    '18,"Let\\u00edcia Prado","leticia.prado@example.com.br",null,"{\\"plano\\":\\"b\\u00e1sico\\"}"',
    '19,"Marcos \\"Marquinhos\\" Souza","marcos.souza@example.com.br","+55 11 99999-9003",null',
  ].join('\n');
  const { rows, leads, run } = await push('leads.csv', csv + '\n');
  assert.deepEqual(
    rows.map((r) => [r.line, r.decision]),
    [
      [2, 'new'],
      [3, 'new'],
      [4, 'new'],
    ],
  );
  assert.deepEqual(
    leads.map((l) => [l.name, l.phone]),
    [
      ['João Batista', '+5511999999001'],
      ['Letícia Prado', undefined],
      ['Marcos "Marquinhos" Souza', '+5511999999003'],
    ],
  );
  assert.equal(run.readAs[0]!.escapes, 'backslash');
  assert.match(run.readAs[0]!.notes.join('\n'), /written with backslash escapes/);
});
