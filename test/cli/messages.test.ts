// Messages a person meets when something is wrong: one error prefix for leadledger's errors and commander's, "did
// you mean" for a misspelt sink, preset or command, a --token that says where tokens come from (and never echoes
// one), a missing file named, a --wait that ran out saying so, a token file others may read warned about.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { runCli } from '../helpers/cli.js';
import { emulator } from '../helpers/emulator.js';
import { tmpDir } from '../helpers/tmp.js';

const PREFIX = 'leadledger: error: ';

function events(dir: string): string {
  const f = join(dir, 'events.jsonl');
  writeFileSync(f, '{"id":"e1","email":"ana@example.com"}\n{"id":"e2","email":"bo@example.com"}\n');
  return f;
}

test("commander's usage errors and leadledger's own start alike, with the suggestion commander has", async () => {
  const dir = tmpDir();
  const cases: Array<[string[], RegExp]> = [
    [['pussh', 'x'], /unknown command 'pussh'\n\(Did you mean push\?\)/],
    [['push', events(dir), '--dryrun'], /unknown option '--dryrun'\n\(Did you mean --dry-run\?\)/],
    [['push'], /missing required argument 'inputs'/],
    [['push', join(dir, 'nope.jsonl'), '-n'], /cannot read input '.*nope\.jsonl': no such file/],
    [['push', events(dir), '--concurrency', 'x'], /--concurrency takes a whole number/],
  ];
  for (const [args, message] of cases) {
    const r = await runCli(args, { cwd: dir });
    assert.ok(r.stderr.startsWith(PREFIX), `${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, message);
    assert.doesNotMatch(r.stderr, /^(error|leadledger): (?!error: )/m, r.stderr);
  }
});

test('a misspelt sink, preset or source name gets the nearest one', async () => {
  const dir = tmpDir();
  const f = events(dir);
  const sink = await runCli(['push', f, '--sink', 'hubsopt'], { cwd: dir });
  assert.equal(sink.code, 2);
  assert.match(sink.stderr, /^leadledger: error: --sink takes .*, not 'hubsopt' \(did you mean 'hubspot'\?\)\n/);
  const preset = await runCli(['push', f, '--preset', 'typefrom', '-n'], { cwd: dir });
  assert.equal(preset.code, 2);
  assert.match(preset.stderr, /--preset 'typefrom' is no source .*\(did you mean 'typeform'\?\)\n/);
  const listed = await runCli(['presets', 'typefrom'], { cwd: dir });
  assert.match(listed.stderr, /'typefrom' is no source .*\(did you mean 'typeform'\?\)\n/);
  const auth = await runCli(['auth', 'rdstaton'], { cwd: dir });
  assert.match(auth.stderr, /no sink 'rdstaton'.*\(did you mean 'rdstation'\?\)/);
});

test('--token says where tokens come from, and never repeats the value given', async () => {
  const dir = tmpDir();
  for (const args of [
    ['push', events(dir), '--sink', 'hubspot', '--token', 'pat-na1-s3cret'],
    ['push', events(dir), '--sink', 'hubspot', '--token=pat-na1-s3cret'],
    ['push', events(dir), '--sink', 'pipedrive', '--api-token=pat-na1-s3cret'],
  ]) {
    const r = await runCli(args, { cwd: dir });
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /^leadledger: error: --[\w-]*token is not an option: tokens never go on the command line/);
    assert.match(r.stderr, /HUBSPOT_TOKEN/);
    assert.match(r.stderr, /--token-file FILE/);
    assert.ok(!r.stderr.includes('s3cret'), r.stderr);
  }
});

test('a file that is not there is named, whichever flag named it', async () => {
  const dir = tmpDir();
  const f = events(dir);
  const out = ['-s', 'jsonl', '--output', join(dir, 'out.jsonl'), '--ledger', join(dir, 'l.db')];
  assert.equal((await runCli(['push', f, ...out], { cwd: dir })).code, 0);
  const keys = await runCli(['replay', '--keys-from', 'nope-keys.txt', ...out], { cwd: dir });
  assert.equal(keys.code, 3, keys.stderr);
  assert.equal(keys.stderr, `${PREFIX}cannot read nope-keys.txt: no such file\n`);
  const token = await runCli(['push', f, '--sink', 'hubspot', '--token-file', 'nope.token'], { cwd: dir });
  assert.equal(token.code, 2);
  assert.match(token.stderr, /^leadledger: error: cannot read the HubSpot token file nope\.token \(no such file\)\n/);
  const config = await runCli(['push', f, '-n', '-c', 'nope.json'], { cwd: dir });
  assert.equal(config.code, 2);
  assert.match(config.stderr, /^leadledger: error: config \S*nope\.json \(from --config\) does not exist\n/);
});

test('a --wait that runs out says that it waited, and for how long', async () => {
  const dir = tmpDir();
  const ledger = join(dir, 'l.db');
  const f = events(dir);
  const first = await runCli(['push', f, '-s', 'jsonl', '--output', join(dir, 'out.jsonl'), '--ledger', ledger]);
  assert.equal(first.code, 0, first.stderr);
  // A run of a live process on this host (the test's own) holds the ledger.
  const db = new Database(ledger);
  const now = new Date().toISOString();
  db.prepare(
    `INSERT INTO runs (command, args_json, host, pid, started_at, heartbeat_at, status) VALUES ('push', '{}', ?, ?, ?, ?, 'running')`,
  ).run(hostname(), process.pid, now, now);
  db.close();
  const args = ['push', f, '-s', 'jsonl', '--output', join(dir, 'out.jsonl'), '--ledger', ledger];
  const waited = await runCli([...args, '--wait', '0.3']);
  assert.equal(waited.code, 5, waited.stderr);
  assert.match(
    waited.stderr,
    /^leadledger: error: ledger .*l\.db is still in use by run \d+ \(pid \d+ on [^)]+\): --wait timed out after 0\.3 s; /,
  );
  const unwaited = await runCli(args);
  assert.equal(unwaited.code, 5);
  assert.match(unwaited.stderr, /is in use by run \d+ .*; wait for it, or pass --wait\n$/);
});

test('a token file its group or others may read is warned about, with the chmod that fixes it', async () => {
  const TOKEN = 'pat-na1-token-file-mode';
  const emu = await emulator({ token: TOKEN });
  const dir = tmpDir();
  const f = events(dir);
  const tokenFile = join(dir, 'hubspot.token');
  writeFileSync(tokenFile, TOKEN + '\n');
  const push = (ledger: string) =>
    runCli(['push', f, '-s', 'hubspot', '--hubspot-url', emu.url, '--token-file', tokenFile, '--ledger', ledger], {
      env: { HUBSPOT_TOKEN: undefined },
    });
  chmodSync(tokenFile, 0o644);
  const shared = await push(join(dir, 'a.db'));
  assert.equal(shared.code, 0, shared.stderr);
  assert.match(
    shared.stderr,
    new RegExp(`warning: token file .*hubspot\\.token may be read by its group or others \\(mode 0644\\).*chmod 600 `),
  );
  assert.ok(!shared.stderr.includes(TOKEN));
  chmodSync(tokenFile, 0o600);
  const own = await push(join(dir, 'b.db'));
  assert.equal(own.code, 0, own.stderr);
  assert.doesNotMatch(own.stderr, /warning: token file/);
});
