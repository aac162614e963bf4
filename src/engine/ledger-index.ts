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
import { ROWID_EVENTS_VERSION } from '../ledger/schema.js';
import type { IndexRow } from '../ledger/types.js';
import { fingerprintView } from './fingerprint.js';
import { FpIndex, FpIndexBuilder, type SharedFpIndex } from './fp-index.js';
import {
  INTS,
  I_KEY,
  I_KIND,
  I_LEDGER,
  I_NAT,
  I_RUN,
  isRetry,
  Kind,
  L_HASH_DIFFERS,
  L_PERMANENT,
  L_PERSON_DELIVERED,
  L_RETRYABLE,
  L_STATUS,
  payloadHashAt,
  STATUSES,
  STRS,
  type MappedBlock,
} from './block.js';

// Words of a key entry: fingerprint (3), ledger code with the run id above it, payload hash (first 64 bits).
const K_CODE = 3;
const K_HASH = 4;
const KEY_WIDTH = 6;
// A bit of the stored code: the row has a payload hash (the ledger codes use bits 0-7, see block.ts).
const HAS_HASH = 1 << 7;
const CODE_BITS = 8;
const MAX_RUN_ID = (1 << (32 - CODE_BITS)) - 1;

// Rows a page: a blob of ~300 KB of plain keys, a few MB at most (the page size does not change the time).
const PAGE = 16384;

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

  /** The index of tables just built (IndexBuilder). */
  static fromBuilt(keys: FpIndex, people: FpIndex): LedgerIndex {
    return new LedgerIndex(keys, people);
  }

  /** The index as shared data, to post to worker threads. */
  shared(): SharedLedgerIndex {
    return { keys: this.keys.shared(), people: this.people.shared() };
  }

  /**
   * Scans the ledger into an index; undefined when it has erased keys, more than maxRows events, or something the
   * index cannot represent (an unknown status, a run id past 2²⁴, a payload hash that is not hex, a NUL byte in a
   * key or person): then SQLite answers.
   */
  static build(db: Database.Database, maxRows = LedgerIndex.MAX_ROWS): LedgerIndex | undefined {
    if (db.prepare('SELECT 1 FROM tombstones LIMIT 1').get()) return undefined;
    // Keys are read as their UTF-8 bytes (below), which is what the fingerprints of the input are taken over.
    if (db.pragma('encoding', { simple: true }) !== 'UTF-8') return undefined;
    // Not through memory mapping, though it would read a fifth faster: the mapped pages of the whole ledger would
    // count in the process's resident memory (+60 MB for 400,000 events, measured), against the memory target.
    // Every row as a record: rows imported as plain keys (or sent before any hash was kept) as P and their key;
    // the others as R and their key, ledger code (status and failure; 0: a status the index does not know), the
    // payload hash's first 16 digits after an h (none: empty), the run id (-1: one the index cannot hold), and the
    // person the event delivered, or may have (a send in flight or in doubt; empty for a failed one).
    const plain =
      "status = 'sent' AND failure IS NULL AND payload_hash IS NULL AND run_id IS NULL AND natural_key IS NULL";
    const status = `CASE status ${STATUSES.map((st, i) => (st ? `WHEN '${st}' THEN ${i} ` : '')).join('')}ELSE 0 END`;
    const failure = `CASE failure WHEN 'retryable' THEN ${L_RETRYABLE} WHEN 'permanent' THEN ${L_PERMANENT} ELSE 0 END`;
    const other = [
      `${status} + ${failure}`,
      "CASE WHEN payload_hash IS NULL THEN '' ELSE 'h' || substr(payload_hash, 1, 16) END",
      `CASE WHEN run_id IS NULL THEN 0 WHEN typeof(run_id) = 'integer' AND run_id BETWEEN 0 AND ${MAX_RUN_ID} THEN run_id ELSE -1 END`,
      "CASE WHEN natural_key IS NULL OR status = 'failed' THEN '' ELSE natural_key END",
    ];
    const record = `CASE WHEN ${plain} THEN 'P' || key || char(0) ELSE 'R' || key || char(0) || ${other.map((f) => `(${f}) || char(0)`).join(' || ')} END`;
    const builder = new IndexBuilder(maxRows);
    if (!pages(db, record, (b, n) => builder.page(b, n))) return undefined;
    return builder.finish();
  }

  /**
   * The index of a ledger read elsewhere (PostgreSQL, streamed by a cursor): its rows a page at a time, each page
   * made into the records build() reads from SQLite (indexRecord), so that both index alike. Undefined where
   * build() would be.
   */
  static async fromRows(
    pagesOfRows: AsyncIterable<IndexRow[]>,
    maxRows = LedgerIndex.MAX_ROWS,
  ): Promise<LedgerIndex | undefined> {
    const builder = new IndexBuilder(maxRows);
    for await (const rows of pagesOfRows) {
      if (!rows.length) continue;
      if (!builder.page(Buffer.from(rows.map(indexRecord).join(''), 'utf8'), rows.length)) return undefined;
    }
    return builder.finish();
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
        // A retry's person, as fillLedger asks it: another event that delivered them makes the retry a known lead.
        if (isRetry(code) && ints[o + I_NAT] !== 0 && this.hasPerson(ints, o + I_NAT)) {
          code |= L_PERSON_DELIVERED;
          ints[o + I_RUN] = -1;
        }
      } else if (ints[o + I_NAT] !== 0 && this.hasPerson(ints, o + I_NAT)) {
        code = L_PERSON_DELIVERED;
        ints[o + I_RUN] = -1;
      }
      ints[o + I_LEDGER] = code;
    }
  }

  /**
   * Whether the ledger may hold the key whose fingerprint is at ints[o..o+2]: false means it does not (a key held has
   * the same fingerprint); true may be another key of that fingerprint, so a writing run asks SQLite (LedgerFilter).
   */
  mayHoldKey(ints: Int32Array, o: number): boolean {
    return this.keys.find(ints[o]!, ints[o + 1]!, ints[o + 2]!) >= 0;
  }

  /**
   * Whether the ledger delivered (or may have delivered) the person whose fingerprint is at ints[o..o+2]. Which
   * event did is asked of SQLite when a decision names it (Ledger.deliveredBy), which also confirms the match.
   */
  hasPerson(ints: Int32Array, o: number): boolean {
    return this.people.find(ints[o]!, ints[o + 1]!, ints[o + 2]!) >= 0;
  }
}

