// One way to ask a ledger's database, whichever it is: the management queries (list, show, runs, export, stats,
// verify, prune, forget) are written once against it, with `?` parameters; PostgreSQL's storage numbers them.
import type Database from 'better-sqlite3';

/** Rows and changes from SQL text with `?` parameters (bound, never spliced). */
export interface SqlDb {
  readonly dialect: 'sqlite' | 'postgres';
  all<T>(sql: string, params?: unknown[]): Promise<T[]>;
  get<T>(sql: string, params?: unknown[]): Promise<T | undefined>;
  /** Runs a write; the number of rows it changed. */
  run(sql: string, params?: unknown[]): Promise<number>;
  /** Streams rows of one statement, reading a consistent snapshot. */
  iterate<T>(sql: string, params?: unknown[]): AsyncIterable<T>;
  /** Runs fn in one write transaction (taken at once: SQLite's IMMEDIATE); committed when fn resolves. */
  transaction<T>(fn: (tx: SqlDb) => Promise<T>): Promise<T>;
}

/** The SqlDb of a better-sqlite3 connection: synchronous underneath, statements cached by text. */
export class SqliteDb implements SqlDb {
  readonly dialect = 'sqlite' as const;
  private readonly stmts = new Map<string, Database.Statement>();
  private inTx = false;

  constructor(readonly raw: Database.Database) {}

  private prep(sql: string): Database.Statement {
    let s = this.stmts.get(sql);
    if (!s) {
      s = this.raw.prepare(sql);
      this.stmts.set(sql, s);
    }
    return s;
  }

  all<T>(sql: string, params: unknown[] = []): Promise<T[]> {
    return Promise.resolve(this.prep(sql).all(...params) as T[]);
  }

  get<T>(sql: string, params: unknown[] = []): Promise<T | undefined> {
    return Promise.resolve(this.prep(sql).get(...params) as T | undefined);
  }

  run(sql: string, params: unknown[] = []): Promise<number> {
    return Promise.resolve(this.prep(sql).run(...params).changes);
  }

  async *iterate<T>(sql: string, params: unknown[] = []): AsyncIterable<T> {
    // A statement of its own: a cached one is busy while it is iterated.
    yield* this.raw.prepare(sql).iterate(...params) as IterableIterator<T>;
  }

  // The connection is this command's alone (management commands run one at a time on it), so a transaction may
  // span awaits: nothing else runs statements on the connection in between.
  async transaction<T>(fn: (tx: SqlDb) => Promise<T>): Promise<T> {
    if (this.inTx) return fn(this);
    this.raw.exec('BEGIN IMMEDIATE');
    this.inTx = true;
    try {
      const r = await fn(this);
      this.raw.exec('COMMIT');
      return r;
    } catch (e) {
      if (this.raw.inTransaction) this.raw.exec('ROLLBACK');
      throw e;
    } finally {
      this.inTx = false;
    }
  }
}

/** `?` parameters as PostgreSQL's $1, $2, ... (the ledger's SQL has no `?` inside its literals). */
export function numberParams(sql: string): string {
  let n = 0;
  return sql.replace(/\?/g, () => `$${++n}`);
}
