// The receiver's inbox is the ledger itself: an acknowledged event is an events row in status `queued`, committed
// before its request is answered, and the row's key is what makes a sender's retry a duplicate (the unique key
// index, on SQLite and on PostgreSQL, so two concurrent retries, or two instances, cannot both take it). Requests
// are committed in groups (one transaction for every request that arrived while the previous one committed), so
// durability does not cost a commit each.
import type Database from 'better-sqlite3';
import { tombstoneHash } from '../ledger/queries.js';
import { SqliteDb, type SqlDb } from '../ledger/sql.js';
import type { LedgerStore } from '../ledger/store.js';
import type { ClaimInput, LedgerEventRow } from '../ledger/types.js';

/** An event to accept: what a claim would record (ClaimInput), before any delivery. */
export type InboxEvent = ClaimInput;

/** A record of a request that is no lead (invalid, or set aside by its source's rules): recorded, never sent. */
export interface InboxReject {
  kind: 'invalid' | 'filtered';
  key: string;
  reason: string;
  source: string;
  line: number;
}

/** What became of one event offered to the inbox. */
export type AcceptResult =
  | { kind: 'accepted' }
  | { kind: 'duplicate'; status: string }
  | { kind: 'conflict'; status: string }
  | { kind: 'known_lead'; by: string }
  | { kind: 'invalid' | 'filtered'; reason: string };

/** An item of a group: a lead event, or a record that is none. */
export type InboxItem = { kind: 'event'; event: InboxEvent } | InboxReject;

/** The statuses of an event that delivered, or will deliver, its person (a later event of them is a known lead). */
const PERSON_STATUSES = `('sent', 'pending', 'in_doubt', 'queued')`;
// Rows per statement: well under SQLite's 32,766 parameters (14 a row) and PostgreSQL's 65,535.
const CHUNK = 400;
const now = () => new Date().toISOString();
// Repeated in every query of a status: SQLite uses the partial index events_status (WHERE status <> 'sent') only
// where the query says so itself (it does not infer it from status = 'queued'), and scanned the table instead.
const UNSENT = `status <> 'sent'`;

/** The facts a group's decisions are taken on, read in the group's transaction. */
interface Facts {
  byKey: Map<string, { status: string; payload_hash: string | null }>;
  erased: Set<string>;
  personBy: Map<string, string>;
}

/** Writes the group decided: the rows to insert, and the conflicts' attempts rows. */
interface Writes {
  queued: InboxEvent[];
  rejects: InboxReject[];
  conflicts: Array<{ key: string; detail: string }>;
}

/** The inbox of one ledger (SQLite: synchronous, in one IMMEDIATE transaction; PostgreSQL: one transaction). */
export class Inbox {
  private readonly raw: Database.Database | undefined;

  constructor(
    private readonly ledger: LedgerStore,
    private readonly runId: number,
    private readonly sink: string,
  ) {
    this.raw = ledger.sql instanceof SqliteDb ? ledger.sql.raw : undefined;
  }

  /**
   * Records a group of items in one transaction and says what became of each: accepted (queued for delivery), a
   * duplicate of a key the ledger holds (or held: an erased key), a conflict (the key with another lead: recorded as
   * an attempt, never sent), a known lead (another event delivered, or will deliver, the person), invalid or filtered
   * (recorded as a permanent failure with its reason). Throws when the ledger could not commit: nothing of the group
   * is then acknowledged.
   */
  async accept(items: InboxItem[]): Promise<AcceptResult[]> {
    const raw = this.raw;
    // SQLite: synchronous, in one IMMEDIATE transaction that holds the write lock from its first read.
    if (raw) return raw.transaction(() => runSync((sql) => this.prepare(raw, sql), this.group(items))).immediate();
    return this.ledger.sql.transaction((tx) => runAsync(tx, this.group(items)));
  }

  // Statements by their text: a group's differ only by how many rows they take, so there are a few hundred at most.
  private readonly stmts = new Map<string, Database.Statement>();

  private prepare(raw: Database.Database, sql: string): Database.Statement {
    let st = this.stmts.get(sql);
    if (!st) {
      if (this.stmts.size >= 2000) this.stmts.clear();
      st = raw.prepare(sql);
      this.stmts.set(sql, st);
    }
    return st;
  }

