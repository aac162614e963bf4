#!/usr/bin/env node
// Runs every test/**/*.test.ts with Node's own runner (Node 20 expands no globs and finds no .ts files itself), two
// files at a time, the longest first: a long file started last would run alone at the end while the other core
// idles. How long each file took is kept in .cache/test-times.json (git-ignored, written by
// scripts/test-times-reporter.mjs) to order the next run; a fresh checkout (CI) starts with the files known to be
// long, then goes by name. The slowest files are listed at the end.
//
// LEADLEDGER_TEST_DEEP=1 runs the property tests and kill loops at their full counts (test/helpers/deep.ts).
import { mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { spawnSync } from 'node:child_process';
import { pathToFileURL } from 'node:url';

// Files known to take the longest, for a run with no times recorded yet: they start first, in this order.
const KNOWN_LONG = [
  'test/engine/decide-inputs.test.ts',
  'test/cli/crash.test.ts',
  'test/cli/torture.test.ts',
  'test/cli/pg-ledger.test.ts',
  'test/cli/postgres-crash.test.ts',
  'test/engine/differential.test.ts',
  'test/cli/rdstation.test.ts',
  'test/cli/pipedrive.test.ts',
];
const TIMES = join('.cache', 'test-times.json');
const LAST = join('.cache', 'test-times.last.json');

function collect(dir) {
  const out = [];
  for (const name of readdirSync(dir).sort()) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...collect(p));
    else if (name.endsWith('.test.ts')) out.push(p);
  }
  return out;
}

// Whether dist/ holds a build of every module in src/ as it is now (npm test builds first): each .js at least as
// new as its .ts. Then the tests' worker threads start from dist/ (src/thread.ts), not through tsx in each thread.
function builtFromSrc(dir = 'src') {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    const st = statSync(p);
    if (st.isDirectory()) {
      if (!builtFromSrc(p)) return false;
    } else if (name.endsWith('.ts') && !name.endsWith('.d.ts')) {
      const built = join('dist', relative('src', p)).replace(/\.ts$/, '.js');
      try {
        if (statSync(built).mtimeMs < st.mtimeMs) return false;
      } catch {
        return false;
      }
    }
  }
  return true;
}

function readJson(file) {
  try {
    return JSON.parse(readFileSync(file, 'utf8'));
  } catch {
    return {};
  }
}

const only = process.argv.slice(2);
const files = (only.length ? only : collect('test')).map((f) => relative('.', f).split('\\').join('/'));
if (files.length === 0) {
  console.error('no test files found under test/');
  process.exit(1);
}
const times = readJson(TIMES);
// Recorded times first (longest first), then the known long files, then the rest by name.
const weight = (f) => times[f] ?? (KNOWN_LONG.includes(f) ? 1e9 - KNOWN_LONG.indexOf(f) : -1);
const order = files.map((f, i) => ({ f, i })).sort((a, b) => weight(b.f) - weight(a.f) || a.i - b.i);

mkdirSync('.cache', { recursive: true });
rmSync(LAST, { force: true });
const reporter = pathToFileURL(resolve('scripts', 'test-times-reporter.mjs')).href;
const r = spawnSync(
  process.execPath,
  [
    '--import',
    'tsx',
    '--test',
    '--test-concurrency=2',
    '--test-timeout=600000',
    `--test-reporter=${process.stdout.isTTY ? 'spec' : 'tap'}`,
    '--test-reporter-destination=stdout',
    `--test-reporter=${reporter}`,
    `--test-reporter-destination=${LAST}`,
    ...order.map((o) => o.f),
  ],
  { stdio: 'inherit', env: { ...process.env, ...(builtFromSrc() ? { LEADLEDGER_TEST_BUILT_WORKERS: '1' } : {}) } },
);

const took = Object.fromEntries(
  Object.entries(readJson(LAST)).map(([f, ms]) => [relative('.', f).split('\\').join('/'), ms]),
);
writeFileSync(TIMES, JSON.stringify({ ...times, ...took }, null, 1) + '\n');
const slowest = Object.entries(took)
  .sort((a, b) => b[1] - a[1])
  .slice(0, 10);
if (slowest.length) {
  process.stdout.write('\n# slowest files:\n');
  for (const [f, ms] of slowest) process.stdout.write(`#   ${(ms / 1000).toFixed(1).padStart(7)} s  ${f}\n`);
}
process.exit(r.status ?? 1);
