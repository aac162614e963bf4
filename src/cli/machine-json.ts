// The --json documents as published: a schemaVersion first, camelCase field names throughout, lists where the data
// has open-ended keys (a warning's message). The schemas in schemas/ describe them; a breaking change bumps the version.
import type { RunReport } from '../report/run-report.js';

/** The version of every --json document's shape (schemas/*.schema.json); bumped on a breaking change. */
export const SCHEMA_VERSION = 1;

/** A --json document: the schema version, then the command's fields. */
export function machineJson(doc: Record<string, unknown>): string {
  return JSON.stringify({ schemaVersion: SCHEMA_VERSION, ...doc }, null, 2) + '\n';
}

/** The run report of push and replay as published: warnings as a list of {message, count}. */
export function runReportDocument(r: RunReport): Record<string, unknown> {
  const { byReason, ...warnings } = r.warnings;
  return {
    ...r,
    warnings: { ...warnings, reasons: Object.entries(byReason).map(([message, count]) => ({ message, count })) },
  };
}

/** snake_case → camelCase: `run_id` → `runId`. */
export function camelName(name: string): string {
  return name.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());
}

/** A ledger row (events, attempts) with its column names in camelCase; its values as they are. */
export function camelRow(row: object): Record<string, unknown> {
  return Object.fromEntries(Object.entries(row).map(([k, v]) => [camelName(k), v]));
}

/**
 * A recorded run as published: the counts a run records ({counts, delivery, inDoubtInLedger}) flattened into the
 * run, so that `counts` is the decision counts (not `counts.counts`) and `delivery` sits beside it.
 */
export function runDocument<T extends { counts: unknown }>(run: T): Record<string, unknown> {
  const { counts, ...rest } = run;
  if (counts && typeof counts === 'object' && !Array.isArray(counts) && 'counts' in counts) {
    const { counts: decisions, ...more } = counts as Record<string, unknown>;
    return { ...rest, counts: decisions, ...more };
  }
  return { ...rest, counts };
}
