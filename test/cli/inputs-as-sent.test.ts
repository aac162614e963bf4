// Data arrives as it was sent: field names in any case, form-encoded bodies, Latin-1 JSON lines, gzip files with
// more than one member or bytes after their end, and dates read the same way on every machine. The built CLI on
// real files, each small input also in a copy large enough for the map workers.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync, gzipSync } from 'node:zlib';
import { jsonReport, runCli } from '../helpers/cli.js';
import { tmpDir } from '../helpers/tmp.js';
import { jsonLines, type Row } from '../presets/helpers.js';

/** Lines of `make(i)` for i = 0, 1, ... until they pass 9 MiB: an input that size is mapped by the map workers. */
function overMapWorkerSize(make: (i: number) => string): string[] {
  const lines: string[] = [];
  for (let i = 0, bytes = 0; bytes < 9 << 20; i++) {
    const l = make(i);
    lines.push(l);
    bytes += Buffer.byteLength(l) + 1;
  }
  return lines;
}

test('analytics events carry the person under any case, at the top level or in properties: read, not filtered as anonymous', async () => {
  const dir = tmpDir();
  const events = [
    { messageId: 'm1', type: 'identify', userId: 'u1', traits: { Email: 'Ana@Example.com', Name: 'Ana Lima' } },
    { messageId: 'm2', type: 'track', event: 'Signed Up', properties: { PHONE: '+5511987654321' } },
    { messageId: 'm3', type: 'identify', userId: 'u3', EMAIL: 'top@example.com', traits: {} },
    { messageId: 'm4', type: 'track', event: 'Form Sent', properties: { plan: 'pro', phone: '+5521987654321' } },
    { messageId: 'm5', type: 'track', event: 'Lead', context: { Traits: { eMail: 'ctx@example.com' } } },
    { messageId: 'm6', type: 'page', properties: { url: 'https://example.com/' } },
  ];
  const input = join(dir, 'segment.jsonl');
  writeFileSync(input, events.map((e) => JSON.stringify(e)).join('\n') + '\n');
  const report = join(dir, 'plan.jsonl');
  const r = await runCli(['push', input, '--dry-run', '--json', '--report', report, '--ledger', join(dir, 'l.db')]);
  assert.equal(r.code, 0, r.stderr);
  const rows = jsonLines<Row>(report);
  assert.deepEqual(
    rows.map((x) => [x.key, x.decision, x.email]),
    [
      ['m1', 'new', 'ana@example.com'],
      ['m2', 'new', ''],
      ['m3', 'new', 'top@example.com'],
      ['m4', 'new', ''],
      ['m5', 'new', 'ctx@example.com'],
      ['m6', 'filtered', ''],
    ],
  );
  assert.deepEqual(jsonReport(r).readAs[0]!.readAs, [{ as: 'Segment/RudderStack event', events: 6 }]);
});

test('a config path and a wrapper read keys spelled in another case, in-thread and in the map workers', async () => {
  const dir = tmpDir();
  const config = join(dir, 'leadledger.config.json');
  writeFileSync(config, JSON.stringify({ fields: { id: 'Event_ID', email: 'contact.email', phone: 'contact.phone' } }));
  const make = (i: number) =>
    JSON.stringify({
      event_id: `e${i}`,
      Contact: { EMAIL: `p${i}@example.com`, Phone: `+55119${String(10_000_000 + i).slice(-8)}` },
      Data: { NAME: `Pessoa ${i}` },
    });
  for (const lines of [[0, 1, 2].map(make), overMapWorkerSize(make)]) {
    const input = join(dir, `cased-${lines.length}.jsonl`);
    writeFileSync(input, lines.join('\n') + '\n');
    const report = join(dir, `plan-${lines.length}.csv`);
    const r = await runCli(
      ['push', input, '--dry-run', '--json', '--config', config, '--ledger', join(dir, 'l.db'), '--report', report],
      { timeoutMs: 120_000 },
    );
    assert.equal(r.code, 0, r.stderr);
    const doc = jsonReport(r);
    assert.equal(doc.counts.read, lines.length);
    assert.equal(doc.counts.new, lines.length, JSON.stringify(doc.examples));
  }
});

