import { closeSync, openSync, writeSync } from 'node:fs';
import { openLedger } from '../../src/ledger/ledger.js';

/** How many keys a damaged ledger holds on each side: a000000…, and z000000… of which the later ones are damaged. */
export const DAMAGED_SIDE = 20_000;

const key = (side: 'a' | 'z', i: number) => side + String(i).padStart(6, '0');

/**
 * Writes a real ledger of 2 × DAMAGED_SIDE imported keys, a… and z…, then overwrites the pages that hold the last
 * 40% of its events in key order (dbstat names them), the way a disk or a copy goes wrong: its header and schema are
 * whole, it opens, and reading a later z key fails with SQLITE_CORRUPT while the a keys still read. With `erasedKey`
 * it holds a tombstone, so that a dry-run does not index it and its map workers look it up themselves.
 */
export function writeDamagedLedger(path: string, opts: { erasedKey?: boolean } = {}): void {
  const l = openLedger(path)!;
  const entries = [];
  for (const side of ['a', 'z'] as const) for (let i = 0; i < DAMAGED_SIDE; i++) entries.push({ key: key(side, i) });
  l.importDelivered(entries, 'seed');
  if (opts.erasedKey) l.db.prepare('INSERT INTO tombstones VALUES (?)').run('0'.repeat(64));
  const leaves = l.db
    .prepare(`SELECT pageno FROM dbstat WHERE name = 'events' AND pagetype = 'leaf' ORDER BY path`)
    .pluck()
    .all() as number[];
  const pageSize = l.db.pragma('page_size', { simple: true }) as number;
  l.close();
  const fd = openSync(path, 'r+');
  for (const page of leaves.slice(Math.floor(leaves.length * 0.6)))
    writeSync(fd, Buffer.alloc(pageSize, 0x5a), 0, pageSize, (page - 1) * pageSize);
  closeSync(fd);
}

/**
 * A JSONL input larger than 8 MiB (so a dry-run maps it in map workers) whose first blocks name keys the damaged
 * ledger reads well (b…, absent from it), then every z key: the damage is met well into the input.
 */
export function damagedLedgerInput(): string {
  const lines: string[] = [];
  for (let i = 0; i < 200_000; i++)
    lines.push(`{"event_id":"${key('a', i).replace('a', 'b')}","email":"b${i}@example.com"}`);
  for (let i = 0; i < DAMAGED_SIDE; i++) lines.push(`{"event_id":"${key('z', i)}","email":"z${i}@example.com"}`);
  return lines.join('\n') + '\n';
}
