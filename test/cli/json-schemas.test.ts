// Every --json document against its published schema (schemas/*.schema.json), from real runs of the built CLI: a
// push that sends and one that conflicts, a dry-run, a replay, and the ledger's read commands on what they left.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runCli, ROOT } from '../helpers/cli.js';
import { validate, type Schema } from '../helpers/json-schema.js';
import { tmpDir } from '../helpers/tmp.js';

const schema = (name: string) =>
  JSON.parse(readFileSync(join(ROOT, 'schemas', `${name}.schema.json`), 'utf8')) as Schema;
const EVENTS = join(ROOT, 'fixtures', 'webhook-events.jsonl');

// The document a command printed, checked against its schema; returned for more checks.
async function checked(name: string, args: string[], codes = [0]): Promise<Record<string, unknown>> {
  const r = await runCli([...args, '--json']);
  assert.ok(codes.includes(r.code!), `${args.join(' ')} exited ${r.code}: ${r.stderr}`);
  const doc = JSON.parse(r.stdout) as Record<string, unknown>;
  assert.deepEqual(validate(schema(name), doc), [], `${args.join(' ')} against ${name}.schema.json`);
  assert.equal(doc.schemaVersion, 1);
  return doc;
}

// No snake_case field name anywhere in a document, but where a key is data (a source's path, a reason, an option's
// value) or a decision's name (duplicate_in_input, known_lead: the names --report and the summary use too).
function snakeNames(v: unknown, path = '$', dataKeys = false): string[] {
  if (Array.isArray(v)) return v.flatMap((x, i) => snakeNames(x, `${path}[${i}]`));
  if (typeof v !== 'object' || v === null) return [];
  const found: string[] = [];
  for (const [k, x] of Object.entries(v)) {
    const data = ['perSource', 'failures', 'inDoubtReasons', 'rolledBack', 'options', 'args', 'lead', 'http'].includes(
      k,
    );
    if (!dataKeys && /_/.test(k) && !['duplicate_in_input', 'known_lead'].includes(k)) found.push(`${path}.${k}`);
    found.push(...(data ? [] : snakeNames(x, `${path}.${k}`)));
  }
  return found;
}

test('the schema validator catches what it should: a missing field, an extra one, a wrong type, a $ref', () => {
  const s = schema('ledger-export');
  const ok = { schemaVersion: 1, ledger: 'l.db', output: 'e.csv', format: 'csv', rows: 3 };
  assert.deepEqual(validate(s, ok), []);
  assert.deepEqual(validate(s, { ...ok, rows: 1.5 }), ['$.rows: number is not integer']);
  assert.deepEqual(validate(s, { ...ok, extra: 1 }), ['$.extra: not allowed']);
  assert.deepEqual(validate(s, { ...ok, schemaVersion: 2 }), ['$.schemaVersion: 2 is not 1']);
  const { rows: _rows, ...missing } = ok;
  assert.deepEqual(validate(s, missing), ['$: rows is missing']);
  const counts = schema('run-report');
  assert.match(validate(counts, { counts: { read: 'x' } }).join('\n'), /\$\.counts\.read: string is not integer/);
});

test('every --json document validates against its schema in schemas/, with schemaVersion 1 and camelCase names', async () => {
  const dir = tmpDir();
  const ledger = join(dir, 'l.db');
  const out = join(dir, 'out.jsonl');
  const docs: Array<[string, Record<string, unknown>]> = [];
  const run = async (name: string, args: string[], codes?: number[]) => {
    const d = await checked(name, args, codes);
    docs.push([args.slice(0, 2).join(' '), d]);
    return d;
  };
  await run('run-report', ['push', EVENTS, '--dry-run', '--ledger', ledger], [6]);
  const pushed = await run('run-report', ['push', EVENTS, '--sink', 'jsonl', '--output', out, '--ledger', ledger], [6]);
  assert.equal((pushed.delivery as { sent: number }).sent, 15);
  // A CSV with warnings (a phone left out) and a second input: warnings listed, two sources.
  const csv = join(dir, 'leads.csv');
  const other = join(dir, 'more.csv');
  writeFileSync(csv, 'id,email,phone\nc1,ana@example.com,123\nc2,bia@example.com,\n');
  writeFileSync(other, 'id,email\nc3,caio@example.com\n');
  const warned = await run('run-report', [
    'push',
    csv,
    other,
    '--dry-run',
    '--default-country',
    'BR',
    '--ledger',
    ledger,
  ]);
  assert.ok((warned.warnings as { reasons: unknown[] }).reasons.length > 0, 'a warning listed');
  await run('run-report', ['replay', '--failed', '--sink', 'jsonl', '--output', out, '--ledger', ledger]);
  const stats = await run('ledger-stats', ['ledger', 'stats', '--ledger', ledger]);
  assert.equal(typeof stats.ledgerSchemaVersion, 'number');
  const list = await run('ledger-list', ['ledger', 'list', '--ledger', ledger]);
  const key = (list.events as Array<{ key: string }>)[0]!.key;
  const show = await run('ledger-show', ['ledger', 'show', key, '--ledger', ledger]);
  assert.equal(typeof (show.event as { lead: unknown }).lead, 'object', 'the lead, parsed');
  const runs = await run('ledger-runs', ['ledger', 'runs', '--ledger', ledger]);
  const first = (runs.runs as Array<{ command: string; counts: { read: number } }>).find((x) => x.command === 'push')!;
  assert.equal(first.counts.read, 25, 'counts flat: the decision counts themselves');
  await run('ledger-verify', ['ledger', 'verify', '--ledger', ledger]);
  await run('ledger-export', ['ledger', 'export', '--output', join(dir, 'e.csv'), '--ledger', ledger]);
  await run('presets', ['presets']);
  await run('ledger-forget', ['ledger', 'forget', key, '--dry-run', '--ledger', ledger]);
  await run('ledger-forget', ['ledger', 'forget', '--email', 'ana@example.com', '--dry-run', '--ledger', ledger]);
  await run('ledger-prune', ['ledger', 'prune', '--older-than', '1d', '--dry-run', '--ledger', ledger]);
  const keys = join(dir, 'keys.txt');
  writeFileSync(keys, 'imported-1\n');
  await run('ledger-import', ['ledger', 'import', keys, '--ledger', ledger]);
  await run('ledger-migrate', ['ledger', 'migrate', '--to', join(dir, 'copy.db'), '--ledger', ledger]);
  await run('init', ['init', EVENTS, '--dry-run', '--output', join(dir, 'c.json')]);
  await run(
    'doctor',
    ['doctor', '--ledger', ledger, '--sink', 'jsonl', '--output', join(dir, 'doctor.jsonl')],
    [0, 1, 2, 3, 4, 5],
  );
  for (const [what, d] of docs) assert.deepEqual(snakeNames(d), [], `${what}: camelCase names`);
});
