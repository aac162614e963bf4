// Finding the lead's fields in a record: configured dotted paths, or auto-detected column names
// (English and Portuguese), at the top level or inside the usual event wrappers (data, payload, ...).
import { keyOf } from '../sources/key-of.js';
import {
  columnRole,
  EMAIL_LABEL_ORDER,
  PHONE_LABEL_ORDER,
  WHOSE_ORDER,
  type ColumnRole,
  type RoleField,
} from './column-roles.js';

/** The fields leadledger maps from a record. */
export const FIELD_NAMES = [
  'id',
  'type',
  'time',
  'email',
  'phone',
  'name',
  'firstName',
  'lastName',
  'company',
  'source',
] as const;
export type FieldName = (typeof FIELD_NAMES)[number];

/**
 * A search in a list, one step of a path: the first element (an object) whose value at `where` is one of `values`
 * (compared as text: true matches 'true'), or, without `where`, each element in turn until the rest of the path
 * holds a value. Lists of answers or columns are read by their declared type or id this way, never by position.
 */
export interface ListStep {
  readonly where?: readonly string[];
  readonly values?: readonly string[];
}

/** One step of a path: an object key, or a search in a list. */
export type PathStep = string | ListStep;

/** A path into a record: keys, and searches in lists (see parsePath). */
export type FieldPath = readonly PathStep[];

/**
 * Parses a path as written in a config or a source definition: keys joined by dots, and after a key a search in the
 * list it holds: `form_response.answers[type=email].email`, `user_column_data[column_id=EMAIL|PHONE].string_value`,
 * `email[primary=true].value`, `email[*].value` (the first element that has one). A key with dots or brackets in it
 * (a CSV header) is matched whole where the record has it (see planFields).
 */
export function parsePath(text: string): FieldPath {
  const out: PathStep[] = [];
  const re = /([^.[\]]+)|\[([^\]]*)\]/g;
  let m: RegExpExecArray | null;
  while ((m = re.exec(text)) !== null) {
    if (m[1] !== undefined) out.push(m[1]);
    else {
      const inner = m[2]!.trim();
      if (inner === '*' || inner === '') out.push({});
      else {
        const eq = inner.indexOf('=');
        if (eq < 0) out.push({});
        else
          out.push({
            where: inner.slice(0, eq).trim().split('.'),
            values: inner
              .slice(eq + 1)
              .split('|')
              .map((v) => v.trim()),
          });
      }
    }
  }
  return out;
}

/** A path as written (what messages and `leadledger presets` show). */
export function pathText(path: FieldPath): string {
  let out = '';
  for (const s of path) {
    if (typeof s === 'string') out += (out ? '.' : '') + s;
    else out += s.where ? `[${s.where.join('.')}=${s.values!.join('|')}]` : '[*]';
  }
  return out;
}

/** True when a path is keys only (what the fast paths can read). */
export function plainPath(path: FieldPath): path is readonly string[] {
  return path.every((s) => typeof s === 'string');
}

/** Column names recognized without configuration, in priority order, written as normalizeHeader() returns them. */
const CANDIDATES: Record<FieldName, string[]> = {
  id: ['eventid', 'eventuuid', 'id', 'uuid', 'messageid', 'webhookid', 'deliveryid', 'recordid', 'leadid', 'idevento'],
  type: ['eventtype', 'type', 'event', 'topic', 'tipo', 'tipoevento'],
  time: [
    'createdat',
    'occurredat',
    'timestamp',
    'eventtime',
    'ts',
    'time',
    'created',
    'createdate',
    'date',
    'datadecriacao',
    'datacriacao',
    'criadoem',
    'data',
    'datahora',
  ],
  email: ['email', 'emailaddress', 'mail', 'correio', 'enderecodeemail', 'emailprincipal'],
  phone: [
    'phone',
    'phonenumber',
    'telefone',
    'celular',
    'whatsapp',
    'mobile',
    'mobilephone',
    'mobilephonenumber',
    'tel',
    'fone',
    'telefonecelular',
    'numerodetelefone',
  ],
  name: ['name', 'fullname', 'nome', 'nomecompleto', 'contactname', 'leadname', 'displayname'],
  firstName: ['firstname', 'givenname', 'primeironome', 'prenome'],
  lastName: ['lastname', 'surname', 'familyname', 'sobrenome', 'ultimonome'],
  company: [
    'company',
    'companyname',
    'empresa',
    'organization',
    'organisation',
    'organizacao',
    'nomedaempresa',
    'account',
    'accountname',
  ],
  source: ['source', 'utmsource', 'leadsource', 'origem', 'fonte', 'canal', 'origemdolead', 'originalsource'],
};

