// The parallel audit (map workers, worker-side ledger lookups, spilled run memory) must decide exactly as the
// sequential one: same decisions, same order, same lines, same reasons.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { copyFileSync, existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createGunzip, gzipSync } from 'node:zlib';
import { join } from 'node:path';
import { decideInputs, type DecideInputsOptions } from '../../src/engine/decide-inputs.js';
import { CsvCuts } from '../../src/engine/csv-cuts.js';
import { MapPool } from '../../src/engine/map-pool.js';
import { csvReadStats } from '../../src/engine/read-csv-parallel.js';
import { lookUpStats } from '../../src/engine/decider.js';
import type { Decision } from '../../src/decide/types.js';
import { openLedger } from '../../src/ledger/ledger.js';
import type { Settlement } from '../../src/ledger/types.js';
import { createMapper } from '../../src/mapping/map-record.js';
import { downstreamKey } from '../../src/mapping/keys.js';
import { ReportCollector } from '../../src/report/run-report.js';
import type { LeadEvent } from '../../src/mapping/types.js';
import { tmpDir } from '../helpers/tmp.js';
import type { RawUnread } from '../../src/sources/types.js';

const ROOT = join(import.meta.dirname, '..', '..');

// Deterministic input of several MB (so it spans many 1 MB chunks): retries, people reappearing under new ids,
// bad lines, blank lines, CRLF, a BOM, and one line longer than a read chunk.
function makeInput(): string {
  let seed = 7;
  const rnd = () => (seed = (seed * 1664525 + 1013904223) >>> 0) / 4294967296;
  const lines: string[] = [];
  const ev = (id: string, email: string, extra = '') =>
    `{"event_id":"${id}","type":"lead.created","created_at":"2026-10-01T00:00:00Z","data":{"email":"${email}","name":"Ana  Lima","phone":"+55 11 9${String(10000000 + Math.floor(rnd() * 89999999))}"${extra}}}`;
  for (let i = 0; i < 30000; i++) {
    const r = rnd();
    if (r < 0.15 && i > 0)
      lines.push(lines[Math.floor(rnd() * lines.length)]!); // a retry (or a repeated bad line)
    else if (r < 0.2)
      lines.push(ev(`evt_${i}`, `p${Math.floor(rnd() * i)}@example.com`)); // same person, new id
    else if (r < 0.205) lines.push('{"event_id": "broken", "data": {');
    else if (r < 0.21) lines.push('');
    else if (r < 0.212) lines.push('[1,2]');
    else if (r < 0.215) lines.push(`{"event_id":"evt_${i}","data":{"name":"nobody"}}`);
    else lines.push(ev(`evt_${i}`, `p${i}@example.com`));
    if (i === 12345) lines.push(ev(`evt_long`, 'long@example.com', `,"note":"${'x'.repeat(1_500_000)}"`));
  }
  return '\ufeff' + lines.map((l, i) => (i % 7 === 0 ? l + '\r' : l)).join('\n');
}

function seedLedger(path: string, input: string): void {
  const l = openLedger(path)!;
  const run = l.startRun('push', {}, { exclusive: true });
  const map = createMapper({ config: {} });
  const events = new Map<string, LeadEvent>();
  for (const text of input.slice(1).split('\n')) {
    try {
      const e = map({ kind: 'record', source: 's', line: 1, fields: JSON.parse(text) as Record<string, unknown> });
      if (e.kind === 'event' && !events.has(e.key)) events.set(e.key, e);
    } catch {
      // bad lines are not seeded
    }
  }
  const claim = (key: string, e: LeadEvent, payloadHash = e.payloadHash) =>
    l.claimNew(
      [
        {
          key,
          keyKind: 'id',
          payloadHash,
          naturalKey: e.naturalKey,
          downstreamKey: key,
          leadJson: JSON.stringify(e.lead),
          source: 's',
          line: 1,
        },
      ],
      run,
      'sink',
    );
  const settled: Settlement[] = [];
  let i = 0;
  for (const [key, e] of events) {
    i++;
    if (i % 3 === 0) {
      claim(key, e, i % 300 === 0 ? '0123456789abcdef'.repeat(2) : e.payloadHash); // some conflicts with the ledger
      const k = i % 33;
      if (k !== 9)
        settled.push({
          key,
          status: k === 0 ? 'failed' : k === 6 ? 'in_doubt' : 'sent',
          failure: k === 0 ? (i % 2 ? 'retryable' : 'permanent') : undefined,
        });
    } else if (i % 97 === 1) claim(`old_${key}`, e); // the person delivered by another event
  }
  l.settle(settled, run);
  l.finishRun(run, 'done', {});
  l.close();
}

// Decisions as plain data, their events' lazily read fields (lead, hash, type, time) included.
// The parts of the inputs the last decide() could not read.
let unread: RawUnread[] = [];

async function decide(o: Partial<DecideInputsOptions> & { inputs: string[] }): Promise<Decision[]> {
  const out: Decision[] = [];
  unread = [];
  for await (const batch of decideInputs({ read: {}, map: { config: {} }, onUnread: (u) => unread.push(u), ...o })) {
    for (const d of batch) {
      const e = d.event;
      out.push(
        e
          ? {
              ...d,
              event: {
                ...e,
                naturalKey: e.naturalKey,
                payloadHash: e.payloadHash,
                lead: e.lead,
                leadJson: e.leadJson,
                type: e.type,
                occurredAt: e.occurredAt,
              },
            }
          : d,
      );
    }
  }
  return out;
}

