// `--select PATH`: application logs often wrap the webhook event, e.g.
// {"level":"info","msg":"webhook received","body":"{\"event_id\":...}"} or {"ts":...,"payload":{...}}.
// The selector picks the event out of each record; a JSON string there (a logged raw body) is parsed, and so is a
// form-encoded one (`email=ana%40example.com&name=Ana+Lima`, what an HTML form posts).

import { describeJsonError } from './json-error.js';
import { keyOf } from './key-of.js';

/** The outcome of applying a selector to one record: the event object, or why there is none. */
export type Selected = { ok: true; value: Record<string, unknown>; replaced?: true } | { ok: false; reason: string };

/** A compiled `--select` path. */
export interface Selector {
  path: string;
  apply(record: Record<string, unknown>): Selected;
}

/** Compiles a dotted path ('body', 'request.body'); a key that itself contains dots is matched whole first. */
export function compileSelector(path: string): Selector {
  const segments = path.split('.');
  const prefix = `--select ${path}`;
  return {
    path,
    apply(record) {
      const whole = keyOf(record, path);
      let v: unknown = whole !== undefined ? record[whole] : walk(record, segments);
      let replaced = false;
      if (v === undefined || v === null) return { ok: false, reason: `${prefix}: field missing` };
      if (typeof v === 'string') {
        const text = v.trim();
        if (text === '') return { ok: false, reason: `${prefix}: field is empty` };
        const form = formBody(text);
        if (form) ({ value: v, replaced } = form);
        else
          try {
            v = JSON.parse(text);
          } catch (err) {
            return { ok: false, reason: `${prefix}: invalid JSON: ${describeJsonError(err, text).message}` };
          }
      }
      if (typeof v !== 'object' || v === null || Array.isArray(v)) {
        return { ok: false, reason: `${prefix}: not a JSON object (found ${kindOf(v)})` };
      }
      const value = formValues(v as Record<string, unknown>);
      return replaced ? { ok: true, value, replaced: true } : { ok: true, value };
    },
  };
}

function walk(record: Record<string, unknown>, segments: string[]): unknown {
  let v: unknown = record;
  for (const s of segments) {
    if (typeof v === 'string') {
      // A nested path through a logged string ('body.data' where body is a string) reads it on the way: as a form
      // body when it is one, else as JSON.
      const form = formBody(v.trim());
      if (form) v = form.value;
      else
        try {
          v = JSON.parse(v);
        } catch {
          return undefined;
        }
    }
    if (typeof v !== 'object' || v === null) return undefined;
    const key = keyOf(v, s);
    if (key === undefined) return undefined;
    v = (v as Record<string, unknown>)[key];
  }
  return v;
}

// name=value pairs joined by &, nothing unencoded in them (a space is + or %20, an = in a value %3D): what
// application/x-www-form-urlencoded is. Text that is not (a sentence, JSON, base64 with its = padding) is left to
// the JSON reading.
const FORM = /^[^=&\s{[][^=&\s]*=[^=&\s]*(?:&+[^=&\s]+=[^=&\s]*)*&?$/;

/**
 * A form-encoded body (application/x-www-form-urlencoded: `+` is a space, %XX are bytes of UTF-8) as an object of
 * its names and values; undefined when the text is not one. A name given twice keeps its first value. `replaced`:
 * percent-encoded bytes that are not UTF-8 were read as U+FFFD.
 */
export function formBody(text: string): { value: Record<string, string>; replaced: boolean } | undefined {
  if (!FORM.test(text)) return undefined;
  const seen = new Set<string>();
  const entries: Array<[string, string]> = [];
  for (const [k, v] of new URLSearchParams(text)) {
    if (seen.has(k)) continue;
    seen.add(k);
    entries.push([k, v]);
  }
  // Object.fromEntries defines each name as its own property: a name such as __proto__ is a field like any other.
  const value = Object.fromEntries(entries) as Record<string, string>;
  const replaced = !text.includes('\ufffd') && entries.some(([k, v]) => k.includes('\ufffd') || v.includes('\ufffd'));
  return { value, replaced };
}

/**
 * A decoded form as some frameworks log it, every value a list of one string (`{"email": ["ana@example.com"]}`:
 * Python's parse_qs, Flask's form.to_dict(flat=False)), with each value taken out of its list; any other object as
 * it is.
 */
export function formValues(obj: Record<string, unknown>): Record<string, unknown> {
  const keys = Object.keys(obj);
  if (keys.length === 0) return obj;
  for (const k of keys) {
    const v = obj[k];
    if (!Array.isArray(v) || v.length !== 1 || typeof v[0] !== 'string') return obj;
  }
  return Object.fromEntries(keys.map((k) => [k, (obj[k] as string[])[0]]));
}

/** Names a JSON value's kind for messages ('array', 'string', 'number', ...). */
export function kindOf(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  return typeof v;
}
