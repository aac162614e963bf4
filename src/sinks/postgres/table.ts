// The user's table, read from pg_catalog at start: its columns, its primary key and the unique index that keeps one
// row per email. The postgres sink fills the columns that match lead fields by name, or that the config maps, and
// refuses to start, saying what to change, when the table cannot keep one row per person or a mapped column is not
// there. Nothing here alters a table: --create-table only creates one that does not exist.
import type pg from 'pg';
import { UsageError } from '../../errors.js';
import { displayName, quoteIdent, quoteQualified, type QualifiedName } from './identifier.js';

/** One column of the table. */
export interface TableColumn {
  name: string;
  /** The type without its modifier (varchar(80) reads `character varying`): values are cast to it. */
  type: string;
  notNull: boolean;
  /** The default expression, as PostgreSQL prints it (now(), 'x'::text, nextval(...)). */
  defaultExpr?: string;
  /** Generated (stored) or GENERATED ALWAYS AS IDENTITY: never written by an INSERT. */
  readOnly: boolean;
  /** An identity column (ALWAYS or BY DEFAULT): filled by the table. */
  identity: boolean;
}

/** How the table keeps one row per email: a unique index on (email), or on lower(email). */
export type EmailKey = { kind: 'column' | 'lower'; index: string };

/** The table as read at start. */
export interface TableShape {
  oid: number;
  /** Its real schema and name (a name without schema is resolved on the search_path). */
  name: Required<QualifiedName>;
  columns: Map<string, TableColumn>;
  /** The primary key when it is one column: its value is the row's id in outcomes. */
  primaryKey?: string;
  uniqueIndexes: Array<{ name: string; columns: number[]; expr?: string; partial: boolean; deferrable: boolean }>;
  attnums: Map<number, string>;
  /** Sequences the columns' defaults draw from, and whether the user may. */
  sequences: Array<{ column: string; sequence: string; usable: boolean }>;
  canInsert: boolean;
  canUpdate: boolean;
  canSelect: boolean;
}

/** Reads the table, or undefined when there is none by that name (or it is not a table). */
export async function readTable(db: pg.ClientBase, q: QualifiedName): Promise<TableShape | undefined> {
  const rel = await db.query<{ oid: number; nspname: string; relname: string; relkind: string }>(
    `SELECT c.oid::int AS oid, n.nspname, c.relname, c.relkind::text AS relkind
       FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE c.oid = to_regclass($1)`,
    [quoteQualified(q)],
  );
  const r = rel.rows[0];
  if (!r) return undefined;
  if (r.relkind !== 'r' && r.relkind !== 'p')
    throw new UsageError(
      `${displayName({ schema: r.nspname, name: r.relname })} is not a table (${relkindName(r.relkind)}): the postgres sink writes into a table with a unique index on email`,
    );
  const cols = await db.query<{
    attnum: number;
    name: string;
    type: string;
    notnull: boolean;
    identity: string;
    generated: string;
    def: string | null;
  }>(
    `SELECT a.attnum::int AS attnum, a.attname AS name, format_type(a.atttypid, NULL) AS type, a.attnotnull AS notnull,
            a.attidentity::text AS identity, a.attgenerated::text AS generated, pg_get_expr(d.adbin, d.adrelid) AS def
       FROM pg_attribute a LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
      WHERE a.attrelid = $1 AND a.attnum > 0 AND NOT a.attisdropped
      ORDER BY a.attnum`,
    [r.oid],
  );
  const idx = await db.query<{
    name: string;
    primary: boolean;
    nkeys: number;
    keys: number[];
    expr: string | null;
    partial: boolean;
    immediate: boolean;
    valid: boolean;
  }>(
    `SELECT ic.relname AS name, i.indisprimary AS primary, i.indnkeyatts::int AS nkeys, i.indkey::int2[] AS keys,
            pg_get_expr(i.indexprs, i.indrelid) AS expr, i.indpred IS NOT NULL AS partial,
            i.indimmediate AS immediate, i.indisvalid AS valid
       FROM pg_index i JOIN pg_class ic ON ic.oid = i.indexrelid
      WHERE i.indrelid = $1 AND i.indisunique
      ORDER BY i.indisprimary DESC, ic.relname`,
    [r.oid],
  );
  // A serial column's default calls nextval(), which needs USAGE on its sequence (an identity column does not).
  const seqs = await db.query<{ column: string; sequence: string; usable: boolean }>(
    `SELECT DISTINCT a.attname AS column, d.refobjid::regclass::text AS sequence,
            has_sequence_privilege(d.refobjid, 'USAGE') AS usable
       FROM pg_attrdef ad
       JOIN pg_attribute a ON a.attrelid = ad.adrelid AND a.attnum = ad.adnum
       JOIN pg_depend d ON d.classid = 'pg_attrdef'::regclass AND d.objid = ad.oid AND d.refclassid = 'pg_class'::regclass
       JOIN pg_class s ON s.oid = d.refobjid AND s.relkind = 'S'
      WHERE ad.adrelid = $1 AND a.attidentity = '' AND a.attgenerated = ''`,
    [r.oid],
  );
  const priv = await db.query<{ ins: boolean; upd: boolean; sel: boolean }>(
    `SELECT has_any_column_privilege($1::oid, 'INSERT') AS ins, has_any_column_privilege($1::oid, 'UPDATE') AS upd,
            has_any_column_privilege($1::oid, 'SELECT') AS sel`,
    [r.oid],
  );
  const columns = new Map<string, TableColumn>();
  const attnums = new Map<number, string>();
  for (const c of cols.rows) {
    attnums.set(c.attnum, c.name);
    columns.set(c.name, {
      name: c.name,
      type: c.type,
      notNull: c.notnull,
      ...(c.def !== null && c.generated === '' ? { defaultExpr: c.def } : {}),
      readOnly: c.generated !== '' || c.identity === 'a',
      identity: c.identity !== '',
    });
  }
  const pk = idx.rows.find((i) => i.primary);
  const uniqueIndexes = idx.rows
    .filter((i) => i.valid)
    .map((i) => ({
      name: i.name,
      columns: i.keys.slice(0, i.nkeys),
      ...(i.expr !== null ? { expr: i.expr } : {}),
      partial: i.partial,
      deferrable: !i.immediate,
    }));
  return {
    oid: r.oid,
    name: { schema: r.nspname, name: r.relname },
    columns,
    ...(pk && pk.nkeys === 1 && pk.keys[0]! > 0 ? { primaryKey: attnums.get(pk.keys[0]!)! } : {}),
    uniqueIndexes,
    attnums,
    sequences: seqs.rows,
    canInsert: priv.rows[0]!.ins,
    canUpdate: priv.rows[0]!.upd,
    canSelect: priv.rows[0]!.sel,
  };
}