  // The group's statements, one at a time: the reads, the decisions, the writes, and where another instance took a
  // key between this group's read and its insert (PostgreSQL), that key read again: a duplicate after all.
  private *group(items: InboxItem[]): Steps<AcceptResult[]> {
    const facts = yield* readFacts(items);
    const { results, writes } = decideGroup(items, facts);
    for (const e of writes.queued) {
      this.leadBytes.sum += e.leadJson.length;
      this.leadBytes.n++;
    }
    const lost = yield* writeGroup(writes, this.runId, this.sink);
    if (lost.size) {
      const rows = yield* selectIn<{ key: string; status: string }>('SELECT key, status FROM events WHERE key IN', [
        ...lost,
      ]);
      const status = new Map(rows.map((r) => [r.key, r.status]));
      items.forEach((it, i) => {
        if (it.kind === 'event' && lost.has(it.event.key) && results[i]!.kind === 'accepted')
          results[i] = { kind: 'duplicate', status: status.get(it.event.key) ?? 'queued' };
      });
    }
    return results;
  }

  /** Up to `limit` queued events of this sink (any instance's), to be claimed for delivery. */
  async queued(limit: number): Promise<LedgerEventRow[]> {
    return this.ledger.sql.all<LedgerEventRow>(
      `SELECT * FROM events WHERE status = 'queued' AND ${UNSENT} AND sink = ? LIMIT ?`,
      [this.sink, limit],
    );
  }

  /**
   * Up to `limit` events the receiver accepted whose send failed with a retryable error (the CRM was down past the
   * retries), last tried before `before`: they are tried again, never left for a person to notice.
   */
  async retryable(before: string, limit: number): Promise<LedgerEventRow[]> {
    return this.ledger.sql.all<LedgerEventRow>(
      `SELECT * FROM events WHERE status = 'failed' AND ${UNSENT} AND failure = 'retryable' AND sink = ? AND source LIKE 'serve:%' AND updated_at < ? LIMIT ?`,
      [this.sink, before, limit],
    );
  }

  /** Events in doubt on this sink whose doubt is older than `before` (a send that timed out just now may yet land). */
  async inDoubt(before: string, limit: number): Promise<LedgerEventRow[]> {
    return this.ledger.sql.all<LedgerEventRow>(
      `SELECT * FROM events WHERE status = 'in_doubt' AND ${UNSENT} AND sink = ? AND updated_at < ? LIMIT ?`,
      [this.sink, before, limit],
    );
  }

  /**
   * How many events wait in the inbox (every sink's: acknowledged, not delivered), and the bytes of their leads,
   * estimated from the average lead
   * of those received since the start (counted from the index alone: this runs every second, and summing the leads
   * of a deep inbox read every row of it).
   */
  async depth(): Promise<{ events: number; bytes: number }> {
    // Queued, being sent, in doubt, or failed and waiting to be tried again: acknowledged and not delivered. While
    // the CRM is down, events go from queued to failed and back; they are all in the inbox.
    const r = await this.ledger.sql.get<{ n: number | string }>(
      `SELECT count(*) AS n FROM events WHERE status IN ('queued', 'pending', 'in_doubt') AND ${UNSENT}`,
    );
    const f = await this.ledger.sql.get<{ n: number | string }>(
      `SELECT count(*) AS n FROM events WHERE status = 'failed' AND ${UNSENT} AND failure = 'retryable' AND source LIKE 'serve:%'`,
    );
    const events = Number(r?.n ?? 0) + Number(f?.n ?? 0);
    return { events, bytes: Math.round(events * (this.leadBytes.n ? this.leadBytes.sum / this.leadBytes.n : 0)) };
  }

  /** The size of the leads accepted so far (for depth's estimate of the bytes queued). */
  private readonly leadBytes = { sum: 0, n: 0 };

  /** Events queued for another sink than this receiver's (a receiver started before with another --sink). */
  async otherSinks(): Promise<number> {
    const r = await this.ledger.sql.get<{ n: number | string }>(
      `SELECT count(*) AS n FROM events WHERE status = 'queued' AND ${UNSENT} AND sink <> ?`,
      [this.sink],
    );
    return Number(r?.n ?? 0);
  }

