import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { encodeMapped } from '../../src/engine/block.js';
import { Decider, lookUpStats, type DecideLedger } from '../../src/engine/decider.js';
import { LedgerIndex } from '../../src/engine/ledger-index.js';
import { RECENT } from '../../src/engine/run-memory.js';
import { openLedger } from '../../src/ledger/ledger.js';
import { createMapper } from '../../src/mapping/map-record.js';
import type { Mapped } from '../../src/mapping/types.js';
import { tmpDir } from '../helpers/tmp.js';

const map = createMapper({ config: {} });
let line = 0;
const m = (id: string, data: Record<string, unknown>, extra: Record<string, unknown> = {}): Mapped =>
  map({ kind: 'record', source: 'in.jsonl', line: ++line, fields: { event_id: id, ...extra, data } });

test('every decision, in input order, against an empty ledger', () => {
  line = 0;
  const d = new Decider({});
  const out = d.decideBatch([
    m('e1', { email: 'ana@x.io' }, { attempt: 1 }),
    m('e1', { email: 'ANA@x.io ' }, { attempt: 2 }), // a retry: envelope differs, lead is the same
    m('e1', { email: 'ana@x.io', phone: '+14155552671' }), // same key, other content
    m('e2', { email: 'ana@x.io' }), // same person, other event
    m('e3', { name: 'no contact' }),
    { kind: 'filtered', source: 'in.jsonl', line: 99, reason: 'type x not accepted' },
  ]);
  assert.deepEqual(
    out.map((x) => x.kind),
    ['new', 'duplicate_in_input', 'conflict', 'known_lead', 'invalid', 'filtered'],
  );
  assert.equal(out[1]!.reason, 'same event as in.jsonl line 1');
  assert.deepEqual(out[2]!.fields, ['phone']);
  assert.match(out[2]!.reason, /different phone/);
  assert.match(out[3]!.reason, /same person as event e1/);
});

test('against the ledger: delivered keys are duplicates, people delivered by another key are known, changed content is a conflict', () => {
  line = 0;
  const path = join(tmpDir(), 'l.db');
  const l = openLedger(path)!;
  const run = l.startRun('push', {}, { exclusive: true });
  const first = m('e1', { email: 'ana@x.io', name: 'Ana' });
  if (first.kind !== 'event') throw new Error('mapping');
  l.claimNew(
    [
      {
        key: 'e1',
        keyKind: 'id',
        payloadHash: first.payloadHash,
        naturalKey: 'ana@x.io',
        downstreamKey: 'd',
        leadJson: JSON.stringify(first.lead),
        source: 's',
        line: 1,
      },
    ],
    run,
    'sink',
  );
  l.settle([{ key: 'e1', status: 'sent', outcome: 'created', crmId: '5' }], run);
  l.importDelivered([{ key: 'old' }, { naturalKey: 'bia@x.io' }], 'seed');
  l.claimNew(
    [{ key: 'e9', keyKind: 'id', payloadHash: 'x', downstreamKey: 'd', leadJson: '{}', source: 's', line: 1 }],
    run,
    'sink',
  );
  l.settle([{ key: 'e9', status: 'failed', failure: 'retryable', error: '503' }], run);
  const d = new Decider({ ledger: l });
  const out = d.decideBatch([
    m('e1', { email: 'ana@x.io', name: 'Ana' }),
    m('e1b', { email: 'Ana@x.io' }),
    m('old', { email: 'zed@x.io' }),
    m('e4', { email: 'bia@x.io' }),
    m('e1', { email: 'ana@x.io', name: 'Ana Maria' }),
    m('e5', { email: 'new@x.io' }),
  ]);
  assert.deepEqual(
    out.map((x) => x.kind),
    ['duplicate', 'known_lead', 'duplicate', 'known_lead', 'conflict', 'new'],
  );
  assert.match(out[1]!.reason, /same person as event e1/);
  assert.deepEqual(out[4]!.fields, ['name'], 'in-run conflict: the first e1 of this run is the reference');
  const conflictWithLedger = new Decider({ ledger: l }).decideBatch([
    m('e1', { email: 'ana@x.io', name: 'Ana Maria' }),
  ]);
  assert.equal(conflictWithLedger[0]!.kind, 'conflict');
  assert.match(conflictWithLedger[0]!.reason, /ledger holds this key with different name/);
  l.close();
});

