// Silent loss and corruption, tried as a careful user with unlucky inputs would: the built CLI on real files.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { join } from 'node:path';
import { jsonReport, runCli } from '../helpers/cli.js';
import { tmpDir } from '../helpers/tmp.js';

test('a null in an earlier record hides no field from later records of its shape (stdin)', async () => {
  const input =
    [
      '{"event_id":"e1","email":"a@example.com","phone":null}',
      '{"event_id":"e2","email":null,"phone":"+5511987654321"}',
    ].join('\n') + '\n';
  const r = await runCli(
    ['push', '-', '--format', 'jsonl', '--dry-run', '--json', '--ledger', join(tmpDir(), 'l.db')],
    { input },
  );
  assert.equal(r.code, 0, r.stderr);
  const doc = jsonReport(r);
  assert.equal(doc.counts.new, 2, JSON.stringify(doc.examples));
  assert.equal(doc.counts.invalid, 0);
});

test('nulls, booleans and objects in mapped fields decide the same with map workers as in-thread, wherever blocks are cut', async () => {
  // Over 8 MiB, so the workers map it; the small copy is mapped in-thread. Every record of one shape.
  const lines: string[] = [];
  let bytes = 0;
  for (let i = 0; bytes < 9 << 20 || i % 7 !== 0; i++) {
    const odd = i % 5 === 0;
    lines.push(
      JSON.stringify({
        event_id: `e${i}`,
        email: odd ? null : `p${i}@example.com`,
        phone: i % 3 === 0 ? { n: 1 } : i % 3 === 1 ? null : `+55119${String(10000000 + i).slice(-8)}`,
        name: i % 4 === 0 ? true : `Pessoa ${i}`,
        pad: 'x'.repeat(200),
      }),
    );
    bytes += lines[lines.length - 1]!.length + 1;
  }
  const dir = tmpDir();
  const big = join(dir, 'big.jsonl');
  writeFileSync(big, lines.join('\n') + '\n');
  const r = await runCli(['push', big, '--dry-run', '--json', '--ledger', join(dir, 'l.db')], { timeoutMs: 120_000 });
  assert.equal(r.code, 0, r.stderr);
  const doc = jsonReport(r);
  // Every record has an email or a valid phone except those with neither: every 5th has a null email, and of
  // those, a third have a phone (i % 3 === 2).
  const invalid = lines.filter((_, i) => i % 5 === 0 && i % 3 !== 2).length;
  assert.equal(doc.counts.read, lines.length);
  assert.equal(doc.counts.invalid, invalid);
  assert.equal(doc.counts.new, lines.length - invalid);
});

test('one record nested 5,000 deep under a mapped custom field is one invalid record at its own line; the rest is decided', async () => {
  const dir = tmpDir();
  let deep = '"x"';
  for (let i = 0; i < 5000; i++) deep = `{"a":${deep}}`;
  const lines = [
    JSON.stringify({ event_id: 'e1', email: 'a@example.com', plan: 'basic' }),
    `{"event_id":"e2","email":"b@example.com","plan":${deep}}`,
    JSON.stringify({ event_id: 'e3', email: 'c@example.com', plan: 'pro' }),
  ];
  const input = join(dir, 'deep.jsonl');
  writeFileSync(input, lines.join('\n') + '\n');
  const config = join(dir, 'leadledger.config.json');
  writeFileSync(config, JSON.stringify({ fields: { custom: { plan: 'plan' } } }));
  const r = await runCli(['push', input, '--dry-run', '--json', '--config', config, '--ledger', join(dir, 'l.db')]);
  assert.equal(r.code, 0, r.stderr);
  const doc = jsonReport(r);
  assert.equal(doc.counts.read, 3);
  assert.equal(doc.counts.new, 2);
  assert.deepEqual(
    (doc.examples.invalid ?? []).map((e) => [(e as { line?: number }).line, e.reason]),
    [[2, 'cannot be mapped: a value is nested too deeply']],
  );
});

