// The sink registry is the one place that knows the sinks: commands/, deliver/, cli/ and the config reader name
// none, and what the CLI, the config and the README say of sinks comes from the definitions.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { OPTIONS } from '../../src/cli/options.js';
import { UsageError } from '../../src/errors.js';
import { parseConfig } from '../../src/mapping/config.js';
import { flagKey } from '../../src/sinks/definition.js';
import { SINKS, sinkFlags } from '../../src/sinks/registry.js';
import { ROOT } from '../helpers/cli.js';

/** Every .ts file under a folder of src/, or the file itself. */
function sources(rel: string): string[] {
  const p = join(ROOT, rel);
  if (statSync(p).isFile()) return [rel];
  return readdirSync(p).flatMap((f) => sources(join(rel, f)));
}

/** The code of a file without its comments (the sinks may be named in prose). */
function code(rel: string): string {
  return readFileSync(join(ROOT, rel), 'utf8')
    .replace(/\/\*[\s\S]*?\*\//g, '')
    .replace(/(^|[^:'"`\\])\/\/.*$/gm, '$1');
}

describe('sink registry', () => {
  const names = SINKS.map((s) => s.name);
  const outside = ['src/commands', 'src/deliver', 'src/cli', 'src/mapping/config.ts'].flatMap(sources);

  it('commands/, deliver/, cli/ and the config reader name no sink: no sink module, no sink test, no sink flag', () => {
    const alt = names.join('|');
    const importsSink = new RegExp(`from '[./]*sinks/(${alt})/|import\\('[./]*sinks/(${alt})/`);
    const testsSink = new RegExp(`(\\bsink\\w*(\\.name)?\\s*[!=]==?\\s*|case\\s+)['"\`](${alt})['"\`]`);
    // A flag of one sink (multi-word ones: --url or --output alone are words other commands use too).
    const own = sinkFlags().filter((f) => /[A-Z]/.test(f.key));
    const flagWords = new RegExp(
      `\\b(${own.map((f) => f.key).join('|')})\\b|'(${own.map((f) => f.flags.split(' ')[0]).join('|')})`,
    );
    const found: string[] = [];
    for (const f of outside) {
      const text = code(f);
      for (const [what, re] of [
        ['imports a sink', importsSink],
        ['tests for a sink by name', testsSink],
        ['names a sink flag', flagWords],
      ] as const) {
        const m = re.exec(text);
        if (m) found.push(`${f} ${what}: ${m[0]}`);
      }
    }
    assert.deepEqual(found, [], 'these belong in the sink definitions (src/sinks/<name>/definition.ts)');
  });

  it('each sink is one folder with its definition, and its flags clash with no other option', () => {
    for (const s of SINKS) assert.ok(existsSync(join(ROOT, 'src/sinks', s.name, 'definition.ts')), s.name);
    const keys = OPTIONS.map((o) => flagKey(o.flags));
    assert.equal(new Set(keys).size, keys.length, 'one option per name');
    for (const f of sinkFlags())
      assert.deepEqual(OPTIONS.find((o) => o.flags === f.flags)?.commands, [
        'push',
        'replay',
        'doctor',
        'serve',
        'init',
      ]);
  });

  it('a flag several sinks take is one, its help naming what each reads without it', () => {
    const tokenFile = sinkFlags().find((f) => f.key === 'tokenFile')!;
    const takers = SINKS.filter((s) => s.flags.some((f) => f.flags === tokenFile.flags));
    for (const s of takers) assert.ok(tokenFile.description.includes(s.tokenEnv!), s.name);
  });

  it('the config has a section per sink, each checked by its own schema: unknown keys are errors, with did you mean', () => {
    const config = parseConfig({ sinks: { postgres: { columns: { email: 'mail' } }, hubspot: {}, jsonl: {} } });
    assert.deepEqual(config.sinks?.postgres?.columns, { email: 'mail' });
    const refused = (raw: unknown): string => {
      try {
        parseConfig(raw, 'c.json');
      } catch (e) {
        assert.ok(e instanceof UsageError);
        return e.message;
      }
      assert.fail('accepted');
    };
    assert.match(refused({ sinks: { hubspt: {} } }), /sinks\.hubspt: unknown key \(did you mean hubspot\?\)/);
    assert.match(
      refused({ sinks: { postgres: { colums: {} } } }),
      /sinks\.postgres\.colums: unknown key \(did you mean columns\?\)/,
    );
    assert.match(refused({ sinks: { jsonl: { x: 1 } } }), /sinks\.jsonl\.x: unknown key/);
    assert.match(
      refused({ sinks: { webhook: { template: { e: '{{lead.emial}}' } } } }),
      /sinks\.webhook\.template\.e: unknown placeholder \{\{lead\.emial\}\} \(did you mean \{\{lead\.email\}\}\?\)/,
    );
  });

  it('a sink reads a flag before its variable, and records and repeats no secret', () => {
    const pg = SINKS.find((s) => s.name === 'postgres')!;
    const fromArgv = pg.configure({
      flags: { pgUrl: 'postgres://app@db/crm?sslpassword=s3cret', table: 't' },
      fromEnv: {},
      config: undefined,
    });
    assert.doesNotMatch(JSON.stringify(fromArgv.shown()) + fromArgv.replayArgs().join(' '), /s3cret/);
    assert.deepEqual(fromArgv.replayArgs().slice(-2), ['--table', 't']);
    const fromEnv = pg.configure({
      flags: { pgUrl: 'postgres://app:pw@db/crm' },
      fromEnv: { pgUrl: 'LEADLEDGER_PG_URL' },
      config: undefined,
    });
    assert.deepEqual(fromEnv.replayArgs(), [], 'a URL from the environment is read from there again');
    const hook = SINKS.find((s) => s.name === 'webhook')!.configure({
      flags: { url: 'https://h.example/in?key=abc123' },
      fromEnv: {},
      config: undefined,
    });
    assert.deepEqual(hook.shown(), { url: 'https://h.example/in?redacted' });
  });
});
