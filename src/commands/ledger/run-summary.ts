// A runs row as the ledger commands show it: parsed counts and redacted args, and a duration.
import type { RunRow } from '../../ledger/queries.js';
import { redactSecretKeys } from './redact-args.js';

/** One recorded run. */
export interface RunSummary {
  id: number;
  command: string;
  status: string;
  host: string;
  pid: number;
  startedAt: string;
  endedAt: string | null;
  /** Null while the run has not ended. */
  durationMs: number | null;
  counts: unknown;
  args: unknown;
}

/** Converts a runs row for display and JSON output. */
export function summarizeRun(r: RunRow): RunSummary {
  const duration = r.ended_at ? Date.parse(r.ended_at) - Date.parse(r.started_at) : NaN;
  return {
    id: r.id,
    command: r.command,
    status: r.status,
    host: r.host,
    pid: r.pid,
    startedAt: r.started_at,
    endedAt: r.ended_at,
    durationMs: Number.isFinite(duration) ? duration : null,
    counts: parseJson(r.counts_json),
    args: redactSecretKeys(parseJson(r.args_json)),
  };
}

// A damaged JSON column is shown as its text rather than failing the listing; `ledger verify` reports it.
function parseJson(text: string | null): unknown {
  if (text === null) return null;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
