// The config as users meet it: named in every summary and --json, found where users look for it (--config,
// LEADLEDGER_CONFIG, the working directory, the user's config directory), holding the sink, its URL and the ledger
// so that a cron line needs nothing else, refusing what does not fit the input, and shipped with its JSON Schema.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { jsonReport, ROOT, runCli } from '../helpers/cli.js';
import { emulator } from '../helpers/emulator.js';
import { tmpDir } from '../helpers/tmp.js';
import { CONFIG_SCHEMA_FILE, configJsonSchema, configSchemaUrl } from '../../src/mapping/config.js';

const JSONL = '{"id":"e1","email":"ana@example.com"}\n{"id":"e2","email":"bo@example.com"}\n';

// A working directory with an input, and a user config directory of its own (never the real one).
function place(): { dir: string; xdg: string; env: Record<string, string> } {
  const dir = realpathSync(tmpDir());
  const xdg = join(dir, 'xdg');
  mkdirSync(join(xdg, 'leadledger'), { recursive: true });
  writeFileSync(join(dir, 'events.jsonl'), JSONL);
  return { dir, xdg, env: { XDG_CONFIG_HOME: xdg } };
}

test('a summary and --json name the config in use, or none', async () => {
  const { dir, env } = place();
  const none = await runCli(['push', 'events.jsonl', '--dry-run'], { cwd: dir, env });
  assert.equal(none.code, 0, none.stderr);
  assert.match(none.stdout, /^config: none$/m);
  const noneJson = await runCli(['push', 'events.jsonl', '--dry-run', '--json'], { cwd: dir, env });
  assert.equal(jsonReport(noneJson).config, null);

  writeFileSync(join(dir, 'leadledger.config.json'), JSON.stringify({ namespace: 'here' }));
  const here = await runCli(['push', 'events.jsonl', '--dry-run'], { cwd: dir, env });
  assert.match(here.stdout, /^config: \.\/leadledger\.config\.json$/m);
  const hereJson = await runCli(['push', 'events.jsonl', '--dry-run', '--json'], { cwd: dir, env });
  assert.equal(jsonReport(hereJson).config, join(dir, 'leadledger.config.json'));

  // replay (from an empty ledger: nothing to do) names it too.
  const ledger = join(dir, 'l.db');
  const sent = await runCli(
    ['push', 'events.jsonl', '--sink', 'jsonl', '--output', join(dir, 'out.jsonl'), '--ledger', ledger],
    {
      cwd: dir,
      env,
    },
  );
  assert.equal(sent.code, 0, sent.stderr);
  assert.match(sent.stdout, /^config: \.\/leadledger\.config\.json$/m);
  const replay = await runCli(['replay', '--dry-run', '--ledger', ledger, '--json'], { cwd: dir, env });
  assert.equal(replay.code, 0, replay.stderr);
  assert.equal(jsonReport(replay).config, join(dir, 'leadledger.config.json'));
  assert.match(replay.stderr, /^config: \.\/leadledger\.config\.json$/m);
});

test('the config is looked up: --config, then LEADLEDGER_CONFIG, then the working directory, then the user config directory', async () => {
  const { dir, xdg, env } = place();
  const user = join(xdg, 'leadledger', 'config.json');
  const here = join(dir, 'leadledger.config.json');
  const named = join(dir, 'named.json');
  const flagged = join(dir, 'flagged.json');
  for (const f of [user, here, named, flagged]) writeFileSync(f, '{}');
  const used = async (extra: string[], more: Record<string, string> = {}) => {
    const r = await runCli(['push', 'events.jsonl', '--dry-run', '--json', ...extra], {
      cwd: dir,
      env: { ...env, ...more },
    });
    assert.equal(r.code, 0, r.stderr);
    return jsonReport(r).config;
  };
  assert.equal(await used(['--config', 'flagged.json'], { LEADLEDGER_CONFIG: named }), flagged);
  assert.equal(await used([], { LEADLEDGER_CONFIG: named }), named);
  assert.equal(await used([]), here);
  const { rmSync } = await import('node:fs');
  rmSync(here);
  assert.equal(await used([]), user);
  // Without XDG_CONFIG_HOME: ~/.config/leadledger/config.json, the credentials file's folder.
  const home = join(dir, 'home');
  mkdirSync(join(home, '.config', 'leadledger'), { recursive: true });
  writeFileSync(join(home, '.config', 'leadledger', 'config.json'), '{}');
  assert.equal(await used([], { XDG_CONFIG_HOME: '', HOME: home }), join(home, '.config', 'leadledger', 'config.json'));
});

