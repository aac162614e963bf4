// The tests source definitions use to skip events that are not leads to send, each with its words.
import { getPath, parsePath } from '../mapping/fields.js';
import type { Condition, Scalar } from './types.js';

const text = (v: unknown): string | undefined =>
  typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean' ? String(v) : undefined;

/** The value at `path` is one of `values` (compared as text). */
export function is(path: string, ...values: Scalar[]): Condition {
  const p = parsePath(path);
  const want = new Set(values.map(String));
  return {
    describe: `${path} is ${values.map((v) => JSON.stringify(v)).join(' or ')}`,
    test: (e) => {
      const v = text(getPath(e, p));
      return v !== undefined && want.has(v);
    },
  };
}

/** The value at `path` is there and is not one of `values`. */
export function isNot(path: string, ...values: Scalar[]): Condition {
  const p = parsePath(path);
  const want = new Set(values.map(String));
  return {
    describe: `${path} is not ${values.map((v) => JSON.stringify(v)).join(' or ')}`,
    test: (e) => {
      const v = text(getPath(e, p));
      return v !== undefined && !want.has(v);
    },
  };
}

/** The text at `path` matches the pattern. */
export function matches(path: string, pattern: RegExp): Condition {
  const p = parsePath(path);
  return {
    describe: `${path} matches ${String(pattern)}`,
    test: (e) => {
      const v = text(getPath(e, p));
      return v !== undefined && pattern.test(v);
    },
  };
}

/** Nothing (or an empty text) at `path`. */
export function missing(path: string): Condition {
  const p = parsePath(path);
  return {
    describe: `no ${path}`,
    test: (e) => {
      const v = getPath(e, p);
      return v === undefined || v === null || v === '';
    },
  };
}

/** Something at `path` (not null, not an empty text). */
export function present(path: string): Condition {
  const p = parsePath(path);
  return {
    describe: `${path} is set`,
    test: (e) => {
      const v = getPath(e, p);
      return v !== undefined && v !== null && v !== '';
    },
  };
}

/** Every one of the conditions. */
export function all(...cs: Condition[]): Condition {
  return { describe: cs.map((c) => c.describe).join(' and '), test: (e) => cs.every((c) => c.test(e)) };
}

/** A CSV row whose every value is its own column's name: a header repeated inside the export (CFDB7 writes one
 * every 1,000 rows). */
export const repeatedHeader: Condition = {
  describe: 'every value is its column name (a repeated header row)',
  test: (e) => {
    const keys = Object.keys(e);
    return keys.length > 1 && keys.every((k) => text(e[k])?.trim() === k.trim());
  },
};

/** A CSV row with text in its first column only, matching the pattern (a report's footer lines). */
export function onlyFirstColumn(pattern: RegExp): Condition {
  return {
    describe: `only the first column is set, and it matches ${String(pattern)}`,
    test: (e) => {
      const keys = Object.keys(e);
      if (keys.length === 0) return false;
      const first = text(e[keys[0]!]) ?? '';
      if (!pattern.test(first)) return false;
      for (let i = 1; i < keys.length; i++) if ((text(e[keys[i]!]) ?? '').trim() !== '') return false;
      return true;
    },
  };
}
