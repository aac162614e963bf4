// `--select PATH`: application logs often wrap the webhook event, e.g.
// {"level":"info","msg":"webhook received","body":"{\"event_id\":...}"} or {"ts":...,"payload":{...}}.
// The selector picks the event out of each record; a JSON string there (a logged raw body) is parsed.

import { describeJsonError } from './json-error.js';

/** The outcome of applying a selector to one record: the event object, or why there is none. */
export type Selected = { ok: true; value: Record<string, unknown> } | { ok: false; reason: string };

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
      let v: unknown = Object.hasOwn(record, path) ? record[path] : walk(record, segments);
      if (v === undefined || v === null) return { ok: false, reason: `${prefix}: field missing` };
      if (typeof v === 'string') {
        const text = v.trim();
        if (text === '') return { ok: false, reason: `${prefix}: field is empty` };
        try {
          v = JSON.parse(text);
        } catch (err) {
          return { ok: false, reason: `${prefix}: invalid JSON: ${describeJsonError(err, text).message}` };
        }
      }
      if (typeof v !== 'object' || v === null || Array.isArray(v)) {
        return { ok: false, reason: `${prefix}: not a JSON object (found ${kindOf(v)})` };
      }
      return { ok: true, value: v as Record<string, unknown> };
    },
  };
}

function walk(record: Record<string, unknown>, segments: string[]): unknown {
  let v: unknown = record;
  for (const s of segments) {
    if (typeof v === 'string') {
      // A nested path through a JSON string ('body.data' where body is a logged string) is parsed on the way.
      try {
        v = JSON.parse(v);
      } catch {
        return undefined;
      }
    }
    if (typeof v !== 'object' || v === null || !Object.hasOwn(v, s)) return undefined;
    v = (v as Record<string, unknown>)[s];
  }
  return v;
}

/** Names a JSON value's kind for messages ('array', 'string', 'number', ...). */
export function kindOf(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  return typeof v;
}
