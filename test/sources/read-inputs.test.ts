import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { PassThrough } from 'node:stream';
import { gzipSync } from 'node:zlib';
import { InputError, LedgerError, UsageError } from '../../src/errors.js';
import { expandGlob } from '../../src/sources/expand-glob.js';
import { readInputs, readInputsWith } from '../../src/sources/read-inputs.js';
import { describeInput, sniffInput } from '../../src/sources/sniff-input.js';
import type { InputInfo, RawItem } from '../../src/sources/types.js';
import { chunked, fakeStdin, fixture, readAll, records, rejects, scratch, unread } from './helpers.js';

describe('readInputs: checking inputs first', () => {
  it('reads the inputs that exist and names a missing one as not read; throws InputError when none can be read', async () => {
    const { items } = await readAll([fixture('webhook-events.jsonl'), 'nope/missing.csv', fixture('leads.tsv')]);
    assert.ok(records(items).some((r) => r.source.endsWith('webhook-events.jsonl')));
    assert.ok(
      records(items).some((r) => r.source.endsWith('leads.tsv')),
      'the input after the missing one is read',
    );
    assert.deepEqual(
      unread(items).map((u) => [u.source, u.reason]),
      [['nope/missing.csv', 'no such file']],
    );
    await assert.rejects(
      readAll(['nope/missing.csv', 'nope/other.csv']),
      (err: unknown) =>
        err instanceof InputError && err.exitCode === 3 && /'nope\/missing.csv': no such file/.test(err.message),
    );
  });

  it('refuses a directory, an unreadable file, no inputs and stdin twice', async () => {
    const s = scratch();
    await assert.rejects(readAll([s.dir]), /it is a directory/);
    await assert.rejects(readAll([]), InputError);
    await assert.rejects(readAll(['-', '-'], { stdin: fakeStdin('') }), /more than once/);
    const locked = s.write('locked.csv', 'a\n1\n');
    chmodSync(locked, 0o000);
    if (process.getuid?.() !== 0) await assert.rejects(readAll([locked]), /permission denied/); // root reads anything
  });

  it('refuses bad options with UsageError (exit 2)', async () => {
    const f = fixture('leads.tsv');
    await assert.rejects(readAll([f], { encoding: 'klingon' }), UsageError);
    await assert.rejects(readAll([f], { delimiter: ';;' }), UsageError);
    await assert.rejects(readAll([f], { select: ' ' }), UsageError);
    await assert.rejects(readAll([f], { format: 'xml' as never }), UsageError);
  });
});

describe('readInputs: globs', () => {
  it('expands a glob to sorted files, matching no dotfiles, and supports **', async () => {
    const s = scratch();
    s.write('b.jsonl', '{"n":"b"}\n');
    s.write('a.jsonl', '{"n":"a"}\n');
    s.write('.hidden.jsonl', '{"n":"h"}\n');
    s.write('c.csv', 'n\nc\n');
    mkdirSync(path.join(s.dir, 'sub', 'deep'), { recursive: true });
    s.write('sub/deep/d.jsonl', '{"n":"d"}\n');
    const { items } = await readAll([path.join(s.dir, '*.jsonl')]);
    assert.deepEqual(
      records(items).map((r) => r.fields['n']),
      ['a', 'b'],
    );
    assert.deepEqual(
      items.map((i) => path.basename(i.source)),
      ['a.jsonl', 'b.jsonl'],
    );
    assert.deepEqual(
      (await expandGlob(`${s.dir}/**/*.jsonl`)).map((p) => path.relative(s.dir, p)),
      ['a.jsonl', 'b.jsonl', 'sub/deep/d.jsonl'],
    );
    assert.deepEqual(
      (await expandGlob(`${s.dir}/?.[cj]s*`)).map((p) => path.basename(p)),
      ['a.jsonl', 'b.jsonl', 'c.csv'],
    );
  });

  it('reads a literal file whose name has glob characters; an unmatched glob is nothing to do, or an error with requireInput', async () => {
    const s = scratch();
    const odd = s.write('leads[1].csv', 'email\nx@example.com\n');
    assert.equal(records((await readAll([odd])).items).length, 1);
    const pattern = path.join(s.dir, '*.ndjson');
    const noMatch: string[] = [];
    const { items } = await readAll([pattern, odd], { onNoMatch: (p) => noMatch.push(p) });
    assert.equal(records(items).length, 1);
    assert.deepEqual(noMatch, [pattern]);
    assert.equal((await readAll([pattern])).items.length, 0);
    await assert.rejects(
      readAll([pattern], { requireInput: true }),
      (err: unknown) => err instanceof InputError && /no files match/.test(err.message),
    );
  });
});

