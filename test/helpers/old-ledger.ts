// Ledgers as leadledger wrote them before emails had one canonical form (SQLite schema v3, PostgreSQL v1), holding
// people as the mapper wrote them then: the address lower-cased and nothing else, so `josé` in NFD stayed NFD and a
// Unicode domain stayed Unicode.
import Database from 'better-sqlite3';
import pg from 'pg';
import { canonicalLeadJson, contentKey, payloadHashOfJson } from '../../src/mapping/keys.js';
import type { Lead } from '../../src/mapping/types.js';
import { importedPersonKey } from '../../src/ledger/rules.js';
import { MIGRATIONS } from '../../src/ledger/schema.js';
import { PG_MIGRATIONS } from '../../src/ledger/postgres/schema.js';
import type { PgDatabase } from './postgres.js';

/** An events row of an old ledger (the columns a test sets; the rest NULL or their defaults). */
export interface OldRow {
  key: string;
  key_kind: 'id' | 'content' | 'imported';
  natural_key: string | null;
  lead_json: string | null;
  payload_hash: string | null;
  status: 'sent' | 'failed' | 'in_doubt' | 'pending';
  outcome?: string | null;
  failure?: string | null;
  crm_id?: string | null;
  run_id?: number | null;
  downstream_key?: string | null;
  first_seen_at: string;
  sent_at?: string | null;
}

/** An attempts row of an old ledger. */
export interface OldAttempt {
  key: string;
  run_id: number | null;
  at: string;
  outcome: string;
  detail: string | null;
}

const T = (n: number) => `2026-01-0${n}T10:00:00.000Z`;

/** An event keyed by its id, sent by run 1, whose lead is `lead` (its email as the old mapper wrote it). */
export function sentById(key: string, lead: Lead, at = 1, crmId = '10' + at): OldRow {
  const json = canonicalLeadJson(lead);
  return {
    key,
    key_kind: 'id',
    natural_key: lead.email ?? lead.phone ?? null,
    lead_json: json,
    payload_hash: payloadHashOfJson(json),
    status: 'sent',
    outcome: 'created',
    crm_id: crmId,
    run_id: 1,
    downstream_key: 'dk-' + key,
    first_seen_at: T(at),
    sent_at: T(at),
  };
}

/** A record without an id, keyed by its whole lead (`c:` + its payload hash), sent by run 1. */
export function sentByContent(lead: Lead, at = 1, crmId = '20' + at): OldRow {
  const row = sentById('', lead, at, crmId);
  return { ...row, key: 'c:' + row.payload_hash, key_kind: 'content', downstream_key: 'dk-content-' + at };
}

/** A record keyed by chosen fields (config key.fields), sent by run 1. */
export function sentByFields(lead: Lead, fields: Array<keyof Lead>, at = 1): OldRow {
  const chosen = Object.fromEntries(fields.map((f) => [f, lead[f]]));
  return { ...sentById('', lead, at), key: contentKey(chosen), key_kind: 'content', downstream_key: 'dk-fields-' + at };
}

/** A person `ledger import --as emails` marked as delivered. */
export function imported(email: string, at = 1, crmId: string | null = null): OldRow {
  return {
    key: importedPersonKey(email),
    key_kind: 'imported',
    natural_key: email,
    lead_json: null,
    payload_hash: null,
    status: 'sent',
    outcome: 'imported',
    crm_id: crmId,
    first_seen_at: T(at),
    sent_at: T(at),
  };
}

const COLUMNS = [
  'key',
  'key_kind',
  'natural_key',
  'lead_json',
  'payload_hash',
  'status',
  'outcome',
  'failure',
  'crm_id',
  'run_id',
  'downstream_key',
  'first_seen_at',
  'updated_at',
  'sent_at',
] as const;

function values(r: OldRow): unknown[] {
  const full: Record<string, unknown> = { ...r, updated_at: r.sent_at ?? r.first_seen_at };
  return COLUMNS.map((c) => full[c] ?? null);
}

const INSERT_EVENT = `INSERT INTO events (${COLUMNS.join(', ')}) VALUES (${COLUMNS.map(() => '?').join(', ')})`;
const INSERT_ATTEMPT = 'INSERT INTO attempts (key, run_id, at, outcome, detail) VALUES (?, ?, ?, ?, ?)';
const INSERT_RUN = `INSERT INTO runs (command, args_json, host, pid, started_at, heartbeat_at, ended_at, status) VALUES ('push', '{}', 'h', 1, '${T(1)}', '${T(1)}', '${T(1)}', 'done')`;

/** A SQLite ledger of schema v3 at `path` (WAL mode, as leadledger wrote it), holding run 1 and these rows. */
export function sqliteV3Ledger(path: string, rows: OldRow[], attempts: OldAttempt[] = []): void {
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  for (let v = 0; v < 3; v++) db.exec(MIGRATIONS[v] as string);
  db.pragma('user_version = 3');
  db.exec(INSERT_RUN);
  for (const r of rows) db.prepare(INSERT_EVENT).run(...values(r));
  for (const a of attempts) db.prepare(INSERT_ATTEMPT).run(a.key, a.run_id, a.at, a.outcome, a.detail);
  db.close();
}

/** A PostgreSQL ledger of schema v1 in `schema` of db (as leadledger created it), holding run 1 and these rows. */
export async function pgV1Ledger(
  db: PgDatabase,
  schema: string,
  rows: OldRow[],
  attempts: OldAttempt[] = [],
): Promise<void> {
  const c = new pg.Client({ connectionString: db.urlWithPassword });
  await c.connect();
  try {
    const n = (sql: string) => {
      let i = 0;
      return sql.replace(/\?/g, () => `$${++i}`);
    };
    await c.query('BEGIN');
    await c.query(`CREATE SCHEMA ${schema}`);
    await c.query(`SET LOCAL search_path TO ${schema}`);
    await c.query(
      'CREATE TABLE ledger_meta (id integer PRIMARY KEY CHECK (id = 1), app text NOT NULL, version integer NOT NULL)',
    );
    await c.query(`INSERT INTO ledger_meta (id, app, version) VALUES (1, 'leadledger', 1)`);
    await c.query(PG_MIGRATIONS[0] as string);
    await c.query(INSERT_RUN);
    for (const r of rows) await c.query(n(INSERT_EVENT), values(r));
    for (const a of attempts) await c.query(n(INSERT_ATTEMPT), [a.key, a.run_id, a.at, a.outcome, a.detail]);
    await c.query('COMMIT');
  } finally {
    await c.end();
  }
}