  /** How many events are in doubt on this sink. */
  async inDoubtCount(): Promise<number> {
    const r = await this.ledger.sql.get<{ n: number | string }>(
      `SELECT count(*) AS n FROM events WHERE status = 'in_doubt' AND ${UNSENT} AND sink = ?`,
      [this.sink],
    );
    return Number(r?.n ?? 0);
  }
}

/** A statement to run, and its rows back: the steps of a group, run synchronously (SQLite) or awaited. */
type Steps<T> = Generator<{ sql: string; params: unknown[] }, T, unknown[]>;

function runSync<T>(prep: (sql: string) => Database.Statement, steps: Steps<T>): T {
  let next = steps.next();
  while (!next.done) next = steps.next(prep(next.value.sql).all(...next.value.params));
  return next.value;
}

async function runAsync<T>(db: SqlDb, steps: Steps<T>): Promise<T> {
  let next = steps.next();
  while (!next.done) next = steps.next(await db.all(next.value.sql, next.value.params));
  return next.value;
}

function* selectIn<T>(head: string, values: string[], tail = ''): Steps<T[]> {
  const out: T[] = [];
  for (let i = 0; i < values.length; i += CHUNK) {
    const part = values.slice(i, i + CHUNK);
    const rows = (yield { sql: `${head} (${part.map(() => '?').join(',')})${tail}`, params: part }) as T[];
    for (const r of rows) out.push(r);
  }
  return out;
}

// What the ledger holds of a group's keys and people: one statement for a group of up to CHUNK keys (the keys' rows,
// their tombstones, and the events of their people; on PostgreSQL each statement is a round trip in the group's
// transaction), chunks of each for a larger one.
function* readFacts(items: InboxItem[]): Steps<Facts> {
  const keys = [...new Set(items.map((it) => (it.kind === 'event' ? it.event.key : it.key)))];
  const people = [
    ...new Set(items.flatMap((it) => (it.kind === 'event' && it.event.naturalKey ? [it.event.naturalKey] : []))),
  ];
  const hashes = new Map(keys.map((k) => [tombstoneHash(k), k]));
  const facts: Facts = { byKey: new Map(), erased: new Set(), personBy: new Map() };
  const take = (r: Fact) => {
    if (r.t === 'k') facts.byKey.set(r.a, { status: r.b!, payload_hash: r.c });
    else if (r.t === 'e') facts.erased.add(hashes.get(r.a)!);
    else if (!facts.personBy.has(r.a)) facts.personBy.set(r.a, r.b!);
  };
  const KEYS = `SELECT 'k' AS t, key AS a, status AS b, payload_hash AS c FROM events WHERE key IN`;
  const ERASED = `SELECT 'e' AS t, key_hash AS a, NULL AS b, NULL AS c FROM tombstones WHERE key_hash IN`;
  const PEOPLE = `SELECT 'p' AS t, natural_key AS a, key AS b, NULL AS c FROM events WHERE natural_key IN`;
  const PEOPLE_TAIL = ` AND status IN ${PERSON_STATUSES}`;
  const list = (n: number) => `(${Array.from({ length: n }, () => '?').join(',')})`;
  if (keys.length <= CHUNK && people.length <= CHUNK) {
    const parts = [`${KEYS} ${list(keys.length)}`, `${ERASED} ${list(keys.length)}`];
    const params: unknown[] = [...keys, ...hashes.keys()];
    if (people.length) {
      parts.push(`${PEOPLE} ${list(people.length)}${PEOPLE_TAIL}`);
      params.push(...people);
    }
    for (const r of (yield { sql: parts.join(' UNION ALL '), params }) as Fact[]) take(r);
    return facts;
  }
  for (const r of yield* selectIn<Fact>(KEYS, keys)) take(r);
  for (const r of yield* selectIn<Fact>(ERASED, [...hashes.keys()])) take(r);
  for (const r of yield* selectIn<Fact>(PEOPLE, people, PEOPLE_TAIL)) take(r);
  return facts;
}

