import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from './cli.js';

/** Writes n realistic generated events (retries, repeated people) to dir/name and returns the path. */
export function generateEvents(dir: string, n: number, seed = 1, name = 'events.jsonl'): string {
  const gen = join(ROOT, 'bench', 'gen-events.mjs'); // the repository's copy of the team generator
  const path = join(dir, name);
  writeFileSync(path, execFileSync(process.execPath, [gen, String(n), '--seed', String(seed)], { maxBuffer: 256 << 20 }));
  return path;
}
