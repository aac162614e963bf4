import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  existsSync,
  lstatSync,
  readFileSync,
  readdirSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { parse } from 'csv-parse/sync';
import { ledgerExport } from '../../../src/commands/ledger/export.js';
import { EXPORT_COLUMNS, readExportRow } from '../../../src/commands/ledger/export-row.js';
import { ledgerImport } from '../../../src/commands/ledger/import.js';
import { UsageError } from '../../../src/errors.js';
import { openLedger } from '../../../src/ledger/ledger.js';
import { seedLedger, testCtx } from './seed.js';

test('CSV export: header, one row per event, written 0600 and complete (no temp file left)', async () => {
  const { dir, path } = seedLedger({ pending: true });
  const r = await ledgerExport({ ledger: path, output: 'out/../export.csv' }, testCtx(dir));
  assert.equal(r.rows, 6);
  assert.equal(r.format, 'csv');
  assert.equal(statSync(r.output).mode & 0o777, 0o600);
  const rows = parse(readFileSync(r.output), { columns: true }) as Array<Record<string, string>>;
  assert.deepEqual(Object.keys(rows[0]!), [...EXPORT_COLUMNS]);
  const evt2 = rows.find((x) => x.key === 'evt-2')!;
  assert.equal(evt2.status, 'failed');
  assert.equal(evt2.failure, 'permanent');
  assert.equal(evt2.source_line, '2');
  assert.deepEqual(JSON.parse(evt2.lead_json!), { email: 'bob@example.com', name: 'Person evt-2' });
  assert.deepEqual(
    readdirSync(dir).filter((f) => f.includes('.tmp')),
    [],
  );
});

test('CSV export neutralizes cells a spreadsheet would run as formulas', async () => {
  const { dir, path } = seedLedger();
  const l = openLedger(path)!;
  l.db
    .prepare(
      `UPDATE events SET last_error = '=HYPERLINK("http://evil")', crm_id = '+1', source = '@x' WHERE key = 'evt-2'`,
    )
    .run();
  l.close();
  const r = await ledgerExport({ ledger: path, output: join(dir, 'e.csv') }, testCtx(dir));
  const row = (parse(readFileSync(r.output), { columns: true }) as Array<Record<string, string>>).find(
    (x) => x.key === 'evt-2',
  )!;
  assert.equal(row.last_error, `'=HYPERLINK("http://evil")`);
  assert.equal(row.crm_id, `'+1`);
  assert.equal(row.source, `'@x`);
});

test('JSONL export to stdout with filters; the format follows the name or --format', async () => {
  const { dir, path } = seedLedger();
  const stdout = new PassThrough();
  let text = '';
  stdout.on('data', (b: Buffer) => (text += b.toString()));
  const r = await ledgerExport({ ledger: path, output: '-', status: 'sent', stdout }, testCtx(dir));
  assert.equal(r.format, 'jsonl');
  const lines = text
    .trim()
    .split('\n')
    .map((s) => JSON.parse(s) as Record<string, unknown>);
  assert.equal(lines.length, 3);
  assert.ok(lines.every((x) => x.status === 'sent'));
  assert.deepEqual(Object.keys(lines[0]!), [...EXPORT_COLUMNS]);
  await assert.rejects(ledgerExport({ ledger: path, output: join(dir, 'e.txt') }, testCtx(dir)), UsageError);
  const forced = await ledgerExport({ ledger: path, output: join(dir, 'e.txt'), format: 'csv' }, testCtx(dir));
  assert.match(readFileSync(forced.output, 'utf8'), /^key,key_kind,status/);
});

test('an export to a directory that does not exist is a usage error naming the file', async () => {
  const { dir, path } = seedLedger();
  await assert.rejects(
    ledgerExport({ ledger: path, output: join(dir, 'no', 'such', 'e.csv') }, testCtx(dir)),
    (e: Error) => e instanceof UsageError && /cannot write/.test(e.message),
  );
});

