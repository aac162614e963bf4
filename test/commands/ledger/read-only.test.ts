// A ledger leadledger may not write — its file 0444, or its folder one the process cannot write — still serves what
// only reads it: `ledger stats`, `ledger list`, `ledger verify` and `push --dry-run`, and leaves nothing beside it.
// Spawned bound by file modes (test/helpers/cli.ts: as root, without the capabilities that override them).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { openLedger } from '../../../src/ledger/ledger.js';
import { boundByFileModes, runCli } from '../../helpers/cli.js';
import { jsonlEvents } from '../../helpers/events.js';
import { snapshot } from '../../helpers/files.js';
import { tmpDir } from '../../helpers/tmp.js';
import { seedLedger } from './seed.js';

// Proves the premise, so that no test here passes only because the folder was writable after all.
function assertCannotWrite(folder: string): void {
  const probe = join(folder, 'probe');
  const [cmd, ...args] = boundByFileModes([
    process.execPath,
    '-e',
    `require('fs').writeFileSync(${JSON.stringify(probe)}, '')`,
  ]);
  const r = spawnSync(cmd!, args, { encoding: 'utf8' });
  assert.notEqual(r.status, 0, `the test process could write ${folder}: a read-only folder cannot be simulated here`);
  assert.match(r.stderr, /EACCES|EPERM|EROFS/);
  assert.equal(existsSync(probe), false);
}

// The four read-only commands against the ledger; each must succeed and find the seeded ledger's events.
async function assertServed(path: string, cwd: string): Promise<void> {
  const run = (args: string[]) => runCli([...args, '--ledger', path], { cwd, fileModes: true });
  const stats = await run(['ledger', 'stats', '--json']);
  assert.equal(stats.code, 0, `stats: ${stats.stderr}`);
  assert.equal((JSON.parse(stats.stdout) as { events: number }).events, 5);
  const list = await run(['ledger', 'list', '--json']);
  assert.equal(list.code, 0, `list: ${list.stderr}`);
  assert.equal((JSON.parse(list.stdout) as { events: unknown[] }).events.length, 5);
  const verify = await run(['ledger', 'verify']);
  assert.equal(verify.code, 0, `verify: ${verify.stdout}${verify.stderr}`);
  const input = join(tmpDir(), 'events.jsonl');
  writeFileSync(input, '{"event_id":"imp-1","email":"x@example.com"}\n{"event_id":"e-new","email":"y@example.com"}\n');
  const dry = await run(['push', input, '--dry-run', '--json']);
  assert.equal(dry.code, 0, `push --dry-run: ${dry.stderr}`);
  const counts = (JSON.parse(dry.stdout) as { counts: Record<string, number> }).counts;
  assert.equal(counts.duplicate, 1, 'the ledger was read: imp-1 is in it');
  assert.equal(counts.new, 1);
}

test('a ledger in a folder the process cannot write, without -wal or -shm: read, and nothing left beside it', async () => {
  const { dir, path } = seedLedger();
  assert.equal(existsSync(path + '-wal') || existsSync(path + '-shm'), false, 'closed ledgers leave no -wal or -shm');
  chmodSync(path, 0o444);
  chmodSync(dir, 0o555);
  try {
    assertCannotWrite(dir);
    const before = snapshot(path);
    await assertServed(path, tmpDir());
    assert.deepEqual(snapshot(path), before, 'untouched, and no -wal or -shm created');
  } finally {
    chmodSync(dir, 0o700);
  }
});

test('a ledger file 0444 in a folder the process can write: read', async () => {
  const { dir, path } = seedLedger();
  chmodSync(path, 0o444);
  const before = snapshot(path).db;
  await assertServed(path, dir);
  assert.equal(snapshot(path).db, before);
});

test('a read-only folder whose ledger still has its -wal and -shm (a run was killed): read, the WAL included', async () => {
  const { path } = seedLedger();
  const l = openLedger(path)!;
  l.db.pragma('wal_autocheckpoint = 0');
  l.importDelivered([{ key: 'in-wal-only' }], 'seed');
  // Copied while the connection is open: the -wal holds the import, as a killed run leaves it.
  const killed = join(tmpDir(), 'killed');
  mkdirSync(killed);
  for (const s of ['', '-wal', '-shm']) writeFileSync(join(killed, 'ledger.db' + s), readFileSync(path + s));
  l.close();
  for (const s of ['', '-wal', '-shm']) chmodSync(join(killed, 'ledger.db' + s), 0o444);
  chmodSync(killed, 0o555);
  try {
    assertCannotWrite(killed);
    const r = await runCli(['ledger', 'show', 'in-wal-only', '--ledger', join(killed, 'ledger.db')], {
      fileModes: true,
    });
    assert.equal(r.code, 0, r.stderr);
  } finally {
    chmodSync(killed, 0o700);
  }
});

test('push --dry-run of an input large enough for map workers, which look the read-only ledger up themselves', async () => {
  const dir = join(tmpDir(), 'ledger');
  mkdirSync(dir);
  const path = join(dir, 'ledger.db');
  const l = openLedger(path)!;
  l.importDelivered(
    Array.from({ length: 1000 }, (_, i) => ({ key: `e${i}` })),
    'seed',
  );
  // An erased key: the ledger is not indexed (ledger-index.ts), so every worker opens it read-only itself.
  l.db.prepare('INSERT INTO tombstones VALUES (?)').run('0'.repeat(64));
  l.close();
  const input = join(tmpDir(), 'events.jsonl');
  writeFileSync(input, jsonlEvents(200_000));
  assert.ok(statSync(input).size > 8 << 20, 'larger than what is mapped in-thread');
  chmodSync(path, 0o444);
  chmodSync(dir, 0o555);
  try {
    assertCannotWrite(dir);
    const before = snapshot(path);
    const r = await runCli(['push', input, '--dry-run', '--json', '--ledger', path], { fileModes: true });
    assert.equal(r.code, 0, r.stderr);
    const counts = (JSON.parse(r.stdout) as { counts: Record<string, number> }).counts;
    assert.deepEqual([counts.read, counts.duplicate, counts.new], [200_000, 1000, 199_000]);
    assert.deepEqual(snapshot(path), before);
  } finally {
    chmodSync(dir, 0o700);
  }
});
