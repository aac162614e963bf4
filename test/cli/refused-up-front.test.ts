// What cannot work is refused before any lead is claimed: a usage error (exit 2) naming what is wrong, and a ledger
// that holds nothing, rather than every batch failing, or left in doubt, once its leads are claimed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SINKS } from '../../src/sinks/registry.js';
import { ROOT, runCli } from '../helpers/cli.js';
import { eventCount } from '../helpers/ledger-count.js';
import { tmpDir } from '../helpers/tmp.js';

const fixture = join(ROOT, 'fixtures', 'webhook-events.jsonl');
/** A dry-run of the fixture that was not refused ends 6: its conflicting retry (evt_01JA0009) would never be sent. */
const AUDITED = 6;

/** A push of the fixture to a JSONL file, with more flags. */
const pushJsonl = (output: string, ledger: string, ...more: string[]) =>
  runCli(['push', fixture, '--sink', 'jsonl', '--output', output, '--ledger', ledger, ...more]);

test('a --timeout or --wait past what a timer holds (24 days) is a usage error, not leads in doubt', async () => {
  const dir = tmpDir();
  const ledger = join(dir, 'l.db');
  for (const args of [
    ['--timeout', '1e12'],
    ['--timeout', '4000000'],
    ['--wait', '3000000'],
  ]) {
    const r = await pushJsonl(join(dir, 'o.jsonl'), ledger, ...args);
    assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, new RegExp(`${args[0]} takes at most 2147483 seconds \\(24 days\\), not '${args[1]}'`));
    assert.equal(eventCount(ledger), 0, 'nothing claimed');
  }
  // The bound itself is taken.
  const r = await runCli(['push', fixture, '--dry-run', '--timeout', '2147483', '--ledger', ledger]);
  assert.equal(r.code, AUDITED, r.stderr);
});

test('a token that cannot go in a header (a line break, a control character) is refused naming its file or variable, never quoting it', async () => {
  const dir = tmpDir();
  const ledger = join(dir, 'l.db');
  const file = join(dir, 'hubspot.token');
  writeFileSync(file, 'pat-na1-SECRETPART\nsecond-line\n');
  const viaFile = await runCli([
    'push',
    fixture,
    '--sink',
    'hubspot',
    '--token-file',
    file,
    '--hubspot-url',
    'http://127.0.0.1:9',
    '--ledger',
    ledger,
  ]);
  assert.equal(viaFile.code, 2, viaFile.stderr);
  assert.match(
    viaFile.stderr,
    new RegExp(
      `token file ${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} holds a line break at character 19 of the token`,
    ),
  );
  const viaEnv = await runCli(
    ['push', fixture, '--sink', 'hubspot', '--hubspot-url', 'http://127.0.0.1:9', '--ledger', ledger],
    {
      env: { HUBSPOT_TOKEN: 'pat-na1-SECRETPART\u0007' },
    },
  );
  assert.equal(viaEnv.code, 2, viaEnv.stderr);
  assert.match(viaEnv.stderr, /HUBSPOT_TOKEN holds a control character at character 19 of the token/);
  for (const r of [viaFile, viaEnv]) assert.ok(!`${r.stdout}${r.stderr}`.includes('SECRETPART'), r.stderr);
  assert.equal(eventCount(ledger), 0, 'nothing claimed');
});

test('--type or --keys with nothing in it (an empty value, a lone comma) is a usage error, not every event filtered out', async () => {
  const dir = tmpDir();
  for (const args of [
    ['push', fixture, '--dry-run', '--type', ','],
    ['push', fixture, '--dry-run', '--type', ''],
    ['replay', '--keys', ' , ', '--sink', 'jsonl', '--output', join(dir, 'o.jsonl')],
  ]) {
    const r = await runCli([...args, '--ledger', join(dir, 'l.db')]);
    assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, /(--type takes event types|--keys takes event keys) separated by commas, not '/);
  }
  // Repeated, and with blanks between commas, as before.
  const r = await runCli([
    'push',
    fixture,
    '--dry-run',
    '--json',
    '--type',
    'lead.created,',
    '--type',
    ' ,lead.updated',
    '--ledger',
    join(dir, 'l.db'),
  ]);
  assert.equal(r.code, AUDITED, r.stderr);
  assert.deepEqual((JSON.parse(r.stdout) as { options: { types?: string[] } }).options.types, [
    'lead.created',
    'lead.updated',
  ]);
});

test('a config saved with a byte order mark (Notepad) is read; one that is not JSON is refused at its line and column', async () => {
  const dir = tmpDir();
  const bom = join(dir, 'bom.json');
  writeFileSync(bom, '\ufeff{"defaultCountry":"BR","types":["lead.created"]}');
  const r = await runCli(['push', fixture, '--dry-run', '--json', '--config', bom, '--ledger', join(dir, 'l.db')]);
  assert.equal(r.code, AUDITED, r.stderr);
  assert.ok((JSON.parse(r.stdout) as { counts: { filtered: number } }).counts.filtered > 0, 'its types were applied');
  const bad = join(dir, 'bad.json');
  writeFileSync(bad, '{\n  "defaultCountry": "BR",\n  "types": ["lead.created",]\n}\n');
  const b = await runCli(['push', fixture, '--dry-run', '--config', bad, '--ledger', join(dir, 'l.db')]);
  assert.equal(b.code, 2, b.stderr);
  assert.match(b.stderr, /config .*bad\.json is not valid JSON: .* at line 3, column 28/);
});

test('a misspelt --sink is a usage error in a dry-run too (from the flag or LEADLEDGER_SINK)', async () => {
  const dir = tmpDir();
  const flag = await runCli(['push', fixture, '--dry-run', '--sink', 'hubspto', '--ledger', join(dir, 'l.db')]);
  const env = await runCli(['push', fixture, '--dry-run', '--ledger', join(dir, 'l.db')], {
    env: { LEADLEDGER_SINK: 'jsnol' },
  });
  for (const [r, name] of [
    [flag, 'hubspto'],
    [env, 'jsnol'],
  ] as const) {
    assert.equal(r.code, 2, r.stderr);
    // Every sink of the registry is named, in its order.
    const names = SINKS.map((d) => d.name).join(', ');
    assert.ok(r.stderr.includes(`--sink takes ${names}, not '${name}'`), r.stderr);
    assert.match(names, /^hubspot, webhook, jsonl, postgres, /);
  }
  const ok = await runCli(['push', fixture, '--dry-run', '--sink', 'jsonl', '--ledger', join(dir, 'l.db')]);
  assert.equal(ok.code, AUDITED, ok.stderr);
  // Set and empty, as a CronJob's env may leave it: no sink, as when unset.
  const empty = await runCli(['push', fixture, '--dry-run', '--ledger', join(dir, 'l.db')], {
    env: { LEADLEDGER_SINK: '' },
  });
  assert.equal(empty.code, AUDITED, empty.stderr);
});
