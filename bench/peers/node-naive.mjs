#!/usr/bin/env node
// Peer for bench scenario 1: the plain streaming Node script a good engineer would write first.
// readline over the JSONL file, JSON.parse per line, a Set for in-file dedup, and one prepared better-sqlite3
// SELECT per line (per new-in-file id) against the ledger's events table.
// usage: node bench/peers/node-naive.mjs <events.jsonl> <ledger.db>
// prints the number of new unique event ids that the ledger does not hold.
import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import Database from 'better-sqlite3';

const [file, ledgerPath] = process.argv.slice(2);
if (!file || !ledgerPath) {
  console.error('usage: node-naive.mjs <events.jsonl> <ledger.db>');
  process.exit(2);
}
const db = new Database(ledgerPath, { readonly: true, fileMustExist: true });
const known = db.prepare('SELECT 1 FROM events WHERE key = ?').pluck();
const seen = new Set();
let count = 0;
const rl = createInterface({ input: createReadStream(file), crlfDelay: Infinity });
for await (const line of rl) {
  if (!line) continue;
  const id = JSON.parse(line).event_id;
  if (typeof id !== 'string' || seen.has(id)) continue;
  seen.add(id);
  if (known.get(id) === undefined) count++;
}
db.close();
console.log(count);
