// A dry-run's index of a PostgreSQL ledger (engine/ledger-index.ts), read by a cursor in the dry-run's read-only
// transaction, a page at a time: never one query per key, and never the whole table in memory as rows.
import type { IndexRow } from '../types.js';
import type { LedgerStore } from '../store.js';

const PAGE = 16384;

/** The events rows the index is built from, in pages; nothing when the ledger has erased keys (no index then). */
export async function* indexPages(store: LedgerStore): AsyncIterable<IndexRow[]> {
  let page: IndexRow[] = [];
  for await (const r of store.sql.iterate<IndexRow>(
    'SELECT key, status, failure, payload_hash, run_id, natural_key FROM events ORDER BY key',
  )) {
    page.push(r);
    if (page.length >= PAGE) {
      yield page;
      page = [];
    }
  }
  if (page.length) yield page;
}