/**
 * Reads inputs as a push does (workers taking payload hashes and downstream keys for namespace 'acme'): how many events,
 * and the lines of those whose downstream key is not the one the sender would take.
 */
async function downstreamKeysOfPush(
  inputs: string[],
  ledger?: DecideInputsOptions['ledger'],
): Promise<{ events: number; missed: number[] }> {
  let events = 0;
  const missed: number[] = [];
  const o = {
    inputs,
    read: {},
    map: { config: {} },
    ledger,
    workers: 2,
    hashPayloads: true,
    downstreamNamespace: 'acme',
  };
  for await (const batch of decideInputs(o))
    for (const d of batch)
      if (d.event) {
        events++;
        if (d.event.downstreamKey !== downstreamKey('acme', d.event.key)) missed.push(d.line);
      }
  return { events, missed };
}

// The generated input, made once a file: it is the same text every time (a fixed seed).
let inputText: string | undefined;
const theInput = (): string => (inputText ??= makeInput());

// The generated input and a ledger seeded from it, in a fresh folder. The ledger is seeded once and copied (closed,
// its WAL is in the file; a WAL left beside it is copied too): seeding maps the whole input and claims a third of it.
let seeded: { input: string; ledgerFile: string } | undefined;
const seedDir = tmpDir(); // the file's own: removed when the file ends, not when the first test that seeds does
function seededInput(): { input: string; ledgerFile: string } {
  if (!seeded) {
    const dir = seedDir;
    seeded = { input: join(dir, 'events.jsonl'), ledgerFile: join(dir, 'ledger.db') };
    writeFileSync(seeded.input, theInput());
    seedLedger(seeded.ledgerFile, theInput());
  }
  const dir = tmpDir();
  const ledgerFile = join(dir, 'ledger.db');
  copyFileSync(seeded.ledgerFile, ledgerFile);
  if (existsSync(`${seeded.ledgerFile}-wal`)) copyFileSync(`${seeded.ledgerFile}-wal`, `${ledgerFile}-wal`);
  return { input: seeded.input, ledgerFile };
}

function assertSameDecisions(parallel: Decision[], sequential: Decision[], what = ''): void {
  assert.equal(parallel.length, sequential.length, what);
  for (let i = 0; i < sequential.length; i++)
    assert.deepEqual(parallel[i], sequential[i], `${what}decision ${i} (line ${sequential[i]!.line})`);
}

test('a read-only ledger, indexed or looked up in SQLite, by workers or in-thread: the same decisions', async () => {
  const { input, ledgerFile } = seededInput();
  const ledger = openLedger(ledgerFile, { readonly: true })!;
  try {
    // The reference: read in this thread, every block looked up in SQLite by the decider.
    const sequential = await decide({ inputs: [input], ledger, workers: 0, indexMaxRows: 0 });
    const kinds = new Set(sequential.map((d) => d.kind));
    for (const k of ['new', 'duplicate', 'duplicate_in_input', 'conflict', 'known_lead', 'invalid'] as const)
      assert.ok(kinds.has(k), `the input exercises ${k}`);
    assert.ok(
      sequential.some((d) => d.retry),
      'the input exercises a retry',
    );
    assert.ok(
      sequential.some((d) => d.kind === 'conflict' && d.reason.startsWith('ledger holds this key')),
      'the input exercises a conflict with the ledger',
    );
    assert.ok(
      sequential.some((d) => d.kind === 'known_lead' && d.reason.includes('by event old_')),
      'the input exercises a person the ledger delivered',
    );
    assertSameDecisions(await decide({ inputs: [input], ledger, workers: 0 }), sequential, 'in-thread, indexed: ');
    assertSameDecisions(
      await decide({ inputs: [input], ledger, workers: 2, memoryCapacity: 1000 }),
      sequential,
      'workers, indexed: ',
    );
    assertSameDecisions(
      await decide({ inputs: [input], ledger, workers: 2, memoryCapacity: 1000, indexMaxRows: 0 }),
      sequential,
      'workers, SQLite: ',
    );
    // Small blocks, more than are in flight before the ledger reaches the workers: the first ones are looked up by
    // the decider, the later ones by the workers, in the index or in SQLite.
    for (const indexMaxRows of [undefined, 0]) {
      const before = { ...lookUpStats };
      assertSameDecisions(
        await decide({ inputs: [input], ledger, workers: 2, blockBytes: 32 << 10, indexMaxRows }),
        sequential,
        `small blocks, ${indexMaxRows === 0 ? 'SQLite' : 'indexed'}: `,
      );
      assert.ok(lookUpStats.here > before.here, 'blocks looked up by the decider');
      assert.ok(lookUpStats.byWorkers > before.byWorkers, 'blocks looked up by the workers');
    }
  } finally {
    ledger.close();
  }
});

