// Every path a record can take through the engine, run on one generated case, held to the reference (the general
// path, one record at a time): in-thread, and by map workers with blocks cut small, a ledger indexed, looked up by
// the workers, or looked up by the decider, the run memory spilling or not, decisions made or only counted.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type * as DecideInputsModule from '../../src/engine/decide-inputs.js';
import type { DecideInputsOptions } from '../../src/engine/decide-inputs.js';
import { openLedger, type Ledger } from '../../src/ledger/ledger.js';
import { tombstoneHash } from '../../src/ledger/queries.js';
import { createMapper, mapItem, type MapOptions } from '../../src/mapping/map-record.js';
import { ReportCollector } from '../../src/report/run-report.js';
import { readInputs } from '../../src/sources/read-inputs.js';
import type { ReadOptions } from '../../src/sources/types.js';
import type { LedgerChoice } from './arbitraries.js';
import { plainDecision, referenceDecisions, type PathResult } from './reference.js';

/** One input of a case: its format and bytes. */
export interface FuzzInput {
  format: 'jsonl' | 'json' | 'csv';
  bytes: Buffer;
}

/** One generated case: the inputs of one run (read one after another), what the ledger holds, the phone options. */
export interface FuzzCase {
  inputs: FuzzInput[];
  ledger: LedgerChoice[];
  /** The default country and what becomes of a phone that cannot be read (absent in cases saved before them). */
  map?: FuzzMap;
}

/** The mapping options a case varies: those of the phone rules. */
export interface FuzzMap {
  defaultCountry?: string;
  invalidPhones?: 'omit' | 'as-written';
}

/** The mapping options of a case. */
export function mapOptionsOf(c: FuzzCase): MapOptions {
  const map: MapOptions = { config: c.map?.invalidPhones ? { phones: { invalid: c.map.invalidPhones } } : {} };
  if (c.map?.defaultCountry) map.defaultCountry = c.map.defaultCountry;
  return map;
}

// The engine as built (npm test builds first): its map workers then start as plain JavaScript, in a tenth of the
// time they take under the TypeScript loader, so many more cases fit in the suite's time.
const { decideInputs } = (await import(
  new URL('../../dist/engine/decide-inputs.js', import.meta.url).href
)) as typeof DecideInputsModule;

/** Which engine paths to run: the worker ones start threads (~0.1 s each), so short suites leave them out. */
export interface PathSet {
  workers: boolean;
}

