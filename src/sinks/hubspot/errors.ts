// Reading HubSpot error bodies: the documented envelope, the JSON embedded in "Property values were not valid",
// and the existing id that HubSpot's duplicate answer puts only inside its message.

export interface HubSpotErrorBody {
  category?: string;
  message?: string;
  context?: Record<string, unknown>;
}

/** Parse an error body; tolerant of non-JSON and missing fields (HubSpot says all fields are optional). */
export function parseHubSpotError(text: string): HubSpotErrorBody {
  try {
    const body = JSON.parse(text) as unknown;
    if (typeof body !== 'object' || body === null) return {};
    const b = body as Record<string, unknown>;
    return {
      ...(typeof b.category === 'string' ? { category: b.category } : {}),
      ...(typeof b.message === 'string' ? { message: b.message } : {}),
      ...(typeof b.context === 'object' && b.context !== null ? { context: b.context as Record<string, unknown> } : {}),
    };
  } catch {
    return {};
  }
}

/**
 * The existing contact's id when an error is HubSpot's duplicate answer, else undefined. That answer is category
 * CONFLICT with the message "Contact already exists. Existing ID: <digits>" (the id is only in the message), as a
 * whole-batch 409 and as one input's error in a 207. Any other 409 or CONFLICT (a unique property's value taken,
 * say) means the contact was not created: taking it for a duplicate would drop the lead silently.
 */
export function duplicateContactId(err: HubSpotErrorBody): string | undefined {
  if (err.category !== 'CONFLICT' || err.message === undefined) return undefined;
  return /^Contact already exists\. Existing ID: (\d+)$/.exec(err.message.trim())?.[1];
}

/** A readable reason: "INVALID_EMAIL: Email address x@ is invalid" for property errors, else "CATEGORY: message". */
export function describeHubSpotError(err: HubSpotErrorBody, status?: number): string {
  const message = err.message ?? '';
  const m = /^Property values were not valid:\s*(\[.*\])\s*$/s.exec(message);
  if (m?.[1]) {
    try {
      const items = JSON.parse(m[1]) as Array<{ error?: string; message?: string; name?: string }>;
      const parts = items.map((i) => `${i.error ?? 'INVALID'}: ${i.message ?? i.name ?? 'invalid value'}`);
      if (parts.length) return parts.join('; ');
    } catch {
      // Fall through to the raw message.
    }
  }
  const head = err.category ?? (status !== undefined ? `HTTP ${status}` : 'error');
  return message ? `${head}: ${message}` : head;
}

/** First string of a context entry (HubSpot context values are arrays of strings). */
export function contextValue(context: Record<string, unknown> | undefined, key: string): string | undefined {
  const v = context?.[key];
  if (Array.isArray(v) && typeof v[0] === 'string') return v[0];
  return typeof v === 'string' ? v : undefined;
}