// A push that holds its ledger alone decides through a snapshot of it (only what it may hold is asked of SQLite): the
// same decisions as asking SQLite every key, on the generated input, by workers or in-thread.
test('a writing run with the ledger to itself decides as one asking SQLite every key', async () => {
  const { input, ledgerFile } = seededInput();
  const ledger = openLedger(ledgerFile)!;
  try {
    const run = ledger.startRun('push', {}, { exclusive: true });
    const asking = await decide({ inputs: [input], ledger, workers: 0 });
    assert.ok(new Set(asking.map((d) => d.kind)).size >= 6, 'the input exercises every decision');
    for (const workers of [0, 2]) {
      const before = lookUpStats.filtered;
      assertSameDecisions(
        await decide({ inputs: [input], ledger, workers, exclusiveRun: run }),
        asking,
        `${workers}: `,
      );
      assert.ok(lookUpStats.filtered > before, 'blocks looked up through the snapshot');
    }
    // A ledger the index cannot hold (here: past indexMaxRows) is asked as before.
    const before = lookUpStats.filtered;
    assertSameDecisions(await decide({ inputs: [input], ledger, exclusiveRun: run, indexMaxRows: 0 }), asking);
    assert.equal(lookUpStats.filtered, before);
  } finally {
    ledger.close();
  }
});

// What a dry-run without report rows gets: the decider counts into the collector, making only the examples whole.
async function count(o: Partial<DecideInputsOptions> & { inputs: string[] }): Promise<ReportCollector> {
  const tally = new ReportCollector();
  for await (const batch of decideInputs({ read: {}, map: { config: {} }, ...o, tally })) assert.equal(batch.length, 0);
  return tally;
}

// A first input of 8 MiB or more boots the workers while it is opened, before anything else is known of it: they must
// still be started with the push's options, or they take no downstream key (the sender then takes each itself).
test("a push's large first input, whose workers boot early: they still take every event's downstream key", async () => {
  const dir = tmpDir();
  const input = join(dir, 'big.jsonl');
  const one = theInput();
  const parts: string[] = [];
  for (let bytes = 0; bytes < 9 << 20; bytes += one.length) parts.push(one);
  writeFileSync(input, parts.join(''));
  const { events, missed } = await downstreamKeysOfPush([input]);
  assert.ok(events > 10_000, `${events} events`);
  assert.deepEqual(missed, [], 'every event has its downstream key from the workers');
});

test('counting gives the counts, per-source counts and examples that the decisions give, on every path', async () => {
  const { input, ledgerFile } = seededInput();
  const ledger = openLedger(ledgerFile, { readonly: true })!;
  try {
    const reference = new ReportCollector();
    for (const d of await decide({ inputs: [input, input], ledger, workers: 0, indexMaxRows: 0 })) reference.add(d);
    assert.ok(Object.keys(reference.examples).length >= 5, 'examples of most kinds');
    for (const o of [
      { workers: 0, indexMaxRows: 0 },
      { workers: 0 },
      { workers: 2, memoryCapacity: 1000 },
      { workers: 2, indexMaxRows: 0 },
    ]) {
      const counted = await count({ inputs: [input, input], ledger, ...o });
      const what = JSON.stringify(o);
      assert.deepEqual(counted.counts, reference.counts, what);
      assert.deepEqual(counted.perSource, reference.perSource, what);
      assert.deepEqual(counted.examples, reference.examples, what);
    }
  } finally {
    ledger.close();
  }
});

test('with a writable ledger (a push), workers map and the deciding thread looks blocks up: same decisions', async () => {
  const { input, ledgerFile } = seededInput();
  const ledger = openLedger(ledgerFile)!;
  try {
    assert.equal(ledger.readonly, false);
    const sequential = await decide({ inputs: [input], ledger, workers: 0 });
    const parallel = await decide({ inputs: [input], ledger, workers: 2, memoryCapacity: 1000 });
    assert.ok(sequential.some((d) => d.kind === 'duplicate') && sequential.some((d) => d.kind === 'known_lead'));
    assertSameDecisions(parallel, sequential);
    // As a push reads: the workers take the payload hashes, which must be the ones the deciding thread would take.
    const hashed = await decide({ inputs: [input], ledger, workers: 2, memoryCapacity: 1000, hashPayloads: true });
    assertSameDecisions(hashed, sequential, 'payload hashes taken by the workers: ');
    // And the downstream keys, for the run's namespace: each is the one the sender would take.
    const { events, missed } = await downstreamKeysOfPush([input], ledger);
    assert.deepEqual(missed, [], 'lines whose event lacks its downstream key');
    assert.equal(events, sequential.filter((d) => d.event).length);
  } finally {
    ledger.close();
  }
});

test(
  'a named pipe is read as a stream, not at positions like a file: the same decisions',
  { skip: process.platform === 'win32' },
  async () => {
    const dir = tmpDir();
    const input = join(dir, 'events.jsonl');
    writeFileSync(input, theInput());
    const fifo = join(dir, 'events.pipe');
    execFileSync('mkfifo', [fifo]);
    // What bash's <(…) hands over: the writer fills the pipe while the reader reads it.
    const writer = spawn('sh', ['-c', 'cat "$1" > "$2"', 'sh', input, fifo]);
    const written = new Promise((resolve) => writer.on('close', resolve));
    const fromPipe = await decide({ inputs: [fifo], workers: 2 });
    assert.equal(await written, 0);
    const fromFile = await decide({ inputs: [input], workers: 2 });
    assert.deepEqual(
      fromPipe.map((d) => [d.kind, d.line, d.key, d.reason]),
      fromFile.map((d) => [d.kind, d.line, d.key, d.reason.replaceAll(input, fifo)]),
    );
  },
);

