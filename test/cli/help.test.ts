// --help as gh's: every command ends with examples, push's and replay's options come in groups; short flags for the
// common options; the version three ways; global flags before the command; FORCE_COLOR honoured off a terminal.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT, runCli } from '../helpers/cli.js';
import { tmpDir } from '../helpers/tmp.js';

// The commands a help lists under "Commands:" (help itself aside).
function commandsOf(help: string): string[] {
  const section = help.split('\nCommands:\n')[1]?.split('\n\n')[0] ?? '';
  return [...section.matchAll(/^ {2}(\S+)/gm)].map((m) => m[1]!).filter((c) => c !== 'help');
}

test('every command and subcommand ends its --help with examples of its own', async () => {
  const top = await runCli(['--help']);
  const ledger = await runCli(['ledger', '--help']);
  const all = [...commandsOf(top.stdout).map((c) => [c]), ...commandsOf(ledger.stdout).map((c) => ['ledger', c])];
  assert.ok(all.length >= 15, all.join(' '));
  for (const c of ['push', 'replay', 'init', 'presets', 'auth', 'sandbox', 'version', 'completion'])
    assert.ok(
      all.some((a) => a.join(' ') === c),
      c,
    );
  for (const path of all) {
    const r = await runCli([...path, '--help']);
    assert.equal(r.code, 0, `${path.join(' ')}: ${r.stderr}`);
    const examples = r.stdout.split('\nExamples:\n')[1];
    assert.ok(examples, `${path.join(' ')} --help has an Examples section:\n${r.stdout}`);
    assert.match(examples, new RegExp(`^ {2}\\$ leadledger ${path.join(' ')}`, 'm'), path.join(' '));
  }
});

test("push's and replay's options come in groups: input, mapping, sink, delivery, output", async () => {
  const push = (await runCli(['push', '--help'])).stdout;
  const headings = [...push.matchAll(/^((?:\w+ )?options):$/gim)].map((m) => m[1]);
  assert.deepEqual(headings, [
    'Input options',
    'Mapping options',
    'Sink options',
    'Delivery options',
    'Output options',
    'Options',
  ]);
  const section = (text: string, h: string) => text.split(`\n${h}:\n`)[1]!.split('\n\n')[0]!;
  assert.match(section(push, 'Input options'), /--encoding <name>/);
  assert.match(section(push, 'Mapping options'), /-c, --config <file>/);
  assert.match(section(push, 'Sink options'), /-s, --sink <name>/);
  assert.match(section(push, 'Sink options'), /--token-file <file>/);
  assert.match(section(push, 'Delivery options'), /-n, --dry-run/);
  assert.match(section(push, 'Output options'), /-q, --quiet/);
  const replay = (await runCli(['replay', '--help'])).stdout;
  assert.match(section(replay, 'Selection options'), /--in-doubt/);
  assert.match(section(replay, 'Delivery options'), /-y, --yes/);
});

test('short flags and global flags before the command: -q, -n, -c, -s, and -qn together', async () => {
  const dir = tmpDir();
  const f = join(dir, 'events.jsonl');
  writeFileSync(f, '{"id":"e1","email":"ana@example.com"}\n');
  writeFileSync(join(dir, 'other.json'), JSON.stringify({ fields: { email: 'mail' } }));
  const loud = await runCli(['push', f, '-n'], { cwd: dir });
  assert.equal(loud.code, 0, loud.stderr);
  assert.match(loud.stderr + loud.stdout, /new \(would send\)\s+1/);
  for (const args of [
    ['push', f, '-n', '-q'],
    ['push', f, '-qn'],
    ['-q', 'push', f, '-n'],
    ['--quiet', 'push', f, '--dry-run'],
  ]) {
    const r = await runCli(args, { cwd: dir });
    assert.equal(r.code, 0, `${args.join(' ')}: ${r.stderr}`);
    assert.equal(r.stderr + r.stdout, '', args.join(' '));
  }
  // -c: the config's mapping reads "mail", which these events do not have: nothing is new.
  const configured = await runCli(['push', f, '-n', '-c', join(dir, 'other.json')], { cwd: dir });
  assert.match(configured.stderr + configured.stdout, /invalid\s+1/);
  const sent = await runCli(['push', f, '-s', 'jsonl', '--output', '-', '--ledger', join(dir, 'l.db')], { cwd: dir });
  assert.equal(sent.code, 0, sent.stderr);
  assert.match(sent.stdout, /"ana@example.com"/);
});

test('the version: -v, --version, the version command, and -V as before', async () => {
  const { version } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };
  for (const args of [['-v'], ['--version'], ['version'], ['-V']]) {
    const r = await runCli(args);
    assert.equal(r.code, 0, args.join(' '));
    assert.equal(r.stdout, `${version}\n`, args.join(' '));
  }
});

test('FORCE_COLOR colours output off a terminal (NO_COLOR aside), --no-color wins, and no spinner starts', async () => {
  const dir = tmpDir();
  const f = join(dir, 'events.jsonl');
  writeFileSync(f, '{"id":"e1","email":"ana@example.com"}\n');
  const ESC = '\u001b[';
  const forced = await runCli(['push', f, '-n'], { cwd: dir, env: { FORCE_COLOR: '1', NO_COLOR: undefined } });
  assert.ok((forced.stderr + forced.stdout).includes(ESC), forced.stderr);
  // A spinner redraws its line: no carriage return, no cursor hiding, off a terminal whatever FORCE_COLOR says.
  assert.ok(!forced.stderr.includes('\r') && !forced.stderr.includes(`${ESC}?25l`), JSON.stringify(forced.stderr));
  const both = await runCli(['push', f, '-n'], { cwd: dir, env: { FORCE_COLOR: '1', NO_COLOR: '1' } });
  assert.ok((both.stderr + both.stdout).includes(ESC), 'FORCE_COLOR is the more specific request');
  for (const [env, args] of [
    [{ FORCE_COLOR: '1' }, ['--no-color']],
    [{ FORCE_COLOR: '1' }, ['--no-color', 'push', f, '-n']],
    [{ FORCE_COLOR: '0', NO_COLOR: undefined }, []],
    [{ NO_COLOR: undefined }, []],
  ] as const) {
    const argv = args.length > 1 ? [...args] : ['push', f, '-n', ...args];
    const r = await runCli(argv, { cwd: dir, env: { ...env } });
    assert.equal(r.code, 0, r.stderr);
    assert.ok(!(r.stderr + r.stdout).includes(ESC), `${JSON.stringify(env)} ${argv.join(' ')}`);
  }
});
