// Where the events a replay selects were sent: each event records its destination (the ledger's `sink` column) and
// the run that last touched it, whose record keeps the sink's name and its settings without secrets. A replay
// without --sink sends them there again.
import { UsageError } from '../errors.js';
import { likeOp, whereClause } from '../ledger/queries.js';
import type { LedgerStore } from '../ledger/store.js';
import type { EventStatus } from '../ledger/types.js';
import { findSink, sinkFlags } from '../sinks/registry.js';

/** The sink the selected events were sent to, with the flag values its last run recorded (non-secret ones only). */
export interface RecordedSink {
  name: string;
  /** The destination as the ledger's events name it ("HubSpot at https://api.hubapi.com"). */
  destination: string;
  /** Flag values by commander's attribute name (hubspotUrl, url, pgUrl, table, ...), as the run recorded them. */
  flags: Record<string, unknown>;
  runId: number;
}

/** Which rows a replay will select, for the look-up of their sink (its filters; --from's inputs are not read here). */
export interface RecordedSinkQuery {
  statuses: EventStatus[];
  keys?: string[];
  since?: Date;
  until?: Date;
  source?: string;
  run?: number;
}

/**
 * The one sink the events of the query were sent to; undefined when none records one. Several: a UsageError naming
 * each destination with its events and runs (a replay is one run to one sink: a person chooses which to replay).
 */
export async function recordedSink(ledger: LedgerStore, q: RecordedSinkQuery): Promise<RecordedSink | undefined> {
  // The claims of a run that died mid-send become in doubt when the replay starts: among the rows looked at.
  const statuses = q.statuses.includes('in_doubt') ? [...q.statuses, 'pending' as const] : q.statuses;
  const w = whereClause(
    { status: statuses, since: q.since, until: q.until, source: q.source, runId: q.run, timeField: 'first_seen' },
    likeOp(ledger.sql),
  );
  const keyed = q.keys?.length ? ` ${w.sql ? 'AND' : 'WHERE'} key IN (${q.keys.map(() => '?').join(',')})` : '';
  const groups = await ledger.sql.all<{ sink: string; n: number; run_id: number | null; runs: string }>(
    `SELECT sink, COUNT(*) AS n, MAX(run_id) AS run_id, COUNT(DISTINCT run_id) AS runs FROM events ${w.sql}${keyed} ${w.sql || keyed ? 'AND' : 'WHERE'} sink IS NOT NULL GROUP BY sink ORDER BY sink`,
    [...w.params, ...(q.keys ?? [])],
  );
  if (groups.length === 0) return undefined;
  if (groups.length > 1) {
    const lines = groups.map(
      (g) => `  ${g.sink}: ${Number(g.n)} event${Number(g.n) === 1 ? '' : 's'} (last run ${g.run_id ?? '?'})`,
    );
    throw new UsageError(
      `the events to replay were sent to ${groups.length} different destinations:\n${lines.join('\n')}\n` +
        'a replay sends to one: choose with --sink <name> (and its settings), and select its events with --run <id>, --source <file> or --keys',
    );
  }
  const g = groups[0]!;
  if (g.run_id === null) return undefined;
  const run = await ledger.sql.get<{ args_json: string }>('SELECT args_json FROM runs WHERE id = ?', [g.run_id]);
  let args: Record<string, unknown> = {};
  try {
    args = run ? (JSON.parse(run.args_json) as Record<string, unknown>) : {};
  } catch {
    // A run record that cannot be read names no sink: the replay asks for --sink.
  }
  const name = typeof args.sink === 'string' ? args.sink : undefined;
  const def = name === undefined ? undefined : findSink(name);
  if (!def) return undefined;
  // Of the run's options, the flags of this sink; a value shown redacted (a URL's query or user) is no setting.
  const flags: Record<string, unknown> = {};
  for (const f of sinkFlags())
    if (
      f.sinks.some((s) => s === def.name) &&
      typeof args[f.key] === 'string' &&
      !/redacted/.test(args[f.key] as string)
    )
      flags[f.key] = args[f.key];
  return { name: def.name, destination: g.sink, flags, runId: Number(g.run_id) };
}
