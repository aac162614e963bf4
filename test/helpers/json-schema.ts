// A validator of the JSON Schema subset the schemas in schemas/ use (type, properties, required,
// additionalProperties, items, enum, const, anyOf, oneOf, $ref to #/$defs): enough to check real output against them
// without a dependency. A keyword outside the subset is an error, so that a schema cannot say more than is checked.

/** A JSON Schema (the subset). */
export type Schema = boolean | { [keyword: string]: unknown };

const ANNOTATIONS = new Set(['$schema', '$id', '$defs', 'title', 'description']);
const KEYWORDS = new Set([
  'type',
  'properties',
  'required',
  'additionalProperties',
  'items',
  'enum',
  'const',
  'anyOf',
  'oneOf',
  '$ref',
]);

/** The ways `value` breaks `schema` (empty when it holds), each with its JSON path. */
export function validate(schema: Schema, value: unknown, root: Schema = schema, path = '$'): string[] {
  if (schema === true) return [];
  if (schema === false) return [`${path}: not allowed`];
  for (const k of Object.keys(schema))
    if (!ANNOTATIONS.has(k) && !KEYWORDS.has(k)) throw new Error(`${path}: keyword ${k} is outside the subset`);
  const errors: string[] = [];
  if (typeof schema.$ref === 'string') {
    const m = /^#\/\$defs\/(.+)$/.exec(schema.$ref);
    const defs = typeof root === 'object' ? (root.$defs as Record<string, Schema> | undefined) : undefined;
    const target = m ? defs?.[m[1]!] : undefined;
    if (target === undefined) throw new Error(`${path}: unresolved $ref ${schema.$ref}`);
    errors.push(...validate(target, value, root, path));
  }
  if (schema.type !== undefined) {
    const types = Array.isArray(schema.type) ? (schema.type as string[]) : [schema.type as string];
    if (!types.some((t) => isType(t, value)))
      return [...errors, `${path}: ${describe(value)} is not ${types.join(' or ')}`];
  }
  if ('const' in schema && !equal(schema.const, value))
    errors.push(`${path}: ${JSON.stringify(value)} is not ${JSON.stringify(schema.const)}`);
  if (Array.isArray(schema.enum) && !schema.enum.some((e) => equal(e, value)))
    errors.push(`${path}: ${JSON.stringify(value)} is not one of ${JSON.stringify(schema.enum)}`);
  if (
    Array.isArray(schema.anyOf) &&
    !(schema.anyOf as Schema[]).some((s) => validate(s, value, root, path).length === 0)
  )
    errors.push(`${path}: matches none of anyOf`);
  if (Array.isArray(schema.oneOf)) {
    const n = (schema.oneOf as Schema[]).filter((s) => validate(s, value, root, path).length === 0).length;
    if (n !== 1) errors.push(`${path}: matches ${n} of oneOf, not exactly one`);
  }
  if (isType('object', value)) {
    const o = value as Record<string, unknown>;
    const props = (schema.properties ?? {}) as Record<string, Schema>;
    for (const k of (schema.required ?? []) as string[]) if (!(k in o)) errors.push(`${path}: ${k} is missing`);
    for (const [k, v] of Object.entries(o)) {
      const p = `${path}.${k}`;
      if (k in props) errors.push(...validate(props[k]!, v, root, p));
      else if (schema.additionalProperties !== undefined)
        errors.push(...validate(schema.additionalProperties as Schema, v, root, p));
    }
  }
  if (Array.isArray(value) && schema.items !== undefined)
    value.forEach((v, i) => errors.push(...validate(schema.items as Schema, v, root, `${path}[${i}]`)));
  return errors;
}

function isType(t: string, v: unknown): boolean {
  switch (t) {
    case 'null':
      return v === null;
    case 'array':
      return Array.isArray(v);
    case 'object':
      return typeof v === 'object' && v !== null && !Array.isArray(v);
    case 'integer':
      return Number.isInteger(v);
    case 'number':
      return typeof v === 'number';
    default:
      return typeof v === t;
  }
}

function describe(v: unknown): string {
  return v === null ? 'null' : Array.isArray(v) ? 'an array' : typeof v;
}

function equal(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}