test('without a ledger file, and with one worker, the parallel path still matches', async () => {
  const dir = tmpDir();
  const input = join(dir, 'events.jsonl');
  writeFileSync(input, theInput());
  const sequential = await decide({ inputs: [input], workers: 0 });
  const parallel = await decide({ inputs: [input, input], workers: 1 });
  assert.deepEqual(parallel.slice(0, sequential.length), sequential);
  const second = parallel.slice(sequential.length);
  assert.equal(second.length, sequential.length);
  assert.ok(
    second.every((d) => d.kind === 'duplicate_in_input' || d.kind === 'invalid' || d.kind === 'conflict'),
    'the second copy repeats the first',
  );
});

test('CSV streamed to a map worker decides exactly as in-thread: quoted newlines, CRLF, bad rows, an unclosed quote', async () => {
  const dir = tmpDir();
  const input = join(dir, 'leads.csv');
  const rows = ['\ufeffevent_id,email,name,phone,notes'];
  for (let i = 0; i < 40000; i++) {
    const r = i % 50;
    if (r === 1)
      rows.push(
        `e${i},p${i}@example.com,"Lima, Ana","+55 11 91234${String(i % 10000).padStart(4, '0')}","line one\r\nline two"`,
      );
    else if (r === 2)
      rows.push(rows[rows.length - 2]!); // a retry of the row two rows up
    else if (r === 3) rows.push('');
    else if (r === 4) rows.push(`e${i},only,three`);
    else if (r === 5) rows.push(`e${i},p${i % 700}@example.com,5" screen,,stray quote`);
    else rows.push(`e${i},p${i}@example.com,Ana Lima,+55 11 9${String(10000000 + i)},`);
  }
  rows.push('e_last,last@example.com,"never closed,,');
  writeFileSync(input, rows.join(rows.length % 2 ? '\r\n' : '\n'));
  const sequential = await decide({ inputs: [input], workers: 0 });
  const parallel = await decide({ inputs: [input], workers: 2, memoryCapacity: 500 });
  assert.ok(
    sequential.length > 39000,
    `${sequential.length} decisions: ${JSON.stringify(sequential.slice(0, 3).map((d) => d.reason))}`,
  );
  assert.ok(sequential.some((d) => d.kind === 'duplicate_in_input') && sequential.some((d) => d.kind === 'invalid'));
  assertSameDecisions(parallel, sequential);
});

test('a truncated gzip: the parallel path decides every record before the damage and fails at the same line', async () => {
  const dir = tmpDir();
  const input = join(dir, 'events.jsonl.gz');
  const gz = gzipSync(theInput());
  writeFileSync(input, gz.subarray(0, Math.floor(gz.length * 0.6)));
  const sequential = await decide({ inputs: [input], workers: 0 });
  const sequentialUnread = unread;
  const parallel = await decide({ inputs: [input], workers: 2 });
  assert.equal(sequentialUnread.length, 1);
  assert.match(sequentialUnread[0]!.reason, /^corrupt or truncated gzip data/);
  assert.ok(sequential.length > 1000);
  assert.deepEqual(parallel, sequential);
  assert.deepEqual(unread, sequentialUnread);
});

// Well-formed CSV of several MB: quoted delimiters, "" escapes, line breaks (LF and CRLF) inside quotes, blank
// lines (one before the header), a BOM, accents; the rows repeat so decisions include duplicates.
function regularCsv(rows: number, delimiter: string, eol: string): string {
  const out = [
    `${delimiter === ',' ? '\ufeff' : ''}${eol}event_id${delimiter}email${delimiter}name${delimiter}phone${delimiter}notes`,
  ];
  for (let i = 0; i < rows; i++) {
    const r = i % 40;
    if (r === 7) {
      out.push(out[out.length - 1]!); // a retry of the row before
      continue;
    }
    const id = `e${i}`;
    const notes =
      r === 1
        ? `"said ""hi""${delimiter} then left"`
        : r === 2
          ? `"line one${eol}line two\nline three"`
          : r === 3
            ? '""'
            : r === 4
              ? 'São Paulo'
              : '';
    if (r === 5) out.push('');
    out.push(
      [
        id,
        `p${i % 900}@example.com`,
        r === 6 ? `"Lima${delimiter} Ana"` : 'Ana Lima',
        `+55 11 9${String(10000000 + i)}`,
        notes,
      ].join(delimiter),
    );
  }
  return out.join(eol) + eol;
}

test('well-formed CSV is cut into blocks that every worker parses, and decides exactly as in-thread', async () => {
  const dir = tmpDir();
  for (const [name, delimiter, eol, encoding] of [
    ['lf.csv', ',', '\n', 'utf8'],
    ['crlf.csv', ';', '\r\n', 'latin1'],
  ] as const) {
    const input = join(dir, name);
    writeFileSync(input, Buffer.from(regularCsv(60_000, delimiter, eol), encoding));
    const sequential = await decide({ inputs: [input], workers: 0 });
    const before = { ...csvReadStats };
    const parallel = await decide({ inputs: [input], workers: 2, memoryCapacity: 2000 });
    assert.ok(
      csvReadStats.blocks - before.blocks >= 3,
      `${name}: cut into ${csvReadStats.blocks - before.blocks} blocks`,
    );
    assert.equal(csvReadStats.streamed, before.streamed, `${name}: nothing streamed`);
    assert.ok(
      sequential.some((d) => d.kind === 'duplicate_in_input') && sequential.some((d) => d.kind === 'known_lead'),
    );
    assertSameDecisions(parallel, sequential, `${name}: `);
  }
});

