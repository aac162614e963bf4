// How a ledger's PostgreSQL URL is shown in messages, reports and --json: never a password, wherever it is written;
// and taken: never with a password from the command line.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { ledgerName } from '../../src/ledger/open.js';
import { pgTarget } from '../../src/ledger/postgres/store.js';
import { pgUrlHoldsPassword } from '../../src/pg-url.js';
import { runCli } from '../helpers/cli.js';
import { tmpDir } from '../helpers/tmp.js';

const FIXTURE = join(import.meta.dirname, '..', '..', 'fixtures', 'webhook-events.jsonl');

test('a ledger URL is shown without its password, in the user information or the query string; ?schema= kept', () => {
  const url = 'postgres://ops:pw-1187@db.internal:5432/crm?sslpassword=ssl-5521&schema=team_a&password=q-9903';
  const shown = ledgerName(url);
  assert.equal(shown, 'postgres://ops:***@db.internal:5432/crm?schema=team_a');
  const named = pgTarget(url, {}).name;
  assert.equal(named, 'postgres://ops:***@db.internal:5432/crm?schema=team_a');
  for (const s of [shown, named]) assert.doesNotMatch(s, /pw-1187|ssl-5521|q-9903/);
});

test('a ledger URL that cannot be parsed (a / in the password) is refused without repeating the password', () => {
  const url = 'postgres://ops:pa/ss-4410@db.internal/crm';
  assert.doesNotMatch(ledgerName(url), /ss-4410/);
  assert.throws(
    () => pgTarget(url, {}),
    (e: Error) => /cannot read the PostgreSQL URL/.test(e.message) && !/ss-4410/.test(e.message),
  );
});

test('pgUrlHoldsPassword: in the user information, as ?password= or ?sslpassword=; not a user alone or an @ elsewhere', () => {
  for (const url of [
    'postgres://ops:pw@db/crm',
    'postgres://ops:pa/ss@db/crm',
    'postgresql://ops:p%40ss@db:5432/crm?schema=a',
    'postgres://ops@db/crm?password=x',
    'postgres://ops@db/crm?schema=a&sslpassword=y',
  ])
    assert.equal(pgUrlHoldsPassword(url), true, url);
  for (const url of [
    'postgres://ops@db/crm',
    'postgres://db:5432/crm?schema=a',
    'postgres://ops@db/crm?application_name=a@b',
  ])
    assert.equal(pgUrlHoldsPassword(url), false, url);
});

test('--ledger and --to refuse a password on the command line, without repeating it; LEADLEDGER_LEDGER may hold one', async () => {
  const dir = tmpDir();
  const pushed = await runCli(['push', FIXTURE, '--dry-run', '--ledger', 'postgres://ops:pw-3317@127.0.0.1:1/crm']);
  assert.equal(pushed.code, 2, pushed.stderr);
  assert.match(pushed.stderr, /--ledger must not hold a password .*PGPASSWORD.*~\/\.pgpass.*LEADLEDGER_LEDGER/);
  const listed = await runCli(['ledger', 'stats', '--ledger', 'postgres://ops@127.0.0.1:1/crm?password=pw-3317']);
  assert.equal(listed.code, 2, listed.stderr);
  assert.match(listed.stderr, /--ledger must not hold a password/);
  const moved = await runCli([
    'ledger',
    'migrate',
    '--ledger',
    join(dir, 'l.db'),
    '--to',
    'postgres://ops:pw-3317@127.0.0.1:1/crm',
  ]);
  assert.equal(moved.code, 2, moved.stderr);
  assert.match(moved.stderr, /--to must not hold a password/);
  for (const r of [pushed, listed, moved]) assert.doesNotMatch(r.stdout + r.stderr, /pw-3317/);
  // From the environment it is taken (here: nobody listens on port 1, so the ledger cannot be opened: exit 5).
  const fromEnv = await runCli(['ledger', 'stats'], {
    env: { LEADLEDGER_LEDGER: 'postgres://ops:pw-3317@127.0.0.1:1/crm' },
  });
  assert.equal(fromEnv.code, 5, fromEnv.stderr);
  assert.doesNotMatch(fromEnv.stderr, /must not hold a password|pw-3317/);
});