describe('readInputs: stdin, gzip, several inputs', () => {
  it("reads '-' from opts.stdin, named 'stdin', sniffing the format from the content", async () => {
    const csv = records((await readAll(['-'], { stdin: fakeStdin('email;nome\nana@example.com;Ana\n') })).items);
    assert.deepEqual(
      csv.map((r) => [r.source, r.line, r.fields]),
      [['stdin', 2, { email: 'ana@example.com', nome: 'Ana' }]],
    );
    const json = records((await readAll(['-'], { stdin: fakeStdin('[{"id":1},{"id":2}]') })).items);
    assert.equal(json.length, 2);
  });

  it('gunzips by magic bytes: a .gz file, and gzip arriving on stdin in small chunks', async () => {
    const { items } = await readAll([fixture('webhook-events.jsonl.gz')]);
    assert.equal(items.length, 20);
    assert.equal(records(items)[19]?.fields['event_id'], 'evt_01JB0005');
    const gz = readFileSync(fixture('webhook-events.jsonl.gz'));
    let info: InputInfo | undefined;
    const fromStdin = await readAll(['-'], { stdin: fakeStdin(...chunked(gz, 100)), onInput: (i) => (info = i) });
    assert.equal(fromStdin.items.length, 20);
    assert.equal(info?.gzip, true);
    assert.equal(info?.format, 'jsonl');
    // a gzipped Windows-1252 CSV: decompress first, then detect the encoding
    const s = scratch();
    const csvGz = s.write('pt.csv.gz', gzipSync(readFileSync(fixture('crm-export-pt.csv'))));
    const pt = records((await readAll([csvGz])).items);
    assert.equal(pt[0]?.fields['Nome'], 'João da Silva');
  });

  it('turns a corrupt gzip into one reject with the line reached, then reads the next input', async () => {
    const s = scratch();
    const lines = Array.from({ length: 5000 }, (_, i) =>
      JSON.stringify({ event_id: `evt_${i}`, r: Math.sin(i).toString(36) }),
    );
    const gz = gzipSync(lines.join('\n') + '\n');
    const truncated = s.write('cut.jsonl.gz', gz.subarray(0, Math.floor(gz.length * 0.6)));
    const garbage = s.write('garbage.jsonl.gz', Buffer.concat([gz.subarray(0, 10), Buffer.alloc(5000, 0x41)]));
    const { items } = await readAll([truncated, garbage, fixture('leads.tsv')]);
    const cut = items.filter((i) => i.source === truncated);
    const cutRecords = records(cut);
    const [failure] = unread(cut);
    assert.ok(cutRecords.length > 1000 && cutRecords.length < 5000, `read ${cutRecords.length} records before the cut`);
    assert.ok(failure);
    assert.equal(unread(cut).length, 1);
    assert.equal(rejects(cut).length, 0);
    assert.match(failure.reason, /^corrupt or truncated gzip data/);
    assert.ok(failure.line > cutRecords.length, 'the unread part starts past the last record read');
    const bad = unread(items.filter((i) => i.source === garbage));
    assert.equal(bad.length, 1);
    assert.equal(bad[0]?.line, 1);
    assert.equal(records(items.filter((i) => i.source === fixture('leads.tsv'))).length, 6);
    // the same for CSV: rows before the damage are kept, then one reject
    const csvLines = ['email,n', ...Array.from({ length: 5000 }, (_, i) => `p${i}@example.com,${Math.cos(i)}`)];
    const csvGz = gzipSync(csvLines.join('\n') + '\n');
    const cutCsv = s.write('cut.csv.gz', csvGz.subarray(0, Math.floor(csvGz.length * 0.6)));
    const csvItems = (await readAll([cutCsv])).items;
    assert.ok(records(csvItems).length > 1000);
    assert.equal(unread(csvItems).length, 1);
    assert.match(unread(csvItems)[0]?.reason ?? '', /corrupt or truncated gzip/);
  });

  it('reads several inputs of different formats in the order given', async () => {
    const names = ['pipe-delimited.csv', 'broken-events.jsonl', 'crm-export-pt.csv', 'app-log-wrapped.jsonl'];
    const { items } = await readAll(names.map(fixture));
    const order = [...new Set(items.map((i) => path.basename(i.source)))];
    assert.deepEqual(order, names);
  });

  it('lets opts.format override extension and content (a .txt that is JSONL)', async () => {
    const s = scratch();
    const txt = s.write('events.txt', '{"a":1}\n{"a":2}\n');
    assert.equal(records((await readAll([txt])).items).length, 2); // sniffed
    const asCsv = await readAll([txt], { format: 'csv', delimiter: '|' });
    assert.deepEqual(records(asCsv.items)[0]?.fields, { '{"a":1}': '{"a":2}' });
  });

  it('describes how an input is read without consuming it for the run', async () => {
    const info = await sniffInput({ source: 'crm-export-pt.csv', path: fixture('crm-export-pt.csv') });
    assert.equal(describeInput(info), "crm-export-pt.csv: csv, windows-1252, ';'-separated");
    const gz = await sniffInput({ source: 'events.gz', path: fixture('webhook-events.jsonl.gz') });
    assert.equal(describeInput(gz), 'events.gz: jsonl, gzip');
  });

  it('stops reading and releases the input when the consumer breaks early', async () => {
    const s = scratch();
    const file = s.write('many.jsonl', Array.from({ length: 3000 }, (_, i) => `{"i":${i}}`).join('\n'));
    let seen = 0;
    for await (const batch of readInputs([file], {})) {
      seen += batch.length;
      break;
    }
    assert.ok(seen > 0 && seen <= 1001);
  });
});

