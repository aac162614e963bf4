#!/usr/bin/env node
// Runs every test/**/*.test.ts with Node's own runner. Node 20 expands no globs and finds no .ts files itself.
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';

function collect(dir) {
  const out = [];
  for (const name of readdirSync(dir).sort()) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...collect(p));
    else if (name.endsWith('.test.ts')) out.push(p);
  }
  return out;
}

const only = process.argv.slice(2);
const files = only.length ? only : collect('test');
if (files.length === 0) {
  console.error('no test files found under test/');
  process.exit(1);
}
const r = spawnSync(
  process.execPath,
  ['--import', 'tsx', '--test', '--test-concurrency=2', '--test-timeout=600000', ...files],
  { stdio: 'inherit' },
);
process.exit(r.status ?? 1);
