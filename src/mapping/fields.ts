// Finding the lead's fields in a record: configured dotted paths, or auto-detected column names
// (English and Portuguese), at the top level or inside the usual event wrappers (data, payload, ...).

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

/** A path into a record, already split on dots. */
export type FieldPath = readonly string[];

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
const WRAPPERS: FieldPath[] = [
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

/** Reads a dotted path from a record; undefined when any step is missing. */
export function getPath(obj: unknown, path: FieldPath): unknown {
  let cur: unknown = obj;
  for (const k of path) {
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = (cur as Record<string, unknown>)[k];
  }
  return cur;
}

/**
 * The keys of obj that may hold `field`, best first: those whose normalized name is one of the field's candidate
 * names, in the candidates' order (keys that normalize alike in key order). Values are not looked at: a plan must
 * hold for every record of a shape, whatever its values (a null, an object or a number where the first had a
 * string), so which candidate holds the value is decided record by record, when it is read.
 */
function candidatesIn(obj: Record<string, unknown>, field: FieldName, base: FieldPath, out: FieldPath[]): void {
  const keys = Object.keys(obj);
  const names = keys.map(normalizeHeader);
  for (const cand of CANDIDATES[field]) {
    for (let i = 0; i < keys.length; i++) if (names[i] === cand) out.push([...base, keys[i]!]);
  }
}

/**
 * Where each field may live in records of one shape, in the order they are tried: the first of them that holds a
 * string or a number (not empty) gives the field (see readField). Empty where the shape has no such key.
 */
export type FieldPlan = Record<FieldName, readonly FieldPath[]>;

/**
 * Auto-detects where each field may live in records of this one's shape (its keys, and those of its wrappers);
 * explicit paths from the config win. Depends on the shape only, never on the values.
 */
export function planFields(
  record: Record<string, unknown>,
  explicit: Partial<Record<FieldName, FieldPath>>,
): FieldPlan {
  const plan = {} as FieldPlan;
  const nested: Array<[FieldPath, Record<string, unknown>]> = [];
  for (const w of WRAPPERS) {
    const v = wrapperAt(record, w);
    if (v) nested.push([w, v]);
  }
  for (const f of FIELD_NAMES) {
    const ex = explicit[f];
    if (ex) {
      plan[f] = [ex];
      continue;
    }
    const found: FieldPath[] = [];
    candidatesIn(record, f, [], found);
    // Envelope fields (id, type) are the event's own: a nested "id" is the lead's record id in some other system,
    // so it never stands in for a missing event id. A time may come from inside the event. "data" is a date in
    // Portuguese exports and the usual wrapper of JSON events: a wrapper holds an object, never a field's value,
    // so it is passed over when it is read.
    if (!ENVELOPE.has(f) || f === 'time') for (const [base, obj] of nested) candidatesIn(obj, f, base, found);
    plan[f] = found;
  }
  return plan;
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
  return p ? p.join('.') : '';
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

function wrapperAt(record: Record<string, unknown>, w: FieldPath): Record<string, unknown> | null {
  const v = w.length === 1 ? record[w[0]!] : getPath(record, w);
  return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
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
    if (parent?.includes(w[w.length - 1]!)) check.push(i);
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
