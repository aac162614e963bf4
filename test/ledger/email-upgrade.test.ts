// The upgrade of a ledger written before emails had one canonical form (SQLite v3 → v4, PostgreSQL v1 → v2), on both
// storages: people held in NFD or with a Unicode domain are rewritten in the form the mapper writes now, with their
// keys, stored leads and payload hashes, in one transaction; two forms of one person become one row, history kept.
// PostgreSQL comes from test/helpers/postgres.ts: a missing server fails this file, it never skips.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { openLedgerStore } from '../../src/ledger/open.js';
import type { LedgerStore } from '../../src/ledger/store.js';
import { importedPersonKey } from '../../src/ledger/rules.js';
import { SCHEMA_VERSION } from '../../src/ledger/schema.js';
import { PG_SCHEMA_VERSION } from '../../src/ledger/postgres/schema.js';
import { canonicalLeadJson, contentKey, payloadHashOfJson } from '../../src/mapping/keys.js';
import { ledgerImport } from '../../src/commands/ledger/import.js';
import { ledgerMigrate } from '../../src/commands/ledger/migrate.js';
import { ledgerVerify } from '../../src/commands/ledger/verify.js';
import { testCtx } from '../commands/ledger/seed.js';
import {
  imported,
  pgV1Ledger,
  sentByContent,
  sentByFields,
  sentById,
  sqliteV3Ledger,
  type OldAttempt,
  type OldRow,
} from '../helpers/old-ledger.js';
import { pgDatabase } from '../helpers/postgres.js';
import { tmpDir } from '../helpers/tmp.js';

const db = await pgDatabase('leadledger_emails');

const NFD = (s: string) => s.normalize('NFD');
const hashOf = (lead: object) => payloadHashOfJson(canonicalLeadJson(lead));

// The people of an old ledger, as the old mapper wrote them, and what each becomes.
const ines = sentByContent({ email: 'ines@bücher.example' }, 6);
const inesPunycode: OldRow = {
  ...sentByContent({ email: 'ines@xn--bcher-kva.example' }, 7),
  status: 'failed',
  failure: 'retryable',
  outcome: null,
  sent_at: null,
};
const ROWS: OldRow[] = [
  sentById('evt-jose', { email: NFD('josé@x.com'), name: 'José' }, 1),
  sentByContent({ email: 'foo@bücher.example', name: 'Foo' }, 2),
  imported('ana@bücher.example', 3, '555'),
  // One person imported in both forms: the earlier row stays, under the key of the canonical form.
  imported(NFD('zoé@x.com'), 4, '601'),
  imported('zoé@x.com', 5, '602'),
  // One person sent in one form, failed in the other: the sent one stays.
  ines,
  inesPunycode,
  // A lead pruned by retention: no payload hash to take again.
  { ...sentById('evt-pruned', { email: NFD('rené@x.com') }, 8), lead_json: null },
  sentByFields({ email: NFD('lúcia@x.com'), source: 'ads', name: 'Lúcia' }, ['email', 'source'], 9),
  {
    ...sentById('evt-doubt', { email: 'joe@bücher.example' }, 2),
    status: 'in_doubt',
    outcome: null,
    crm_id: null,
    sent_at: null,
  },
  // Left as they are: ASCII, an address the rules refuse now, a phone.
  sentById('evt-ascii', { email: 'bob@x.com' }, 1),
  sentById('evt-bad', { email: 'a..b@x.com' }, 1),
  sentById('evt-phone', { phone: '+5511987654321' }, 1),
];
const ATTEMPTS: OldAttempt[] = [
  { key: 'evt-jose', run_id: 1, at: '2026-01-01T09:00:00.000Z', outcome: 'failed', detail: 'HTTP 503' },
  { key: ROWS[1]!.key, run_id: 1, at: '2026-01-02T09:00:00.000Z', outcome: 'failed', detail: 'HTTP 503' },
  { key: inesPunycode.key, run_id: 1, at: '2026-01-07T10:00:00.000Z', outcome: 'failed', detail: 'HTTP 502' },
];