test('a log line whose body is form-encoded, as a string or as lists of one value, is read as the form it was', async () => {
  const dir = tmpDir();
  const pino = { level: 30, time: 1730000000000, pid: 7, hostname: 'web-1', msg: 'webhook received' };
  const lines = [
    { ...pino, body: 'a=1&event_id=f1&email=ana%40example.com&name=Ana+Lima&phone=%2B5511987654321' },
    { ...pino, body: { event_id: ['f2'], email: ['bia@example.com'], name: ['Bia Souza'] } },
    { ...pino, body: 'event_id=f3&email=jos%C3%A9%40example.com&name=Jos%C3%A9+Concei%C3%A7%C3%A3o' },
    // Percent-encoded Latin-1 is not UTF-8: the address it would alter is not sent.
    { ...pino, body: 'event_id=f4&email=c%E9%40example.com' },
    { ...pino, msg: 'GET /health' },
  ].map((l) => JSON.stringify(l));
  const input = join(dir, 'app.log.jsonl');
  writeFileSync(input, lines.join('\n') + '\n');
  const out = join(dir, 'out.jsonl');
  const r = await runCli(['push', input, '--sink', 'jsonl', '--output', out, '--json', '--ledger', join(dir, 'l.db')]);
  // The address that could not be read as text is a record not read: the run names it, and ends 3.
  assert.equal(r.code, 3, r.stderr);
  const doc = jsonReport(r);
  assert.deepEqual([doc.counts.new, doc.counts.invalid, doc.counts.filtered], [3, 1, 1]);
  assert.deepEqual(
    doc.unread.map((u) => u.line),
    [4],
  );
  assert.match(doc.examples.invalid![0]!.reason, /^email: its bytes are not UTF-8/);
  assert.deepEqual(
    jsonLines<{ lead: Record<string, string> }>(out).map((l) => l.lead),
    [
      { email: 'ana@example.com', name: 'Ana Lima', phone: '+5511987654321' },
      { email: 'bia@example.com', name: 'Bia Souza' },
      { email: 'josé@example.com', name: 'José Conceição' },
    ],
  );

  // --select reads such a body too, a string and lists of one value alike.
  const wrapped = join(dir, 'wrapped.jsonl');
  writeFileSync(
    wrapped,
    [
      { msg: 'in', payload: 'event_id=s1&email=sel%40example.com' },
      { msg: 'in', payload: { event_id: ['s2'], email: ['two@example.com'] } },
    ]
      .map((l) => JSON.stringify(l))
      .join('\n') + '\n',
  );
  const s = await runCli([
    'push',
    wrapped,
    '--select',
    'payload',
    '--dry-run',
    '--json',
    '--ledger',
    join(dir, 's.db'),
  ]);
  assert.equal(s.code, 0, s.stderr);
  assert.equal(jsonReport(s).counts.new, 2, JSON.stringify(jsonReport(s).examples));
});

test('JSONL and JSON in Latin-1 (Windows-1252) are read as written, never with U+FFFD: detected or as --encoding says', async () => {
  const dir = tmpDir();
  const event = (i: number) =>
    JSON.stringify({
      event_id: `e${i}`,
      email: `jose${i}@example.com`,
      name: `José Conceição ${i}`,
      city: 'São Paulo',
    });
  const small = [0, 1, 2].map(event);
  const latin1 = (lines: string[]) => Buffer.from(lines.join('\n') + '\n', 'latin1');
  writeFileSync(join(dir, 'small.jsonl'), latin1(small));
  writeFileSync(join(dir, 'small.jsonl.gz'), gzipSync(latin1(small)));
  writeFileSync(join(dir, 'large.jsonl'), latin1(overMapWorkerSize(event)));
  writeFileSync(join(dir, 'doc.json'), Buffer.from('[' + small.join(',\n') + ']\n', 'latin1'));
  const runs: Array<[string, string[], Buffer | undefined]> = [
    ['small.jsonl', [join(dir, 'small.jsonl')], undefined],
    ['small.jsonl.gz', [join(dir, 'small.jsonl.gz')], undefined],
    ['stdin', ['-', '--format', 'jsonl'], latin1(small)],
    ['large.jsonl', [join(dir, 'large.jsonl')], undefined],
    ['doc.json', [join(dir, 'doc.json')], undefined],
    ['doc.json --encoding latin1', [join(dir, 'doc.json'), '--encoding', 'latin1'], undefined],
  ];
  for (const [what, args, input] of runs) {
    const out = join(dir, `${what}.out.jsonl`);
    const r = await runCli(
      ['push', ...args, '--sink', 'jsonl', '--output', out, '--json', '--ledger', join(dir, `${what}.db`)],
      { input, timeoutMs: 120_000 },
    );
    assert.equal(r.code, 0, `${what}: ${r.stderr}`);
    const doc = jsonReport(r);
    assert.equal(doc.counts.invalid, 0, what);
    assert.equal(doc.warnings.records, 0, what);
    assert.equal(doc.readAs[0]!.encoding, what.endsWith('latin1') ? 'latin1' : 'windows-1252', what);
    const leads = jsonLines<{ lead: { email: string; name: string } }>(out);
    assert.equal(leads.length, doc.counts.read, what);
    assert.ok(!leads.some((l) => l.lead.name.includes('\ufffd')), `${what}: no U+FFFD`);
    assert.deepEqual(leads[1]!.lead, { email: 'jose1@example.com', name: 'José Conceição 1' }, what);
  }
});

