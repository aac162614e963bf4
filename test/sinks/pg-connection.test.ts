// Where the postgres sink connects and with which password: never a password from argv, libpq's order for the
// rest (a URL in the environment, PGPASSWORD, the password file), and URLs shown without their secrets.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { chooseUrl, resolvePgConnection } from '../../src/sinks/postgres/connection.js';
import { parsePgpassLine, passwordFromPgpass } from '../../src/sinks/postgres/pgpass.js';
import { redactPgUrl } from '../../src/sinks/transport/secure-url.js';
import { tmpDir } from '../helpers/tmp.js';

test('a password in --pg-url is refused, in any of its forms, without repeating it', () => {
  for (const url of [
    'postgres://app:s3cr3t-pw@db.example.com/leads',
    'postgresql://app:s3cr3t-pw@db.example.com:5433/leads?sslmode=require',
    'postgres://app@db.example.com/leads?password=s3cr3t-pw',
    'postgres://app@db.example.com/leads?sslpassword=s3cr3t-pw',
  ]) {
    assert.throws(
      () => resolvePgConnection(url, undefined, {}),
      (e: Error) => /--pg-url must not hold a password/.test(e.message) && !e.message.includes('s3cr3t'),
      url,
    );
  }
});

test('a URL held in LEADLEDGER_PG_URL or DATABASE_URL may carry the password; --pg-url comes first', () => {
  const env = { DATABASE_URL: 'postgres://app:from-db-url@h:5432/d', HOME: '/nonexistent' };
  assert.deepEqual(chooseUrl(undefined, undefined, env), { url: env.DATABASE_URL, from: 'DATABASE_URL' });
  assert.deepEqual(chooseUrl('postgres://app@h/d', undefined, env), { url: 'postgres://app@h/d', from: undefined });
  const c = resolvePgConnection(env.DATABASE_URL, 'DATABASE_URL', env);
  assert.equal(c.config.password, 'from-db-url');
  assert.equal(c.passwordFrom, 'the URL in DATABASE_URL');
  assert.equal(c.display, 'postgres://app@h:5432/d');
  assert.throws(() => chooseUrl(undefined, undefined, {}), /needs --pg-url/);
  assert.throws(() => resolvePgConnection('mysql://app@h/d', undefined, {}), /must be a postgres:\/\//);
});

test('the password: the URL in the environment, else PGPASSWORD, else ~/.pgpass', () => {
  const home = tmpDir();
  writeFileSync(join(home, '.pgpass'), 'h:5432:d:app:from-pgpass\n', { mode: 0o600 });
  const url = 'postgres://app@h:5432/d';
  assert.equal(resolvePgConnection(url, undefined, { HOME: home }).config.password, 'from-pgpass');
  const both = resolvePgConnection(url, undefined, { HOME: home, PGPASSWORD: 'from-env' });
  assert.equal(both.config.password, 'from-env');
  assert.equal(both.passwordFrom, 'PGPASSWORD');
  const none = resolvePgConnection('postgres://other@h:5432/d', undefined, { HOME: home });
  assert.equal(none.config.password, undefined);
  assert.equal(none.passwordFrom, undefined);
});

test('.pgpass lines are read as libpq reads them: comments, wildcards, \\: and \\\\, the first match', () => {
  assert.equal(parsePgpassLine('# a:b:c:d:e'), undefined);
  assert.equal(parsePgpassLine(''), undefined);
  assert.equal(parsePgpassLine('a:b:c:d'), undefined);
  assert.deepEqual(parsePgpassLine('h:5432:*:u:p\\:w\\\\d'), ['h', '5432', '*', 'u', 'p:w\\d']);
  assert.deepEqual(parsePgpassLine('h:1:d:u:pw:ignored'), ['h', '1', 'd', 'u', 'pw']);
  const home = tmpDir();
  writeFileSync(
    join(home, '.pgpass'),
    [
      '# production',
      'db.example.com:5432:leads:app:first',
      '*:*:leads:app:second',
      'localhost:5432:*:*:third\r',
      '',
    ].join('\n'),
    { mode: 0o600 },
  );
  const look = (host: string, port = 5432, database = 'leads', user = 'app') =>
    passwordFromPgpass({ host, port, database, user }, { HOME: home }).password;
  assert.equal(look('db.example.com'), 'first');
  assert.equal(look('other.example.com', 6543), 'second');
  assert.equal(look('localhost', 5432, 'x', 'y'), 'third');
  // A Unix socket in the default directory is `localhost`; another directory is matched as written.
  assert.equal(look('/var/run/postgresql', 5432, 'x', 'y'), 'third');
  assert.equal(look('/srv/sock', 5432, 'x', 'y'), undefined);
  assert.equal(look('db.example.com', 5432, 'other', 'nobody'), undefined);
});

test('a password file others may read is ignored, as libpq ignores it, and says why; PGPASSFILE names another', () => {
  const home = tmpDir();
  const file = join(home, '.pgpass');
  writeFileSync(file, '*:*:*:*:pw\n');
  chmodSync(file, 0o644);
  const r = passwordFromPgpass({ host: 'h', port: 5432, database: 'd', user: 'u' }, { HOME: home });
  assert.equal(r.password, undefined);
  assert.match(r.ignored ?? '', /group or world access \(mode 0644\)/);
  mkdirSync(join(home, 'dir'));
  assert.match(
    passwordFromPgpass({ host: 'h', port: 5432, database: 'd', user: 'u' }, { PGPASSFILE: join(home, 'dir') })
      .ignored ?? '',
    /not a regular file/,
  );
  const other = join(home, 'other-pgpass');
  writeFileSync(other, '*:*:*:*:elsewhere\n', { mode: 0o600 });
  assert.equal(
    passwordFromPgpass({ host: 'h', port: 5432, database: 'd', user: 'u' }, { HOME: home, PGPASSFILE: other }).password,
    'elsewhere',
  );
});

test('postgres URLs are shown with the user and without the password or the query string', () => {
  assert.equal(redactPgUrl('postgres://app:pw@h:5432/d?sslmode=require'), 'postgres://app:redacted@h:5432/d?redacted');
  assert.equal(redactPgUrl('postgres://app@h/d'), 'postgres://app@h/d');
  assert.equal(redactPgUrl('postgres://app:p@ss/w?rd@h/d'), 'postgres://app:redacted@h/d?redacted');
  assert.equal(redactPgUrl('not a url :pw@'), '[redacted]');
  assert.ok(!redactPgUrl('postgres://h/d?password=x&u=a@b').includes('password=x'));
});
