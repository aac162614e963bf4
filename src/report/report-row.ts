// The row a --report file holds for one decision: one shape for push and replay.
import type { Decision } from '../decide/types.js';
import type { ReportRow } from './report-file.js';

/** The per-record report row of a decision, with what its send came to (result) and the CRM's id when there is one. */
export function reportRow(d: Decision, result = '', crmId = ''): ReportRow {
  return {
    source: d.source,
    line: d.line,
    item: d.item ?? '',
    key: d.key ?? '',
    email: d.event?.lead.email ?? '',
    decision: d.kind,
    reason: d.reason,
    result,
    crm_id: crmId,
    warnings: d.event?.warnings?.join('; ') ?? '',
  };
}
