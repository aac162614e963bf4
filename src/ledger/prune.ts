// Retention for `ledger prune`: drop the stored payload of old sent events, or (with --rows) the rows themselves.
// Only sent rows are touched: pending, failed and in-doubt rows still need their payload to be settled or re-sent.
import { impliedAttempts } from './queries.js';
import { SqliteDb, type SqlDb } from './sql.js';

/** Payloads: clear lead_json, keep the row (still a duplicate). Rows: delete it (the event becomes eligible again). */
export type PruneMode = 'payloads' | 'rows';

// Timestamps are toISOString() text: string order is time order.
const WHERE = {
  payloads: `status = 'sent' AND updated_at < ? AND lead_json IS NOT NULL`,
  rows: `status = 'sent' AND updated_at < ?`,
} as const;

/** How many sent rows a prune would change, and the span of their last update. */
export async function planPrune(
  db: SqlDb,
  cutoff: Date,
  mode: PruneMode,
): Promise<{ count: number; oldest: string | null; newest: string | null }> {
  return (await db.get<{ count: number; oldest: string | null; newest: string | null }>(
    `SELECT count(*) AS count, min(updated_at) AS oldest, max(updated_at) AS newest FROM events WHERE ${WHERE[mode]}`,
    [cutoff.toISOString()],
  ))!;
}

/** Applies a prune in one transaction; freed bytes are zeroed (secure_delete) since payloads hold personal data. */
export async function prune(
  db: SqlDb,
  cutoff: Date,
  mode: PruneMode,
): Promise<{ changed: number; attemptsDeleted: number }> {
  if (db instanceof SqliteDb) db.raw.pragma('secure_delete = ON');
  const t = cutoff.toISOString();
  return db.transaction(async (tx) => {
    if (mode === 'payloads')
      return {
        changed: await tx.run(`UPDATE events SET lead_json = NULL WHERE ${WHERE.payloads}`, [t]),
        attemptsDeleted: 0,
      };
    const attemptsDeleted =
      (await impliedAttempts(tx, WHERE.rows, [t])) +
      (await tx.run(`DELETE FROM attempts WHERE key IN (SELECT key FROM events WHERE ${WHERE.rows})`, [t]));
    return { changed: await tx.run(`DELETE FROM events WHERE ${WHERE.rows}`, [t]), attemptsDeleted };
  });
}
