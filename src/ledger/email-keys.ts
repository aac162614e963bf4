// The upgrade of a ledger written before emails had one canonical form (SQLite schema v4, PostgreSQL v2). Such a
// ledger holds addresses as the mapper wrote them then: `josé` in NFC or in NFD, a domain in Unicode (`bücher.example`)
// or in punycode, each a person of its own. It now holds each person's address in the form normalizeEmail writes
// (email.ts), and everything derived from it with it, so that an upgraded ledger neither sends a person again nor
// takes a retried event for a conflict:
//   - the natural key; the stored lead's email, and its payload hash taken again (NULL where the lead was pruned:
//     a NULL hash is no conflict check, as everywhere the ledger is read);
//   - keys derived from the address: a content key (`c:` + hash) that the stored lead proves it was taken of, and
//     the key `ledger import` gives a person (importedPersonKey). An event's own id stays as it is;
//   - attempts follow their event's key. Where two forms of one person both were in the ledger, their rows end up
//     with one key: the one that delivered (sent, else in doubt, else pending, else failed; the earliest first) is
//     kept, the other's history moves to it (its attempts, and the send its row recorded, written out as an attempt)
//     and its row goes.
// Tombstones hold only hashes of erased keys: there is nothing to write again there.
// Only addresses that can change are read: those with a character past ASCII or an xn-- label, found in SQL (an
// ASCII address is already in its canonical form), so a ledger of a million ASCII addresses is not read in JS.
import type Database from 'better-sqlite3';
import { normalizeEmail } from '../email.js';
import { canonicalLeadJson, contentKey, payloadHashOfJson } from '../lead-hash.js';
import { IMPLIED_ATTEMPT, importedPersonKey, MATERIALIZE_ATTEMPT } from './rules.js';
import type { SqlDb } from './sql.js';

/** An events row as the upgrade reads it. */
export interface EmailRow {
  key: string;
  key_kind: string;
  natural_key: string | null;
  lead_json: string | null;
  payload_hash: string | null;
  status: string;
  first_seen_at: string;
}

/** What a row becomes with its address in canonical form. */
export interface CanonicalRow {
  key: string;
  natural_key: string;
  lead_json: string | null;
  payload_hash: string | null;
}

/** What an upgrade changed: rows written again, rows that took another key, rows merged into another form's. */
export interface EmailUpgrade {
  rewritten: number;
  rekeyed: number;
  merged: number;
}

/** One statement of the upgrade: a read returns its rows to the upgrade, a write nothing. */
export interface UpgradeStep {
  sql: string;
  params: unknown[];
  read: boolean;
}

// A stored lead, as the mapper wrote it (mapping/types.ts Lead).
type Lead = Parameters<typeof canonicalLeadJson>[0];

// The lead fields a config's key.fields may name besides the email (config.ts): a content key over some of them
// and the email is found by trying each choice against the stored key. `type` is not stored: a key taken over it
// is not found, and stays as it is (the person is still found by the natural key).
const KEY_FIELDS = ['phone', 'name', 'firstName', 'lastName', 'company', 'source'] as const;

/**
 * What an events row becomes when its natural key, an email, is written in canonical form (see the head of this
 * file); undefined when it is in that form already, or is no address normalizeEmail takes (left as it was).
 */
export function canonicalEventRow(
  row: Pick<EmailRow, 'key' | 'key_kind' | 'natural_key' | 'lead_json'>,
): CanonicalRow | undefined {
  const before = row.natural_key;
  if (before === null || !before.includes('@')) return undefined;
  const n = normalizeEmail(before);
  if (!n.ok || n.value === before) return undefined;
  const out: CanonicalRow = { key: row.key, natural_key: n.value, lead_json: row.lead_json, payload_hash: null };
  const lead = parsedLead(row.lead_json);
  if (lead) {
    const now: Lead = lead.email === before ? { ...lead, email: n.value } : lead;
    out.lead_json = canonicalLeadJson(now);
    out.payload_hash = payloadHashOfJson(out.lead_json);
    if (row.key_kind === 'content' || row.key_kind === 'imported') out.key = contentKeyAgain(row.key, lead, now);
  }
  if (row.key_kind === 'imported' && row.key === importedPersonKey(before)) out.key = importedPersonKey(n.value);
  return out;
}

// The content key of the new lead where `key` is provably the content key of the old one (the whole lead, as for
// records without an id; or the email and some of KEY_FIELDS, as key.fields chooses); else the key as it was.
function contentKeyAgain(key: string, before: Lead, after: Lead): string {
  if (!key.startsWith('c:')) return key;
  if (key === 'c:' + payloadHashOfJson(canonicalLeadJson(before)))
    return 'c:' + payloadHashOfJson(canonicalLeadJson(after));
  for (let mask = 0; mask < 1 << KEY_FIELDS.length; mask++) {
    const chosen = (lead: Lead) => {
      const values: Record<string, unknown> = { email: lead.email };
      KEY_FIELDS.forEach((f, i) => {
        if (mask & (1 << i)) values[f] = lead[f];
      });
      return values;
    };
    if (contentKey(chosen(before)) === key) return contentKey(chosen(after));
  }
  return key;
}

// The stored lead, when there is one and it reads as a lead.
function parsedLead(json: string | null): Lead | undefined {
  if (json === null) return undefined;
  try {
    const v: unknown = JSON.parse(json);
    return v !== null && typeof v === 'object' && !Array.isArray(v) ? v : undefined;
  } catch {
    return undefined;
  }
}

// The order in which rows of one person and one key are kept: the one that delivered first.
const STATUS_RANK: Record<string, number> = { sent: 0, in_doubt: 1, pending: 2, queued: 3, failed: 4 };

