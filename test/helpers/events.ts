import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT, runCli } from './cli.js';

/** Writes n realistic generated events (retries, repeated people) to dir/name and returns the path. */
export function generateEvents(dir: string, n: number, seed = 1, name = 'events.jsonl'): string {
  const gen = join(ROOT, 'bench', 'gen-events.mjs'); // the repository's copy of the team generator
  const path = join(dir, name);
  writeFileSync(
    path,
    execFileSync(process.execPath, [gen, String(n), '--seed', String(seed)], { maxBuffer: 256 << 20 }),
  );
  return path;
}

/** The unique people a push of `file` should deliver: the new decisions of a dry-run against an empty ledger. */
export async function expectedPeople(file: string, dir: string): Promise<Set<string>> {
  const report = join(dir, 'expected.jsonl');
  await runCli(['push', file, '--dry-run', '--report', report, '--ledger', join(dir, 'none.db'), '--quiet']);
  const rows = readFileSync(report, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { decision: string; email: string });
  return new Set(rows.filter((r) => r.decision === 'new').map((r) => r.email));
}

/** n minimal JSONL events, e0…e(n-1), each of its own person: {"event_id":"e1","email":"a1@example.com"}. */
export function jsonlEvents(n: number): string {
  const lines = new Array<string>(n);
  for (let i = 0; i < n; i++) lines[i] = `{"event_id":"e${i}","email":"a${i}@example.com"}`;
  return lines.join('\n') + '\n';
}