/** A row of readFacts' statement: a key's row (k), an erased key (e), or an event of a person (p). */
interface Fact {
  t: 'k' | 'e' | 'p';
  a: string;
  b: string | null;
  c: string | null;
}

/** The decisions of a group, in order: each item sees the ledger as the items before it in the group left it. */
function decideGroup(items: InboxItem[], f: Facts): { results: AcceptResult[]; writes: Writes } {
  const writes: Writes = { queued: [], rejects: [], conflicts: [] };
  const results = items.map((it): AcceptResult => {
    if (it.kind !== 'event') {
      if (!f.byKey.has(it.key)) {
        writes.rejects.push(it);
        f.byKey.set(it.key, { status: 'failed', payload_hash: null });
      }
      return { kind: it.kind, reason: it.reason };
    }
    const e = it.event;
    const held = f.byKey.get(e.key);
    if (held) {
      if (held.payload_hash === null || held.payload_hash === e.payloadHash)
        return { kind: 'duplicate', status: held.status };
      writes.conflicts.push({
        key: e.key,
        detail: `a repeat of the event from ${e.source} with a different lead (payload hash ${e.payloadHash.slice(0, 12)}, the ledger holds ${held.payload_hash.slice(0, 12)}): not sent`,
      });
      return { kind: 'conflict', status: held.status };
    }
    if (f.erased.has(e.key)) return { kind: 'duplicate', status: 'erased' };
    const by = e.naturalKey ? f.personBy.get(e.naturalKey) : undefined;
    if (by !== undefined) return { kind: 'known_lead', by };
    writes.queued.push(e);
    f.byKey.set(e.key, { status: 'queued', payload_hash: e.payloadHash });
    if (e.naturalKey) f.personBy.set(e.naturalKey, e.key);
    return { kind: 'accepted' };
  });
  return { results, writes };
}

// Inserts the group's rows; the keys of queued events it could not insert (another writer took them first).
function* writeGroup(w: Writes, runId: number, sink: string): Steps<Set<string>> {
  const t = now();
  const lost = new Set<string>();
  const cols =
    'key, key_kind, payload_hash, natural_key, status, failure, outcome, last_error, sink, downstream_key, lead_json, source, source_line, event_time, run_id, first_seen_at, updated_at';
  const marks = `(${cols
    .split(',')
    .map(() => '?')
    .join(',')})`;
  for (let i = 0; i < w.queued.length; i += CHUNK) {
    const part = w.queued.slice(i, i + CHUNK);
    const params: unknown[] = [];
    for (const e of part)
      params.push(
        e.key,
        e.keyKind,
        e.payloadHash,
        e.naturalKey ?? null,
        'queued',
        null,
        null,
        null,
        sink,
        e.downstreamKey,
        e.leadJson,
        e.source,
        e.line,
        e.eventTime ?? null,
        runId,
        t,
        t,
      );
    const took = new Set(
      (
        (yield {
          sql: `INSERT INTO events (${cols}) VALUES ${part.map(() => marks).join(',')} ON CONFLICT (key) DO NOTHING RETURNING key`,
          params,
        }) as Array<{ key: string }>
      ).map((r) => r.key),
    );
    for (const e of part) if (!took.has(e.key)) lost.add(e.key);
  }
  for (let i = 0; i < w.rejects.length; i += CHUNK) {
    const part = w.rejects.slice(i, i + CHUNK);
    const params: unknown[] = [];
    for (const r of part)
      params.push(
        r.key,
        'content',
        null,
        null,
        'failed',
        'permanent',
        r.kind,
        `${r.kind}: ${r.reason}`,
        sink,
        null,
        null,
        r.source,
        r.line,
        null,
        runId,
        t,
        t,
      );
    yield {
      sql: `INSERT INTO events (${cols}) VALUES ${part.map(() => marks).join(',')} ON CONFLICT (key) DO NOTHING RETURNING key`,
      params,
    };
  }
  for (const c of w.conflicts)
    yield {
      sql: `INSERT INTO attempts (key, run_id, at, outcome, detail) VALUES (?, ?, ?, 'conflict', ?) RETURNING key`,
      params: [c.key, runId, t, c.detail],
    };
  return lost;
}
