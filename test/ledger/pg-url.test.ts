// How a ledger's PostgreSQL URL is shown in messages, reports and --json: never a password, wherever it is written.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ledgerName } from '../../src/ledger/open.js';
import { pgTarget } from '../../src/ledger/postgres/store.js';

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