test('CSV written with backslash escapes is streamed to one worker, never cut, and decides exactly as in-thread', async () => {
  const dir = tmpDir();
  const input = join(dir, 'leads.csv');
  // A PHP export: each cell json_encode()d, so a cell holding JSON is full of \" (which a cut by RFC 4180 would misread).
  const cell = (v: string | null) => (v === null ? 'null' : JSON.stringify(v).replace(/\//g, '\\/'));
  const rows = ['"id","nome","email","telefone","dados"'];
  for (let i = 0; i < 30_000; i++) {
    const dados = JSON.stringify({ plano: i % 3 ? 'pro' : 'básico', pagina: `https://example.com/lp/${i}` });
    rows.push(
      [
        String(i % 997 === 0 ? i - 1 : i),
        cell(i % 5 === 0 ? 'Marcos "Marquinhos" Souza' : 'João Batista'),
        cell(i % 11 === 0 ? null : `p${i % 20_000}@example.com.br`),
        cell(i % 7 === 0 ? null : `+55 11 9${String(10000000 + i)}`),
        cell(dados).replace(/[\u007f-\uffff]/g, (c) => '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0')),
      ].join(','),
    );
  }
  writeFileSync(input, rows.join('\n') + '\n');
  const sequential = await decide({ inputs: [input], workers: 0 });
  const before = { ...csvReadStats };
  const parallel = await decide({ inputs: [input], workers: 2, memoryCapacity: 2000, blockBytes: 1 << 16 });
  assert.equal(csvReadStats.blocks, before.blocks, 'no block cut');
  assert.equal(sequential.length, 30_000);
  assert.ok(sequential.every((d) => d.kind !== 'invalid' || /no email/.test(d.reason ?? '')));
  assert.ok(sequential.some((d) => d.kind === 'duplicate_in_input' || d.kind === 'conflict'));
  assertSameDecisions(parallel, sequential);
});

test('CSV that leaves the well-formed grammar midway is streamed from the last safe cut, and still decides as in-thread', async () => {
  const dir = tmpDir();
  const good = regularCsv(40_000, ',', '\n');
  const lines = good.split('\n');
  const at = Math.floor(lines.length * 0.6);
  lines[at] = lines[at]!.replace('Ana Lima', '5" screen'); // a stray quote: csv-parse's relaxed rules apply from here
  const stray = join(dir, 'stray.csv');
  writeFileSync(stray, lines.join('\n'));
  const unclosed = join(dir, 'unclosed.csv');
  writeFileSync(unclosed, good + 'e_last,last@example.com,"never closed,,\nmore,rows\n');
  for (const input of [stray, unclosed]) {
    const sequential = await decide({ inputs: [input], workers: 0 });
    const before = { ...csvReadStats };
    const parallel = await decide({ inputs: [input], workers: 2 });
    assert.ok(
      csvReadStats.blocks - before.blocks >= 2,
      `${input}: blocks before the trouble: ${JSON.stringify([before, csvReadStats])}`,
    );
    if (input === stray) assert.equal(csvReadStats.streamed - before.streamed, 1, 'the rest is streamed');
    else {
      // The quote never closes: its row is given up, and the row after it is read (a stray quote's recovery).
      assert.match(
        sequential[sequential.length - 2]!.reason,
        /^stray quote\? a quote opened at line \d+ is never closed/,
      );
      assert.equal(sequential[sequential.length - 1]!.reason, 'expected 5 columns, found 2');
    }
    assertSameDecisions(parallel, sequential);
  }
});

test('generated exports, mapped by the fast paths in the workers (JSONL and CSV), decide exactly as in-thread', async () => {
  const dir = tmpDir();
  const gen = (...args: string[]) =>
    execFileSync(process.execPath, [join(ROOT, 'bench', 'gen-events.mjs'), ...args], {
      encoding: 'utf8',
      maxBuffer: 1 << 26,
    });
  // The ledger holds some of the events, with their payload hashes (a few altered: conflicts) and people.
  const jsonl = gen('40000', '--same-email', '0.1');
  const ledgerFile = join(dir, 'ledger.db');
  seedLedger(ledgerFile, '\ufeff' + jsonl);
  // Broken lines among them, without changing the generated events.
  const withBad = jsonl
    .split('\n')
    .map((l, i) => (i % 500 === 7 ? '{"event_id": "evt_bad", "data": {\n' + l : l))
    .join('\n');
  const ledger = openLedger(ledgerFile, { readonly: true })!;
  try {
    for (const [name, text] of [
      ['events.jsonl', withBad],
      ['events.csv', gen('40000', '--csv', '--same-email', '0.1')],
    ] as const) {
      const input = join(dir, name);
      writeFileSync(input, text);
      const sequential = await decide({ inputs: [input], ledger, workers: 0 });
      const kinds = new Set(sequential.map((d) => d.kind));
      for (const k of ['new', 'duplicate', 'duplicate_in_input', 'conflict', 'known_lead'] as const)
        assert.ok(kinds.has(k), `${name} exercises ${k}`);
      assertSameDecisions(
        await decide({ inputs: [input], ledger, workers: 2, memoryCapacity: 1000 }),
        sequential,
        `${name}: `,
      );
    }
  } finally {
    ledger.close();
  }
});

// Makes the cutter cut once inside a quoted field: after the first LF in a quoted "line one…" value in a chunk at or
// past `from` bytes. Returns a restore function and whether it cut.
function wrongCut(from: number): { restore: () => void; made: () => boolean } {
  const feed = CsvCuts.prototype.feed;
  let made = false;
  CsvCuts.prototype.feed = function (this: CsvCuts, chunk: Uint8Array): void {
    const self = this as unknown as { fed: number };
    const start = self.fed;
    feed.call(this, chunk);
    if (made || this.headerEnd < 0 || start < from || this.lastCut <= start) return;
    const text = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength).toString('latin1');
    const q = text.indexOf('"line one');
    const nl = q < 0 ? -1 : text.indexOf('\n', q);
    if (nl < 0 || start + nl + 1 >= this.lastCut) return;
    let lfs = 0;
    for (let i = nl + 1; i < this.lastCut - start; i++) if (text.charCodeAt(i) === 10) lfs++;
    this.lastCut = start + nl + 1;
    this.lastCutLines -= lfs;
    made = true;
  };
  return { restore: () => (CsvCuts.prototype.feed = feed), made: () => made };
}

