// Read-only batch lookups of event keys and people, on any connection to a ledger file: the same answers as
// Ledger.lookupKeys and Ledger.lookupDelivered, for the map workers of a dry-run whose ledger is not indexed
// (engine/ledger-index.ts: too large, or erased keys), which open it read-only themselves so that lookups run beside
// parsing instead of on the thread that decides.
import type Database from 'better-sqlite3';
import { openReadOnly } from './connect.js';
import { ledgerFailure } from './failure.js';
import { ERASED_KEY, tombstoneHash } from './queries.js';
import type { EventStatus, KnownKey } from './types.js';

const CHUNK = 512;

/**
 * Batched key and natural-key lookups on one read-only connection. A SQLite error of theirs is a LedgerError naming
 * the file (a damaged ledger says so), wherever they run: on the deciding thread or in a map worker.
 */
export class LedgerLookup {
  // Asked at the first lookup, not on opening: a damaged ledger still opens, for `ledger verify` to examine.
  private hasTombstones: boolean | undefined;
  private readonly stmts = new Map<string, Database.Statement>();

  constructor(
    private readonly db: Database.Database,
    private readonly file: string = db.name,
  ) {}

  /** Opens a ledger file read-only for lookups (immutable where the ledger's own open is: see openReadOnly). */
  static open(path: string): LedgerLookup {
    try {
      return new LedgerLookup(openReadOnly(path), path);
    } catch (e) {
      throw ledgerFailure(e, path);
    }
  }

  /** As Ledger.lookupKeys: the known keys among these (tombstoned ones as sent). */
  lookupKeys(keys: string[]): Map<string, KnownKey> {
    try {
      return this.knownKeys(keys);
    } catch (e) {
      throw ledgerFailure(e, this.file);
    }
  }

  /** As Ledger.lookupDelivered: people delivered or possibly delivered, with the first event key found. */
  lookupDelivered(naturalKeys: string[]): Map<string, string> {
    try {
      return this.delivered(naturalKeys);
    } catch (e) {
      throw ledgerFailure(e, this.file);
    }
  }

  close(): void {
    this.db.close();
  }

  private knownKeys(keys: string[]): Map<string, KnownKey> {
    this.hasTombstones ??= !!this.db.prepare('SELECT 1 FROM tombstones LIMIT 1').get();
    const out = new Map<string, KnownKey>();
    this.chunked(
      keys,
      (n) => `SELECT key, payload_hash, status, failure, run_id FROM events WHERE key IN (${marks(n)})`,
      (r) => {
        out.set(r[0] as string, {
          payloadHash: r[1] as string | null,
          status: r[2] as EventStatus,
          failure: r[3] as KnownKey['failure'],
          runId: r[4] as number | null,
        });
      },
    );
    if (this.hasTombstones) {
      const hashes = new Map(keys.filter((k) => !out.has(k)).map((k) => [tombstoneHash(k), k]));
      this.chunked(
        [...hashes.keys()],
        (n) => `SELECT key_hash FROM tombstones WHERE key_hash IN (${marks(n)})`,
        (r) => {
          out.set(hashes.get(r[0] as string)!, ERASED_KEY);
        },
      );
    }
    return out;
  }

  private delivered(naturalKeys: string[]): Map<string, string> {
    const out = new Map<string, string>();
    this.chunked(
      naturalKeys,
      (n) =>
        `SELECT natural_key, key FROM events WHERE natural_key IN (${marks(n)}) AND status IN ('sent', 'pending', 'in_doubt', 'queued')`,
      (r) => {
        if (!out.has(r[0] as string)) out.set(r[0] as string, r[1] as string);
      },
    );
    return out;
  }

  // Rows as arrays (raw): no object per row. Statements are cached per list length, and lists are padded (with
  // their first value again, which IN ignores) to a power of two: one statement per length would keep hundreds of
  // 500-parameter statements alive, tens of MB per connection (measured).
  private chunked(values: string[], sql: (n: number) => string, row: (r: unknown[]) => void): void {
    for (let i = 0; i < values.length; i += CHUNK) {
      const chunk = values.slice(i, i + CHUNK);
      const size = Math.max(8, 2 ** Math.ceil(Math.log2(chunk.length)));
      while (chunk.length < size) chunk.push(chunk[0]!);
      const text = sql(chunk.length);
      let s = this.stmts.get(text);
      if (!s) {
        s = this.db.prepare(text).raw();
        this.stmts.set(text, s);
      }
      for (const r of s.all(...chunk) as unknown[][]) row(r);
    }
  }
}

function marks(n: number): string {
  return n === 1 ? '?' : '?,'.repeat(n - 1) + '?';
}