function relkindName(k: string): string {
  return (
    { v: 'a view', m: 'a materialized view', f: 'a foreign table', S: 'a sequence', i: 'an index' }[k] ?? `relkind ${k}`
  );
}

/**
 * The unique index that arbitrates ON CONFLICT for `emailColumn`: one on exactly that column (a primary key or a
 * UNIQUE constraint count), else one on lower(email). Partial indexes (they need their WHERE repeated) and deferrable
 * constraints (PostgreSQL does not arbitrate on them) do not count.
 */
export function findEmailKey(t: TableShape, emailColumn: string): EmailKey | undefined {
  const usable = t.uniqueIndexes.filter((i) => !i.partial && !i.deferrable && i.columns.length === 1);
  const plain = usable.find((i) => i.columns[0]! > 0 && t.attnums.get(i.columns[0]!) === emailColumn);
  if (plain) return { kind: 'column', index: plain.name };
  const q = quoteIdent(emailColumn);
  const forms = new Set([emailColumn, q].flatMap((c) => [`lower(${c})`, `lower((${c})::text)`]));
  const lower = usable.find((i) => i.columns[0] === 0 && i.expr !== undefined && forms.has(i.expr));
  return lower ? { kind: 'lower', index: lower.name } : undefined;
}

/** The lead fields the sink can fill, in snake_case as the webhook body and the config name them. */
export const LEAD_COLUMNS = [
  'email',
  'name',
  'first_name',
  'last_name',
  'phone',
  'company',
  'source',
  'created_at',
] as const;
export type LeadColumn = (typeof LEAD_COLUMNS)[number];

/** A lead field, standard or custom, and the column it fills. */
export interface PlannedColumn {
  /** A LeadColumn, or `custom:<name>` for a custom field of the config. */
  field: string;
  column: TableColumn;
}

/** What the sink writes: the columns, the email key, the id column, and what a person should know. */
export interface ColumnPlan {
  columns: PlannedColumn[];
  email: TableColumn;
  emailKey: EmailKey;
  primaryKey?: string;
  warnings: string[];
}

/**
 * Plans the columns: a field mapped by the config fills the column named there (which must exist), an unmapped
 * field fills the column of its own name when there is one. Every problem is reported at once in one UsageError.
 */
