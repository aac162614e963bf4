// Reading Zoho CRM's answers: the per-record entries of data[] ({code, details, message, status}) and the top-level
// errors ({code, message, status, details}) (../shared/reference/crm-apis.md section 5).

/** One entry of a write answer's data[], or a top-level error. */
export interface ZohoEntry {
  code?: unknown;
  message?: unknown;
  status?: unknown;
  action?: unknown;
  details?: Record<string, unknown>;
}

/** The body as JSON, or undefined. */
export function parseZoho(text: string): { data?: unknown; code?: unknown; message?: unknown } | undefined {
  try {
    const b = JSON.parse(text) as unknown;
    return typeof b === 'object' && b !== null ? b : undefined;
  } catch {
    return undefined;
  }
}

/** "DUPLICATE_DATA: duplicate data (Email)", from an entry; the status when there is none. */
export function describeZohoError(e: ZohoEntry | undefined, status?: number): string {
  if (!e || typeof e.code !== 'string') return `Zoho CRM answered ${status ?? 'an error'}`;
  const field = typeof e.details?.api_name === 'string' ? ` (${e.details.api_name})` : '';
  const text = typeof e.message === 'string' ? `: ${e.message}` : '';
  if (e.code === 'MULTIPLE_OR_MULTI_ERRORS' && Array.isArray(e.details?.errors))
    return (e.details.errors as ZohoEntry[]).map((x) => describeZohoError(x)).join('; ');
  return `${e.code}${text}${field}`;
}

/** The id of the record a DUPLICATE_DATA entry (or one inside MULTIPLE_OR_MULTI_ERRORS) names for this field. */
export function duplicateId(e: ZohoEntry, field = 'Email'): string | undefined {
  const all =
    e.code === 'MULTIPLE_OR_MULTI_ERRORS' && Array.isArray(e.details?.errors) ? (e.details.errors as ZohoEntry[]) : [e];
  for (const x of all) {
    if (x.code !== 'DUPLICATE_DATA' || x.details?.api_name !== field) continue;
    const rec = x.details.duplicate_record as { id?: unknown } | undefined;
    const id = rec?.id ?? x.details.id;
    if (typeof id === 'string' || typeof id === 'number') return String(id);
  }
  return undefined;
}
