// `leadledger init` as a user runs it: on samples of every kind leadledger reads, what it prints, and the config it
// writes, which must make push decide exactly as it did without one (with the locale gone, as under cron).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { runCli, ROOT } from '../helpers/cli.js';
import { tmpDir } from '../helpers/tmp.js';

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

async function decisions(input: string, cwd: string, env: Record<string, string>, extra: string[] = []) {
  const report = join(cwd, `r-${Math.random().toString(36).slice(2)}.csv`);
  const r = await runCli(['push', input, '--dry-run', '--ledger', join(cwd, 'l.db'), '--report', report, ...extra], {
    cwd,
    env,
  });
  // 3: a sample with a record that cannot be read; 6: one with a conflicting retry. The decisions are what counts.
  assert.ok([0, 3, 6].includes(r.code!), `${relative(ROOT, input)}: exit ${r.code}\n${r.stderr}`);
  return readFileSync(report, 'utf8');
}

test('the config init writes reproduces the decisions push makes without one, for every sample', async () => {
  const list = samples();
  // The bundled fixtures and one or more per source (fixtures/sources/*/).
  assert.ok(list.length >= 35, `samples found: ${list.length}`);
  for (const input of list) {
    const dir = tmpDir();
    // The user's machine, with a Brazilian locale; then cron's, with none: the config carries the country.
    const home = { LANG: 'pt_BR.UTF-8' };
    const before = await decisions(input, dir, home);
    const init = await runCli(['init', input, '--yes'], { cwd: dir, env: home });
    assert.equal(init.code, 0, `${relative(ROOT, input)}: ${init.stderr}`);
    const config = JSON.parse(readFileSync(join(dir, 'leadledger.config.json'), 'utf8')) as Record<string, unknown>;
    assert.equal(config.defaultCountry, 'BR', relative(ROOT, input));
    const cron = { LANG: 'C' };
    const after = await decisions(input, dir, cron, ['--config', join(dir, 'leadledger.config.json')]);
    assert.equal(after, before, `${relative(ROOT, input)}: decisions differ with the config init wrote`);
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
