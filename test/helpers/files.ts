import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';

/** The sha256 of a database file and of its -wal and -shm (null: absent), to prove a run left them as they were. */
export function snapshot(path: string): Record<string, string | null> {
  const out: Record<string, string | null> = {};
  for (const s of ['', '-wal', '-shm'])
    out[s || 'db'] = existsSync(path + s)
      ? createHash('sha256')
          .update(readFileSync(path + s))
          .digest('hex')
      : null;
  return out;
}