test('a gzip of several members, with bytes after its end: every member read; garbage unread by its offset (exit 3), zero padding a note', async () => {
  const dir = tmpDir();
  const event = (tag: string) => (i: number) =>
    JSON.stringify({ event_id: `${tag}${i}`, email: `${tag}${i}@example.com`, name: `Pessoa ${i}` });
  const small = [gzipSync([0, 1, 2].map(event('a')).join('\n') + '\n'), gzipSync(event('b')(0) + '\n')];
  // Large enough for the map workers, in two members as `cat a.gz b.gz` makes.
  const large = [
    gzipSync(overMapWorkerSize(event('a')).join('\n') + '\n'),
    gzipSync(overMapWorkerSize(event('b')).join('\n') + '\n'),
  ];
  const count = (members: Buffer[]) => members.map((m) => gunzipSync(m).toString().split('\n').length - 1);
  const garbage = Buffer.from('\n-- exported by crm-tool, 2 files --\n');
  const csv = [gzipSync('event_id,email\ne1,a@example.com\n'), gzipSync('e2,b@example.com\ne3,c@example.com\n')];
  const cases: Array<[string, Buffer[], Buffer, number, string[]]> = [
    ['small.jsonl.gz', small, garbage, 3, ['-']],
    ['large.jsonl.gz', large, garbage, 3, []],
    ['padded.jsonl.gz', large, Buffer.alloc(4096), 0, []],
    ['export.csv.gz', csv, garbage, 3, ['-', '--format', 'csv']],
    ['padded.csv.gz', csv, Buffer.alloc(512), 0, []],
  ];
  for (const [name, members, tail, code, stdin] of cases) {
    const bytes = Buffer.concat([...members, tail]);
    const lines = name.endsWith('.csv.gz') ? 4 : count(members).reduce((n, x) => n + x, 0);
    const records = name.endsWith('.csv.gz') ? 3 : lines;
    const file = join(dir, name);
    writeFileSync(file, bytes);
    for (const args of stdin.length ? [[file], stdin] : [[file]]) {
      const what = `${name} ${args[0] === '-' ? 'on stdin' : 'as a file'}`;
      const r = await runCli(['push', ...args, '--dry-run', '--json', '--ledger', join(dir, 'l.db')], {
        input: args[0] === '-' ? bytes : undefined,
        timeoutMs: 120_000,
      });
      assert.equal(r.code, code, `${what}: ${r.stderr}`);
      const doc = jsonReport(r);
      assert.equal(doc.counts.read, records, what);
      assert.equal(doc.counts.new, records, what);
      const source = args[0] === '-' ? 'stdin' : file;
      const offset = bytes.length - tail.length;
      if (code === 3)
        assert.deepEqual(
          doc.unread,
          [
            {
              source,
              line: lines + 1,
              reason: `the bytes from byte ${offset} of the compressed file on, after its last whole gzip member, are not gzip data (trailing garbage): not read`,
            },
          ],
          what,
        );
      else
        assert.deepEqual(
          doc.readAs[0]!.notes,
          [
            `${tail.length} zero bytes after the last gzip member (from byte ${offset}) were ignored: padding, as gzip -dc ignores it`,
          ],
          what,
        );
    }
  }
  const human = await runCli(['push', join(dir, 'small.jsonl.gz'), '--dry-run', '--ledger', join(dir, 'l.db')]);
  assert.equal(human.code, 3);
  assert.match(
    human.stdout,
    /small\.jsonl\.gz from line 5 to the end: the bytes from byte \d+ of the compressed file on/,
  );
});

/** The event time the ledger holds for each key, as `ledger export` gives them. */
async function eventTimes(ledger: string, env: Record<string, string>): Promise<Record<string, string | null>> {
  const r = await runCli(['ledger', 'export', '--ledger', ledger, '--output', '-'], { env });
  assert.equal(r.code, 0, r.stderr);
  const rows = r.stdout
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { key: string; event_time: string | null });
  return Object.fromEntries(rows.map((x) => [x.key, x.event_time]));
}

