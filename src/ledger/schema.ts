// The ledger's schema, versioned with PRAGMA user_version. Migrations only go forward; each runs in one transaction.

/**
 * PRAGMA application_id of a ledger ("LLDG"), set by migration 2: what tells a ledger from any other SQLite file.
 * Ledgers of schema v1 predate it.
 */
export const LEDGER_APPLICATION_ID = 0x4c4c4447;

/** Forward-only migrations; index + 1 is the user_version after it runs. */
export const MIGRATIONS: string[] = [
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
];

/** The schema version this build of leadledger writes. */
export const SCHEMA_VERSION = MIGRATIONS.length;

/**
 * The oldest schema version a read-only open takes as it is, unmigrated: the migrations after it change nothing that
 * leadledger reads (v2 only marks the file). A migration that adds what reads rely on raises it.
 */
export const OLDEST_READABLE_VERSION = 1;