describe('readInputsWith: what a reader throws', () => {
  it('ends the read with any LeadledgerError (a damaged ledger: exit 5), never a reject of the input', async () => {
    const s = scratch();
    const file = s.write('events.jsonl', '{"event_id":"e1"}\n');
    const reader = async function* (): AsyncGenerator<string> {
      yield 'first';
      throw new LedgerError('ledger /x/ledger.db is damaged');
    };
    const got: string[] = [];
    await assert.rejects(
      async () => {
        for await (const b of readInputsWith([file], {}, reader, (r) => `reject: ${r.reason}`)) got.push(b);
      },
      (e: unknown) => e instanceof LedgerError && e.exitCode === 5,
    );
    assert.deepEqual(got, ['first']);
  });
});

describe('readInputs: a stdin that goes quiet', () => {
  it('yields the whole lines sent before it goes quiet, then an empty batch; a stop ends the read, nothing unread', async () => {
    const stdin = new PassThrough();
    stdin.write('{"id":"a","email":"a@example.com"}\n{"id":"b","email":"b@example.com"}\n{"id":"c",');
    const stop = new AbortController();
    const batches: RawItem[][] = [];
    // A read that the stop did not end would never end (stdin stays open): the runner's timeout fails it.
    for await (const batch of readInputs(['-'], { stdin, signal: stop.signal })) {
      batches.push(batch);
      // Seen before stdin ends (it never does here): the two whole lines, then the empty batch that says it is idle.
      if (batch.length === 0) stop.abort();
    }
    assert.deepEqual(
      records(batches.flat()).map((r) => [r.line, r.fields.id]),
      [
        [1, 'a'],
        [2, 'b'],
      ],
    );
    assert.deepEqual(batches.at(-1), []);
    assert.equal(unread(batches.flat()).length, 0, 'a stopped read is abandoned, not unread');
    assert.ok(stdin.destroyed, 'the stream is released');
  });
});