test('a retryable failure in the ledger is decided new, as a retry', () => {
  line = 0;
  const l = openLedger(join(tmpDir(), 'l.db'))!;
  const run = l.startRun('push', {}, { exclusive: true });
  const e = m('e9', { email: 'r@x.io' });
  if (e.kind !== 'event') throw new Error('mapping');
  l.claimNew(
    [
      {
        key: 'e9',
        keyKind: 'id',
        payloadHash: e.payloadHash,
        naturalKey: 'r@x.io',
        downstreamKey: 'd',
        leadJson: '{}',
        source: 's',
        line: 1,
      },
    ],
    run,
    'sink',
  );
  l.settle([{ key: 'e9', status: 'failed', failure: 'retryable', error: '503' }], run);
  const [d] = new Decider({ ledger: l }).decideBatch([e]);
  assert.equal(d!.kind, 'new');
  assert.equal(d!.retry, true);
  l.close();
});

// A push holding the ledger alone (the run lock) reads the ledger once into an index, and asks SQLite only about the
// keys and people the index may hold: the same decisions, without a query for what is new. Once another run has
// started (with --no-lock, or a `ledger import`), the index may miss what it wrote, and every block asks SQLite again.
test('a writing run with the ledger to itself asks SQLite only what its snapshot may hold, until another run starts', () => {
  line = 0;
  const l = openLedger(join(tmpDir(), 'l.db'))!;
  const run = l.startRun('push', {}, { exclusive: true });
  const claimOf = (key: string, email: string, data: Record<string, unknown>) => {
    const e = m(key, data);
    if (e.kind !== 'event') throw new Error('mapping');
    return {
      key,
      keyKind: 'id',
      payloadHash: e.payloadHash,
      naturalKey: email,
      downstreamKey: 'd',
      leadJson: JSON.stringify(e.lead),
      source: 's',
      line: 1,
    };
  };
  l.claimNew([claimOf('e1', 'ana@x.io', { email: 'ana@x.io', name: 'Ana' })], run, 'sink');
  l.settle([{ key: 'e1', status: 'sent', outcome: 'created' }], run);
  l.importDelivered([{ naturalKey: 'bia@x.io' }], 'seed');
  const asked: string[] = [];
  const counting: DecideLedger = {
    lookupKeys: (keys) => (asked.push(...keys.map((k) => `key ${k}`)), l.lookupKeys(keys)),
    lookupDelivered: (people) => (asked.push(...people.map((p) => `person ${p}`)), l.lookupDelivered(people)),
    deliveredBy: (p) => l.deliveredBy(p),
    getLeadJson: (k) => l.getLeadJson(k),
  };
  const d = new Decider({ ledger: counting });
  d.filter = LedgerIndex.build(l.db);
  let alone = true;
  d.filterValid = () => alone;
  const before = lookUpStats.filtered;
  const out = d.decideBatch([
    m('e1', { email: 'ana@x.io', name: 'Ana' }),
    m('e2', { email: 'ana@x.io' }),
    m('e3', { email: 'bia@x.io' }),
    m('e4', { email: 'new@x.io' }),
    m('e1', { email: 'ana@x.io', name: 'Ana Maria' }),
  ]);
  assert.deepEqual(
    out.map((x) => x.kind),
    ['duplicate', 'known_lead', 'known_lead', 'new', 'conflict'],
  );
  assert.match(out[1]!.reason, /same person as event e1/);
  assert.equal(lookUpStats.filtered, before + 1);
  // e1's key, and the two people the ledger holds; not e2, e3, e4 (absent keys), nor new@x.io.
  assert.deepEqual(asked.sort(), ['key e1', 'person ana@x.io', 'person bia@x.io']);

  // Another run claims e9 after the snapshot, and ends before the next block: while this run believed itself alone,
  // the snapshot would call it new. A run started since counts, running or not (ids only grow).
  assert.equal(l.otherRunSince(run), false);
  const other = l.startRun('push', {}, { exclusive: false });
  l.claimNew([claimOf('e9', 'zed@x.io', { email: 'zed@x.io' })], other, 'sink');
  l.finishRun(other, 'done', {});
  alone = !l.otherRunSince(run);
  assert.equal(alone, false);
  const [again] = d.decideBatch([m('e9', { email: 'zed@x.io' })]);
  assert.equal(again!.kind, 'duplicate', 'asked of SQLite once another run started');
  assert.equal(d.filter, undefined, 'dropped for the rest of the run');
  l.close();
});

