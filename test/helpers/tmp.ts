import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after } from 'node:test';

/** A fresh temporary directory, removed when the test file ends. */
export function tmpDir(prefix = 'leadledger-test-'): string {
  const d = mkdtempSync(join(tmpdir(), prefix));
  after(() => rmSync(d, { recursive: true, force: true }));
  return d;
}
