// What `npm pack` would publish: the licence, the README and the changelog, the CLI and its build, nothing of the
// tests, the fixtures or a developer's ledger, and no source map that points at a file the package does not hold.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, posix } from 'node:path';
import { ROOT } from '../helpers/cli.js';

interface PackEntry {
  path: string;
}

/** The files `npm pack` would put in the tarball, read from its --dry-run --json (scripts off: dist is as built). */
function packedFiles(): string[] {
  // --ignore-scripts: `prepare` would clean and rebuild dist/ under the other test files that run it.
  const r = spawnSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], {
    cwd: ROOT,
    encoding: 'utf8',
    env: { ...process.env, npm_config_loglevel: 'silent' },
  });
  assert.equal(r.status, 0, r.stderr);
  const [pack] = JSON.parse(r.stdout) as Array<{ files: PackEntry[] }>;
  return pack!.files.map((f) => f.path.split('\\').join('/'));
}

const files = packedFiles();
const shipped = new Set(files);
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  license: string;
  author?: string;
  keywords?: string[];
  bin: Record<string, string>;
};

test('the package ships the licence it declares, the README, the changelog, the bin and the build', () => {
  for (const f of ['LICENSE', 'README.md', 'CHANGELOG.md', 'package.json', 'dist/cli/main.js'])
    assert.ok(shipped.has(f), `${f} is not in the package`);
  for (const bin of Object.values(pkg.bin)) assert.ok(shipped.has(posix.normalize(bin)), `bin ${bin} is not shipped`);
  assert.equal(pkg.license, 'MIT');
  assert.match(readFileSync(join(ROOT, 'LICENSE'), 'utf8'), /^MIT License\n\nCopyright \(c\) \d{4} leadledger/);
  assert.match(readFileSync(join(ROOT, 'CHANGELOG.md'), 'utf8'), /^## \[Unreleased\]$/m);
  assert.ok(pkg.author, 'package.json names an author');
  assert.ok((pkg.keywords ?? []).length > 0, 'package.json has keywords');
});

test('every module the package ships is built from a source of today: no stale copy of a moved module', () => {
  const stale = files
    .filter((f) => f.startsWith('dist/') && f.endsWith('.js'))
    .filter((f) => !existsSync(join(ROOT, 'src', f.slice('dist/'.length).replace(/\.js$/, '.ts'))));
  assert.deepEqual(stale, [], 'dist/ holds modules without a source (npm run build empties dist/ first)');
});

test('no source map in the package points at a file it does not ship', () => {
  for (const f of files.filter((p) => p.endsWith('.js'))) {
    const m = /\/\/# sourceMappingURL=(\S+)\s*$/.exec(readFileSync(join(ROOT, f), 'utf8'));
    if (m && !m[1]!.startsWith('data:')) {
      const map = posix.join(posix.dirname(f), m[1]!);
      assert.ok(shipped.has(map), `${f} names ${map}, which is not shipped`);
    }
  }
  for (const f of files.filter((p) => p.endsWith('.map'))) {
    const map = JSON.parse(readFileSync(join(ROOT, f), 'utf8')) as {
      sources: string[];
      sourceRoot?: string;
      sourcesContent?: Array<string | null>;
    };
    map.sources.forEach((s, i) => {
      const inline = typeof map.sourcesContent?.[i] === 'string';
      const target = posix.normalize(posix.join(dirname(f), map.sourceRoot ?? '', s));
      assert.ok(inline || shipped.has(target), `${f} points at ${target}, which is neither shipped nor inlined`);
    });
  }
});

test('nothing of the tests, the fixtures, the benchmark or a local ledger or secret is shipped', () => {
  const unwanted = files.filter(
    (f) =>
      /^(test|fixtures|bench|scripts|src|docs|\.ci|\.leadledger|node_modules)\//.test(f) ||
      /(^|\/)\.(env|npmrc|pgpass)/.test(f) ||
      /\.(db|db-wal|db-shm|sqlite|pem|key|log|tgz)$/.test(f),
  );
  assert.deepEqual(unwanted, []);
});