test('a link planted at the temp path is never followed: the export is refused and the link target untouched', async () => {
  const { dir, path } = seedLedger();
  const target = join(dir, 'export.csv');
  for (const victim of [join(dir, 'victim.txt'), join(dir, 'dangling-victim.txt')]) {
    if (!victim.includes('dangling')) writeFileSync(victim, 'keep me\n', { mode: 0o644 });
    const tmp = `${target}.${process.pid}.tmp`;
    rmSync(tmp, { force: true });
    symlinkSync(victim, tmp);
    await assert.rejects(
      ledgerExport({ ledger: path, output: target }, testCtx(dir)),
      (e: Error) => e instanceof UsageError && e.message.includes(tmp),
    );
    if (victim.includes('dangling')) assert.equal(existsSync(victim), false, 'the dangling link target is not created');
    else {
      assert.equal(readFileSync(victim, 'utf8'), 'keep me\n');
      assert.equal(statSync(victim).mode & 0o777, 0o644);
    }
    assert.equal(existsSync(target), false);
    assert.ok(lstatSync(tmp).isSymbolicLink(), 'the planted link is left for a person to look at');
  }
});

// `ledger import` reads export rows (readExportRow, see the next tests): an export is a ledger's delivered keys and
// people, ready to seed another one.

test("ledger import takes a relative --ledger from the command's directory, as every ledger subcommand does", async () => {
  const { dir, path } = seedLedger();
  const ctx = testCtx(dir);
  const exp = await ledgerExport({ ledger: path, status: 'sent', output: join(dir, 'export.csv') }, ctx);
  const imp = await ledgerImport({ files: [exp.output], ledger: 'relative.db', as: 'auto' }, ctx);
  assert.equal(imp.ledger, join(dir, 'relative.db'));
  assert.ok(existsSync(join(dir, 'relative.db')), "created in the command's directory");
  assert.ok(!existsSync(join(process.cwd(), 'relative.db')), "not in the process's");
});

for (const ext of ['csv', 'jsonl'] as const) {
  test(`round trip: export --status sent (${ext}) → import into a fresh ledger → the keys are known as delivered`, async () => {
    const { dir, path } = seedLedger();
    const ctx = testCtx(dir);
    const exp = await ledgerExport({ ledger: path, status: 'sent', output: join(dir, `export.${ext}`) }, ctx);
    const fresh = join(dir, 'fresh.db');
    const imp = await ledgerImport({ files: [exp.output], ledger: fresh, as: 'auto' }, ctx);
    assert.equal(imp.rejectedCount, 0, JSON.stringify(imp.rejected));
    const l = openLedger(fresh)!;
    const known = l.lookupKeys(['evt-1', 'imp-1', 'evt-2']);
    const delivered = l.lookupDelivered(['ana@example.com', 'eve@example.com']);
    l.close();
    for (const k of ['evt-1', 'imp-1']) assert.equal(known.get(k)?.status, 'sent', `${k} is known as delivered`);
    assert.equal(known.has('evt-2'), false, 'a failed event was not exported with --status sent');
    assert.equal(delivered.size, 2, 'the people are known leads too');
  });
}

test('round trip through the export row format: sent rows (phones and odd keys unquoted) import as delivered; others are refused', async () => {
  const { dir, path } = seedLedger();
  const l0 = openLedger(path)!;
  // A phone natural key and a key starting with '-' are quoted in CSV (formula neutralization) and must come back as they were.
  l0.importDelivered([{ key: '-odd', naturalKey: '+5511999990000' }], 'crm.csv');
  l0.close();
  const exp = await ledgerExport({ ledger: path, output: join(dir, 'all.csv') }, testCtx(dir));
  const rows = parse(readFileSync(exp.output), { columns: true }) as Array<Record<string, string>>;
  assert.equal(rows.find((r) => r.natural_key === `'+5511999990000`)?.key, `'-odd`);
  const entries = rows.map(readExportRow);
  const ok = entries.flatMap((e) => (e.ok ? [e] : []));
  const refused = entries.flatMap((e) => (e.ok ? [] : [e.reason]));
  assert.equal(refused.length, 2, 'the failed and the in-doubt event are not delivered');
  assert.ok(refused.every((r) => /not delivered/.test(r)));
  const fresh = openLedger(join(dir, 'fresh.db'))!;
  fresh.importDelivered(ok, exp.output);
  const known = fresh.lookupKeys(['evt-1', 'imp-1', '-odd', 'evt-2', 'evt-3']);
  assert.deepEqual([...known.keys()].sort(), ['-odd', 'evt-1', 'imp-1']);
  assert.ok([...known.values()].every((k) => k.status === 'sent'));
  assert.equal(fresh.lookupDelivered(['+5511999990000', 'ana@example.com']).size, 2);
  fresh.close();
});