test('a truncated gzip: what could be read is decided, the rest is named as not read, and the run ends 3', async () => {
  const dir = tmpDir();
  const lines = Array.from({ length: 20_000 }, (_, i) =>
    JSON.stringify({ event_id: `e${i}`, email: `p${i}@example.com`, n: Math.sin(i) }),
  );
  const gz = gzipSync(lines.join('\n') + '\n');
  const input = join(dir, 'events.jsonl.gz');
  writeFileSync(input, gz.subarray(0, Math.floor(gz.length * 0.5)));
  for (const args of [
    ['--dry-run', '--json'],
    ['--sink', 'jsonl', '--output', join(dir, 'out.jsonl'), '--json'],
  ]) {
    const r = await runCli(['push', input, ...args, '--ledger', join(dir, `${args.length}.db`)]);
    assert.equal(r.code, 3, r.stderr);
    const doc = jsonReport(r);
    assert.equal(doc.exitCode, 3);
    assert.ok(doc.counts.read > 1000 && doc.counts.read < 20_000, `${doc.counts.read} records read before the damage`);
    assert.equal(doc.counts.invalid, 0, 'the damage is not a record');
    assert.equal(doc.unread.length, 1);
    assert.equal(doc.unread[0]!.source, input);
    assert.ok(doc.unread[0]!.line > doc.counts.read);
    assert.match(doc.unread[0]!.reason, /corrupt or truncated gzip/);
  }
  const human = await runCli(['push', input, '--dry-run', '--ledger', join(dir, 'h.db')]);
  assert.equal(human.code, 3);
  assert.match(human.stdout, /not read \(exit code 3\)/);
  assert.match(
    human.stdout,
    new RegExp(`${input.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} from line \\d+ to the end: corrupt or truncated gzip`),
  );
});

test('a stray quote in a CSV swallows no rows: its row is given up with its line range, the rows after it are read', async () => {
  const dir = tmpDir();
  const rows = ['event_id,email,name,phone'];
  for (let i = 1; i <= 60_000; i++) {
    const name = i === 11 ? '"Ana Lima' : i === 50_001 ? '5" screen' : `Pessoa ${i}`;
    rows.push(`e${i},p${i}@example.com,${name},+55119${String(10_000_000 + i).slice(-8)}`);
  }
  const input = join(dir, 'export.csv');
  writeFileSync(input, rows.join('\n') + '\n');
  for (const args of [[input], ['-', '--format', 'csv']]) {
    const r = await runCli(['push', ...args, '--dry-run', '--json', '--ledger', join(dir, 'l.db')], {
      input: args[0] === '-' ? rows.join('\n') + '\n' : undefined,
      timeoutMs: 120_000,
    });
    // The row given up could not be read: the run says where, and ends 3.
    assert.equal(r.code, 3, r.stderr);
    const doc = jsonReport(r);
    assert.equal(doc.counts.read, 60_000, args.join(' '));
    assert.equal(doc.counts.new, 59_999);
    assert.deepEqual(
      (doc.examples.invalid ?? []).map((e) => [(e as { line?: number }).line, e.reason]),
      [
        [
          12,
          'stray quote? a quote opened at line 12 is not closed within 100 lines or 64 KB: row 12 is left out, and reading goes on at line 13',
        ],
      ],
    );
    assert.deepEqual(
      doc.unread.map((u) => [u.line, u.toLine]),
      [[12, 12]],
    );
  }
});

test('a Windows-1252 export whose first accented byte comes after the first chunk is read as written, never with U+FFFD', async () => {
  const dir = tmpDir();
  const rows = ['event_id;email;name'];
  // Over 1 MiB of ASCII first (a file's first chunk; gzip and stdin chunks are 64 KiB), then accents in Windows-1252.
  for (let i = 0, bytes = 0; bytes < (1 << 20) + 50_000; i++) {
    rows.push(`e${i};p${i}@example.com;Pessoa ${i}`);
    bytes += rows[rows.length - 1]!.length + 1;
  }
  const ascii = rows.length;
  for (let i = 0; i < 50; i++) rows.push(`x${i};jose${i}@example.com.br;José Conceição ${i}`);
  const bytes = Buffer.from(rows.join('\r\n') + '\r\n', 'latin1');
  writeFileSync(join(dir, 'export.csv'), bytes);
  writeFileSync(join(dir, 'export.csv.gz'), gzipSync(bytes));
  for (const [name, input] of [
    ['export.csv', undefined],
    ['export.csv.gz', undefined],
    ['-', bytes],
  ] as const) {
    const out = join(dir, `${name}.out.jsonl`);
    const args = name === '-' ? ['-', '--format', 'csv'] : [join(dir, name)];
    const r = await runCli(['push', ...args, '--sink', 'jsonl', '--output', out, '--ledger', join(dir, `${name}.db`)], {
      input,
      timeoutMs: 120_000,
    });
    assert.equal(r.code, 0, r.stderr);
    const leads = readFileSync(out, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { lead: { name: string } });
    assert.equal(leads.length, rows.length - 1, name);
    assert.ok(!leads.some((l) => l.lead.name.includes('\ufffd')), `${name}: no U+FFFD`);
    assert.equal(leads.filter((l) => l.lead.name.startsWith('José Conceição')).length, 50, name);
    assert.match(
      r.stdout,
      new RegExp(`50 lines \\(the first at line ${ascii + 1}\\) were not UTF-8 and were read as Windows-1252`),
      name,
    );
  }
});