test('a config named by --config or LEADLEDGER_CONFIG that does not exist is an error naming it (exit 2)', async () => {
  const { dir, env } = place();
  writeFileSync(join(dir, 'leadledger.config.json'), '{}');
  const flag = await runCli(['push', 'events.jsonl', '--dry-run', '--config', 'missing.json'], { cwd: dir, env });
  assert.equal(flag.code, 2, flag.stderr);
  assert.match(flag.stderr, new RegExp(`${join(dir, 'missing.json')}.*does not exist`));
  const fromEnv = await runCli(['push', 'events.jsonl', '--dry-run'], {
    cwd: dir,
    env: { ...env, LEADLEDGER_CONFIG: join(dir, 'gone.json') },
  });
  assert.equal(fromEnv.code, 2, fromEnv.stderr);
  assert.match(fromEnv.stderr, /gone\.json \(from LEADLEDGER_CONFIG\) does not exist/);
});

test('a cron line with nothing but the inputs: the config names the sink, its URL and the ledger', async () => {
  const emu = await emulator();
  const { dir, xdg, env } = place();
  // In the user's config directory, as a cron job run from anywhere finds it; the ledger relative to it.
  writeFileSync(
    join(xdg, 'leadledger', 'config.json'),
    JSON.stringify({ sink: 'webhook', ledger: 'ledger.db', sinks: { webhook: { url: `${emu.url}/webhook` } } }),
  );
  const r = await runCli(['push', 'events.jsonl'], { cwd: dir, env });
  assert.equal(r.code, 0, r.stderr);
  assert.equal(emu.webhookReceived().deliveries.length, 2);
  assert.ok(existsSync(join(xdg, 'leadledger', 'ledger.db')), 'the ledger the config names');
  assert.ok(!existsSync(join(dir, '.leadledger')), 'not the default ledger');
  assert.match(r.stdout, /webhook at http:\/\/127\.0\.0\.1/);
  // The ledger commands read the same ledger.
  const stats = await runCli(['ledger', 'stats', '--json'], { cwd: dir, env });
  assert.equal(stats.code, 0, stats.stderr);
  const byStatus = (JSON.parse(stats.stdout) as { byStatus: Array<{ status: string; count: number }> }).byStatus;
  assert.equal(byStatus.find((s) => s.status === 'sent')?.count, 2, stats.stdout);

  // Flags > environment > config: the environment's URL wins over the config's, a flag over both.
  const other = await emulator();
  writeFileSync(join(dir, 'more.jsonl'), '{"id":"e3","email":"cy@example.com"}\n');
  const fromEnv = await runCli(['push', 'more.jsonl'], {
    cwd: dir,
    env: { ...env, LEADLEDGER_WEBHOOK_URL: `${other.url}/webhook` },
  });
  assert.equal(fromEnv.code, 0, fromEnv.stderr);
  assert.equal(other.webhookReceived().deliveries.length, 1);
  assert.equal(emu.webhookReceived().deliveries.length, 2);
  const ledger = join(dir, 'flag.db');
  const flagged = await runCli(
    ['push', 'events.jsonl', '--ledger', ledger, '--sink', 'jsonl', '--output', join(dir, 'o.jsonl')],
    {
      cwd: dir,
      env,
    },
  );
  assert.equal(flagged.code, 0, flagged.stderr);
  assert.ok(existsSync(ledger));
  assert.equal(readFileSync(join(dir, 'o.jsonl'), 'utf8').trim().split('\n').length, 2);
});