/** Each row after the upgrade: key → [natural key, lead, payload hash, status, crm id]. */
function expected(): Record<string, [string | null, string | null, string | null, string, string | null]> {
  const lead = (l: object) => [canonicalLeadJson(l), hashOf(l)] as const;
  const jose = { email: 'josé@x.com', name: 'José' };
  const foo = { email: 'foo@xn--bcher-kva.example', name: 'Foo' };
  const inesNow = { email: 'ines@xn--bcher-kva.example' };
  const lucia = { email: 'lúcia@x.com', name: 'Lúcia', source: 'ads' };
  const joe = { email: 'joe@xn--bcher-kva.example' };
  const old = (k: string) => ROWS.find((r) => r.key === k)!;
  const same = (k: string) => {
    const r = old(k);
    return [r.natural_key, r.lead_json, r.payload_hash, r.status, r.crm_id ?? null] as [
      string | null,
      string | null,
      string | null,
      string,
      string | null,
    ];
  };
  return {
    'evt-jose': ['josé@x.com', ...lead(jose), 'sent', '101'],
    ['c:' + hashOf(foo)]: ['foo@xn--bcher-kva.example', ...lead(foo), 'sent', '202'],
    [importedPersonKey('ana@xn--bcher-kva.example')]: ['ana@xn--bcher-kva.example', null, null, 'sent', '555'],
    [importedPersonKey('zoé@x.com')]: ['zoé@x.com', null, null, 'sent', '601'],
    ['c:' + hashOf(inesNow)]: ['ines@xn--bcher-kva.example', ...lead(inesNow), 'sent', '206'],
    'evt-pruned': ['rené@x.com', null, null, 'sent', '108'],
    [contentKey({ email: 'lúcia@x.com', source: 'ads' })]: ['lúcia@x.com', ...lead(lucia), 'sent', '109'],
    'evt-doubt': ['joe@xn--bcher-kva.example', ...lead(joe), 'in_doubt', null],
    'evt-ascii': same('evt-ascii'),
    'evt-bad': same('evt-bad'),
    'evt-phone': same('evt-phone'),
  };
}

interface Storage {
  kind: 'sqlite' | 'postgres';
  /** An old ledger holding ROWS and ATTEMPTS: its --ledger value and the env to open it with. */
  old(): Promise<{ ledger: string; env: NodeJS.ProcessEnv }>;
  version: number;
}

const storages: Storage[] = [
  {
    kind: 'sqlite',
    old: async () => {
      const ledger = join(tmpDir(), 'ledger.db');
      sqliteV3Ledger(ledger, ROWS, ATTEMPTS);
      return { ledger, env: {} };
    },
    version: SCHEMA_VERSION,
  },
  {
    kind: 'postgres',
    old: async () => {
      const schema = 'e_' + randomBytes(4).toString('hex');
      await pgV1Ledger(db, schema, ROWS, ATTEMPTS);
      return { ledger: `${db.url}?schema=${schema}`, env: { PGPASSWORD: db.cluster.password } };
    },
    version: PG_SCHEMA_VERSION,
  },
];

async function rows(s: LedgerStore): Promise<Record<string, unknown[]>> {
  const out: Record<string, unknown[]> = {};
  const all = await s.sql.all<Record<string, string | null>>(
    'SELECT key, natural_key, lead_json, payload_hash, status, crm_id FROM events ORDER BY key',
  );
  for (const r of all) out[r.key!] = [r.natural_key, r.lead_json, r.payload_hash, r.status, r.crm_id];
  return out;
}

async function attempts(s: LedgerStore): Promise<Array<[string, string, string | null]>> {
  return (
    await s.sql.all<{ key: string; outcome: string; detail: string | null }>(
      'SELECT key, outcome, detail FROM attempts ORDER BY at, id',
    )
  ).map((a) => [a.key, a.outcome, a.detail]);
}