export function planColumns(
  t: TableShape,
  opts: { columns?: Record<string, string>; customFields: string[]; update: boolean },
): ColumnPlan {
  const table = displayName(t.name);
  const sqlName = quoteQualified(t.name);
  const mapped = opts.columns ?? {};
  const custom = new Set(opts.customFields);
  const problems: string[] = [];
  const warnings: string[] = [];
  for (const k of Object.keys(mapped))
    if (!(LEAD_COLUMNS as readonly string[]).includes(k) && !custom.has(k))
      problems.push(
        `sinks.postgres.columns.${k}: not a lead field (${LEAD_COLUMNS.join(', ')}) nor a custom field of fields.custom`,
      );
  const fields: Array<{ field: string; name: string }> = [
    ...LEAD_COLUMNS.map((f) => ({ field: f, name: f })),
    ...[...custom]
      .filter((c) => !(LEAD_COLUMNS as readonly string[]).includes(c))
      .map((c) => ({ field: `custom:${c}`, name: c })),
  ];
  const planned: PlannedColumn[] = [];
  const used = new Map<string, string>();
  // Mapped fields first: a column the config names is theirs, and a field of the same name as it then has none.
  const ordered = [
    ...fields.filter((f) => mapped[f.name] !== undefined),
    ...fields.filter((f) => mapped[f.name] === undefined),
  ];
  for (const { field, name } of ordered) {
    const explicit = mapped[name];
    const column = t.columns.get(explicit ?? name);
    if (!column) {
      if (explicit !== undefined)
        problems.push(
          `sinks.postgres.columns.${name} maps to column ${quoteIdent(explicit)}, which ${table} does not have`,
        );
      else if (field.startsWith('custom:'))
        warnings.push(`custom field ${name} has no column in ${table} (map one in sinks.postgres.columns): not stored`);
      continue;
    }
    const other = used.get(column.name);
    if (other !== undefined) {
      if (explicit !== undefined)
        problems.push(
          `column ${quoteIdent(column.name)} is mapped from both ${other} and ${name}: map one of them elsewhere`,
        );
      continue;
    }
    if (column.readOnly) {
      if (explicit !== undefined)
        problems.push(
          `sinks.postgres.columns.${name}: column ${quoteIdent(column.name)} is generated and cannot be written`,
        );
      continue;
    }
    if (column.identity && explicit === undefined) continue;
    used.set(column.name, name);
    planned.push({ field, column });
  }
  const email = planned.find((p) => p.field === 'email')?.column;
  let emailKey: EmailKey | undefined;
  if (!email) {
    if (mapped.email === undefined)
      problems.push(
        `${table} has no email column: add one, or map the column that holds it in sinks.postgres.columns.email`,
      );
  } else {
    emailKey = findEmailKey(t, email.name);
    if (!emailKey)
      problems.push(
        `${table} has no unique index on ${quoteIdent(email.name)}, so it cannot keep one row per person: ` +
          `ALTER TABLE ${sqlName} ADD UNIQUE (${quoteIdent(email.name)}); ` +
          `(or CREATE UNIQUE INDEX ON ${sqlName} (lower(${quoteIdent(email.name)}))). A partial or deferrable one does not count`,
      );
  }
  const filled = new Set(planned.map((p) => p.column.name));
  for (const c of t.columns.values())
    if (c.notNull && c.defaultExpr === undefined && !c.identity && !c.readOnly && !filled.has(c.name))
      problems.push(
        `column ${quoteIdent(c.name)} of ${table} is NOT NULL without a default, and no lead field fills it: give it a default, or map a field to it in sinks.postgres.columns`,
      );
  if (!t.canInsert) problems.push(`the database user may not INSERT into ${table}`);
  for (const q of t.sequences)
    if (!q.usable)
      problems.push(
        `the database user may not use sequence ${q.sequence}, which fills column ${quoteIdent(q.column)}: GRANT USAGE ON SEQUENCE ${q.sequence} TO that user`,
      );
  if (!t.canSelect) problems.push(`the database user may not SELECT from ${table} (the sink reads ids back)`);
  if (opts.update && !t.canUpdate) problems.push(`the database user may not UPDATE ${table} (--existing update)`);
  if (problems.length || !email || !emailKey)
    throw new UsageError(`the postgres sink cannot use ${table}:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
  return { columns: planned, email, emailKey, ...(t.primaryKey ? { primaryKey: t.primaryKey } : {}), warnings };
}

/**
 * The CREATE TABLE that fits what leadledger writes: an identity id, email with a unique constraint, a text column
 * per lead field and custom field (under its mapped name), created_at defaulting to the insertion time.
 */
export function createTableSql(q: QualifiedName, opts: { columns?: Record<string, string>; customFields: string[] }) {
  const col = (f: string) => quoteIdent(opts.columns?.[f] ?? f);
  const lines = [
    `  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY`,
    `  ${col('email')} text NOT NULL UNIQUE`,
    ...['name', 'first_name', 'last_name', 'phone', 'company', 'source'].map((f) => `  ${col(f)} text`),
    `  ${col('created_at')} timestamptz NOT NULL DEFAULT now()`,
    ...opts.customFields.filter((c) => !(LEAD_COLUMNS as readonly string[]).includes(c)).map((c) => `  ${col(c)} text`),
  ];
  return `CREATE TABLE ${quoteQualified(q)} (\n${lines.join(',\n')}\n);`;
}
