// A string → string map whose memory does not grow with its size: the newest entries live in a JS Map; when that
// holds `capacity` entries they are written to a temporary SQLite file and the Map starts over. A Bloom filter
// over the spilled keys keeps lookups of never-seen keys (most of them, in an audit) off the file.
import Database from 'better-sqlite3';
import { BloomFilter } from './bloom-filter.js';

/** Entries kept in memory before a spill: ~150 bytes each with their Map slot, so ~15 MB per map (RSS target over speed). */
export const DEFAULT_SPILL_CAPACITY = 100_000;

const ROWS_PER_INSERT = 200;

/** Insert-once map of strings, bounded in memory, spilling to a temp SQLite file. */
export class SpillMap {
  private recent = new Map<string, string>();
  private spilled: { db: Database.Database; get: Database.Statement<[string], string | undefined>; bloom: BloomFilter } | undefined;
  private count = 0;

  constructor(private readonly capacity = DEFAULT_SPILL_CAPACITY) {}

  /** The value of a key, in memory or spilled. */
  get(key: string): string | undefined {
    const v = this.recent.get(key);
    if (v !== undefined || this.spilled === undefined || !this.spilled.bloom.mightHave(key)) return v;
    return this.spilled.get.get(key);
  }

  /** Adds a key the caller knows is absent (get returned undefined). */
  add(key: string, value: string): void {
    this.recent.set(key, value);
    this.count++;
    if (this.recent.size >= this.capacity) this.spill();
  }

  /** Entries added so far. */
  get size(): number {
    return this.count;
  }

  /** True once entries live in the spill file. */
  get hasSpilled(): boolean {
    return this.spilled !== undefined;
  }

  private spill(): void {
    if (!this.spilled) {
      // '' is an anonymous temporary database: a file SQLite deletes on close, never the ledger.
      const db = new Database('');
      db.pragma('journal_mode = OFF');
      db.pragma('synchronous = OFF');
      db.pragma('cache_size = -8000'); // 8 MB of pages, whatever the spill's size
      db.exec('CREATE TABLE m (k TEXT PRIMARY KEY, v TEXT NOT NULL) WITHOUT ROWID');
      const get = db.prepare<[string], string | undefined>('SELECT v FROM m WHERE k = ?').pluck();
      this.spilled = { db, get, bloom: new BloomFilter() };
    }
    const { db, bloom } = this.spilled;
    // Many rows per statement: a statement call costs more than the row it inserts.
    const insert = (n: number) => db.prepare(`INSERT INTO m (k, v) VALUES ${'(?, ?),'.repeat(n - 1)}(?, ?)`);
    const full = insert(ROWS_PER_INSERT);
    // Sorted keys land on neighbouring B-tree pages instead of random ones.
    const keys = [...this.recent.keys()].sort();
    const args: string[] = [];
    db.transaction(() => {
      for (const k of keys) {
        args.push(k, this.recent.get(k)!);
        bloom.add(k);
        if (args.length === ROWS_PER_INSERT * 2) {
          full.run(args);
          args.length = 0;
        }
      }
      if (args.length > 0) insert(args.length / 2).run(args);
    })();
    this.recent = new Map();
  }

  /** Drops everything and deletes the spill file. */
  close(): void {
    this.recent = new Map();
    this.spilled?.db.close();
    this.spilled = undefined;
  }
}