test('times read the same whatever TZ the machine has: zone-less ones in UTC or --timezone, day/month as the field shows', async () => {
  const dir = tmpDir();
  const times: Array<[string, string]> = [
    ['e1', '12/25/2024 10:00'], // its month/day: this field's dates are month/day
    ['e2', '03/04/2024 09:00'], // 4 March, not 3 April
    ['e3', '2024-03-01 10:00:00'],
    ['e4', '2024-03-01T10:00:00'],
    ['e5', '2024-03-01'],
    ['e6', '1709287200'],
    ['e7', '1709287200123'],
    ['e8', '2024-03-01T10:00:00.000Z'],
    ['e9', '2024-03-01T10:00:00-03:00'],
    ['e10', 'Fri, 01 Mar 2024 10:00:00 GMT'],
    ['e11', '2024-02-30'], // impossible: invalid
    ['e12', '25/12/2024'], // impossible read month/day: invalid
    ['e13', '2024-03-01T25:00:00'], // hour 25: invalid
  ];
  const input = join(dir, 'events.jsonl');
  writeFileSync(
    input,
    times.map(([id, t], i) => JSON.stringify({ event_id: id, email: `p${i}@example.com`, created_at: t })).join('\n') +
      '\n',
  );
  const runs: Array<{ tz: string; args: string[] }> = [
    { tz: 'America/Sao_Paulo', args: [] },
    { tz: 'Asia/Tokyo', args: [] },
    { tz: 'Asia/Tokyo', args: ['--timezone', 'America/Sao_Paulo'] },
    { tz: 'UTC', args: ['--timezone', 'America/Sao_Paulo'] },
  ];
  const results: Array<{ times: Record<string, string | null>; invalid: unknown; since: unknown; dates: unknown }> = [];
  for (const [i, { tz, args }] of runs.entries()) {
    const env = { TZ: tz };
    const ledger = join(dir, `l${i}.db`);
    const r = await runCli(
      ['push', input, ...args, '--sink', 'jsonl', '--output', join(dir, `out${i}.jsonl`), '--json', '--ledger', ledger],
      { env },
    );
    assert.equal(r.code, 0, r.stderr);
    const doc = jsonReport(r);
    assert.equal(doc.counts.new, 10, `TZ=${tz}: ${JSON.stringify(doc.examples)}`);
    const since = await runCli(
      ['push', input, ...args, '--since', '2024-03-01T05:00', '--dry-run', '--json', '--ledger', join(dir, 'none.db')],
      { env },
    );
    assert.equal(since.code, 0, since.stderr);
    results.push({
      times: await eventTimes(ledger, env),
      invalid: doc.examples.invalid?.map((e) => [e.line, e.reason]),
      since: jsonReport(since).counts,
      dates: [doc.dates, doc.readAs[0]!.dates],
    });
  }
  // Without --timezone, in UTC on every machine.
  assert.deepEqual(results[0]!.times, {
    e1: '2024-12-25T10:00:00.000Z',
    e2: '2024-03-04T09:00:00.000Z',
    e3: '2024-03-01T10:00:00.000Z',
    e4: '2024-03-01T10:00:00.000Z',
    e5: '2024-03-01T00:00:00.000Z',
    e6: '2024-03-01T10:00:00.000Z',
    e7: '2024-03-01T10:00:00.123Z',
    e8: '2024-03-01T10:00:00.000Z',
    e9: '2024-03-01T13:00:00.000Z',
    e10: '2024-03-01T10:00:00.000Z',
  });
  assert.deepEqual(results[1], results[0]);
  assert.deepEqual(results[0]!.invalid, [
    [11, "created_at: '2024-02-30' is no date: February 2024 has 29 days, not 30"],
    [
      12,
      "created_at: '25/12/2024' is no date: read month/day (as its dates show: '12/25/2024 10:00' at line 1): there is no month 25",
    ],
    [13, "created_at: '2024-03-01T25:00:00' is no date: hour 25 is past 23"],
  ]);
  assert.deepEqual(results[0]!.dates, [
    { timezone: 'UTC', timezoneFrom: 'the default', order: 'day/month', orderFrom: 'the default' },
    [
      {
        field: 'created_at',
        order: 'month/day',
        orderFrom: "as its dates show: '12/25/2024 10:00' at line 1",
        zoneless: true,
      },
    ],
  ]);
  // --since 2024-03-01T05:00 is 05:00 UTC: e5 (midnight) is before it, whatever the machine.
  assert.equal((results[0]!.since as { filtered: number }).filtered, 1);
  // With --timezone, in São Paulo (UTC-3) on every machine: zone-less times three hours later, the others as they were.
  assert.deepEqual(results[3], results[2]);
  assert.deepEqual(results[2]!.times, {
    ...results[0]!.times,
    e1: '2024-12-25T13:00:00.000Z',
    e2: '2024-03-04T12:00:00.000Z',
    e3: '2024-03-01T13:00:00.000Z',
    e4: '2024-03-01T13:00:00.000Z',
    e5: '2024-03-01T03:00:00.000Z',
  });
  // --since 2024-03-01T05:00 in São Paulo is 08:00 UTC: e5 (03:00 UTC) is before it.
  assert.equal((results[2]!.since as { filtered: number }).filtered, 1);
});