test('a block cut inside a quoted field (were the cutter ever wrong) is read again as a stream: same decisions', async () => {
  const dir = tmpDir();
  const input = join(dir, 'cut.csv');
  writeFileSync(input, regularCsv(60_000, ',', '\n'));
  const sequential = await decide({ inputs: [input], workers: 0 });
  // The stream's jobs, in bytes: a worker holds the records of a whole job until it answers it.
  const submit = MapPool.prototype.submit;
  let largestStreamJob = 0;
  MapPool.prototype.submit = function (this: MapPool, pieces, first, csv, to) {
    const bytes = (Array.isArray(pieces) ? pieces : [pieces]).reduce((n, p) => n + p.length, 0);
    if (csv && csv.stream >= 0) largestStreamJob = Math.max(largestStreamJob, bytes);
    return submit.call(this, pieces, first, csv, to);
  };
  // In a later block, and in the input's first block (which holds the header itself).
  try {
    for (const from of [2 << 20, 0]) {
      const cut = wrongCut(from);
      try {
        const before = { ...csvReadStats };
        const parallel = await decide({ inputs: [input], workers: 2 });
        assert.ok(cut.made(), `a wrong cut was made past byte ${from}`);
        assert.equal(csvReadStats.streamed - before.streamed, 1, 'the input is read again as a stream from that block');
        assertSameDecisions(parallel, sequential, `cut past byte ${from}: `);
        // Everything read so far went to the stream in one job once, and the worker ran out of memory at times.
        assert.ok(
          largestStreamJob <= 1.1 * 2 ** 20,
          `the stream is fed a block at a time (a job of ${largestStreamJob} bytes)`,
        );
      } finally {
        cut.restore();
      }
    }
  } finally {
    MapPool.prototype.submit = submit;
  }
});

test(
  'map workers run at a lower priority than the deciding thread (Linux: nice 5 a worker thread)',
  { skip: process.platform !== 'linux' },
  async () => {
    const niceOf = (tid: string): number => {
      const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
      return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]); // field 19: nice
    };
    const before = new Set(readdirSync('/proc/self/task'));
    const pool = new MapPool(2, { map: { config: {} } });
    try {
      // A job answered means the worker is running, past its start-up.
      const mapper = '{"event_id":"e1","email":"a@b.io"}\n';
      for (const to of [0, 1]) await pool.submit(Buffer.from(mapper), true, undefined, to);
      const fresh = readdirSync('/proc/self/task').filter((t) => !before.has(t));
      const nice = fresh.map(niceOf);
      assert.equal(nice.filter((n) => n === 5).length, 2, `the new threads' nice values: ${nice.join(' ')}`);
      assert.equal(niceOf(String(process.pid)), 0, 'the deciding thread keeps its priority');
    } finally {
      await pool.close();
    }
  },
);

test('a truncated CSV gzip: every whole row before the damage is decided, in-thread and in parallel, and it fails at the same line', async () => {
  const dir = tmpDir();
  const input = join(dir, 'export.csv.gz');
  const rows = ['event_id,email,name,phone'];
  for (let i = 0; i < 120_000; i++)
    rows.push(i % 1000 === 7 ? '' : `e${i},p${i % 9000}@example.com,Ana Lima,+55 11 9${10000000 + i}`);
  const gz = gzipSync(rows.join('\n') + '\n');
  const cut = gz.subarray(0, Math.floor(gz.length * 0.6));
  writeFileSync(input, cut);
  // What can be read of it: the whole lines before the damage (the last one read is cut short).
  const text = await new Promise<string>((resolve) => {
    const parts: Buffer[] = [];
    const z = createGunzip();
    z.on('data', (b: Buffer) => parts.push(b));
    z.on('error', () => resolve(Buffer.concat(parts).toString()));
    z.end(cut);
  });
  const whole = text.slice(0, text.lastIndexOf('\n')).split('\n');
  const expected = whole.slice(1).filter((l) => l !== '').length;
  for (const workers of [0, 2]) {
    const decisions = await decide({ inputs: [input], workers });
    assert.equal(
      decisions.length,
      expected,
      `workers ${workers}: a decision for each of the ${expected} whole rows read`,
    );
    assert.deepEqual(
      unread.map((u) => [u.line, u.reason]),
      [[whole.length + 1, 'corrupt or truncated gzip data (unexpected end of file)']],
      `workers ${workers}`,
    );
  }
});

