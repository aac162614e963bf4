// The dry-run's ledger index must answer as SQLite does (ledger/lookup.ts) for every key and person, across the
// scan's pages, and must refuse the ledgers it cannot represent (the dry-run then asks SQLite).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type Database from 'better-sqlite3';
import { join } from 'node:path';
import { L_PERMANENT, L_RETRYABLE, STATUSES } from '../../src/engine/block.js';
import { fingerprint } from '../../src/engine/fingerprint.js';
import { hashStartsWith, LedgerIndex, type IndexedKey } from '../../src/engine/ledger-index.js';
import { openLedger, type Ledger } from '../../src/ledger/ledger.js';
import { LedgerLookup } from '../../src/ledger/lookup.js';
import { seededRandom } from '../../src/sandbox/faults.js';
import { schemaV2Ledger } from '../helpers/ledger-files.js';
import { tmpDir } from '../helpers/tmp.js';

const STATUS_OF = ['sent', 'sent', 'sent', 'pending', 'in_doubt', 'failed'] as const;

// 40,000 rows: more than two of the scan's pages, every status, rows with and without payload hash, run id and
// person, keys that sort before and after one another in every way (an empty key, non-ASCII ones).
// `v2`: in a ledger of schema v2, whose events table is WITHOUT ROWID (walked in key order, not rowid order), read as
// a dry-run reads it: read-only, not migrated.
function seed(opts: { v2?: boolean } = {}): { ledger: Ledger; keys: string[]; people: string[] } {
  const path = join(tmpDir(), 'ledger.db');
  const l = opts.v2 ? { db: schemaV2Ledger(path), close: () => undefined } : openLedger(path)!;
  const rnd = seededRandom(11);
  const hex = () => Array.from({ length: 32 }, () => '0123456789abcdef'[Math.floor(rnd() * 16)]).join('');
  const ins = l.db.prepare(
    `INSERT INTO events (key, key_kind, payload_hash, natural_key, status, failure, run_id, first_seen_at, updated_at)
     VALUES (?, 'id', ?, ?, ?, ?, ?, 'now', 'now')`,
  );
  const keys: string[] = [''];
  const people: string[] = [];
  l.db.transaction(() => {
    ins.run('', null, null, 'sent', null, null);
    for (let i = 0; i < 40_000; i++) {
      const key = i % 1000 === 7 ? `évt-ü-${i}` : `evt_${i}`;
      const status = i % 2 === 0 ? 'sent' : STATUS_OF[Math.floor(rnd() * STATUS_OF.length)]!;
      const failure = status === 'failed' ? (rnd() < 0.5 ? 'retryable' : 'permanent') : null;
      const plain = i % 2 === 0 && i % 10 !== 0;
      const person = plain ? null : `p${Math.floor(rnd() * 20_000)}@example.com`;
      ins.run(
        key,
        plain || rnd() < 0.2 ? null : hex(),
        person,
        status,
        failure,
        plain ? null : 1 + Math.floor(rnd() * 50),
      );
      keys.push(key);
      if (person) people.push(person);
    }
  })();
  l.close();
  if (opts.v2) (l.db as Database.Database).close();
  return { ledger: openLedger(path, { readonly: true })!, keys, people };
}

const fp = (s: string): Int32Array => {
  const out = new Int32Array(3);
  fingerprint(s, out, 0);
  return out;
};

function assertSameAsSqlite(index: LedgerIndex, ledger: Ledger, keys: string[], people: string[]): void {
  const lookup = new LedgerLookup(ledger.db);
  const probes = [...keys, 'absent', 'evt_40000', 'EVT_1'];
  const known = lookup.lookupKeys(probes);
  const found: IndexedKey = { code: 0, runId: 0 };
  for (const key of probes) {
    index.key(fp(key), 0, found);
    const k = known.get(key);
    if (!k) {
      assert.equal(found.code, 0, `${key} is not in the ledger`);
      continue;
    }
    let code = STATUSES.indexOf(k.status);
    if (k.failure === 'retryable') code |= L_RETRYABLE;
    if (k.failure === 'permanent') code |= L_PERMANENT;
    assert.equal(found.code, code, `code of ${key}`);
    assert.equal(found.runId, k.runId ?? 0, `run of ${key}`);
    assert.equal(found.hash !== undefined, k.payloadHash !== null, `hash of ${key}`);
    if (k.payloadHash) {
      assert.ok(hashStartsWith(k.payloadHash, found.hash!), `hash prefix of ${key}`);
      const other = k.payloadHash.slice(0, 15) + (k.payloadHash[15] === '0' ? '1' : '0') + k.payloadHash.slice(16);
      assert.ok(!hashStartsWith(other, found.hash!), `another hash than ${key}'s`);
    }
  }
  const candidates = [...new Set(people), 'nobody@example.com', 'p20001@example.com'];
  const delivered = lookup.lookupDelivered(candidates);
  for (const p of candidates) assert.equal(index.hasPerson(fp(p), 0), delivered.has(p), `person ${p}`);
}

