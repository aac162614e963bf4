// Reading Salesforce's error bodies (../shared/reference/crm-apis.md section 3): a request-level error is an array
// [{"message","errorCode","fields"}]; inside an sObject collection each result carries its own errors as
// [{"statusCode","message","fields"}]; a duplicate rule's refusal (DUPLICATES_DETECTED) may carry a duplicateResult
// whose matchResults name the records it matched.

/** One error of a Salesforce answer, under whichever key it came (errorCode or statusCode). */
export interface SalesforceError {
  code: string;
  message: string;
  fields?: string[];
  /** The ids of the records a duplicate rule matched, where the answer names them. */
  matchedIds?: string[];
}

/** The errors of a request-level answer (an array, or a token endpoint's {error, error_description}); [] if none. */
export function parseSalesforceErrors(text: string): SalesforceError[] {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return [];
  }
  if (Array.isArray(body)) return body.map(readError).filter((e): e is SalesforceError => !!e);
  const one = readError(body);
  return one ? [one] : [];
}

/** One error object, from either shape. */
export function readError(v: unknown): SalesforceError | undefined {
  if (typeof v !== 'object' || v === null) return undefined;
  const o = v as Record<string, unknown>;
  const code = o.errorCode ?? o.statusCode ?? o.error;
  if (typeof code !== 'string') return undefined;
  const message = o.message ?? o.error_description;
  const out: SalesforceError = { code, message: typeof message === 'string' ? message : '' };
  if (Array.isArray(o.fields)) out.fields = o.fields.filter((f): f is string => typeof f === 'string');
  const ids = matchedIds(o.duplicateResult);
  if (ids.length) out.matchedIds = ids;
  return out;
}

// duplicateResult.matchResults[].matchRecords[].record.Id
function matchedIds(dr: unknown): string[] {
  if (typeof dr !== 'object' || dr === null) return [];
  const results = (dr as { matchResults?: unknown }).matchResults;
  if (!Array.isArray(results)) return [];
  const ids: string[] = [];
  for (const r of results) {
    const recs = (r as { matchRecords?: unknown })?.matchRecords;
    if (!Array.isArray(recs)) continue;
    for (const m of recs) {
      const id = (m as { record?: { Id?: unknown } })?.record?.Id;
      if (typeof id === 'string') ids.push(id);
    }
  }
  return ids;
}

/** "REQUIRED_FIELD_MISSING: Required fields are missing: [LastName] (LastName)"; "HTTP 400" when the body is silent. */
export function describeSalesforceErrors(errors: SalesforceError[], status?: number): string {
  if (!errors.length) return `HTTP ${status ?? '?'}`;
  return errors
    .map((e) => `${e.code}${e.message ? `: ${e.message}` : ''}${e.fields?.length ? ` (${e.fields.join(', ')})` : ''}`)
    .join('; ');
}

/** Codes of a record's refusal that the same record will get again: a permanent failure. */
const TRANSIENT = new Set([
  'UNABLE_TO_LOCK_ROW',
  'REQUEST_RUNNING_TOO_LONG',
  'SERVER_UNAVAILABLE',
  'ALL_OR_NONE_OPERATION_ROLLED_BACK',
]);

/** Whether a record's refusal would pass on a later try (a lock, a rolled-back batch), rather than fail again. */
export function isTransient(code: string): boolean {
  return TRANSIENT.has(code);
}
