// `ledger verify`: SQLite's own integrity check, then the invariants of the ledger state machine (ARCHITECTURE.md)
// that the schema alone does not enforce. Read-only: it reports, it never repairs.
import type Database from 'better-sqlite3';
import { EVENT_STATUSES, tombstoneHash } from './queries.js';

/** One broken invariant, with up to a few example keys or ids. */
export interface VerifyProblem {
  check: string;
  message: string;
  count: number;
  examples: string[];
}

const EXAMPLES = 5;
const KEY_KINDS = ['id', 'content', 'imported'];
const FAILURES = ['permanent', 'retryable'];
const SENT_OUTCOMES = ['created', 'updated', 'exists', 'recovered', 'imported'];
const RUN_STATUSES = ['running', 'done', 'failed', 'interrupted', 'crashed'];

const inList = (values: readonly string[]) => values.map((v) => `'${v}'`).join(',');

/** Checks the database file and the ledger invariants; an empty list means the ledger is sound. */
export function verifyLedger(db: Database.Database): VerifyProblem[] {
  const problems: VerifyProblem[] = [];
  let integrity: string[];
  try {
    integrity = (db.pragma('integrity_check') as Array<{ integrity_check: string }>).map((r) => r.integrity_check);
  } catch (e) {
    // A badly damaged file can stop the check itself ("database disk image is malformed").
    integrity = [(e as Error).message];
  }
  if (!(integrity.length === 1 && integrity[0] === 'ok')) {
    problems.push({
      check: 'integrity',
      message: 'SQLite integrity_check found damage in the file',
      count: integrity.length,
      examples: integrity.slice(0, EXAMPLES),
    });
    // On a damaged file the queries below may fail or mislead; the damage is the finding.
    return problems;
  }

  // Each check selects the offending rows' identifiers; the message says why they break the state machine.
  const checks: Array<{ check: string; message: string; sql: string }> = [
    {
      check: 'status',
      message: `events with a status outside ${EVENT_STATUSES.join('|')}`,
      sql: `SELECT key AS id FROM events WHERE status NOT IN (${inList(EVENT_STATUSES)})`,
    },
    {
      check: 'key-kind',
      message: `events with a key kind outside ${KEY_KINDS.join('|')}`,
      sql: `SELECT key AS id FROM events WHERE key_kind NOT IN (${inList(KEY_KINDS)})`,
    },
    {
      check: 'orphan-pending',
      message:
        'pending events whose run is not running: claimed, maybe sent, never settled (the next push or replay marks them in doubt)',
      sql: `SELECT key AS id FROM events WHERE status = 'pending' AND (run_id IS NULL OR run_id NOT IN (SELECT id FROM runs WHERE status = 'running'))`,
    },
    {
      check: 'unknown-run',
      message: 'events that name a run missing from the runs table',
      sql: `SELECT key AS id FROM events WHERE run_id IS NOT NULL AND run_id NOT IN (SELECT id FROM runs)`,
    },
    {
      check: 'failed-kind',
      message: `failed events without a failure kind (${FAILURES.join('|')}): replay cannot tell whether to retry them`,
      sql: `SELECT key AS id FROM events WHERE status = 'failed' AND (failure IS NULL OR failure NOT IN (${inList(FAILURES)}))`,
    },
    {
      check: 'sent-at',
      message: 'sent events without sent_at',
      sql: `SELECT key AS id FROM events WHERE status = 'sent' AND sent_at IS NULL`,
    },
    {
      check: 'sent-outcome',
      message: `sent events without an outcome (${SENT_OUTCOMES.join('|')})`,
      sql: `SELECT key AS id FROM events WHERE status = 'sent' AND (outcome IS NULL OR outcome NOT IN (${inList(SENT_OUTCOMES)}))`,
    },
    {
      check: 'attempts',
      message: 'events with a negative attempt count',
      sql: `SELECT key AS id FROM events WHERE attempts < 0`,
    },
    {
      check: 'timestamps',
      message: 'events updated before they were first seen',
      sql: `SELECT key AS id FROM events WHERE updated_at < first_seen_at`,
    },
    {
      check: 'lead-json',
      message: 'events whose stored lead is not valid JSON: replay cannot re-send them',
      sql: `SELECT key AS id FROM events WHERE lead_json IS NOT NULL AND NOT json_valid(lead_json)`,
    },
    {
      check: 'replayable',
      message: 'failed or in-doubt events without a stored lead: replay has nothing to re-send',
      sql: `SELECT key AS id FROM events WHERE status IN ('failed','in_doubt') AND lead_json IS NULL AND key_kind <> 'imported'`,
    },
    {
      check: 'orphan-attempts',
      message: 'attempts of events no longer in the ledger (left behind by a partial delete)',
      sql: `SELECT DISTINCT key AS id FROM attempts WHERE key NOT IN (SELECT key FROM events)`,
    },
    {
      check: 'run-status',
      message: `runs with a status outside ${RUN_STATUSES.join('|')}`,
      sql: `SELECT id FROM runs WHERE status NOT IN (${inList(RUN_STATUSES)})`,
    },
    {
      check: 'run-ended',
      message: 'finished runs without an end time',
      sql: `SELECT id FROM runs WHERE status <> 'running' AND ended_at IS NULL`,
    },
    {
      check: 'run-json',
      message: 'runs whose args or counts are not valid JSON',
      sql: `SELECT id FROM runs WHERE NOT json_valid(args_json) OR (counts_json IS NOT NULL AND NOT json_valid(counts_json))`,
    },
  ];
  for (const c of checks) {
    let ids: Array<string | number>;
    try {
      ids = db.prepare(c.sql).pluck().all() as Array<string | number>;
    } catch (e) {
      problems.push({
        check: c.check,
        message: `could not be checked: ${(e as Error).message}`,
        count: 1,
        examples: [],
      });
      continue;
    }
    if (ids.length)
      problems.push({
        check: c.check,
        message: c.message,
        count: ids.length,
        examples: ids.slice(0, EXAMPLES).map(String),
      });
  }

  // An erased key back in events means an erasure was undone (or only half done): the person is in the ledger again.
  const hasTombstones = !!db.prepare('SELECT 1 FROM tombstones LIMIT 1').get();
  if (hasTombstones) {
    const isTomb = db.prepare('SELECT 1 FROM tombstones WHERE key_hash = ?').pluck();
    const back: string[] = [];
    let n = 0;
    for (const key of db.prepare('SELECT key FROM events').pluck().iterate() as Iterable<string>) {
      if (isTomb.get(tombstoneHash(key))) {
        n++;
        if (back.length < EXAMPLES) back.push(key);
      }
    }
    if (n)
      problems.push({
        check: 'tombstoned-present',
        message: 'events whose key was erased (tombstoned) but whose row is back in the ledger',
        count: n,
        examples: back,
      });
  }
  return problems;
}