test('secrets never go in the config: a ledger or postgres URL with a password is refused (exit 2)', async () => {
  const { dir, env } = place();
  for (const config of [
    { ledger: 'postgres://app:s3cret@db.example.com/leads' },
    { sinks: { postgres: { pgUrl: 'postgres://app:s3cret@db.example.com/crm' } } },
  ]) {
    writeFileSync(join(dir, 'leadledger.config.json'), JSON.stringify(config));
    const r = await runCli(['push', 'events.jsonl', '--dry-run'], { cwd: dir, env });
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /holds a password: secrets never go in the config/);
    assert.doesNotMatch(r.stderr, /s3cret/);
  }
});

test('a config written for a CSV under which every record of a JSONL push is invalid: a warning naming it, exit 2', async () => {
  const { dir, env } = place();
  writeFileSync(join(dir, 'export.csv'), 'E-mail address,Full name\nana@example.com,Ana\n');
  const init = await runCli(['init', 'export.csv', '--yes'], { cwd: dir, env });
  assert.equal(init.code, 0, init.stderr);
  const config = join(dir, 'leadledger.config.json');
  for (const extra of [['--dry-run'], ['--sink', 'jsonl', '--output', join(dir, 'out.jsonl')]]) {
    const r = await runCli(['push', 'events.jsonl', ...extra], { cwd: dir, env });
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, new RegExp(`every record read \\(2\\) was invalid under the config ${config}`));
    assert.match(r.stderr, /--config <file>/);
    assert.match(r.stderr, /leadledger init/);
  }
  const quiet = await runCli(['push', 'events.jsonl', '--dry-run', '--quiet', '--json'], { cwd: dir, env });
  assert.equal(quiet.code, 2);
  assert.match(jsonReport(quiet).configMismatch ?? '', /was invalid under the config/);
  assert.match(quiet.stderr, /invalid under the config .*\(exit 2\)/);
  // The CSV it was written for is read as before; and records invalid without a config are the input's, not its.
  const csv = await runCli(['push', 'export.csv', '--dry-run'], { cwd: dir, env });
  assert.equal(csv.code, 0, csv.stderr);
  writeFileSync(join(dir, 'nobody.jsonl'), '{"id":"x1"}\n');
  writeFileSync(join(dir, 'empty.json'), '{}');
  const noMapping = await runCli(['push', 'nobody.jsonl', '--dry-run', '--config', 'empty.json'], { cwd: dir, env });
  assert.equal(noMapping.code, 0, noMapping.stderr);
});

test('the package ships the config JSON Schema made from the zod schema, and init points "$schema" at it', async () => {
  const shipped = JSON.parse(readFileSync(join(ROOT, CONFIG_SCHEMA_FILE), 'utf8')) as unknown;
  assert.deepEqual(shipped, configJsonSchema());
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { files: string[] };
  assert.ok(pkg.files.includes(CONFIG_SCHEMA_FILE.split('/')[0]!), 'schemas/ is in the package');
  const { dir, env } = place();
  writeFileSync(join(dir, 'export.csv'), 'email,name\nana@example.com,Ana\n');
  const init = await runCli(['init', 'export.csv', '--yes'], { cwd: dir, env });
  assert.equal(init.code, 0, init.stderr);
  const written = JSON.parse(readFileSync(join(dir, 'leadledger.config.json'), 'utf8')) as Record<string, unknown>;
  assert.equal(written.$schema, configSchemaUrl());
  assert.ok(String(written.$schema).endsWith(`/${CONFIG_SCHEMA_FILE}`));
  // The schema knows the settings a cron line relies on.
  const props = (configJsonSchema() as { properties: Record<string, unknown> }).properties;
  assert.ok(props.sink && props.ledger && props.sinks);
});