test('the order of day and month is decided per field from the first records, before the first is decided: file, map workers, stdin', async () => {
  const dir = tmpDir();
  // A Brazilian export: every date reads either way but row 600's (25/12: day/month). After the first thousand rows
  // some dates are month/day, which day/month makes impossible: invalid, saying why, never rolled over.
  const rows = ['id,email,Data de criação,notes'];
  let impossible = 0;
  for (let i = 1, bytes = 0; bytes < 9 << 20; i++) {
    const late = i > 1000 && i % 5000 === 0;
    if (late) impossible++;
    const date = i === 600 ? '25/12/2024 10:00' : late ? '12/25/2024 10:00' : '03/04/2024 10:00';
    rows.push(`r${i},p${i}@example.com,${date},${'x'.repeat(100)}`);
    bytes += rows[i]!.length + 1;
  }
  const csv = join(dir, 'export.csv');
  writeFileSync(csv, rows.join('\n') + '\n');
  // 03/04/2024 read day/month is 3 April, on or after --since; read month/day it would be 4 March, before it.
  const r = await runCli(['push', csv, '--since', '2024-04-01', '--dry-run', '--json', '--ledger', join(dir, 'l.db')], {
    timeoutMs: 120_000,
  });
  assert.equal(r.code, 0, r.stderr);
  const doc = jsonReport(r);
  assert.deepEqual(
    [doc.counts.new, doc.counts.invalid, doc.counts.filtered],
    [rows.length - 1 - impossible, impossible, 0],
  );
  assert.deepEqual(doc.examples.invalid![0], {
    source: csv,
    line: 5001,
    key: 'r5000',
    reason:
      "Data de criação: '12/25/2024 10:00' is no date: read day/month (as its dates show: '25/12/2024 10:00' at line 601): there is no month 25",
  });
  assert.deepEqual(doc.readAs[0]!.dates, [
    {
      field: 'Data de criação',
      order: 'day/month',
      orderFrom: "as its dates show: '25/12/2024 10:00' at line 601",
      zoneless: true,
    },
  ]);

  // On stdin, the third record shows month/day: the first is read so too (2 January, before --since), not 1 February.
  const lines = [
    ['e1', '01/02/2024'],
    ['e2', '02/03/2024'],
    ['e3', '12/31/2024'],
  ].map(([id, t], i) => JSON.stringify({ event_id: id, email: `s${i}@example.com`, created_at: t }));
  const s = await runCli(
    ['push', '-', '--format', 'jsonl', '--since', '2024-01-15', '--dry-run', '--json', '--ledger', join(dir, 's.db')],
    { input: lines.join('\n') + '\n' },
  );
  assert.equal(s.code, 0, s.stderr);
  const sdoc = jsonReport(s);
  assert.deepEqual([sdoc.counts.new, sdoc.counts.filtered, sdoc.counts.invalid], [2, 1, 0]);
  assert.deepEqual(
    sdoc.examples.filtered?.map((e) => [e.line, e.reason]),
    [[1, 'before --since']],
  );

  // Where no date shows the order: --date-order, else the default country's (US: month/day), else day/month.
  const ambiguous = join(dir, 'ambiguous.jsonl');
  writeFileSync(ambiguous, JSON.stringify({ event_id: 'a1', email: 'a@example.com', created_at: '01/02/2024' }) + '\n');
  for (const [args, filtered] of [
    [[], 0],
    [['--date-order', 'mdy'], 1],
    [['--default-country', 'US'], 1],
    [['--default-country', 'US', '--date-order', 'dmy'], 0],
  ] as const) {
    const a = await runCli(
      ['push', ambiguous, ...args, '--since', '2024-01-15', '--dry-run', '--json', '--ledger', join(dir, 'a.db')],
      { env: { LANG: 'en_US.UTF-8' } },
    );
    assert.equal(a.code, 0, a.stderr);
    assert.equal(jsonReport(a).counts.filtered, filtered, args.join(' '));
  }
});
