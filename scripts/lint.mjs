#!/usr/bin/env node
// `npm run lint`: the type check, ESLint and Prettier's check, run side by side rather than one after another (on two
// cores: 41 s one after another, the slowest of them, ESLint, about 28 s). Each one's output is printed whole once it
// ends, under its name and time, so that the three never interleave; the exit code is non-zero when any of them failed.
//
// Each keeps what it learnt in .cache/ (git-ignored, one per worktree): tsc's incremental build info, ESLint's and
// Prettier's results per file content. A fresh checkout (CI) has none and checks everything. ESLint's cache is keyed
// by a file's own content, so a typed finding caused only by a change in another file (a function that became async,
// now a floating promise where it is called) can be missed by a warm run until the caller changes: `npm run lint --
// --no-cache` checks everything as CI does.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const bin = (name) => path.join(root, 'node_modules', '.bin', name);

const cache = !process.argv.includes('--no-cache');
const at = (name) => path.join(root, '.cache', name);
const checks = [
  [
    'types',
    bin('tsc'),
    [
      '-p',
      'tsconfig.json',
      '--noEmit',
      ...(cache ? ['--incremental', '--tsBuildInfoFile', at('tsc.tsbuildinfo')] : []),
    ],
  ],
  [
    'eslint',
    bin('eslint'),
    [...(cache ? ['--cache', '--cache-strategy', 'content', '--cache-location', at('eslint')] : []), '.'],
  ],
  [
    'prettier',
    bin('prettier'),
    [...(cache ? ['--cache', '--cache-strategy', 'content', '--cache-location', at('prettier')] : []), '--check', '.'],
  ],
];

function run([name, cmd, args]) {
  const t0 = performance.now();
  return new Promise((resolve) => {
    const out = [];
    const child = spawn(cmd, args, { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.on('data', (b) => out.push(b));
    child.stderr.on('data', (b) => out.push(b));
    child.on('error', (e) => resolve({ name, code: 1, text: `${cmd}: ${e.message}\n` }));
    child.on('close', (code, signal) =>
      resolve({
        name,
        code: code ?? 1,
        secs: (performance.now() - t0) / 1000,
        text: Buffer.concat(out).toString() + (signal ? `killed by ${signal}\n` : ''),
      }),
    );
  });
}

let failed = 0;
for (const r of await Promise.all(checks.map(run))) {
  const took = r.secs === undefined ? '' : ` (${r.secs.toFixed(1)} s)`;
  process.stdout.write(`> ${r.name}: ${r.code === 0 ? 'ok' : `FAILED (exit ${r.code})`}${took}\n${r.text}`);
  if (r.code !== 0) failed++;
}
process.exit(failed ? 1 : 0);