/** Runs the case through every path and asserts each decides exactly as the reference does. */
export async function assertPathsAgree(c: FuzzCase, set: PathSet): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'leadledger-fuzz-'));
  try {
    // Each input's format is told by its name, as a user's files are.
    const inputs = c.inputs.map((x, i) => {
      const file = join(dir, `input-${i}.${x.format}`);
      writeFileSync(file, x.bytes);
      return file;
    });
    const read: ReadOptions = {};
    const map = mapOptionsOf(c);
    const ledgerFile = join(dir, 'ledger.db');
    await seedLedger(ledgerFile, c, inputs, read, map);
    const readonly = c.ledger.length ? openLedger(ledgerFile, { readonly: true }) : undefined;
    const writable = c.ledger.length ? openLedger(ledgerFile) : undefined;
    try {
      const reference = await referenceDecisions(inputs, read, map, readonly);
      const runs: Array<[string, Partial<DecideInputsOptions>]> = [
        ['in-thread, ledger indexed', { workers: 0, ledger: readonly }],
        ['in-thread, ledger looked up', { workers: 0, ledger: readonly, indexMaxRows: 0 }],
        ['in-thread, writing ledger, memory spilling', { workers: 0, ledger: writable, memoryCapacity: 4 }],
      ];
      if (set.workers) {
        runs.push(
          ['2 workers, small blocks, ledger indexed', { workers: 2, ledger: readonly, blockBytes: 256 }],
          [
            '1 worker, ledger looked up by the worker',
            { workers: 1, ledger: readonly, indexMaxRows: 0, blockBytes: 1024 },
          ],
          [
            '2 workers, writing ledger, memory spilling',
            { workers: 2, ledger: writable, blockBytes: 97, memoryCapacity: 4 },
          ],
        );
      }
      for (const [name, o] of runs) {
        const got = await engine(inputs, read, map, o);
        assert.deepEqual(got.decisions, reference.decisions, `${name}: decisions`);
        assert.deepEqual(got.unread, reference.unread, `${name}: unread parts`);
        assert.equal(got.nationalPhones, reference.nationalPhones, `${name}: national phones`);
      }
      // Only counted (a dry-run without report rows): the same counts, examples and warnings.
      const tally = new ReportCollector();
      const stats = { nationalPhones: 0 };
      for await (const b of decideInputs({
        inputs,
        read,
        map,
        ledger: readonly,
        workers: set.workers ? 2 : 0,
        blockBytes: 300,
        tally,
        stats,
      }))
        assert.equal(b.length, 0);
      assert.equal(stats.nationalPhones, reference.nationalPhones, 'counted: national phones');
      const expected = new ReportCollector();
      for (const d of reference.decisions) expected.add(plainAsDecision(d));
      assert.deepEqual(tally.counts, expected.counts, 'counted: counts');
      assert.deepEqual(tally.examples, expected.examples, 'counted: examples');
      assert.deepEqual(tally.warnings, expected.warnings, 'counted: warnings');
    } finally {
      readonly?.close();
      writable?.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function engine(
  inputs: string[],
  read: ReadOptions,
  map: MapOptions,
  o: Partial<DecideInputsOptions>,
): Promise<PathResult> {
  const out: PathResult = { decisions: [], unread: [], nationalPhones: 0 };
  const stats = { nationalPhones: 0 };
  for await (const batch of decideInputs({
    inputs,
    read,
    map,
    ...o,
    stats,
    onUnread: (u) =>
      out.unread.push(
        u.toLine === undefined
          ? { source: u.source, line: u.line, reason: u.reason }
          : { source: u.source, line: u.line, toLine: u.toLine, reason: u.reason },
      ),
  }))
    for (const d of batch) out.decisions.push(plainDecision(d));
  out.nationalPhones = stats.nationalPhones;
  return out;
}

// A plain decision as the collector takes one (its event's warnings are what it reads of it).
function plainAsDecision(d: ReturnType<typeof plainDecision>): Parameters<ReportCollector['add']>[0] {
  const { event, ...rest } = d;
  return {
    ...rest,
    kind: d.kind as never,
    ...(event
      ? {
          event: {
            ...event,
            kind: 'event',
            source: d.source,
            line: d.line,
            lead: JSON.parse(event.leadJson),
            keyKind: event.keyKind as never,
          },
        }
      : {}),
  };
}

/** Writes the case's ledger: rows for its keys (their stored lead the input's own, another, or none), and tombstones. */
async function seedLedger(
  file: string,
  c: FuzzCase,
  inputs: string[],
  read: ReadOptions,
  map: MapOptions,
): Promise<void> {
  if (!c.ledger.length) return;
  // The leads the input maps to, by key: a 'same' row stores the first of them.
  const mapper = createMapper(map);
  const leads = new Map<string, { json: string; hash: string }>();
  for await (const batch of readInputs(inputs, read))
    for (const item of batch) {
      if (item.kind === 'unread') continue;
      const m = mapItem(mapper, item);
      if (m.kind === 'event' && !leads.has(m.key)) leads.set(m.key, { json: m.leadJson!, hash: m.payloadHash });
    }
  const l: Ledger = openLedger(file)!;
  const db = l.db;
  const t = '2026-01-01T00:00:00.000Z';
  db.prepare(
    `INSERT INTO runs (id, command, args_json, host, pid, started_at, heartbeat_at, ended_at, status) VALUES (1, 'push', '{}', 'h', 1, ?, ?, ?, 'done'), (2, 'push', '{}', 'h', 1, ?, ?, ?, 'done')`,
  ).run(t, t, t, t, t, t);
  const ins = db.prepare(
    `INSERT INTO events (key, key_kind, payload_hash, natural_key, status, failure, outcome, lead_json, run_id, first_seen_at, updated_at, sent_at)
     VALUES (@key, @kind, @hash, @person, @status, @failure, @outcome, @lead, @run, @t, @t, @sent)`,
  );
  for (const ch of c.ledger) {
    if (ch.status === 'tombstone') {
      db.prepare('INSERT INTO tombstones (key_hash) VALUES (?)').run(tombstoneHash(ch.key));
      continue;
    }
    const own = leads.get(ch.key);
    const stored =
      ch.hash === 'same' && own
        ? own
        : ch.hash === 'none'
          ? undefined
          : { json: '{"email":"other@example.com"}', hash: 'f'.repeat(32) };
    const imported = ch.status === 'imported';
    const failed = ch.status.startsWith('failed');
    ins.run({
      key: ch.key,
      kind: imported ? 'imported' : 'id',
      hash: imported ? null : (stored?.hash ?? null),
      person: ch.person,
      status: imported ? 'sent' : failed ? 'failed' : ch.status,
      failure: failed ? ch.status.slice('failed-'.length) : null,
      outcome: ch.status === 'sent' ? 'created' : imported ? 'imported' : null,
      lead: imported ? null : (stored?.json ?? null),
      run: imported ? null : ch.runId,
      t,
      sent: ch.status === 'sent' || imported ? t : null,
    });
  }
  l.close();
}