test('block events read back every field of every record, the last of a block too', () => {
  line = 0;
  const items = [
    m('e1', { email: 'ana@x.io', name: 'Ana' }, { type: 'lead.created', created_at: '2026-10-01T00:00:01.000Z' }),
    m('e2', { phone: '+55 11 930029883' }, { type: 'lead.updated', created_at: '2026-10-01T00:00:02Z' }),
    m('e3', { email: 'bia@x.io' }, { created_at: '2026-10-01T00:00:03.000Z' }),
  ];
  const decisions = new Decider({}).decideBlock(encodeMapped(items), 'in.jsonl', 0);
  decisions.forEach((d, i) => {
    const want = items[i]!;
    if (want.kind !== 'event') throw new Error('mapping');
    const e = d.event!;
    assert.deepEqual(
      [e.key, e.naturalKey, e.leadJson, e.type, e.occurredAt, e.payloadHash],
      [
        want.key,
        want.naturalKey,
        want.leadJson ?? JSON.stringify(want.lead),
        want.type,
        want.occurredAt,
        want.payloadHash,
      ],
      `record ${i}`,
    );
  });
  assert.equal(decisions[2]!.event!.occurredAt, '2026-10-01T00:00:03.000Z');
});

test('a decided block is given back once its events are no longer recent: then only detached events answer', () => {
  line = 0;
  const d = new Decider({});
  const first = encodeMapped([
    m('e1', { email: 'ana@x.io', name: 'Ana' }, { type: 'lead.created' }),
    m('e1', { email: 'ana@x.io', name: 'Ana' }), // a retry
    m('e2', { email: 'bia@x.io' }),
  ]);
  const [kept, retry, sent] = d.decideBlock(first, 'in.jsonl', 0).map((x) => x.event!);
  sent!.detach!(); // what push does before queueing a send
  let givenBack = 0;
  d.release(first, () => givenBack++);
  // Still recent: kept, and a later conflict names the field that differs, read from the first block.
  assert.equal(givenBack, 0);
  assert.equal(kept!.type, 'lead.created');
  const later = d.decideBlock(encodeMapped([m('e1', { email: 'ana@x.io', name: 'Ana Lima' })]), 'in.jsonl', 0);
  assert.equal(later[0]!.kind, 'conflict');
  assert.deepEqual(later[0]!.fields, ['name']);
  assert.equal(
    d.decideBlock(encodeMapped([m('e3', { email: 'ana@x.io' })]), 'in.jsonl', 0)[0]!.reason,
    'same person as event e1',
  );
  // RECENT more events: the first block is no longer recent, and is given back when the next one is released.
  const fillers = encodeMapped(Array.from({ length: RECENT }, (_, i) => m(`f${i}`, { email: `f${i}@x.io` })));
  d.decideBlock(fillers, 'in.jsonl', 0);
  d.release(fillers);
  assert.equal(givenBack, 1);
  assert.equal(sent!.leadJson, '{"email":"bia@x.io"}');
  assert.equal(sent!.naturalKey, 'bia@x.io');
  assert.throws(() => retry!.leadJson, /read after its block was released/);
  assert.throws(() => kept!.occurredAt, /read after its block was released/);
  // Older repeats are named by file and line, and a conflict with one says only that the content differs.
  const old = d.decideBlock(
    encodeMapped([m('e1', { email: 'ana@x.io', name: 'Ana Souza' }), m('e4', { email: 'ana@x.io' })]),
    'in.jsonl',
    0,
  );
  assert.equal(old[0]!.reason, 'same key as in.jsonl line 1 with different content');
  assert.equal(old[1]!.reason, 'same person as the event at in.jsonl line 1');
  d.close();
});
