// SQL identifiers for the postgres sink. The table name comes from a flag and column names from the user's table or
// config: none of them is ever pasted into SQL as written. A name is parsed the way PostgreSQL reads one (unquoted
// parts fold to lower case, "quoted" parts keep their case and may hold anything, "" is a quote) and every
// identifier leadledger writes into a statement is quoted.
import { UsageError } from '../../errors.js';

/** A table name as PostgreSQL reads it: an optional schema and the table. */
export interface QualifiedName {
  schema?: string;
  name: string;
}

/** An identifier quoted for SQL: always in double quotes, a quote inside doubled. NUL cannot be in one. */
export function quoteIdent(name: string): string {
  if (name.length === 0) throw new UsageError('an SQL identifier cannot be empty');
  if (name.includes('\0')) throw new UsageError('an SQL identifier cannot contain a NUL character');
  return `"${name.replace(/"/g, '""')}"`;
}

/** "schema"."name", or "name" alone. */
export function quoteQualified(q: QualifiedName): string {
  return q.schema === undefined ? quoteIdent(q.name) : `${quoteIdent(q.schema)}.${quoteIdent(q.name)}`;
}

/**
 * Parses `leads`, `crm.leads`, `"My Leads"` or `"Sales"."Leads"` as PostgreSQL would: unquoted parts are letters,
 * digits, _ and $ (not starting with a digit or $) folded to lower case; quoted parts are taken as written.
 * Anything else (three parts, a stray quote, spaces outside quotes, an empty part) is a UsageError naming `what`.
 */
export function parseQualifiedName(text: string, what = '--table'): QualifiedName {
  const parts: string[] = [];
  let i = 0;
  const bad = (why: string) => new UsageError(`${what} '${text}' is not a table name: ${why}`);
  while (i <= text.length) {
    if (text[i] === '"') {
      let out = '';
      i++;
      for (;;) {
        if (i >= text.length) throw bad('a quoted name is not closed');
        if (text[i] === '"') {
          if (text[i + 1] === '"') {
            out += '"';
            i += 2;
            continue;
          }
          i++;
          break;
        }
        out += text[i++];
      }
      if (out === '') throw bad('a quoted name is empty');
      parts.push(out);
    } else {
      const m = /^[A-Za-z_\u0080-\uffff][A-Za-z0-9_$\u0080-\uffff]*/.exec(text.slice(i));
      if (!m) throw bad(i >= text.length ? 'a part is empty' : `unexpected '${text[i]}' (quote names with "...")`);
      parts.push(m[0].toLowerCase());
      i += m[0].length;
    }
    if (i === text.length) break;
    if (text[i] !== '.') throw bad(`unexpected '${text[i]}' (quote names with "...")`);
    i++;
  }
  if (parts.length > 2) throw bad('at most schema.table');
  if (parts.some((p) => p.includes('\0'))) throw bad('a name cannot contain NUL');
  return parts.length === 2 ? { schema: parts[0]!, name: parts[1]! } : { name: parts[0]! };
}

/** A table name as messages show it: quoted only where it has to be. */
export function displayName(q: QualifiedName): string {
  const part = (s: string) => (/^[a-z_][a-z0-9_$]*$/.test(s) ? s : quoteIdent(s));
  return q.schema === undefined ? part(q.name) : `${part(q.schema)}.${part(q.name)}`;
}
