// The ledger's schema, versioned with PRAGMA user_version. Migrations only go forward; each runs in one transaction.
import type Database from 'better-sqlite3';
import { upgradeEmailsSqlite } from './email-keys.js';

/**
 * PRAGMA application_id of a ledger ("LLDG"), set by migration 2: what tells a ledger from any other SQLite file.
 * Ledgers of schema v1 predate it.
 */
export const LEDGER_APPLICATION_ID = 0x4c4c4447;

/** A step of the schema: SQL, or what SQL alone cannot do, on the connection (in the step's transaction). */
export type Migration = string | ((db: Database.Database) => void);

/** Forward-only migrations; index + 1 is the user_version after it runs. */
export const MIGRATIONS: Migration[] = [
  // v1: the ledger's tables (the columns of events are described here; v3 rebuilt it, with the same columns).
  `
  CREATE TABLE runs (
    id          INTEGER PRIMARY KEY,
    command     TEXT NOT NULL,
    args_json   TEXT NOT NULL,          -- the run's options, secrets never included
    host        TEXT NOT NULL,
    pid         INTEGER NOT NULL,
    started_at  TEXT NOT NULL,
    heartbeat_at TEXT NOT NULL,
    ended_at    TEXT,
    status      TEXT NOT NULL,          -- running | done | failed | interrupted | crashed
    counts_json TEXT
  );
  CREATE TABLE events (
    key            TEXT PRIMARY KEY,     -- the event id, or c:<sha256> content key
    key_kind       TEXT NOT NULL,        -- id | content | imported
    payload_hash   TEXT,                 -- sha256 prefix of the canonical normalized lead
    natural_key    TEXT,                 -- normalized email (else E.164 phone): the person
    status         TEXT NOT NULL,        -- pending | sent | failed | in_doubt
    failure        TEXT,                 -- permanent | retryable, for failed rows
    outcome        TEXT,                 -- created | updated | exists | recovered | imported, for sent rows
    crm_id         TEXT,
    attempts       INTEGER NOT NULL DEFAULT 0,
    last_error     TEXT,
    sink           TEXT,                 -- the destination it was claimed for (name and target, no secrets)
    downstream_key TEXT,                 -- the Idempotency-Key sent; the same on every re-send
    lead_json      TEXT,                 -- the normalized lead, kept for replay (pruned by retention)
    source         TEXT,                 -- input file it came from
    source_line    INTEGER,
    event_time     TEXT,
    run_id         INTEGER,              -- owner of the claim / last run that touched it
    first_seen_at  TEXT NOT NULL,
    updated_at     TEXT NOT NULL,
    sent_at        TEXT
  ) WITHOUT ROWID;
  CREATE INDEX events_natural ON events(natural_key) WHERE natural_key IS NOT NULL;
  CREATE INDEX events_status ON events(status) WHERE status <> 'sent';
  CREATE TABLE attempts (
    id       INTEGER PRIMARY KEY,
    key      TEXT NOT NULL,
    run_id   INTEGER,
    at       TEXT NOT NULL,
    outcome  TEXT NOT NULL,              -- created | updated | exists | failed | unknown | recovered | released
    detail   TEXT
  );
  CREATE INDEX attempts_key ON attempts(key);
  CREATE TABLE tombstones (
    key_hash TEXT PRIMARY KEY           -- sha256 of an erased event key: still a duplicate, no trace of the person
  ) WITHOUT ROWID;
  `,
  // v2 changes no table: it marks the file as a ledger, so that a ledger can be told from another database.
  `PRAGMA application_id = ${LEDGER_APPLICATION_ID};`,
  // v3: events becomes a rowid table, its key a unique index. Stored in key order (WITHOUT ROWID), rows of random
  // keys (the content keys of an export without event ids, UUIDs) landed all over the table: each batch's claim and
  // its settle changed about one page of the table per event, and every commit appends each page it changed to the
  // WAL. In rowid order, a batch's rows share a few pages at the end of the table, and only the small entries of
  // the key index are spread (replaying a million claims and settles of content keys: 85 → 41 s). The columns
  // stay as they were: the rowid is hidden, so `SELECT *` and every column list read v1 and v2 ledgers alike.
  `
  CREATE TABLE events_v3 (
    key            TEXT NOT NULL,        -- the event id, or c:<sha256> content key (unique: events_key)
    key_kind       TEXT NOT NULL,
    payload_hash   TEXT,
    natural_key    TEXT,
    status         TEXT NOT NULL,
    failure        TEXT,
    outcome        TEXT,
    crm_id         TEXT,
    attempts       INTEGER NOT NULL DEFAULT 0,
    last_error     TEXT,
    sink           TEXT,
    downstream_key TEXT,
    lead_json      TEXT,
    source         TEXT,
    source_line    INTEGER,
    event_time     TEXT,
    run_id         INTEGER,
    first_seen_at  TEXT NOT NULL,
    updated_at     TEXT NOT NULL,
    sent_at        TEXT
  );
  INSERT INTO events_v3 SELECT * FROM events ORDER BY first_seen_at, key;
  DROP TABLE events;
  ALTER TABLE events_v3 RENAME TO events;
  CREATE UNIQUE INDEX events_key ON events(key);
  CREATE INDEX events_natural ON events(natural_key) WHERE natural_key IS NOT NULL;
  CREATE INDEX events_status ON events(status) WHERE status <> 'sent';
  `,
  // v4: every email in its one canonical form (email.ts: NFC local part, punycode domain), and the keys, leads and
  // payload hashes derived from it with it; two forms of one person become one (email-keys.ts). No table changes.
  (db) => {
    upgradeEmailsSqlite(db);
  },
];

/** The first schema version whose events table is a rowid table (walked in rowid order). */
export const ROWID_EVENTS_VERSION = 3;

/** The first schema version whose emails are all in canonical form (see migration 4). */
export const EMAIL_KEYS_VERSION = 4;

/** The schema version this build of leadledger writes. */
export const SCHEMA_VERSION = MIGRATIONS.length;

/**
 * The oldest schema version a read-only open takes as it is, unmigrated: the migrations after it change nothing that
 * leadledger reads (v2 only marks the file; v3 and v4 keep every column). A migration that adds what reads rely on
 * raises it. (Read as it is, a ledger before v4 holds the emails it held as they were written then.)
 */
export const OLDEST_READABLE_VERSION = 1;