test('stray quotes and lines that are not UTF-8 in a large CSV decide the same in-thread, in blocks and streamed', async () => {
  const dir = tmpDir();
  const rows = ['event_id,email,name,phone,notes'];
  for (let i = 1; i <= 70_000; i++) {
    const name =
      i % 9000 === 11
        ? '"Ana Lima'
        : i % 9000 === 500
          ? '5" screen'
          : i % 7000 === 3
            ? 'Jos\u00e9 Concei\u00e7\u00e3o'
            : `Pessoa ${i}`;
    const notes = i % 5000 === 1 ? '"two\nlines"' : i % 6000 === 2 ? `"${'x\n'.repeat(150)}"` : '';
    rows.push(`e${i},p${i % 20000}@example.com,${name},+55119${String(10_000_000 + i).slice(-8)},${notes}`);
  }
  // Latin-1 bytes for the accented rows only: a UTF-8 file with some Windows-1252 lines.
  const parts = rows.map((r) => Buffer.from(r + '\n', /Jos/.test(r) ? 'latin1' : 'utf8'));
  const input = join(dir, 'mixed.csv');
  writeFileSync(input, Buffer.concat(parts));
  const sequential = await decide({ inputs: [input], workers: 0 });
  assert.ok(
    sequential.some((d) => d.reason.startsWith('stray quote?')),
    'stray quotes were found',
  );
  assert.ok(!sequential.some((d) => d.event?.lead.name?.includes('\ufffd')), 'no U+FFFD');
  for (const workers of [1, 2]) {
    const parallel = await decide({ inputs: [input], workers, memoryCapacity: 3000 });
    assertSameDecisions(parallel, sequential, `workers ${workers}: `);
  }
});

test('a JSONL line past 8 MB is unread, once, at its line, in-thread and by the workers; the lines after it are decided', async () => {
  const dir = tmpDir();
  const lines: string[] = [];
  for (let i = 0; i < 30_000; i++) lines.push(JSON.stringify({ event_id: `e${i}`, email: `p${i}@example.com` }));
  lines[100] = JSON.stringify({ event_id: 'big', email: 'big@example.com', blob: 'x'.repeat(9 << 20) });
  lines[20_000] = JSON.stringify({ event_id: 'big2', email: 'big2@example.com', blob: 'y'.repeat(9 << 20) });
  const input = join(dir, 'events.jsonl');
  writeFileSync(input, lines.join('\n') + '\n');
  writeFileSync(join(dir, 'events.jsonl.gz'), gzipSync(lines.join('\n')));
  const sequential = await decide({ inputs: [input], workers: 0 });
  const sequentialUnread = unread;
  assert.equal(sequential.length, 30_000 - 2);
  assert.deepEqual(
    sequentialUnread.map((u) => [u.line, u.toLine, u.reason]),
    [
      [101, 101, 'a line longer than 8 MB is not read'],
      [20_001, 20_001, 'a line longer than 8 MB is not read'],
    ],
  );
  for (const [file, workers] of [
    [input, 2],
    [join(dir, 'events.jsonl.gz'), 2],
    [join(dir, 'events.jsonl.gz'), 0],
  ] as const) {
    const parallel = await decide({ inputs: [file], workers });
    assert.deepEqual(
      parallel.map((d) => [d.line, d.key]),
      sequential.map((d) => [d.line, d.key]),
      `${file}, workers ${workers}`,
    );
    assert.deepEqual(
      unread.map((u) => [u.line, u.toLine]),
      sequentialUnread.map((u) => [u.line, u.toLine]),
      `${file}, workers ${workers}`,
    );
  }
});

test('JSONL lines that are not UTF-8 are read as Windows-1252 alike in-thread and by the workers, and counted alike', async () => {
  const dir = tmpDir();
  const parts: Buffer[] = [];
  // Latin-1 bytes for a few lines past the first MiB (in a mapped value, or in one the fast path skips): a UTF-8
  // file (as its first chunk shows) with some Windows-1252 lines.
  const odd = (i: number) => i > 20_000 && (i % 997 === 5 || i % 1500 === 7);
  for (let i = 0; i < 60_000; i++) {
    const line = JSON.stringify({
      event_id: `e${i}`,
      email: `p${i % 20_000}@example.com`,
      name: odd(i) && i % 997 === 5 ? `José Conceição ${i}` : `Pessoa ${i}`,
      note: odd(i) && i % 1500 === 7 ? 'São Paulo' : 'x',
    });
    parts.push(Buffer.from(line + '\n', odd(i) ? 'latin1' : 'utf8'));
  }
  const input = join(dir, 'mixed.jsonl');
  writeFileSync(input, Buffer.concat(parts));
  const notes: string[][] = [];
  const read = { onInputRead: (r: { notes: string[] }) => notes.push(r.notes) };
  const sequential = await decide({ inputs: [input], workers: 0, read });
  assert.ok(!sequential.some((d) => d.event?.lead.name?.includes('\ufffd')), 'no U+FFFD');
  const expected = Array.from({ length: 60_000 }, (_, i) => i).filter(odd);
  const names = expected.filter((i) => i % 997 === 5).length;
  assert.equal(sequential.filter((d) => d.event?.lead.name?.startsWith('José Conceição')).length, names);
  for (const o of [{ workers: 1 }, { workers: 2, blockBytes: 100_000 }]) {
    const parallel = await decide({ inputs: [input], read, ...o });
    assertSameDecisions(parallel, sequential, `${JSON.stringify(o)}: `);
  }
  assert.equal(notes.length, 3);
  assert.deepEqual(notes[0], [
    `${expected.length} lines (the first at line ${expected[0]! + 1}) were not UTF-8 and were read as Windows-1252`,
  ]);
  assert.deepEqual(notes[1], notes[0]);
  assert.deepEqual(notes[2], notes[0]);
});

