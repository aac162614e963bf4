import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { openLedger } from '../../../src/ledger/ledger.js';
import { snapshot } from '../../helpers/files.js';
import { tmpDir } from '../../helpers/tmp.js';
import { seedLedger } from './seed.js';

// The built CLI, as users run it (npm test builds it first).
const bin = fileURLToPath(new URL('../../../bin/leadledger.js', import.meta.url));

// Spawned like a user would run it: stdin is not a terminal (closed), colour off, a clean environment.
function cli(args: string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv } = {}) {
  const r = spawnSync(process.execPath, [bin, 'ledger', ...args], {
    cwd: opts.cwd,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { PATH: process.env.PATH, HOME: process.env.HOME, NO_COLOR: '1', ...opts.env },
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

test('cli: list --json prints its document on stdout and nothing else there; the table goes to stdout, notes to stderr', () => {
  const { dir, path } = seedLedger();
  const j = cli(['list', '--ledger', path, '--json', '--status', 'sent']);
  assert.equal(j.code, 0, j.stderr);
  const keys = (JSON.parse(j.stdout) as { events: Array<{ key: string }> }).events.map((e) => e.key).sort();
  assert.deepEqual(keys.slice(0, 2), ['evt-1', 'imp-1']);
  assert.match(keys[2]!, /^person:[0-9a-f]{40}$/, 'an imported person has a derived key, never the address');
  const t = cli(['list', '--limit', '2'], { cwd: dir, env: { LEADLEDGER_LEDGER: 'ledger.db' } });
  assert.equal(t.code, 0, t.stderr);
  assert.match(t.stdout, /^key\s+status\s+natural key/);
  assert.equal(t.stdout.trim().split('\n').length, 3);
  assert.match(t.stderr, /showing 2 of 5/);
});

test('cli: read-only commands on a missing ledger exit 5 with the path; show of an unknown key exits 1', () => {
  const dir = tmpDir();
  const r = cli(['stats', '--ledger', join(dir, 'none.db')]);
  assert.equal(r.code, 5);
  assert.match(r.stderr, /no ledger at .*none\.db/);
  assert.equal(existsSync(join(dir, 'none.db')), false);
  const { path } = seedLedger();
  const s = cli(['show', 'nope', '--ledger', path]);
  assert.equal(s.code, 1);
  assert.match(s.stderr, /'nope' is not in the ledger/);
});

test('cli: forget without a terminal refuses without --yes (exit 2), changes nothing; with --yes it acts', () => {
  const { path } = seedLedger();
  const r = cli(['forget', 'evt-1', 'evt-2', '--ledger', path]);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /Forget 2 events\?/);
  assert.match(r.stderr, /--yes/);
  const l = openLedger(path, { readonly: true })!;
  assert.equal(l.lookupKeys(['evt-1']).size, 1);
  l.close();
  const d = cli(['forget', 'evt-1', '--ledger', path, '--dry-run']);
  assert.equal(d.code, 0, d.stderr);
  assert.match(d.stdout, /would forget 1 event/);
  const y = cli(['forget', 'evt-1', 'evt-2', '--ledger', path, '--yes']);
  assert.equal(y.code, 0, y.stderr);
  assert.match(y.stderr, /forgot 2 events/);
});

test('cli: prune and forget --email without a terminal need --yes too', () => {
  const { path } = seedLedger();
  const p = cli(['prune', '--older-than', '0d', '--ledger', path]);
  assert.equal(p.code, 2);
  assert.match(p.stderr, /--yes/);
  const e = cli(['forget', '--email', 'ana@example.com', '--ledger', path]);
  assert.equal(e.code, 2);
  const ok = cli(['forget', '--email', 'ana@example.com', '--ledger', path, '--yes', '--json']);
  assert.equal(ok.code, 0, ok.stderr);
  const r = JSON.parse(ok.stdout) as { erasure: { deleted: number; walTruncated: boolean } };
  assert.equal(r.erasure.deleted, 1);
  assert.ok(!readFileSync(path).includes(Buffer.from('ana@example.com')));
});

test('cli: verify exits 0 on a sound ledger and 5 on a broken one, listing the problem', () => {
  const { path } = seedLedger();
  const ok = cli(['verify', '--ledger', path]);
  assert.equal(ok.code, 0, ok.stderr);
  assert.match(ok.stdout, /ok/);
  const l = openLedger(path)!;
  l.db.prepare(`UPDATE events SET failure = NULL WHERE key = 'evt-2'`).run();
  l.close();
  const bad = cli(['verify', '--ledger', path]);
  assert.equal(bad.code, 5);
  assert.match(bad.stdout, /failed-kind: 1 × failed events without a failure kind/);
});

test('cli: export to stdout is the data alone; stats, runs and --help work', () => {
  const { path } = seedLedger();
  const e = cli(['export', '-o', '-', '--format', 'csv', '--ledger', path]);
  assert.equal(e.code, 0, e.stderr);
  assert.match(e.stdout, /^key,key_kind,status/);
  assert.equal(e.stdout.trim().split('\n').length, 6);
  assert.match(e.stderr, /exported 5 events/);
  const s = cli(['stats', '--ledger', path, '--json']);
  assert.equal((JSON.parse(s.stdout) as { events: number }).events, 5);
  const r = cli(['runs', '--ledger', path, '--json']);
  assert.deepEqual(
    (JSON.parse(r.stdout) as { runs: Array<{ args: { authorization: string } }> }).runs[0]!.args.authorization,
    '[redacted]',
  );
  assert.match(cli(['runs', '--ledger', path]).stdout, /^id\s+command\s+status/);
  const h = cli(['prune', '--help']);
  assert.equal(h.code, 0);
  assert.match(h.stdout, /eligible again/);
});

test('cli: a file that is not a leadledger ledger is refused by every command, exit 5 on one line, left untouched', () => {
  const dir = tmpDir();
  writeFileSync(join(dir, 'events.jsonl'), '{"event_id":"e1","email":"a1@example.com"}\n');
  writeFileSync(join(dir, 'people.txt'), 'a1@example.com\n');
  const app = new Database(join(dir, 'app.db'));
  app.exec(`CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('keep me')`);
  app.pragma('user_version = 7');
  app.close();
  writeFileSync(join(dir, 'notes.txt'), 'not a database\n');
  const commands = [
    ['push', 'events.jsonl', '--sink', 'jsonl', '--output', 'out.jsonl'],
    ['push', 'events.jsonl', '--dry-run'],
    ['ledger', 'import', 'people.txt', '--as', 'emails'],
    ['ledger', 'stats'],
    ['ledger', 'list'],
    ['ledger', 'verify'],
  ];
  for (const file of ['app.db', 'notes.txt']) {
    const path = join(dir, file);
    const before = snapshot(path);
    for (const args of commands) {
      const r = spawnSync(process.execPath, [bin, ...args, '--ledger', file], {
        cwd: dir,
        encoding: 'utf8',
        env: { PATH: process.env.PATH, HOME: process.env.HOME, NO_COLOR: '1' },
      });
      const what = `${args.join(' ')} --ledger ${file}`;
      assert.equal(r.status, 5, `${what}: ${r.stderr}`);
      assert.match(
        r.stderr,
        /^leadledger: error: .* is not a leadledger ledger \(.*\); it was left untouched\n$/,
        what,
      );
      assert.ok(r.stderr.includes(path), `${what} names the file: ${r.stderr}`);
      assert.deepEqual(snapshot(path), before, `${what}: untouched`);
    }
  }
  assert.equal(existsSync(join(dir, 'out.jsonl')), false, 'nothing was sent');
});

test('cli: prune --older-than reads ages that cannot be misread: 6m is refused with a hint, 6mo, 2w and 1y are taken', () => {
  const { path } = seedLedger();
  const l = openLedger(path)!;
  const old = new Date(Date.now() - 200 * 86_400_000).toISOString();
  l.db.prepare(`UPDATE events SET first_seen_at = ?, updated_at = ?`).run(old, old);
  l.close();
  const m = cli(['prune', '--older-than', '6m', '--ledger', path, '--dry-run']);
  assert.equal(m.code, 2, m.stderr);
  assert.match(m.stderr, /m is ambiguous: write 6min for minutes or 6mo for months/);
  const matched = (age: string) => {
    const r = cli(['prune', '--older-than', age, '--ledger', path, '--dry-run', '--json']);
    assert.equal(r.code, 0, r.stderr);
    return (JSON.parse(r.stdout) as { matched: number }).matched;
  };
  const sixMonths = matched('6mo');
  assert.ok(sixMonths > 0, 'rows 200 days old are older than 6 months');
  assert.equal(matched('2w'), sixMonths);
  assert.equal(matched('1y'), 0, 'and younger than a year');
});