test('UTF-16 with a BOM (a Meta Lead Ads download: UTF-16 LE, tab-separated) and UTF-16 BE are read as text', async () => {
  const dir = tmpDir();
  const text =
    'id\tfull_name\temail\tphone_number\n' +
    ['1\tJoão Silva\tjoao@example.com\t+5511987654321', '2\tAna Souza\tana@example.com\t+5521987654321'].join('\n') +
    '\n';
  const le = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(text, 'utf16le')]);
  const be = Buffer.from(le);
  be.swap16();
  for (const [name, bytes] of [
    ['le.csv', le],
    ['be.csv', be],
  ] as const) {
    writeFileSync(join(dir, name), bytes);
    const r = await runCli(['push', join(dir, name), '--dry-run', '--json', '--ledger', join(dir, 'l.db')]);
    assert.equal(r.code, 0, r.stderr);
    const doc = jsonReport(r);
    assert.equal(doc.counts.read, 2, `${name}: ${JSON.stringify(doc.examples)}`);
    assert.equal(doc.counts.invalid, 0, `${name}: ${JSON.stringify(doc.examples)}`);
  }
});

test('a large JSON array is streamed: every element decided, a malformed one rejected at its line, an oversized one unread (exit 3)', async () => {
  const dir = tmpDir();
  const parts: string[] = [];
  for (let i = 0; i < 150_000; i++) parts.push(JSON.stringify({ event_id: `e${i}`, email: `p${i}@example.com`, n: i }));
  parts[1000] = '{"event_id": "bad" "email": "x@example.com"}';
  // Past the reader's 64 MB element limit: not read, the elements after it are.
  parts[2000] = JSON.stringify({ event_id: 'big', email: 'big@example.com', blob: 'x'.repeat(65 << 20) });
  const input = join(dir, 'events.json');
  writeFileSync(input, '[\n' + parts.join(',\n') + '\n]\n');
  const r = await runCli(['push', input, '--dry-run', '--json', '--ledger', join(dir, 'l.db')], { timeoutMs: 120_000 });
  assert.equal(r.code, 3, r.stderr);
  const doc = jsonReport(r);
  assert.equal(doc.counts.new, 150_000 - 2);
  assert.equal(doc.counts.invalid, 1);
  // The malformed element is an invalid record, and could not be read either.
  assert.deepEqual(doc.unread, [
    {
      source: input,
      line: 1002,
      toLine: 1002,
      reason: "invalid JSON: Expected ',' or '}' after property value at line 1002, column 20",
    },
    { source: input, line: 2002, toLine: 2002, reason: 'array element 2001 is larger than 64 MB: not read' },
  ]);
});

test("lines of a UTF-8 JSONL that are not UTF-8 are read as Windows-1252, as a CSV export's are, and said so", async () => {
  const dir = tmpDir();
  // Past the first chunk (1 MiB), which the encoding is detected from, in UTF-8: the input is UTF-8, and its odd lines
  // are read one by one.
  const head: string[] = [];
  for (let i = 0, bytes = 0; bytes < 1_100_000; i++) {
    head.push(JSON.stringify({ event_id: `h${i}`, email: `h${i}@example.com`, name: `Conceição ${i}` }));
    bytes += Buffer.byteLength(head[i]!) + 1;
  }
  const lines = [
    Buffer.from(head.join('\n') + '\n'),
    Buffer.from('{"event_id":"e1","email":"a@example.com","name":"Jos'),
    Buffer.from([0xe9]),
    Buffer.from('"}\n{"event_id":"e2","email":"b'),
    Buffer.from([0xe9]),
    Buffer.from('@example.com"}\n{"event_id":"e3","email":"c@example.com","name":"Ana \\ufffd"}\n'),
  ];
  const input = join(dir, 'events.jsonl');
  writeFileSync(input, Buffer.concat(lines));
  const out = join(dir, 'out.jsonl');
  const r = await runCli(['push', input, '--sink', 'jsonl', '--output', out, '--json', '--ledger', join(dir, 'l.db')]);
  assert.equal(r.code, 0, r.stderr);
  const doc = jsonReport(r);
  assert.equal(doc.counts.new, head.length + 3);
  // e3 spells U+FFFD itself (\ufffd): nothing was altered there, and its line is UTF-8.
  assert.deepEqual(doc.readAs[0]!.notes, [
    `2 lines (the first at line ${head.length + 1}) were not UTF-8 and were read as Windows-1252`,
  ]);
  assert.equal(doc.warnings.records, 0);
  const sent = readFileSync(out, 'utf8')
    .trim()
    .split('\n')
    .slice(-3)
    .map((l) => (JSON.parse(l) as { lead: unknown }).lead);
  assert.deepEqual(sent, [
    { email: 'a@example.com', name: 'José' },
    { email: 'bé@example.com' },
    { email: 'c@example.com', name: 'Ana \ufffd' },
  ]);
});

