// The row format of `ledger export`, both ways: the columns and CSV cells it writes, and how `ledger import`
// recognizes such a row and reads it back (only delivered events count as delivered).
import type { LedgerEventRow } from '../../ledger/types.js';
import { neutralizeCell } from '../../report/report-file.js';

/** Export columns, in order. */
export const EXPORT_COLUMNS = [
  'key',
  'key_kind',
  'status',
  'failure',
  'outcome',
  'natural_key',
  'crm_id',
  'attempts',
  'last_error',
  'source',
  'source_line',
  'event_time',
  'first_seen_at',
  'updated_at',
  'sent_at',
  'lead_json',
] as const satisfies ReadonlyArray<keyof LedgerEventRow>;

/** A CSV cell: empty for NULL, and neutralized when a spreadsheet would run it as a formula. */
export function exportCell(v: string | number | null): string {
  return v === null ? '' : neutralizeCell(String(v));
}

/** What an export row means to `ledger import`. */
export type ExportEntry =
  { ok: true; key: string; naturalKey?: string; crmId?: string } | { ok: false; reason: string };

/** True when a record has the columns of a leadledger export (so its `key` column is the event key). */
export function isExportRow(fields: Record<string, unknown>): boolean {
  return typeof fields.key === 'string' && typeof fields.key_kind === 'string' && typeof fields.status === 'string';
}

/**
 * Reads an export row back for `ledger import`: sent rows become delivered keys (with their natural key and CRM
 * id); other statuses are refused, since a failed or in-doubt event was not (or not surely) delivered.
 */
export function readExportRow(fields: Record<string, unknown>): ExportEntry {
  const cell = (name: string) => {
    const v = fields[name];
    if (v === null || v === undefined) return undefined;
    const s = unneutralize(String(v)).trim();
    return s === '' ? undefined : s;
  };
  const key = cell('key');
  if (!key) return { ok: false, reason: 'export row without a key' };
  const status = cell('status');
  if (status !== 'sent')
    return {
      ok: false,
      reason: `event ${key} is ${status ?? 'without a status'} in the export, not delivered: not imported`,
    };
  return { ok: true, key, naturalKey: cell('natural_key'), crmId: cell('crm_id') };
}

// Undoes neutralizeCell(): the export quoted cells starting with = + - @ (an E.164 phone natural key, a key like
// "-abc"); JSONL exports are not quoted and pass through.
function unneutralize(v: string): string {
  return /^'[=+\-@\t\r]/.test(v) ? v.slice(1) : v;
}