const COLUMNS = 'key, key_kind, natural_key, lead_json, payload_hash, status, first_seen_at';
// Parameters per IN list.
const CHUNK = 500;

/**
 * The upgrade's statements, in order: it yields each and is given a read's rows back (so that one sequence serves
 * SQLite's synchronous upgrade and PostgreSQL's), and returns what it changed. Run them in ONE transaction.
 */
export function* emailUpgradeSteps(dialect: 'sqlite' | 'postgres'): Generator<UpgradeStep, EmailUpgrade, unknown[]> {
  const done: EmailUpgrade = { rewritten: 0, rekeyed: 0, merged: 0 };
  // A character past ASCII (or a control character, which no address holds): GLOB and the regex, each database's own.
  const notAscii = dialect === 'sqlite' ? `natural_key GLOB '*[^ -~]*'` : `natural_key ~ '[^ -~]'`;
  const naturals = (yield {
    sql: `SELECT DISTINCT natural_key AS n FROM events WHERE natural_key IS NOT NULL AND (${notAscii} OR lower(natural_key) LIKE '%xn--%')`,
    params: [],
    read: true,
  }) as Array<{ n: string }>;
  const changing = naturals
    .map((r) => r.n)
    .filter((n) => canonicalEventRow({ key: '', key_kind: 'id', natural_key: n, lead_json: null }));
  if (!changing.length) return done;

  const rows: EmailRow[] = [];
  for (let i = 0; i < changing.length; i += CHUNK) {
    const chunk = changing.slice(i, i + CHUNK);
    rows.push(
      ...((yield {
        sql: `SELECT ${COLUMNS} FROM events WHERE natural_key IN (${chunk.map(() => '?').join(', ')})`,
        params: chunk,
        read: true,
      }) as EmailRow[]),
    );
  }
  const changes = new Map<string, CanonicalRow>();
  for (const r of rows) {
    const c = canonicalEventRow(r);
    if (c) changes.set(r.key, c);
  }
  // Rows that hold a new key already (the other form of the person, imported or sent before).
  const known = new Map(rows.map((r) => [r.key, r]));
  const targets = [...new Set([...changes.values()].map((c) => c.key))].filter((k) => !known.has(k));
  for (let i = 0; i < targets.length; i += CHUNK) {
    const chunk = targets.slice(i, i + CHUNK);
    const held = (yield {
      sql: `SELECT ${COLUMNS} FROM events WHERE key IN (${chunk.map(() => '?').join(', ')})`,
      params: chunk,
      read: true,
    }) as EmailRow[];
    for (const r of held) known.set(r.key, r);
  }

  // The rows each key will have: more than one are the forms of one person, of which one is kept.
  const byKey = new Map<string, EmailRow[]>();
  for (const r of known.values()) {
    const k = changes.get(r.key)?.key ?? r.key;
    byKey.set(k, [...(byKey.get(k) ?? []), r]);
  }
  const gone = new Set<string>();
  for (const [key, group] of byKey) {
    if (group.length < 2) continue;
    group.sort(
      (a, b) =>
        (STATUS_RANK[a.status] ?? 9) - (STATUS_RANK[b.status] ?? 9) ||
        cmp(a.first_seen_at, b.first_seen_at) ||
        Number(changes.has(a.key)) - Number(changes.has(b.key)) ||
        cmp(a.key, b.key),
    );
    for (const loser of group.slice(1)) {
      // Its history goes to the row kept: the send its row records (written out as an attempt), then its attempts.
      yield {
        sql: `${MATERIALIZE_ATTEMPT} FROM events e WHERE e.key = ? AND ${IMPLIED_ATTEMPT}`,
        params: [loser.key],
        read: false,
      };
      yield { sql: 'UPDATE attempts SET key = ? WHERE key = ?', params: [key, loser.key], read: false };
      yield { sql: 'DELETE FROM events WHERE key = ?', params: [loser.key], read: false };
      gone.add(loser.key);
      done.merged++;
    }
  }
  for (const [before, c] of changes) {
    if (gone.has(before)) continue;
    // updated_at stays: the event did not change, and retention (ledger prune) goes by it.
    yield {
      sql: 'UPDATE events SET key = ?, natural_key = ?, lead_json = ?, payload_hash = ? WHERE key = ?',
      params: [c.key, c.natural_key, c.lead_json, c.payload_hash, before],
      read: false,
    };
    done.rewritten++;
    if (c.key === before) continue;
    yield { sql: 'UPDATE attempts SET key = ? WHERE key = ?', params: [c.key, before], read: false };
    done.rekeyed++;
  }
  return done;
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Runs the upgrade on a SQLite connection, inside the caller's transaction (the schema migration's). */
export function upgradeEmailsSqlite(db: Database.Database): EmailUpgrade {
  const steps = emailUpgradeSteps('sqlite');
  for (let r = steps.next([]); ;) {
    if (r.done) return r.value;
    const st = db.prepare(r.value.sql);
    r = steps.next(r.value.read ? st.all(...r.value.params) : (st.run(...r.value.params), []));
  }
}

/** Runs the upgrade on either database, inside the caller's transaction (PostgreSQL's migration; ledger migrate). */
export async function upgradeEmails(db: SqlDb): Promise<EmailUpgrade> {
  const steps = emailUpgradeSteps(db.dialect);
  for (let r = steps.next([]); ;) {
    if (r.done) return r.value;
    const { sql, params, read } = r.value;
    r = steps.next(read ? await db.all(sql, params) : (await db.run(sql, params), []));
  }
}
