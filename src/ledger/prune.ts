// Retention for `ledger prune`: drop the stored payload of old sent events, or (with --rows) the rows themselves.
// Only sent rows are touched: pending, failed and in-doubt rows still need their payload to be settled or re-sent.
import type Database from 'better-sqlite3';

/** Payloads: clear lead_json, keep the row (still a duplicate). Rows: delete it (the event becomes eligible again). */
export type PruneMode = 'payloads' | 'rows';

// Timestamps are toISOString() text: string order is time order.
const WHERE = {
  payloads: `status = 'sent' AND updated_at < ? AND lead_json IS NOT NULL`,
  rows: `status = 'sent' AND updated_at < ?`,
} as const;

/** How many sent rows a prune would change, and the span of their last update. */
export function planPrune(
  db: Database.Database,
  cutoff: Date,
  mode: PruneMode,
): { count: number; oldest: string | null; newest: string | null } {
  const r = db
    .prepare(
      `SELECT count(*) AS count, min(updated_at) AS oldest, max(updated_at) AS newest FROM events WHERE ${WHERE[mode]}`,
    )
    .get(cutoff.toISOString()) as {
    count: number;
    oldest: string | null;
    newest: string | null;
  };
  return r;
}

/** Applies a prune in one transaction; freed bytes are zeroed (secure_delete) since payloads hold personal data. */
export function prune(
  db: Database.Database,
  cutoff: Date,
  mode: PruneMode,
): { changed: number; attemptsDeleted: number } {
  db.pragma('secure_delete = ON');
  const t = cutoff.toISOString();
  return db
    .transaction(() => {
      if (mode === 'payloads')
        return {
          changed: db.prepare(`UPDATE events SET lead_json = NULL WHERE ${WHERE.payloads}`).run(t).changes,
          attemptsDeleted: 0,
        };
      const attemptsDeleted = db
        .prepare(`DELETE FROM attempts WHERE key IN (SELECT key FROM events WHERE ${WHERE.rows})`)
        .run(t).changes;
      return { changed: db.prepare(`DELETE FROM events WHERE ${WHERE.rows}`).run(t).changes, attemptsDeleted };
    })
    .immediate();
}