export type { IndexRow };

/** The record build()'s SQL makes of a row (see build), made in JavaScript: the same fields, each ended by NUL. */
export function indexRecord(r: IndexRow): string {
  if (
    r.status === 'sent' &&
    r.failure === null &&
    r.payload_hash === null &&
    r.run_id === null &&
    r.natural_key === null
  )
    return 'P' + r.key + '\0';
  const st = STATUSES.indexOf(r.status as (typeof STATUSES)[number]);
  const status = st > 0 ? st : 0;
  const failure = r.failure === 'retryable' ? L_RETRYABLE : r.failure === 'permanent' ? L_PERMANENT : 0;
  const hash = r.payload_hash === null ? '' : 'h' + r.payload_hash.slice(0, 16);
  const run =
    r.run_id === null ? 0 : Number.isInteger(r.run_id) && r.run_id >= 0 && r.run_id <= MAX_RUN_ID ? r.run_id : -1;
  const nat = r.natural_key === null || r.status === 'failed' ? '' : r.natural_key;
  return `R${r.key}\0${status + failure}\0${hash}\0${run}\0${nat}\0`;
}

// Reads pages of records into the fingerprint tables; false from page() means the ledger cannot be indexed.
class IndexBuilder {
  private readonly keys = new FpIndexBuilder(KEY_WIDTH, 4096);
  private readonly people = new FpIndexBuilder(3, 1024);

  constructor(private readonly maxRows: number) {}