test('the index answers every key and person as the SQLite lookups do, across pages, and shared the same', () => {
  const { ledger, keys, people } = seed();
  try {
    const index = LedgerIndex.build(ledger.db);
    assert.ok(index, 'the ledger is indexed');
    assertSameAsSqlite(index, ledger, keys, people);
    // What a worker thread gets: the same memory, the same answers.
    assertSameAsSqlite(LedgerIndex.fromShared(structuredClone(index.shared())), ledger, keys, people);
  } finally {
    ledger.close();
  }
});

test('a ledger of schema v2 (events WITHOUT ROWID), read as it is, is indexed alike, across pages', () => {
  const { ledger, keys, people } = seed({ v2: true });
  try {
    assert.equal(ledger.db.pragma('user_version', { simple: true }), 2, 'read-only: not migrated');
    const index = LedgerIndex.build(ledger.db);
    assert.ok(index, 'the ledger is indexed');
    assertSameAsSqlite(index, ledger, keys, people);
  } finally {
    ledger.close();
  }
});

test('ledgers the index cannot represent are left to SQLite: too many rows, tombstones, odd hashes and run ids, NUL bytes', () => {
  const { ledger } = seed();
  try {
    assert.ok(LedgerIndex.build(ledger.db, 40_001), 'at most maxRows rows are indexed');
    assert.equal(LedgerIndex.build(ledger.db, 40_000), undefined);
    assert.equal(LedgerIndex.build(ledger.db, 20_000), undefined);
  } finally {
    ledger.close();
  }
  const cases: Array<[string, string]> = [
    ['tombstones', "INSERT INTO tombstones (key_hash) VALUES ('x')"],
    ['a payload hash that is not hex', "UPDATE events SET payload_hash = 'another-hash' WHERE key = 'evt_1'"],
    ['a run id past 2^24', "UPDATE events SET run_id = 16777216 WHERE key = 'evt_1'"],
    ['an unknown status', "UPDATE events SET status = 'archived' WHERE key = 'evt_3'"],
    ['a short payload hash', "UPDATE events SET payload_hash = '0123456789abcde' WHERE key = 'evt_1'"],
    ['an empty payload hash', "UPDATE events SET payload_hash = '' WHERE key = 'evt_3'"],
    ['a run id that is not a number', "UPDATE events SET run_id = '3x' WHERE key = 'evt_1'"],
    ['a negative run id', "UPDATE events SET run_id = -2 WHERE key = 'evt_1'"],
    [
      'a NUL byte in a plain key',
      "INSERT INTO events (key, key_kind, status, first_seen_at, updated_at) VALUES ('a' || char(0) || 'b', 'imported', 'sent', 'now', 'now')",
    ],
    ['a NUL byte in a person', "UPDATE events SET natural_key = 'p' || char(0) || 'q' WHERE key = 'evt_3'"],
  ];
  for (const [what, sql] of cases) {
    const path = join(tmpDir(), 'l.db');
    const l = openLedger(path)!;
    l.db
      .prepare(
        `INSERT INTO events (key, key_kind, status, run_id, first_seen_at, updated_at) VALUES ('evt_1', 'id', 'failed', 3, 'now', 'now')`,
      )
      .run();
    l.db
      .prepare(
        `INSERT INTO events (key, key_kind, status, first_seen_at, updated_at) VALUES ('evt_3', 'id', 'pending', 'now', 'now')`,
      )
      .run();
    assert.ok(LedgerIndex.build(l.db), `indexed before ${what}`);
    l.db.exec(sql);
    assert.equal(LedgerIndex.build(l.db), undefined, what);
    l.close();
  }
});