test('the per-record report gives each record its warnings', async () => {
  const dir = tmpDir();
  const input = join(dir, 'events.jsonl');
  writeFileSync(
    input,
    '{"event_id":"e1","email":"a@example.com","phone":"12"}\n{"event_id":"e2","email":"b@example.com"}\n',
  );
  const csv = join(dir, 'plan.csv');
  const r = await runCli(['push', input, '--dry-run', '--report', csv, '--ledger', join(dir, 'l.db')]);
  assert.equal(r.code, 0, r.stderr);
  const rows = readFileSync(csv, 'utf8').trim().split('\n');
  assert.equal(rows.length, 3);
  assert.match(rows[1]!, /,"phone: '12' is not a valid phone number \(national number: [^)]*\): left out"$/);
  assert.match(rows[2]!, /,$/);
});

/** JSONL lines of distinct people, over 9 MiB in all: an input that size is mapped by the map workers. */
function overMapWorkerSize(idPrefix: string): string[] {
  const lines: string[] = [];
  for (let i = 0, bytes = 0; bytes < 9 << 20; i++) {
    const l = JSON.stringify({ event_id: `${idPrefix}${i}`, email: `p${i}@example.com`, name: `Pessoa ${i}` });
    lines.push(l);
    bytes += l.length + 1;
  }
  return lines;
}

test('event ids that are JSON numbers past 2^53 are not taken for one another: keyed by content, with a warning (in-thread and in the map workers)', async () => {
  const dir = tmpDir();
  const odd = [
    '{"event_id":9007199254740993,"email":"big1@example.com"}',
    '{"event_id":9007199254740992,"email":"big2@example.com"}',
    '{"event_id":12345678901234567890123,"email":"big3@example.com"}',
    '{"event_id":12345678901234567890124,"email":"big4@example.com"}',
    '{"event_id":1e400,"email":"inf@example.com"}',
    '{"event_id":9007199254740991,"email":"safe@example.com"}',
  ];
  // Small: mapped in-thread. Over 8 MiB: by the map workers, whose fast path hands numbers to the general one.
  const filler = overMapWorkerSize('f');
  for (const lines of [odd, [...filler, ...odd]]) {
    const input = join(dir, `ids-${lines.length}.jsonl`);
    writeFileSync(input, lines.join('\n') + '\n');
    const r = await runCli(['push', input, '--dry-run', '--json', '--ledger', join(dir, 'l.db')], {
      timeoutMs: 120_000,
    });
    assert.equal(r.code, 0, r.stderr);
    const doc = jsonReport(r);
    assert.equal(doc.counts.new, lines.length, JSON.stringify(doc.examples));
    assert.equal(doc.counts.conflict, 0);
    const why =
      'event_id: a number past 2^53, which JSON rounds: the event is keyed by its content instead (an id written as text is kept whole)';
    assert.deepEqual(doc.warnings.reasons, [{ message: why, count: 5 }]);
  }
});