  page(b: Buffer, n: number): boolean {
    const sent = STATUSES.indexOf('sent');
    // Locals, not fields, in the loop over every row of the ledger.
    const { keys, people, maxRows } = this;
    const view = new DataView(b.buffer, b.byteOffset, b.byteLength);
    let at = 0;
    for (let i = 0; i < n; i++) {
      const marker = b[at++];
      const keyEnd = b.indexOf(0, at);
      if (keyEnd < 0 || keys.size >= maxRows) return false;
      const o = keys.slot();
      const w = keys.array;
      fingerprintView(view, b, at, keyEnd, w, o);
      if (marker === 0x50 /* P */) {
        w[o + K_CODE] = sent;
        at = keyEnd + 1;
        continue;
      }
      const codeEnd = b.indexOf(0, keyEnd + 1);
      const hashEnd = b.indexOf(0, codeEnd + 1);
      const runEnd = b.indexOf(0, hashEnd + 1);
      const natEnd = b.indexOf(0, runEnd + 1);
      if (marker !== 0x52 /* R */ || natEnd < 0) return false;
      let code = decimal(b, keyEnd + 1, codeEnd);
      const runId = decimal(b, hashEnd + 1, runEnd);
      const hashLen = hashEnd - codeEnd - 1;
      if (code <= 0 || (code & L_STATUS) === 0 || runId < 0 || (hashLen !== 0 && hashLen !== 17)) return false;
      if (hashLen === 17) {
        const hi = hex32(b, codeEnd + 2);
        const lo = hex32(b, codeEnd + 10);
        if (hi === undefined || lo === undefined) return false;
        code |= HAS_HASH;
        w[o + K_HASH] = hi;
        w[o + K_HASH + 1] = lo;
      }
      w[o + K_CODE] = code | (runId << CODE_BITS);
      if (natEnd > runEnd + 1) {
        const p = people.slot(); // before reading people.array, which slot() may replace
        fingerprintView(view, b, runEnd + 1, natEnd, people.array, p);
      }
      at = natEnd + 1;
    }
    // A key or person holding a NUL byte shifts the fields: the page does not end where its last record does.
    return at === b.length;
  }

  finish(): LedgerIndex {
    return LedgerIndex.fromBuilt(this.keys.freeze(), this.people.freeze());
  }
}

/** Whether a payload hash (hex) starts with the 64 bits an IndexedKey holds. */
export function hashStartsWith(hash: string, words: [number, number]): boolean {
  return (parseInt(hash.slice(0, 8), 16) | 0) === words[0] && (parseInt(hash.slice(8, 16), 16) | 0) === words[1];
}

// Reads every row of events, in the table's own order, a page at a time: each page is one blob of the rows'
// `record`s (fields each ended by a NUL byte), which `each` reads with the page's row count. A blob a page costs
// JavaScript no string or array per row: 400,000 plain keys are indexed in ~130 ms, ~95 of them SQLite's walk of the
// table, against ~190 ms as pages of strings (measured). The table's order is rowid order since schema v3, key order
// before (WITHOUT ROWID): walked in key order, a v3 table would be read a row at a time through its key index.
// `each` returning false stops it: false.
function pages(db: Database.Database, record: string, each: (blob: Buffer, rows: number) => boolean): boolean {
  const byRowid = (db.pragma('user_version', { simple: true }) as number) >= ROWID_EVENTS_VERSION;
  const col = byRowid ? 'rowid' : 'key';
  const page = (op: string) =>
    db
      .prepare(
        `SELECT count(*), max(c), CAST(group_concat(record, '') AS BLOB) FROM (SELECT ${col} AS c, ${record} AS record FROM events WHERE ${col} ${op} ? ORDER BY ${col} LIMIT ${PAGE})`,
      )
      .raw();
  const first = page('>=');
  let stmt = first;
  let after: string | number = byRowid ? Number.MIN_SAFE_INTEGER : '';
  for (;;) {
    const [n, last, blob] = stmt.get(after) as [number, string | number | null, Buffer | null];
    if (n === 0 || !blob) return true;
    if (!each(blob, n)) return false;
    if (n < PAGE) return true;
    after = last!;
    if (stmt === first) stmt = page('>');
  }
}

// The decimal number b[start..end) (an optional minus sign, then digits); NaN-free: -1 when it is not one.
function decimal(b: Uint8Array, start: number, end: number): number {
  const neg = b[start] === 0x2d;
  let v = 0;
  let i = neg ? start + 1 : start;
  if (i >= end || end - i > 10) return -1;
  for (; i < end; i++) {
    const d = b[i]! - 0x30;
    if (d < 0 || d > 9) return -1;
    v = v * 10 + d;
  }
  return neg ? -1 : v;
}

// Eight lower-case hex digits at b[at..at+8) as a signed 32-bit word, or undefined.
function hex32(b: Uint8Array, at: number): number | undefined {
  let v = 0;
  for (let i = at; i < at + 8; i++) {
    const c = b[i]!;
    const d = c >= 0x30 && c <= 0x39 ? c - 0x30 : c >= 0x61 && c <= 0x66 ? c - 0x57 : -1;
    if (d < 0) return undefined;
    v = (v << 4) | d;
  }
  return v | 0;
}
