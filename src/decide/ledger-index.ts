// A dry-run's snapshot of what the ledger holds, as fingerprints in memory: one scan of the events table when the
// audit starts, then every key and person of the input is checked with a probe instead of a SQLite B-tree lookup
// (about 1.5 µs a key through better-sqlite3, measured; the scan costs ~0.2 µs a row). Only a read-only ledger
// gets one: nothing writes it during a dry-run, so the snapshot stays true, and a writing run keeps asking SQLite,
// where its claims are. A ledger past MAX_ROWS, or with erased keys (tombstones hold only a hash of the key, which
// no fingerprint can be checked against), keeps the SQLite lookups: the answers are the same either way.
//
// Fingerprints are 96 bits (fingerprint.ts): that a key of the input matches a different key of the ledger has a
// probability of about n·m/2⁹⁶ (10⁻¹⁷ for a million keys against a million rows); the payload hashes are compared
// on their first 64 bits. Both only shape what a dry-run reports; no send ever relies on them.
import type Database from 'better-sqlite3';
import { fingerprint } from './fingerprint.js';
import { FpIndex, FpIndexBuilder, type SharedFpIndex } from './fp-index.js';
import { INTS, I_KEY, I_KIND, I_LEDGER, I_NAT, I_RUN, Kind, L_HASH_DIFFERS, L_PERMANENT, L_PERSON_DELIVERED, L_RETRYABLE, payloadHashAt, STATUSES, STRS, type MappedBlock } from './block.js';

// Words of a key entry: fingerprint (3), ledger code with the run id above it, payload hash (first 64 bits).
const K_CODE = 3;
const K_HASH = 4;
const KEY_WIDTH = 6;
// A bit of the stored code: the row has a payload hash (the ledger codes use bits 0-7, see block.ts).
const HAS_HASH = 1 << 7;
const CODE_BITS = 8;
const MAX_RUN_ID = (1 << (32 - CODE_BITS)) - 1;

const PAGE = 16384;
const HEX16 = /^[0-9a-f]{16}/;

/** What an input key's probe found: the ledger code (0: not held) and the run id of the row. */
export interface IndexedKey {
  code: number;
  runId: number;
  /** The row's payload hash starts with these 64 bits (as two signed words); absent when it has none. */
  hash?: [number, number];
}

/** A LedgerIndex as shared data, posted to the map workers (see FpIndex.shared). */
export interface SharedLedgerIndex {
  keys: SharedFpIndex;
  people: SharedFpIndex;
}

/** Event keys and delivered people of a ledger, for a dry-run's decisions. */
export class LedgerIndex {
  /** Rows past which a ledger is looked up in SQLite instead (keys take ~30 bytes a row here). */
  static readonly MAX_ROWS = 1_000_000;

  private readonly probe: IndexedKey = { code: 0, runId: 0 };

  private constructor(
    private readonly keys: FpIndex,
    private readonly people: FpIndex,
  ) {}

  /** The index a LedgerIndex.shared() describes (in a worker thread: the same memory). */
  static fromShared(s: SharedLedgerIndex): LedgerIndex {
    return new LedgerIndex(new FpIndex(s.keys), new FpIndex(s.people));
  }

  /** The index as shared data, to post to worker threads. */
  shared(): SharedLedgerIndex {
    return { keys: this.keys.shared(), people: this.people.shared() };
  }

  /**
   * Scans the ledger into an index; undefined when it has erased keys, more than maxRows events, or something the
   * index cannot represent (an unknown status, a run id past 2²⁴, a payload hash that is not hex): then SQLite
   * answers.
   */
  static build(db: Database.Database, maxRows = LedgerIndex.MAX_ROWS): LedgerIndex | undefined {
    if (db.prepare('SELECT 1 FROM tombstones LIMIT 1').get()) return undefined;
    // Not through memory mapping, though it would read a fifth faster: the mapped pages of the whole ledger would
    // count in the process's resident memory (+60 MB for 400,000 events, measured), against the memory target.
    const keys = new FpIndexBuilder(KEY_WIDTH, 4096);
    const people = new FpIndexBuilder(3, 1024);
    // Rows imported as plain keys (or sent before any hash was kept) need only their key: read as one column,
    // which better-sqlite3 returns several times faster than rows of six.
    const plain = "status = 'sent' AND failure IS NULL AND payload_hash IS NULL AND run_id IS NULL AND natural_key IS NULL";
    const sent = STATUSES.indexOf('sent');
    let ok = true; // false: a row the index cannot hold, or one row too many
    scan(db, (op) => `SELECT key FROM events WHERE key ${op} ? AND ${plain} ORDER BY key LIMIT ${PAGE}`, true, (key: string) => {
      if (keys.size >= maxRows) return (ok = false);
      const o = keys.slot();
      const w = keys.array;
      fingerprint(key, w, o);
      w[o + K_CODE] = sent;
    });
    const rest = (op: string) =>
      `SELECT key, status, failure, payload_hash, run_id, natural_key FROM events WHERE key ${op} ? AND NOT (${plain}) ORDER BY key LIMIT ${PAGE}`;
    if (ok) {
      scan(db, rest, false, (r: [string, string, string | null, string | null, number | null, string | null]) => {
        const status = STATUSES.indexOf(r[1] as (typeof STATUSES)[number]);
        const runId = r[4] ?? 0;
        const hash = r[3];
        if (keys.size >= maxRows || status <= 0 || runId < 0 || runId > MAX_RUN_ID || (hash !== null && !HEX16.test(hash))) {
          ok = false;
          return false;
        }
        let code = status;
        if (r[2] === 'retryable') code |= L_RETRYABLE;
        if (r[2] === 'permanent') code |= L_PERMANENT;
        const o = keys.slot();
        const w = keys.array;
        fingerprint(r[0], w, o);
        if (hash !== null) {
          code |= HAS_HASH;
          w[o + K_HASH] = parseInt(hash.slice(0, 8), 16) | 0;
          w[o + K_HASH + 1] = parseInt(hash.slice(8, 16), 16) | 0;
        }
        w[o + K_CODE] = code | (runId << CODE_BITS);
        // The person the event delivered, or may have (a send in flight or in doubt); once per event of theirs,
        // read in the same pass.
        if (r[5] !== null && r[1] !== 'failed') {
          const at = people.slot(); // before reading people.array, which slot() may replace
          fingerprint(r[5], people.array, at);
        }
        return true;
      }, (r) => r[0]);
    }
    if (!ok) return undefined;
    return new LedgerIndex(keys.freeze(), people.freeze());
  }

