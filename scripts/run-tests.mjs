#!/usr/bin/env node
// Runs every test/**/*.test.ts with Node's own runner (Node 20 expands no globs and finds no .ts files itself), a file
// per process, two at a time, the longest first: a long file started last would run alone at the end while the other
// core idles. How long each file took is kept in .cache/test-times.json (git-ignored) to order the next run; a fresh
// checkout orders by the files known to be long, then by name. Each file's output is printed whole when it ends, so
// two files never interleave, and the slowest files are listed at the end.
//
// LEADLEDGER_TEST_CONCURRENCY sets how many files run at once (default 2); LEADLEDGER_TEST_DEEP=1 runs the property
// tests and kill loops at their full counts (see test/helpers/deep.ts).
import { spawn } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

// Files known to take the longest, for a run with no times recorded yet (CI): they start first.
const KNOWN_LONG = [
  'test/engine/decide-inputs.test.ts',
  'test/cli/crash.test.ts',
  'test/cli/torture.test.ts',
  'test/cli/pg-ledger.test.ts',
  'test/cli/postgres-crash.test.ts',
  'test/cli/rdstation.test.ts',
  'test/cli/pipedrive.test.ts',
];
const TIMES = join('.cache', 'test-times.json');

function collect(dir) {
  const out = [];
  for (const name of readdirSync(dir).sort()) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...collect(p));
    else if (name.endsWith('.test.ts')) out.push(p);
  }
  return out;
}

function readTimes() {
  try {
    return JSON.parse(readFileSync(TIMES, 'utf8'));
  } catch {
    return {};
  }
}

const only = process.argv.slice(2);
const files = only.length ? only : collect('test');
if (files.length === 0) {
  console.error('no test files found under test/');
  process.exit(1);
}
const times = readTimes();
const known = (f) => {
  const i = KNOWN_LONG.indexOf(f.split('\\').join('/'));
  return i < 0 ? 0 : 1e9 - i; // ahead of any recorded time, in the list's order
};
// Recorded times first (longest first); a file never timed goes by the list, then keeps its place by name.
const weight = (f) => times[f] ?? known(f);
const order = files.map((f, i) => ({ f, i })).sort((a, b) => weight(b.f) - weight(a.f) || a.i - b.i);

const concurrency = Math.max(1, Number(process.env.LEADLEDGER_TEST_CONCURRENCY) || 2);
const reporter = process.stdout.isTTY ? ['--test-reporter=spec'] : [];
const took = {};
const failed = [];

function runFile(file) {
  const t0 = performance.now();
  return new Promise((resolve) => {
    const out = [];
    const child = spawn(process.execPath, ['--import', 'tsx', '--test', ...reporter, '--test-timeout=600000', file], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout.on('data', (b) => out.push(b));
    child.stderr.on('data', (b) => out.push(b));
    const done = (code, why) => {
      took[file] = Math.round(performance.now() - t0);
      process.stdout.write(`\n# ${file} (${(took[file] / 1000).toFixed(1)} s)\n${Buffer.concat(out).toString()}${why}`);
      if (code !== 0) failed.push(file);
      resolve();
    };
    child.on('error', (e) => done(1, `${e.message}\n`));
    child.on('close', (code, signal) => done(code ?? 1, signal ? `killed by ${signal}\n` : ''));
  });
}

const queue = order.map((o) => o.f);
await Promise.all(
  Array.from({ length: Math.min(concurrency, queue.length) }, async () => {
    for (let f = queue.shift(); f !== undefined; f = queue.shift()) await runFile(f);
  }),
);

try {
  mkdirSync('.cache', { recursive: true });
  writeFileSync(TIMES, JSON.stringify({ ...times, ...took }, null, 1) + '\n');
} catch {
  // a read-only checkout still runs its tests
}
const slowest = Object.entries(took).sort((a, b) => b[1] - a[1]);
process.stdout.write(`\n# slowest files (wall):\n`);
for (const [f, ms] of slowest.slice(0, 12)) process.stdout.write(`#   ${(ms / 1000).toFixed(1).padStart(7)} s  ${f}\n`);
process.stdout.write(`# ${files.length - failed.length} of ${files.length} files passed\n`);
for (const f of failed) process.stdout.write(`# FAILED: ${f}\n`);
process.exit(failed.length ? 1 : 0);