/** Keys under which events usually carry the lead; searched after the top level for lead fields. */
const WRAPPERS: Array<readonly string[]> = [
  ['data'],
  ['data', 'object'],
  ['data', 'attributes'],
  ['data', 'lead'],
  ['data', 'contact'],
  ['payload'],
  ['body'],
  ['lead'],
  ['contact'],
  ['properties'],
  ['attributes'],
  ['fields'],
  ['person'],
  ['customer'],
  // Analytics events (Segment's Spec and its likes): the person's traits, on an identify or in a track's context.
  ['traits'],
  ['context'],
  ['context', 'traits'],
];

/** Fields that belong to the envelope: looked for at the top level (a time inside the event too). */
const ENVELOPE: ReadonlySet<FieldName> = new Set(['id', 'type', 'time']);

/** Lower-cases, strips accents and everything but letters and digits: "E-mail " → "email", "Data de criação" → "datadecriacao". */
export function normalizeHeader(name: string): string {
  return name
    .normalize('NFD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]/g, '');
}

/**
 * The value of obj's member `k`: its own, else that of a key differing from it in case only (see keyOf). A name is
 * matched case-insensitively wherever the mapper looks for one.
 */
export function member(obj: Record<string, unknown>, k: string): unknown {
  const v = obj[k];
  if (v !== undefined) return v;
  const key = keyOf(obj, k);
  return key === undefined ? undefined : obj[key];
}

/** Reads a path from a record; undefined when any step is missing (a list search: when no element matches). */
export function getPath(obj: unknown, path: FieldPath, from = 0): unknown {
  let cur: unknown = obj;
  for (let i = from; i < path.length; i++) {
    const k = path[i]!;
    if (cur === null || typeof cur !== 'object') return undefined;
    if (typeof k === 'string') {
      cur = member(cur as Record<string, unknown>, k);
      continue;
    }
    if (!Array.isArray(cur)) return undefined;
    if (k.where) {
      const found: unknown = (cur as unknown[]).find((el) => {
        const v = getPath(el, k.where!);
        return (
          (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') && k.values!.includes(String(v))
        );
      });
      if (found === undefined) return undefined;
      cur = found;
      continue;
    }
    // [*]: the first element in which the rest of the path holds a value.
    for (const el of cur) {
      const v = getPath(el, path, i + 1);
      if (scalarText(v) !== undefined) return v;
    }
    return undefined;
  }
  return cur;
}

/**
 * The keys of obj that may hold `field`, best first: those whose normalized name is one of the field's candidate
 * names, in the candidates' order (keys that normalize alike in key order). Values are not looked at: a plan must
 * hold for every record of a shape, whatever its values (a null, an object or a number where the first had a
 * string), so which candidate holds the value is decided record by record, when it is read.
 */
function candidatesIn(obj: Record<string, unknown>, field: FieldName, base: readonly string[], out: FieldPath[]): void {
  const keys = Object.keys(obj);
  const names = keys.map(normalizeHeader);
  for (const cand of CANDIDATES[field]) {
    for (let i = 0; i < keys.length; i++) if (names[i] === cand) out.push([...base, keys[i]!]);
  }
}

/**
 * The id of a record whose columns are "<object> - <field>" (a CRM's export: "Negocio - ID", "Persona - ID",
 * "Organización - Nombre"): the ID of the object the first column belongs to, the record's own (a deals export lists
 * the deal's columns first, then its person's, whose ID repeats on each of their deals).
 */
function prefixedId(record: Record<string, unknown>): string | undefined {
  let first: string | undefined;
  for (const k in record) {
    first = k;
    break;
  }
  const m = first === undefined ? null : /^(.+?)\s+-\s+\S/.exec(first);
  if (!m) return undefined;
  const want = normalizeHeader(m[1]!) + 'id';
  for (const k in record) {
    const parts = /^(.+?)\s+-\s+(.+)$/.exec(k);
    if (parts && normalizeHeader(parts[2]!) === 'id' && normalizeHeader(parts[1]!) + 'id' === want) return k;
  }
  return undefined;
}

/** The lead's fields found by what their keys' words say (column-roles.ts), rather than by a list of names. */
const ROLE_FIELDS: readonly RoleField[] = ['email', 'phone', 'name', 'firstName', 'lastName', 'company'];
const BY_ROLE: ReadonlySet<FieldName> = new Set(ROLE_FIELDS);

/**
 * The keys of obj that may hold each of the lead's fields, best first, by what their names say (columnRole): the
 * person's before nobody's, an organization's last, someone else's (an owner's, a seller's) never; then by label
 * (column-roles.ts WHOSE_ORDER and the label orders); then as the names CANDIDATES lists come; then in key order. A
 * bare "Name" / "Nome" / "Nombre" beside a last-name column and no first-name column is the first name.
 */
function roleCandidatesIn(
  obj: Record<string, unknown>,
  base: readonly string[],
  out: Record<RoleField, FieldPath[]>,
): void {
  const found: Array<{ key: string; role: ColumnRole; at: number }> = [];
  Object.keys(obj).forEach((key, at) => {
    const role = roleOf(key);
    if (role && role.whose !== 'other') found.push({ key, role, at });
  });
  const has = (f: RoleField) => found.some((c) => c.role.field === f && !c.role.bareName);
  const firstFromBare = has('lastName') && !has('firstName');
  const rank = (c: { key: string; role: ColumnRole; at: number }): number[] => {
    const labels = c.role.field === 'phone' ? PHONE_LABEL_ORDER : EMAIL_LABEL_ORDER;
    const listed = CANDIDATES[c.role.field].indexOf(normalizeHeader(c.key));
    return [WHOSE_ORDER[c.role.whose], c.role.roleOnly ? 1 : 0, labels[c.role.label], listed < 0 ? 99 : listed, c.at];
  };
  found.sort((a, b) => {
    const x = rank(a);
    const y = rank(b);
    for (let i = 0; i < x.length; i++) if (x[i] !== y[i]) return x[i]! - y[i]!;
    return 0;
  });
  const bare: FieldPath[] = [];
  for (const c of found) {
    if (c.role.bareName && firstFromBare) bare.push([...base, c.key]);
    else out[c.role.field].push([...base, c.key]);
  }
  out.firstName.push(...bare);
}

// Roles of the keys seen, by key: a plan is built once per shape, but an input's shapes share their keys.
const roles = new Map<string, ColumnRole | undefined>();
function roleOf(key: string): ColumnRole | undefined {
  if (roles.has(key)) return roles.get(key);
  const role = columnRole(key);
  if (roles.size > 10_000) roles.clear();
  roles.set(key, role);
  return role;
}

/**
 * Where each field may live in records of one shape, in the order they are tried: the first of them that holds a
 * string or a number (not empty) gives the field (see readField). Empty where the shape has no such key.
 */
export type FieldPlan = Record<FieldName, readonly FieldPath[]> & {
  /**
   * The shape holds a key that may say its record is no lead (a test flag, a status: mapping/screen.ts), at the top
   * level or in a wrapper: each record's value there is looked at, which the fast paths leave to the general one.
   */
  screened?: boolean;
  /**
   * Where a record holds objects or lists besides its wrappers (innerObjects) and lacks a phone or a name, those are
   * looked for in them, record by record (discover.ts), by the general path. Set for generic plans.
   */
  complement?: boolean;
};

/**
 * Auto-detects where each field may live in records of this one's shape (its keys, and those of its wrappers);
 * explicit paths from the config win. Depends on the shape only, never on the values.
 */
export function planFields(
  record: Record<string, unknown>,
  explicit: Partial<Record<FieldName, readonly string[]>>,
): FieldPlan {
  const plan = {} as FieldPlan;
  const nested: Array<[readonly string[], Record<string, unknown>]> = [];
  for (const w of WRAPPERS) {
    // The wrapper's keys as the record spells them (`Data`, `Properties`): the plan's paths name the record's own keys.
    const at = wrapperPath(record, w);
    if (at) nested.push([at, wrapperAt(record, at)!]);
  }
  const byRole = { email: [], phone: [], name: [], firstName: [], lastName: [], company: [] } as Record<
    RoleField,
    FieldPath[]
  >;
  roleCandidatesIn(record, [], byRole);
  for (const [base, obj] of nested) roleCandidatesIn(obj, base, byRole);
  for (const f of FIELD_NAMES) {
    const ex = explicit[f];
    if (ex) {
      plan[f] = ex.map((p) => configuredPath(record, p));
      continue;
    }
    if (BY_ROLE.has(f)) {
      plan[f] = byRole[f as RoleField];
      continue;
    }
    const found: FieldPath[] = [];
    candidatesIn(record, f, [], found);
    if (f === 'id' && found.length === 0) {
      const own = prefixedId(record);
      if (own !== undefined) found.push([own]);
    }
    // Envelope fields (id, type) are the event's own: a nested "id" is the lead's record id in some other system,
    // so it never stands in for a missing event id. A time may come from inside the event. "data" is a date in
    // Portuguese exports and the usual wrapper of JSON events: a wrapper holds an object, never a field's value,
    // so it is passed over when it is read.
    if (!ENVELOPE.has(f) || f === 'time') for (const [base, obj] of nested) candidatesIn(obj, f, base, found);
    plan[f] = found;
  }
  // A record of any shape may hold its person's phone or name deeper than the plan looks (a top-level "phone" that is
  // null, the customer's beside it): where a record holds objects and lacks them, they are looked for there.
  plan.complement = true;
  return plan;
}

/** Whether a path of keys, as written, is one of the wrappers the plans look in (data, payload, data.object, ...). */
export function isWrapperPath(path: readonly string[]): boolean {
  return WRAPPERS.some((w) => w.length === path.length && w.every((k, i) => k === path[i]));
}

/** Whether a record holds an object or a list other than its wrappers (where complement looks). */
export function innerObjects(record: Record<string, unknown>): boolean {
  const levels = wrapperObjects(record);
  const wrapped = new Set<unknown>(levels);
  return levels.some((o) => {
    for (const k in o) {
      const v = o[k];
      if (v !== null && typeof v === 'object' && !wrapped.has(v)) return true;
    }
    return false;
  });
}

/** The objects of a record that the plans look in: the record, then each wrapper it has (data, payload, ...). */
export function wrapperObjects(record: Record<string, unknown>): Array<Record<string, unknown>> {
  const out = [record];
  for (const w of WRAPPERS) {
    const v = wrapperAt(record, w);
    if (v) out.push(v);
  }
  return out;
}

/**
 * A path as configured, for records of this one's shape: a key of the record as written (a CSV header such as
 * "Lead Owner.id" or "E-mail [work]") is that one key, not a path through it; anything else is parsed.
 */
export function configuredPath(record: Record<string, unknown>, text: string): FieldPath {
  const key = keyOf(record, text);
  return key !== undefined ? [key] : parsePath(text);
}

/** The trimmed text of a field for a plan's paths: the first string or number that is not empty; else undefined. */
export function readField(record: Record<string, unknown>, paths: readonly FieldPath[]): string | undefined {
  for (const p of paths) {
    const t = scalarText(getPath(record, p));
    if (t !== undefined) return t;
  }
  return undefined;
}

/** The trimmed text of a field value: strings and numbers; undefined for anything else and for empty text. */
export function scalarText(v: unknown): string | undefined {
  const s = typeof v === 'string' ? v.trim() : typeof v === 'number' ? String(v) : undefined;
  return s ? s : undefined;
}

/** The path (dotted) of the first of a plan's paths that holds a value in this record, for messages. */
export function fieldPathOf(record: Record<string, unknown>, paths: readonly FieldPath[]): string {
  const p = paths.find((x) => scalarText(getPath(record, x)) !== undefined) ?? paths[0];
  return p ? pathText(p) : '';
}

/** A cache key for records of the same shape: their top-level keys and those of their wrappers. */
export function shapeOf(record: Record<string, unknown>): string {
  let sig = Object.keys(record).join('\u0001');
  for (const w of WRAPPERS) {
    const v = getPath(record, w);
    if (v !== null && typeof v === 'object' && !Array.isArray(v))
      sig += '\u0002' + w.join('.') + ':' + Object.keys(v).join('\u0001');
  }
  return sig;
}

/** The keys shapeOf is made of, kept for sameShape: the top level's, then each wrapper's (null when absent). */
export interface Shape {
  top: string[];
  wrappers: Array<string[] | null>;
  /**
   * The wrappers sameShape must look at: those whose path's every step is a key of the level above in this shape.
   * Once the top-level keys (and those of the wrappers checked before) are equal, any other wrapper is absent in
   * both records. WRAPPERS lists parents before their children.
   */
  check: number[];
}

function wrapperAt(record: Record<string, unknown>, w: readonly string[]): Record<string, unknown> | null {
  const v = w.length === 1 ? member(record, w[0]!) : getPath(record, w);
  return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
}

// A wrapper's path as the record spells its keys (see keyOf), when the record has one there that holds an object.
function wrapperPath(record: Record<string, unknown>, w: readonly string[]): string[] | null {
  const out: string[] = [];
  let cur: Record<string, unknown> = record;
  for (const step of w) {
    const key = keyOf(cur, step);
    if (key === undefined) return null;
    const v = cur[key];
    if (v === null || typeof v !== 'object' || Array.isArray(v)) return null;
    out.push(key);
    cur = v as Record<string, unknown>;
  }
  return out;
}

/** The shape of a record as key lists (what shapeOf joins into a string). */
export function shapeKeys(record: Record<string, unknown>): Shape {
  const top = Object.keys(record);
  const wrappers = WRAPPERS.map((w) => {
    const v = wrapperAt(record, w);
    return v && Object.keys(v);
  });
  const check: number[] = [];
  WRAPPERS.forEach((w, i) => {
    // The level above: the record, or the wrapper that is this path minus its last step.
    const parent =
      w.length === 1
        ? top
        : wrappers[WRAPPERS.findIndex((p) => p.length === w.length - 1 && p.every((k, j) => k === w[j]))];
    // Compared as keyOf finds a wrapper: a `Data` holds the data wrapper as `data` does.
    const name = w[w.length - 1]!;
    if (parent?.some((k) => k.toLowerCase() === name)) check.push(i);
  });
  return { top, wrappers, check };
}

function sameKeys(obj: Record<string, unknown>, keys: string[]): boolean {
  // Objects parsed from lines of one export share a hidden class, so Object.keys comes from V8's enum cache.
  const k = Object.keys(obj);
  if (k.length !== keys.length) return false;
  for (let i = 0; i < k.length; i++) if (k[i] !== keys[i]) return false;
  return true;
}

/** True when shapeOf(record) would equal the shapeOf of the record `shape` was taken from. */
export function sameShape(record: Record<string, unknown>, shape: Shape): boolean {
  if (!sameKeys(record, shape.top)) return false;
  for (const i of shape.check) {
    const want = shape.wrappers[i]!;
    const v = wrapperAt(record, WRAPPERS[i]!);
    if (want === null ? v !== null : v === null || !sameKeys(v, want)) return false;
  }
  return true;
}