  /** The ledger's answer for the key whose fingerprint is at ints[o..o+2]. */
  key(ints: Int32Array, o: number, out: IndexedKey): void {
    const at = this.keys.find(ints[o]!, ints[o + 1]!, ints[o + 2]!);
    if (at < 0) {
      out.code = 0;
      out.runId = 0;
      out.hash = undefined;
      return;
    }
    const w = this.keys.words;
    const c = w[at + K_CODE]!;
    out.code = c & 0xff & ~HAS_HASH;
    out.runId = c >>> CODE_BITS;
    out.hash = c & HAS_HASH ? [w[at + K_HASH]!, w[at + K_HASH + 1]!] : undefined;
  }

  /**
   * Fills the ledger codes of a block's events: the same codes as fillLedger (block.ts) gets from SQLite, except
   * that a person the ledger delivered gets I_RUN = -1 (the decider asks the ledger which event did, when it says so).
   */
  fill(block: MappedBlock): void {
    const { n, ints } = block;
    const probe = this.probe;
    for (let r = 0; r < n; r++) {
      const o = r * INTS;
      if (ints[o + I_KIND]! > Kind.ContentEvent) continue;
      this.key(ints, o + I_KEY, probe);
      let code = probe.code;
      ints[o + I_RUN] = probe.runId;
      if (code !== 0) {
        if (probe.hash && !hashStartsWith(payloadHashAt(block, r * STRS), probe.hash)) code |= L_HASH_DIFFERS;
      } else if (ints[o + I_NAT] !== 0 && this.hasPerson(ints, o + I_NAT)) {
        code = L_PERSON_DELIVERED;
        ints[o + I_RUN] = -1;
      }
      ints[o + I_LEDGER] = code;
    }
  }

  /**
   * Whether the ledger delivered (or may have delivered) the person whose fingerprint is at ints[o..o+2]. Which
   * event did is asked of SQLite when a decision names it (Ledger.deliveredBy), which also confirms the match.
   */
  hasPerson(ints: Int32Array, o: number): boolean {
    return this.people.find(ints[o]!, ints[o + 1]!, ints[o + 2]!) >= 0;
  }

}

/** Whether a payload hash (hex) starts with the 64 bits an IndexedKey holds. */
export function hashStartsWith(hash: string, words: [number, number]): boolean {
  return (parseInt(hash.slice(0, 8), 16) | 0) === words[0] && (parseInt(hash.slice(8, 16), 16) | 0) === words[1];
}

// Pages through a query `… WHERE <column> <op> ? … ORDER BY <column> LIMIT PAGE` in column order: the first page
// from '' on (>=), the next ones after the last value read (>). `each` returning false stops it. Pages of all()
// cost far less per row than iterate() (measured 3x). pluck: rows are the one column's values, else arrays.
function scan<R>(db: Database.Database, sql: (op: string) => string, pluck: boolean, each: (row: R) => boolean | void, column: (row: R) => string = (r) => r as unknown as string): void {
  const prep = (op: string) => (pluck ? db.prepare(sql(op)).pluck() : db.prepare(sql(op)).raw());
  const first = prep('>=');
  let stmt = first;
  let after = '';
  for (;;) {
    const rows = stmt.all(after) as R[];
    for (const r of rows) if (each(r) === false) return;
    if (rows.length < PAGE) return;
    after = column(rows[rows.length - 1]!);
    if (stmt === first) stmt = prep('>');
  }
}
