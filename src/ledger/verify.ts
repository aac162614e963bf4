// `ledger verify`: SQLite's own integrity check, then the invariants of the ledger state machine (docs/architecture.md)
// that the schema alone does not enforce. Read-only: it reports, it never repairs.
import { EVENT_STATUSES, tombstoneHash } from './queries.js';
import type { LedgerStore } from './store.js';

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
export async function verifyLedger(store: LedgerStore): Promise<VerifyProblem[]> {
  const db = store.sql;
  const problems: VerifyProblem[] = [];
  const integrity = await store.integrity();
  if (integrity.length) {
    problems.push({
      check: 'integrity',
      message:
        store.kind === 'sqlite'
          ? 'SQLite integrity_check found damage in the file'
          : 'the ledger schema is not what leadledger wrote',
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
      ids = (await db.all<{ id: string | number }>(c.sql)).map((r) => r.id);
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
  const hasTombstones = !!(await db.get('SELECT 1 AS one FROM tombstones LIMIT 1'));
  if (hasTombstones) {
    const tombs = new Set((await db.all<{ h: string }>('SELECT key_hash AS h FROM tombstones')).map((r) => r.h));
    const back: string[] = [];
    let n = 0;
    for await (const { key } of db.iterate<{ key: string }>('SELECT key FROM events')) {
      if (tombs.has(tombstoneHash(key))) {
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