test('a gzip of two members and trailing garbage: every record decided alike in-thread and by the workers, the garbage unread alike', async () => {
  const dir = tmpDir();
  const jsonl = (tag: string) =>
    Array.from({ length: 30_000 }, (_, i) =>
      JSON.stringify({ event_id: `${tag}${i}`, email: `p${i % 9000}@example.com`, name: `Pessoa ${i}` }),
    ).join('\n') + '\n';
  const csv = (tag: string, header: boolean) =>
    (header ? 'event_id,email,name\n' : '') +
    Array.from({ length: 30_000 }, (_, i) => `${tag}${i},p${i % 9000}@example.com,Pessoa ${i}`).join('\n') +
    '\n';
  const garbage = Buffer.from('trailing bytes that are not gzip');
  for (const [name, members] of [
    ['events.jsonl.gz', [gzipSync(jsonl('a')), gzipSync(jsonl('b'))]],
    ['export.csv.gz', [gzipSync(csv('a', true)), gzipSync(csv('b', false))]],
  ] as const) {
    const input = join(dir, name);
    writeFileSync(input, Buffer.concat([...members, garbage]));
    const sequential = await decide({ inputs: [input], workers: 0 });
    const sequentialUnread = unread;
    assert.equal(sequential.length, 60_000, name);
    assert.equal(sequentialUnread.length, 1, name);
    assert.match(
      sequentialUnread[0]!.reason,
      /^the bytes from byte \d+ of the compressed file on, after its last whole/,
    );
    for (const o of [{ workers: 2 }, { workers: 2, blockBytes: 50_000 }]) {
      const parallel = await decide({ inputs: [input], ...o });
      assertSameDecisions(parallel, sequential, `${name} ${JSON.stringify(o)}: `);
      assert.deepEqual(unread, sequentialUnread, name);
    }
  }
});

test('each input reads its dates in the order its own first records show: alike in-thread and by the workers', async () => {
  const dir = tmpDir();
  // Two inputs read one after the other by the same workers: the first's dates are day/month, the second's
  // month/day; each has dates impossible in its order after its first thousand records, and ambiguous ones before.
  const make = (tag: string, shown: string, late: string) =>
    Array.from({ length: 40_000 }, (_, i) =>
      JSON.stringify({
        event_id: `${tag}${i}`,
        email: `${tag}${i % 15_000}@example.com`,
        created_at: i === 700 ? shown : i > 1000 && i % 997 === 0 ? late : `0${1 + (i % 9)}/0${1 + (i % 7)}/2024 10:00`,
      }),
    ).join('\n') + '\n';
  const dmy = join(dir, 'dmy.jsonl');
  const mdy = join(dir, 'mdy.jsonl');
  writeFileSync(dmy, make('d', '25/12/2024 10:00', '12/25/2024 10:00'));
  writeFileSync(mdy, make('m', '12/25/2024 10:00', '25/12/2024 10:00'));
  const sequential = await decide({ inputs: [dmy, mdy], workers: 0 });
  const invalid = sequential.filter((d) => d.kind === 'invalid');
  assert.equal(
    invalid.length,
    2 * Array.from({ length: 40_000 }, (_, i) => i > 1000 && i % 997 === 0).filter(Boolean).length,
  );
  assert.match(
    invalid[0]!.reason,
    /^created_at: '12\/25\/2024 10:00' is no date: read day\/month \(as its dates show: '25\/12\/2024 10:00' at line 701\)/,
  );
  assert.match(
    invalid.at(-1)!.reason,
    /^created_at: '25\/12\/2024 10:00' is no date: read month\/day \(as its dates show: '12\/25\/2024 10:00' at line 701\)/,
  );
  // Line 21's 03/07/2024 is 3 July in the first input, 7 March in the second.
  const at = (key: string) => sequential.find((d) => d.key === key)?.event?.occurredAt;
  assert.equal(at('d20'), '2024-07-03T10:00:00.000Z');
  assert.equal(at('m20'), '2024-03-07T10:00:00.000Z');
  for (const o of [{ workers: 2 }, { workers: 2, blockBytes: 64_000 }, { workers: 1 }]) {
    const parallel = await decide({ inputs: [dmy, mdy], ...o });
    assertSameDecisions(parallel, sequential, `${JSON.stringify(o)}: `);
  }
});
