// The PostgreSQL ledger's schema check: a ledger another run creates at the same moment is a ledger, never "tables of
// something else". Runs on several hosts start together on a new database (cron); the check that once took two
// statements saw no ledger_meta in the first and the other run's new tables in the second, and stopped its run with
// exit 5. Against a real PostgreSQL 15 (test/helpers/postgres.ts); never skipped.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { openLedgerStore } from '../../src/ledger/open.js';
import { PG_SCHEMA_VERSION } from '../../src/ledger/postgres/schema.js';
import { pgTarget, schemaVersion } from '../../src/ledger/postgres/store.js';
import { pgDatabase } from '../helpers/postgres.js';

const db = await pgDatabase('leadledger_schema');
const env = { PGPASSWORD: db.cluster.password };

test('the schema check sees one moment: a ledger created by another run between its questions is no stranger', async () => {
  const url = `${db.url}?schema=racing`;
  await db.query('DROP SCHEMA IF EXISTS racing CASCADE');
  const client = new pg.Client({ connectionString: db.urlWithPassword });
  await client.connect();
  try {
    // After the check's first statement, and before any other, another run creates the ledger and commits.
    let statements = 0;
    const racing = {
      query: async (sql: string, params?: unknown[]) => {
        const r = await client.query(sql, params);
        if (statements++ === 0) await (await openLedgerStore(url, { env }))!.close();
        return r;
      },
    } as unknown as Pick<pg.ClientBase, 'query'>;
    // What the check saw is the moment before the ledger: none there (the run then takes the lock and finds it).
    assert.equal(await schemaVersion(racing, pgTarget(url, env)), undefined);
    assert.equal(await schemaVersion(client, pgTarget(url, env)), PG_SCHEMA_VERSION);
  } finally {
    await client.end();
  }
});

test('six runs opening one new ledger at once all open it, five times over', async () => {
  for (let round = 0; round < 5; round++) {
    const url = `${db.url}?schema=together_${round}`;
    const opened = await Promise.allSettled(Array.from({ length: 6 }, () => openLedgerStore(url, { env })));
    const refused = opened.filter((o) => o.status === 'rejected').map((o) => String(o.reason));
    assert.deepEqual(refused, [], `round ${round}: every run opens the ledger`);
    for (const o of opened) if (o.status === 'fulfilled') await o.value!.close();
  }
});
