// `leadledger completion bash|zsh|fish`: scripts generated from the program. The bash one is checked by bash itself:
// it parses (bash -n), and sourced, its function completes commands, subcommands, options and sink/preset names.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runCli } from '../helpers/cli.js';
import { tmpDir } from '../helpers/tmp.js';

// What the completion function offers for a command line whose last word is being typed.
function complete(script: string, words: string[]): string[] {
  const line = words.map((w) => `'${w}'`).join(' ');
  const r = spawnSync(
    'bash',
    [
      '-c',
      `source "$1"; COMP_WORDS=(${line}); COMP_CWORD=${words.length - 1}; _leadledger; printf '%s\\n' "\${COMPREPLY[@]}"`,
      'bash',
      script,
    ],
    { encoding: 'utf8' },
  );
  assert.equal(r.status, 0, r.stderr);
  return r.stdout.split('\n').filter(Boolean);
}

test('the bash script parses and completes commands, subcommands, options and values', async () => {
  const r = await runCli(['completion', 'bash']);
  assert.equal(r.code, 0, r.stderr);
  const dir = tmpDir();
  const script = join(dir, 'leadledger.bash');
  writeFileSync(script, r.stdout);
  const syntax = spawnSync('bash', ['-n', script], { encoding: 'utf8' });
  assert.equal(syntax.status, 0, syntax.stderr);

  assert.deepEqual(complete(script, ['leadledger', 'pu']), ['push']);
  assert.deepEqual(complete(script, ['leadledger', 're']), ['replay']);
  assert.ok(complete(script, ['leadledger', '']).includes('completion'));
  assert.deepEqual(complete(script, ['leadledger', '-q', 'pu']), ['push'], 'after a global flag');
  assert.deepEqual(complete(script, ['leadledger', 'ledger', 'sh']), ['show']);
  assert.ok(complete(script, ['leadledger', 'push', 'x.jsonl', '--dry']).includes('--dry-run'));
  assert.ok(complete(script, ['leadledger', 'replay', '--in']).includes('--in-doubt'));
  assert.deepEqual(complete(script, ['leadledger', 'push', 'x.jsonl', '--sink', 'hub']), ['hubspot']);
  assert.deepEqual(complete(script, ['leadledger', 'push', 'x', '-s', 'pip']), ['pipedrive']);
  assert.ok(complete(script, ['leadledger', 'push', '--preset', 'typef']).includes('typeform'));
  // A value is no command: "--ledger push" leaves the command to come.
  assert.deepEqual(complete(script, ['leadledger', 'ledger', '--ledger', 'l.db', 'sta']), ['stats']);
});

test('zsh and fish scripts, and a shell that is none of them', async () => {
  const zsh = await runCli(['completion', 'zsh']);
  assert.equal(zsh.code, 0);
  assert.match(zsh.stdout, /^#compdef leadledger\n/);
  assert.match(zsh.stdout, /bashcompinit/);
  const fish = await runCli(['completion', 'fish']);
  assert.equal(fish.code, 0);
  assert.match(fish.stdout, /^complete -c leadledger -n '__fish_use_subcommand' -a push /m);
  assert.match(fish.stdout, /-l sink -s s -x -a 'hubspot webhook/);
  for (const [shell, check] of [
    ['zsh', ['-n']],
    ['fish', ['--no-execute']],
  ] as const) {
    const dir = tmpDir();
    const file = join(dir, `leadledger.${shell}`);
    writeFileSync(file, shell === 'zsh' ? zsh.stdout : fish.stdout);
    const r = spawnSync(shell, [...check, file], { encoding: 'utf8' });
    if (r.error) continue; // that shell is not installed here; bash is checked above
    assert.equal(r.status, 0, `${shell}: ${r.stderr}`);
  }
  const bad = await runCli(['completion', 'bsh']);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /^leadledger: error: completion takes bash, zsh, fish, not 'bsh' \(did you mean 'bash'\?\)/);
});
