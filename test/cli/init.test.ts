// `leadledger init` as a user runs it: on samples of every kind leadledger reads, what it prints, and the config it
// writes, which must make push decide exactly as it did without one (with the locale gone, as under cron).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { planInit, writeInitConfig } from '../../src/commands/init.js';
import { push } from '../../src/commands/push.js';
import { toPushOptions } from '../../src/cli/run-push.js';
import { runCli, ROOT } from '../helpers/cli.js';
import { tmpDir } from '../helpers/tmp.js';
import { testCtx } from '../commands/ledger/seed.js';

const FIXTURES = join(ROOT, 'fixtures');

// Every sample a user could hand init: the bundled fixtures and those of each source (fixtures/sources/*/).
function samples(): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const name of readdirSync(dir).sort()) {
      const p = join(dir, name);
      if (statSync(p).isDirectory()) {
        if (name !== 'fuzz') walk(p);
      } else if (/\.(jsonl|json|csv|tsv|log)(\.gz)?$/.test(name) && !name.startsWith('broken')) out.push(p);
    }
  };
  walk(FIXTURES);
  return out;
}

// How a sample is run: by the built CLI (spawned), or by the same commands in this process with the same options,
// environment and working directory. The CLI's own wiring is not what this test is about; a few samples of each
// kind go through it all the same (spawnedSamples), the rest run in-process, many times quicker.
type How = 'spawned' | 'in-process';

async function decisions(how: How, input: string, cwd: string, env: Record<string, string>, config?: string) {
  const report = join(cwd, `r-${Math.random().toString(36).slice(2)}.csv`);
  const ledger = join(cwd, 'l.db');
  let code: number | null;
  let stderr: string;
  if (how === 'spawned') {
    const extra = config ? ['--config', config] : [];
    const r = await runCli(['push', input, '--dry-run', '--ledger', ledger, '--report', report, ...extra], {
      cwd,
      env,
    });
    code = r.code;
    stderr = r.stderr;
  } else {
    const ctx = testCtx(cwd, env);
    code = (await push(toPushOptions([input], { dryRun: true, ledger, report, config }), ctx)).exitCode;
    stderr = ctx.warnings.join('\n');
  }
  // 3: a sample with a record that cannot be read; 6: one with a conflicting retry. The decisions are what counts.
  assert.ok([0, 3, 6].includes(code!), `${relative(ROOT, input)}: exit ${code}\n${stderr}`);
  return readFileSync(report, 'utf8');
}

async function init(how: How, input: string, cwd: string, env: Record<string, string>): Promise<void> {
  if (how === 'spawned') {
    const r = await runCli(['init', input, '--yes'], { cwd, env });
    assert.equal(r.code, 0, `${relative(ROOT, input)}: ${r.stderr}`);
  } else {
    writeInitConfig(await planInit({ samples: [input], read: {} }, testCtx(cwd, env)), false);
  }
}

// The first sample of each kind of file (by its extension, .gz included) is run by the spawned CLI.
function spawnedSamples(list: string[]): Set<string> {
  const kinds = new Map<string, string>();
  for (const p of list) {
    const kind = /(\.[a-z]+(\.gz)?)$/.exec(p)![1]!;
    if (!kinds.has(kind)) kinds.set(kind, p);
  }
  return new Set(kinds.values());
}

test('the config init writes reproduces the decisions push makes without one, for every sample', async () => {
  const list = samples();
  // The bundled fixtures and one or more per source (fixtures/sources/*/).
  assert.ok(list.length >= 35, `samples found: ${list.length}`);
  const spawned = spawnedSamples(list);
  assert.ok(spawned.size >= 5, `kinds of sample run by the CLI: ${spawned.size}`);
  for (const input of list) {
    const how: How = spawned.has(input) ? 'spawned' : 'in-process';
    const dir = tmpDir();
    // The user's machine, with a Brazilian locale; then cron's, with none: the config carries the country.
    const home = { LANG: 'pt_BR.UTF-8' };
    const before = await decisions(how, input, dir, home);
    await init(how, input, dir, home);
    const config = JSON.parse(readFileSync(join(dir, 'leadledger.config.json'), 'utf8')) as Record<string, unknown>;
    assert.equal(config.defaultCountry, 'BR', relative(ROOT, input));
    const cron = { LANG: 'C' };
    const after = await decisions(how, input, dir, cron, join(dir, 'leadledger.config.json'));
    assert.equal(after, before, `${relative(ROOT, input)}: decisions differ with the config init wrote (${how})`);
  }
});

test('init prints the field it maps from which column, with two example values, and the key', async () => {
  const dir = tmpDir();
  const r = await runCli(['init', join(FIXTURES, 'webhook-events.jsonl'), '--dry-run'], { cwd: dir });
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /read as by field names \(25\)/);
  assert.match(r.stdout, /email\s+← data\.email\s+e\.g\. "ana\.souza@example\.com\.br", "bruno\.lima@example\.com"/);
  assert.match(r.stdout, /key: event_id/);
  assert.match(r.stdout, /firstName\s+\(not found\)/);
  assert.equal(existsSync(join(dir, 'leadledger.config.json')), false, '--dry-run writes nothing');
  const j = await runCli(['init', join(FIXTURES, 'webhook-events.jsonl'), '--dry-run', '--json'], { cwd: dir });
  const plan = JSON.parse(j.stdout) as { fields: Array<{ field: string; from: string | null; examples: string[] }> };
  assert.deepEqual(
    plan.fields.find((f) => f.field === 'phone'),
    { field: 'phone', from: 'data.phone', examples: ['+55 11 98765-0101', '+55 21 99876-0202'] },
  );
});

test('off a terminal init writes only with --yes, and never over a config (or a link) without --force', async () => {
  const dir = tmpDir();
  const sample = join(FIXTURES, 'webhook-events.jsonl');
  const path = join(dir, 'leadledger.config.json');
  const no = await runCli(['init', sample], { cwd: dir, input: '' });
  assert.equal(no.code, 2);
  assert.match(no.stderr, /not a terminal.*--yes/);
  assert.equal(existsSync(path), false);

  writeFileSync(path, '{"types": ["lead.created"]}\n');
  const kept = await runCli(['init', sample, '--yes'], { cwd: dir });
  assert.equal(kept.code, 2);
  assert.match(kept.stderr, /exists: nothing written \(--force replaces it\)/);
  assert.equal(readFileSync(path, 'utf8'), '{"types": ["lead.created"]}\n');

  const forced = await runCli(['init', sample, '--yes', '--force'], { cwd: dir });
  assert.equal(forced.code, 0, forced.stderr);
  assert.equal((JSON.parse(readFileSync(path, 'utf8')) as { fields: { email: string } }).fields.email, 'data.email');

  const other = tmpDir();
  const target = join(other, 'target.json');
  writeFileSync(target, 'precious\n');
  symlinkSync(target, join(other, 'leadledger.config.json'));
  const link = await runCli(['init', sample, '--yes'], { cwd: other });
  assert.equal(link.code, 2);
  assert.equal(readFileSync(target, 'utf8'), 'precious\n');
});
