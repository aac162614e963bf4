import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { ROOT } from '../helpers/cli.js';

test('the README option tables match the option table (npm run docs)', () => {
  const r = spawnSync(process.execPath, ['scripts/gen-docs.mjs', '--check'], { cwd: ROOT, encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
});