for (const st of storages) {
  test(`${st.kind}: an older ledger is read as it is by a read-only open, and upgraded by the first writing one`, async () => {
    const { ledger, env } = await st.old();
    const ro = (await openLedgerStore(ledger, { readonly: true, env }))!;
    assert.equal((await ro.storageFacts()).schemaVersion, st.kind === 'sqlite' ? 3 : 1, 'read-only: not upgraded');
    assert.equal((await ro.lookupKeys(['evt-jose'])).get('evt-jose')?.status, 'sent');
    assert.equal(Object.keys(await rows(ro)).length, ROWS.length);
    await ro.close();

    const rw = (await openLedgerStore(ledger, { env }))!;
    try {
      assert.equal((await rw.storageFacts()).schemaVersion, st.version);
      assert.deepEqual(await rows(rw), expected());
      // Each person is found by the address the mapper writes now.
      const people = [
        'josé@x.com',
        'foo@xn--bcher-kva.example',
        'ana@xn--bcher-kva.example',
        'zoé@x.com',
        'ines@xn--bcher-kva.example',
        'rené@x.com',
        'lúcia@x.com',
        'joe@xn--bcher-kva.example',
      ];
      assert.deepEqual([...(await rw.lookupDelivered(people)).keys()].sort(), [...people].sort());
      // History follows the keys: the failed tries, and the other form of Ines's (its failure, under the row kept).
      const foo = 'c:' + hashOf({ email: 'foo@xn--bcher-kva.example', name: 'Foo' });
      const inesNow = 'c:' + hashOf({ email: 'ines@xn--bcher-kva.example' });
      assert.deepEqual(await attempts(rw), [
        ['evt-jose', 'failed', 'HTTP 503'],
        [foo, 'failed', 'HTTP 503'],
        [inesNow, 'failed', 'HTTP 502'],
      ]);
    } finally {
      await rw.close();
    }
    assert.deepEqual((await ledgerVerify({ ledger }, testCtx(tmpDir(), env))).problems, []);
    // Upgraded once: opening it again changes nothing.
    const again = (await openLedgerStore(ledger, { env }))!;
    assert.deepEqual(await rows(again), expected());
    await again.close();
  });
}

test('two sent forms of one person: the earlier send is kept, the other one written out as an attempt of it', async () => {
  const a = sentByContent({ email: NFD('zoé@x.com') }, 1);
  const b = sentByContent({ email: 'zoé@x.com' }, 2);
  const ledger = join(tmpDir(), 'ledger.db');
  sqliteV3Ledger(ledger, [a, b]);
  const l = (await openLedgerStore(ledger))!;
  try {
    assert.deepEqual(Object.keys(await rows(l)), [b.key]);
    assert.equal((await rows(l))[b.key]![4], a.crm_id, 'the earlier send');
    assert.deepEqual(await attempts(l), [[b.key, 'created', `crm id ${b.crm_id}`]]);
  } finally {
    await l.close();
  }
});

test('ledger migrate of an older SQLite ledger into PostgreSQL: the copy is upgraded as the file would have been', async () => {
  const dir = tmpDir();
  const file = join(dir, 'ledger.db');
  sqliteV3Ledger(file, ROWS, ATTEMPTS);
  const to = `${db.url}?schema=m_${randomBytes(4).toString('hex')}`;
  const env = { PGPASSWORD: db.cluster.password };
  const r = await ledgerMigrate({ ledger: file, to }, testCtx(dir, env));
  // A migrate holds the ledger it copies, as a run of its own: that first write upgrades the file, as any writing
  // command's does, and the copy is taken of it, two forms of one person already one row.
  assert.equal(r.tables.events.copied, Object.keys(expected()).length);
  const pgl = (await openLedgerStore(to, { env }))!;
  try {
    assert.deepEqual(await rows(pgl), expected());
  } finally {
    await pgl.close();
  }
  const src = (await openLedgerStore(file, { readonly: true }))!;
  assert.equal((await src.storageFacts()).schemaVersion, SCHEMA_VERSION, 'the source is upgraded by its first write');
  assert.deepEqual(await rows(src), expected());
  await src.close();
});

test('ledger import of an export written before: its people and the keys taken of them, as this ledger holds them', async () => {
  const dir = tmpDir();
  const exported = join(dir, 'old-export.jsonl');
  const old = [imported(NFD('zoé@x.com'), 1, '601'), sentByContent({ email: 'foo@bücher.example', name: 'Foo' }, 2)];
  writeFileSync(exported, old.map((r) => JSON.stringify(r)).join('\n') + '\n');
  const ledger = join(dir, 'ledger.db');
  const r = await ledgerImport({ files: [exported], ledger, as: 'auto' }, testCtx(dir));
  assert.equal(r.added, 2);
  const l = (await openLedgerStore(ledger))!;
  try {
    const foo = { email: 'foo@xn--bcher-kva.example', name: 'Foo' };
    assert.deepEqual(
      (
        await l.sql.all<{ key: string; natural_key: string }>(
          'SELECT key, natural_key FROM events ORDER BY natural_key',
        )
      ).map((x) => [x.key, x.natural_key]),
      [
        ['c:' + hashOf(foo), foo.email],
        [importedPersonKey('zoé@x.com'), 'zoé@x.com'],
      ],
    );
  } finally {
    await l.close();
  }
});
