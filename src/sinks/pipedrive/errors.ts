// Pipedrive's answers read as outcomes: its error envelope ({"success":false,"error":...,"error_info":...}, the 401
// body {"error":"unauthorized access","errorCode":401,...}) in words a user can act on, and which statuses are
// worth another try.

/** The parts of Pipedrive's error envelope leadledger reads. */
export interface PipedriveErrorBody {
  error?: string;
  errorInfo?: string;
  errorCode?: number;
}

/** Parse an error envelope; undefined when the text is not one (an HTML page from the CDN, an empty body). */
export function parsePipedriveError(text: string): PipedriveErrorBody | undefined {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (body === null || typeof body !== 'object') return undefined;
  const b = body as Record<string, unknown>;
  if (b.success !== false && typeof b.error !== 'string') return undefined;
  return {
    ...(typeof b.error === 'string' ? { error: b.error } : {}),
    ...(typeof b.error_info === 'string' ? { errorInfo: b.error_info } : {}),
    ...(typeof b.errorCode === 'number' ? { errorCode: b.errorCode } : {}),
  };
}

/** "Pipedrive answered 400: Name must be given"; a body that is not the envelope is described, not quoted. */
export function describePipedriveError(status: number, text: string): string {
  const err = parsePipedriveError(text);
  if (err?.error) return `Pipedrive answered ${status}: ${err.error}`;
  const trimmed = text.trimStart();
  if (trimmed.startsWith('<'))
    return status === 403
      ? 'Pipedrive answered 403 with an HTML page: its CDN blocks the token, usually after many 429s'
      : `Pipedrive answered ${status} with an HTML page`;
  return `Pipedrive answered ${status}${trimmed ? ' with a body that is not its error envelope' : ' with no body'}`;
}

/** How an answer settles a lead: the credentials are refused, another try may succeed, or it never will. */
export type PipedriveErrorClass = 'credentials' | 'retryable' | 'permanent';

/**
 * 401, and a 403 in Pipedrive's envelope (a token without the scope), stop the run: every lead would get the same.
 * A 403 HTML page is the CDN blocking a client that kept on after 429s: retryable later. 408, 429 and 5xx are
 * retryable; any other 4xx is the lead's own (Pipedrive will answer it the same).
 */
export function classifyPipedriveStatus(status: number, text: string): PipedriveErrorClass {
  if (status === 401) return 'credentials';
  if (status === 403) return parsePipedriveError(text) ? 'credentials' : 'retryable';
  if (status === 408 || status === 429 || status >= 500) return 'retryable';
  return 'permanent';
}