test('JSONL whose lines end in CR alone (classic Mac OS) is read a line per event, at its own line numbers: file, stdin, gzip, map workers', async () => {
  const dir = tmpDir();
  const small = [
    '{"event_id":"a1","email":"a1@example.com"}',
    '{"event_id":"a2","email":"a2@example.com"}',
    '{"event_id":"a3","email":"not-an-email"}',
  ];
  const big = overMapWorkerSize('e');
  big.push('{"event_id":"last","email":"not-an-email"}');
  for (const lines of [small, big]) {
    const text = lines.join('\r') + '\r';
    const file = join(dir, `cr-${lines.length}.jsonl`);
    writeFileSync(file, text);
    writeFileSync(`${file}.gz`, gzipSync(text));
    for (const args of [[file], [`${file}.gz`], ['-', '--format', 'jsonl']]) {
      const r = await runCli(['push', ...args, '--dry-run', '--json', '--ledger', join(dir, 'l.db')], {
        input: args[0] === '-' ? text : undefined,
        timeoutMs: 120_000,
      });
      assert.equal(r.code, 0, r.stderr);
      const doc = jsonReport(r);
      assert.equal(doc.counts.read, lines.length, args.join(' '));
      assert.equal(doc.counts.new, lines.length - 1);
      assert.deepEqual(
        (doc.examples.invalid ?? []).map((e) => e.line),
        [lines.length],
      );
      assert.equal((doc.readAs[0] as { crLines?: boolean }).crLines, true);
    }
  }
});

test('a CSV header that names a column twice is said: which column is read under the name, what the other is called', async () => {
  const dir = tmpDir();
  const input = join(dir, 'dup.csv');
  writeFileSync(input, 'email,name,Email,phone,name\none@example.com,Ana,two@example.com,+5511987654321,Outra\n');
  const r = await runCli(['push', input, '--dry-run', '--json', '--ledger', join(dir, 'l.db')]);
  assert.equal(r.code, 0, r.stderr);
  const doc = jsonReport(r);
  assert.deepEqual(doc.readAs[0]!.notes, [
    "the header repeats a name: 'email' names columns 1, 3: column 1 is read as email, column 3 as Email_2; 'name' names columns 2, 5: column 2 is read as name, column 5 as name_2",
  ]);
  assert.equal(doc.counts.new, 1);
  const human = await runCli(['push', input, '--dry-run', '--ledger', join(dir, 'l.db')]);
  assert.match(human.stdout, /dup\.csv: the header repeats a name: 'email' names columns 1, 3/);
});

test('a key of configured paths with a part that is a JSON number past 2^53 is keyed by content too, with the warning', async () => {
  const dir = tmpDir();
  const config = join(dir, 'c.json');
  writeFileSync(config, JSON.stringify({ key: { paths: ['lead_id', 'form'] } }));
  const input = join(dir, 'in.jsonl');
  writeFileSync(
    input,
    [
      '{"lead_id":9007199254740993,"form":"f1","email":"big1@example.com"}',
      '{"lead_id":9007199254740992,"form":"f1","email":"big2@example.com"}',
      '{"lead_id":42,"form":"f1","email":"small@example.com"}',
    ].join('\n') + '\n',
  );
  const r = await runCli(['push', input, '--dry-run', '--json', '--config', config, '--ledger', join(dir, 'l.db')]);
  assert.equal(r.code, 0, r.stderr);
  const doc = jsonReport(r);
  assert.equal(doc.counts.new, 3, JSON.stringify(doc.examples));
  assert.deepEqual(
    doc.warnings.reasons.map((w) => w.count),
    [2],
  );
  assert.match(doc.warnings.reasons[0]!.message, /^lead_id: a number past 2\^53, which JSON rounds/);
});

test('an input whose first lines end in CR alone and later ones in CRLF reads every line once; a CRLF in a quoted CSV field stays one', async () => {
  const dir = tmpDir();
  const cr = Array.from({ length: 3000 }, (_, i) => JSON.stringify({ event_id: `e${i}`, email: `p${i}@example.com` }));
  const crlf = Array.from({ length: 3 }, (_, i) => JSON.stringify({ event_id: `x${i}`, email: `x${i}@example.com` }));
  const jsonl = join(dir, 'mixed.jsonl');
  writeFileSync(jsonl, cr.join('\r') + '\r' + crlf.join('\r\n') + '\r\n');
  const csvRows = Array.from({ length: 3000 }, (_, i) => `c${i},c${i}@example.com,N${i}`);
  const quoted = Array.from({ length: 3 }, (_, i) => `d${i},d${i}@example.com,"Two\r\nlines ${i}"`);
  const csv = join(dir, 'mixed.csv');
  writeFileSync(csv, ['event_id,email,name', ...csvRows].join('\r') + '\r' + quoted.join('\r\n') + '\r\n');
  for (const input of [jsonl, csv]) {
    const r = await runCli(['push', input, '--dry-run', '--json', '--ledger', join(dir, 'l.db')]);
    assert.equal(r.code, 0, r.stderr);
    const doc = jsonReport(r);
    assert.equal(doc.counts.read, 3003, input);
    assert.equal(doc.counts.new, 3003, JSON.stringify(doc.examples));
  }
});
