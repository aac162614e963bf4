// The emulator's HubSpot contacts v3 behaviour: an in-memory store and one handler per endpoint, each returning
// a status and a JSON body. Request shapes follow HubSpot's OpenAPI document of contacts v3 (published with
// developers.hubspot.com/docs/api-reference/latest/crm/objects/contacts/guide), where it is stricter than the
// reference page (e.g. `associations` is required on create inputs and search needs after/limit/properties/sorts).
//
// Batch create semantics chosen here (HubSpot's contacts guide: "to get partial success, give every input a unique
// objectWriteTraceId; without it, one bad input fails the whole batch"; and, as observed in HubSpot's client
// libraries' issues, "batch create with several existing emails reports only the first conflict"):
// - without a unique objectWriteTraceId on every input: any invalid input → 400 for the whole batch (first invalid
//   input's errors in the message), nothing stored; otherwise any existing email → 409 naming only the first.
// - with unique objectWriteTraceIds: invalid inputs become errors[] in a 207 and the valid ones are created.
//   Existing emails still reject the whole batch with one 409 by default (conflictMode 'batch-409', the observed
//   behaviour and the harder case for clients); conflictMode 'multi-status' reports them per input in the 207.
// - batch upsert by email is all-or-nothing (the guide's caveat: no partial upserts with idProperty=email).
// - batch read (by id or a unique property such as email) and batch update (by id) answer 200, or 207 with one
//   OBJECT_NOT_FOUND error listing the inputs not found (context.ids), the shape HubSpot is seen to send.
//
// Unique properties (HubSpot lets a portal mark up to 10 contact properties unique) give the other kind of 409: a
// create whose value of such a property another contact already has is a CONFLICT that is not the duplicate-email
// answer and names no existing id. Its wording is the emulator's own (the reference does not quote HubSpot's); it
// is reported like an email conflict: the whole batch by default, per input in a 207 under 'multi-status'.
// Uniqueness is checked on create only.
import { randomUUID } from 'node:crypto';

export interface StoredContact {
  id: string;
  properties: Record<string, string>;
  createdAt: string;
  updatedAt: string;
}

export interface HubSpotReply {
  status: number;
  body: unknown;
}

export interface HubSpotApiOptions {
  /** Custom properties the portal has, beyond the standard ones. */
  customProperties?: string[];
  /** Custom properties whose values must be unique among contacts (they need not be in customProperties too). */
  uniqueProperties?: string[];
  /** How conflicts with existing emails are reported in batch create (see the header comment). */
  conflictMode?: 'batch-409' | 'multi-status';
  /** Contacts younger than this are invisible to search (the search index is eventually consistent). */
  searchLagMs?: number;
  /** false: ignore objectWriteTraceIds and fail whole batches, like a client without them (default true). */
  multiStatus?: boolean;
  now?: () => number;
}

/** One property error, in the shape HubSpot embeds as JSON inside "Property values were not valid: [...]". */
interface PropertyError {
  isValid: false;
  message: string;
  error: string;
  name: string;
}

const STANDARD_PROPERTIES = [
  'email',
  'firstname',
  'lastname',
  'phone',
  'mobilephone',
  'company',
  'website',
  'jobtitle',
  'address',
  'city',
  'state',
  'zip',
  'country',
  'lifecyclestage',
  'hs_lead_status',
  'hubspot_owner_id',
  'industry',
  'fax',
  'message',
];
const MAX_BATCH = 100;
const EMAIL_RE = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

/** The documented error envelope; correlationId is fresh on every error like the real API. */
export function hubspotError(
  category: string,
  message: string,
  extra: Record<string, unknown> = {},
): Record<string, unknown> {
  return { status: 'error', message, correlationId: randomUUID(), category, ...extra };
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** HubSpot's message for a body that misses required attributes of a schema. */
// Every batch endpoint takes 1 to MAX_BATCH inputs, and says so in the same words.
function batchSizeError(inputs: unknown[]): HubSpotReply | undefined {
  if (inputs.length <= MAX_BATCH && inputs.length > 0) return undefined;
  return {
    status: 400,
    body: hubspotError(
      'VALIDATION_ERROR',
      `Batch input must contain between 1 and ${MAX_BATCH} inputs, got ${inputs.length}`,
    ),
  };
}

/**
 * A batch read's or update's answer: 200 when every id named a contact; else 207 with one OBJECT_NOT_FOUND error
 * listing the ids that did not, in the wording HubSpot is seen to use.
 */
function batchReply(results: unknown[], startedAt: string, completedAt: string, missingIds: string[]): HubSpotReply {
  const base = { status: 'COMPLETE', results, startedAt, completedAt };
  if (missingIds.length === 0) return { status: 200, body: base };
  return {
    status: 207,
    body: {
      ...base,
      numErrors: 1,
      errors: [
        {
          status: 'error',
          category: 'OBJECT_NOT_FOUND',
          message: 'Could not get some CONTACT objects, they may be deleted or not exist. Check that ids are valid.',
          context: { ids: missingIds },
          errors: [],
          links: {},
        },
      ],
    },
  };
}

function missing(schema: string, attrs: string[]): HubSpotReply {
  return {
    status: 400,
    body: hubspotError(
      'VALIDATION_ERROR',
      `Invalid input JSON on line 1, column 1: Cannot build ${schema}, some of required attributes are not set [${attrs.join(', ')}]`,
    ),
  };
}

/** In-memory contacts plus the endpoint handlers. */
export class HubSpotApi {
  private byId = new Map<string, StoredContact>();
  private byEmail = new Map<string, StoredContact>();
  private nextId = 100001;
  /** property → value → id of the contact that has it, for the unique properties. */
  private byUnique = new Map<string, Map<string, string>>();
  private readonly known: Set<string>;
  private readonly conflictMode: 'batch-409' | 'multi-status';
  private readonly searchLagMs: number;
  private readonly allowMultiStatus: boolean;
  private readonly now: () => number;

  constructor(opts: HubSpotApiOptions = {}) {
    this.known = new Set([...STANDARD_PROPERTIES, ...(opts.customProperties ?? []), ...(opts.uniqueProperties ?? [])]);
    for (const name of opts.uniqueProperties ?? []) this.byUnique.set(name, new Map());
    this.conflictMode = opts.conflictMode ?? 'batch-409';
    this.searchLagMs = opts.searchLagMs ?? 0;
    this.allowMultiStatus = opts.multiStatus ?? true;
    this.now = opts.now ?? Date.now;
  }

  /** Every stored contact, oldest first. */
  contacts(): StoredContact[] {
    return [...this.byId.values()].map((c) => ({ ...c, properties: { ...c.properties } }));
  }

  /** Drop every contact (admin reset). */
  reset(): void {
    this.byId.clear();
    this.byEmail.clear();
    for (const values of this.byUnique.values()) values.clear();
    this.nextId = 100001;
  }

  /** POST /crm/v3/objects/contacts */
  createOne(body: unknown): HubSpotReply {
    if (!isObject(body)) return missing('SimplePublicObjectInputForCreate', ['associations', 'properties']);
    const absent = ['associations', 'properties'].filter((k) => body[k] === undefined);
    if (absent.length) return missing('SimplePublicObjectInputForCreate', absent);
    if (!isObject(body.properties) || !Array.isArray(body.associations))
      return missing('SimplePublicObjectInputForCreate', ['properties']);
    const errors = this.validateProperties(body.properties);
    if (errors.length) return this.propertyErrorReply(errors);
    const props = body.properties as Record<string, string>;
    const existing = props.email ? this.byEmail.get(props.email.toLowerCase()) : undefined;
    if (existing) return this.conflictReply(existing.id);
    const taken = this.uniqueTaken(props);
    if (taken) return this.uniqueConflictReply(taken);
    return { status: 201, body: this.view(this.store(props)) };
  }

  /** POST /crm/v3/objects/contacts/batch/create */
  batchCreate(body: unknown): HubSpotReply {
    if (!isObject(body) || !Array.isArray(body.inputs))
      return missing('BatchInputSimplePublicObjectBatchInputForCreate', ['inputs']);
    const inputs = body.inputs as unknown[];
    const size = batchSizeError(inputs);
    if (size) return size;
    for (const input of inputs) {
      if (!isObject(input)) return missing('SimplePublicObjectBatchInputForCreate', ['associations', 'properties']);
      const absent = ['associations', 'properties'].filter((k) => input[k] === undefined);
      if (absent.length) return missing('SimplePublicObjectBatchInputForCreate', absent);
      if (!isObject(input.properties) || !Array.isArray(input.associations))
        return missing('SimplePublicObjectBatchInputForCreate', ['properties']);
    }
    const typed = inputs as Array<{ properties: Record<string, unknown>; objectWriteTraceId?: unknown }>;
    const traceIds = typed.map((i) =>
      typeof i.objectWriteTraceId === 'string' && i.objectWriteTraceId !== '' ? i.objectWriteTraceId : undefined,
    );
    const multiStatus =
      this.allowMultiStatus && traceIds.every((t) => t !== undefined) && new Set(traceIds).size === traceIds.length;

    type Verdict =
      | { kind: 'ok' }
      | { kind: 'invalid'; errors: PropertyError[] }
      | { kind: 'conflict'; id: string }
      | { kind: 'unique'; message: string }
      | { kind: 'dup'; email: string };
    const seen = new Set<string>();
    const seenUnique = new Set<string>();
    const verdicts: Verdict[] = typed.map((input) => {
      const errors = this.validateProperties(input.properties);
      if (errors.length) return { kind: 'invalid', errors };
      const email = typeof input.properties.email === 'string' ? input.properties.email.toLowerCase() : undefined;
      if (email) {
        const existing = this.byEmail.get(email);
        if (existing) return { kind: 'conflict', id: existing.id };
        if (seen.has(email)) return { kind: 'dup', email };
      }
      // Two inputs of one batch with one unique value: the second collides with the first.
      const taken = this.uniqueTaken(input.properties, seenUnique);
      if (taken) return { kind: 'unique', message: taken };
      if (email) seen.add(email);
      for (const name of this.byUnique.keys()) {
        const value = input.properties[name];
        if (typeof value === 'string' && value !== '') seenUnique.add(`${name}\u0000${value}`);
      }
      return { kind: 'ok' };
    });

    const firstConflict = verdicts.find((v) => v.kind === 'conflict' || v.kind === 'unique');
    if (firstConflict && (!multiStatus || this.conflictMode === 'batch-409'))
      return firstConflict.kind === 'conflict'
        ? this.conflictReply(firstConflict.id)
        : this.uniqueConflictReply(firstConflict.message);
    if (!multiStatus) {
      const invalid = verdicts.find((v) => v.kind === 'invalid');
      if (invalid) return this.propertyErrorReply(invalid.errors);
      const dup = verdicts.find((v) => v.kind === 'dup');
      if (dup)
        return {
          status: 400,
          body: hubspotError('VALIDATION_ERROR', `Duplicate emails found in batch input: [${dup.email}]`),
        };
    }

    const started = new Date(this.now()).toISOString();
    const results: unknown[] = [];
    const errors: unknown[] = [];
    typed.forEach((input, i) => {
      const v = verdicts[i] ?? { kind: 'ok' };
      const trace = traceIds[i];
      const context = trace !== undefined ? { objectWriteTraceId: [trace] } : {};
      if (v.kind === 'ok') {
        results.push({
          ...this.view(this.store(input.properties as Record<string, string>)),
          ...(trace !== undefined ? { objectWriteTraceId: trace } : {}),
        });
      } else if (v.kind === 'invalid') {
        errors.push({
          status: 'error',
          category: 'VALIDATION_ERROR',
          message: `Property values were not valid: ${JSON.stringify(v.errors)}`,
          context,
          errors: [],
          links: {},
        });
      } else if (v.kind === 'unique') {
        errors.push({
          status: 'error',
          category: 'CONFLICT',
          message: v.message,
          context,
          errors: [],
          links: {},
        });
      } else if (v.kind === 'conflict') {
        errors.push({
          status: 'error',
          category: 'CONFLICT',
          message: `Contact already exists. Existing ID: ${v.id}`,
          context: { ...context, id: [v.id] },
          errors: [],
          links: {},
        });
      } else {
        errors.push({
          status: 'error',
          category: 'VALIDATION_ERROR',
          message: `Duplicate emails found in batch input: [${v.email}]`,
          context,
          errors: [],
          links: {},
        });
      }
    });
    const completed = new Date(this.now()).toISOString();
    const base = {
      status: 'COMPLETE',
      results,
      startedAt: started,
      completedAt: completed,
      requestedAt: started,
      links: {},
    };
    if (errors.length === 0) return { status: 201, body: base };
    return { status: 207, body: { ...base, numErrors: errors.length, errors } };
  }

  /** POST /crm/v3/objects/contacts/batch/upsert (idProperty=email or contact ids); all-or-nothing. */
  batchUpsert(body: unknown): HubSpotReply {
    if (!isObject(body) || !Array.isArray(body.inputs))
      return missing('BatchInputSimplePublicObjectBatchInputUpsert', ['inputs']);
    const inputs = body.inputs as unknown[];
    const size = batchSizeError(inputs);
    if (size) return size;
    const ids = new Set<string>();
    for (const input of inputs) {
      if (!isObject(input)) return missing('SimplePublicObjectBatchInputUpsert', ['id', 'properties']);
      const absent = ['id', 'properties'].filter((k) => input[k] === undefined);
      if (absent.length) return missing('SimplePublicObjectBatchInputUpsert', absent);
      if (typeof input.id !== 'string' || !isObject(input.properties))
        return missing('SimplePublicObjectBatchInputUpsert', ['id']);
      if (input.idProperty !== undefined && input.idProperty !== 'email' && input.idProperty !== 'hs_object_id') {
        return {
          status: 400,
          body: hubspotError('VALIDATION_ERROR', `Property ${String(input.idProperty)} is not a unique identifier`),
        };
      }
      const key = input.idProperty === 'email' ? input.id.toLowerCase() : input.id;
      if (ids.has(key))
        return {
          status: 400,
          body: hubspotError('VALIDATION_ERROR', `Duplicate IDs found in batch input: [${input.id}]`),
        };
      ids.add(key);
      const errors = this.validateProperties(
        input.idProperty === 'email' ? { ...input.properties, email: input.id } : input.properties,
      );
      if (errors.length) return this.propertyErrorReply(errors);
      if (input.idProperty !== 'email' && !this.byId.has(input.id)) {
        return { status: 404, body: hubspotError('OBJECT_NOT_FOUND', `Object not found. objectId: ${input.id}`) };
      }
    }
    const started = new Date(this.now()).toISOString();
    const results = (
      inputs as Array<{
        id: string;
        idProperty?: string;
        properties: Record<string, string>;
        objectWriteTraceId?: string;
      }>
    ).map((input) => {
      const trace = input.objectWriteTraceId !== undefined ? { objectWriteTraceId: input.objectWriteTraceId } : {};
      const existing =
        input.idProperty === 'email' ? this.byEmail.get(input.id.toLowerCase()) : this.byId.get(input.id);
      if (existing) {
        const { email: _ignored, ...rest } = input.properties;
        Object.assign(existing.properties, rest);
        existing.updatedAt = new Date(this.now()).toISOString();
        return { ...this.view(existing), new: false, ...trace };
      }
      return { ...this.view(this.store({ ...input.properties, email: input.id })), new: true, ...trace };
    });
    return {
      status: 200,
      body: {
        status: 'COMPLETE',
        results,
        startedAt: started,
        completedAt: new Date(this.now()).toISOString(),
        requestedAt: started,
      },
    };
  }

  /**
   * POST /crm/v3/objects/contacts/batch/read, as HubSpot's contacts v3 OpenAPI document defines it: the body is a
   * BatchReadInputSimplePublicObjectId (required: inputs [{id}], properties, propertiesWithHistory; optional
   * idProperty, a unique property such as email, absent to read by contact id). Found contacts come back as
   * SimplePublicObjects (id, properties: the ones asked for plus hs_object_id, createdate, lastmodifieddate); when
   * some inputs are not found the answer is 207 (BatchResponseSimplePublicObjectWithErrors) with one StandardError of
   * category OBJECT_NOT_FOUND whose context.ids lists them, in the wording HubSpot is seen to use.
   */
  batchRead(body: unknown): HubSpotReply {
    const schema = 'BatchReadInputSimplePublicObjectId';
    if (!isObject(body)) return missing(schema, ['inputs', 'properties', 'propertiesWithHistory']);
    const absent = ['inputs', 'properties', 'propertiesWithHistory'].filter((k) => body[k] === undefined);
    if (absent.length) return missing(schema, absent);
    if (!Array.isArray(body.inputs) || !Array.isArray(body.properties) || !Array.isArray(body.propertiesWithHistory))
      return missing(schema, ['inputs']);
    const inputs = body.inputs as unknown[];
    const size = batchSizeError(inputs);
    if (size) return size;
    for (const input of inputs)
      if (!isObject(input) || typeof input.id !== 'string') return missing('SimplePublicObjectId', ['id']);
    const idProperty = body.idProperty;
    if (
      idProperty !== undefined &&
      idProperty !== 'email' &&
      idProperty !== 'hs_object_id' &&
      !this.byUnique.has(String(idProperty))
    )
      return {
        status: 400,
        body: hubspotError('VALIDATION_ERROR', `Property ${String(idProperty)} is not a unique identifier`),
      };
    const wanted = (body.properties as unknown[]).filter((p): p is string => typeof p === 'string');
    const started = new Date(this.now()).toISOString();
    const results: unknown[] = [];
    const missingIds: string[] = [];
    const seen = new Set<string>();
    for (const input of inputs as Array<{ id: string }>) {
      const found = this.find(input.id, idProperty as string | undefined);
      if (!found) {
        missingIds.push(input.id);
        continue;
      }
      if (seen.has(found.id)) continue;
      seen.add(found.id);
      const view = this.view(found) as { properties: Record<string, string> };
      const properties: Record<string, string> = {};
      for (const name of [...wanted, 'hs_object_id', 'createdate', 'lastmodifieddate'])
        if (view.properties[name] !== undefined) properties[name] = view.properties[name];
      results.push({ ...view, properties });
    }
    return batchReply(results, started, new Date(this.now()).toISOString(), missingIds);
  }

  /**
   * POST /crm/v3/objects/contacts/batch/update (BatchInputSimplePublicObjectBatchInput: inputs [{id, properties,
   * objectWriteTraceId?}]), by contact id: the provided values overwrite. An invalid property fails the whole batch
   * (400); ids that name no contact come back in a 207 as one OBJECT_NOT_FOUND error listing them, the others updated.
   */
  batchUpdate(body: unknown): HubSpotReply {
    if (!isObject(body) || !Array.isArray(body.inputs))
      return missing('BatchInputSimplePublicObjectBatchInput', ['inputs']);
    const inputs = body.inputs as unknown[];
    const size = batchSizeError(inputs);
    if (size) return size;
    const ids = new Set<string>();
    for (const input of inputs) {
      if (!isObject(input)) return missing('SimplePublicObjectBatchInput', ['id', 'properties']);
      const absent = ['id', 'properties'].filter((k) => input[k] === undefined);
      if (absent.length) return missing('SimplePublicObjectBatchInput', absent);
      if (typeof input.id !== 'string' || !isObject(input.properties))
        return missing('SimplePublicObjectBatchInput', ['id']);
      if (input.idProperty !== undefined && input.idProperty !== 'hs_object_id')
        return {
          status: 400,
          body: hubspotError(
            'VALIDATION_ERROR',
            `Unable to perform update by ${String(input.idProperty)}: the emulator updates by contact id`,
          ),
        };
      if (ids.has(input.id))
        return {
          status: 400,
          body: hubspotError('VALIDATION_ERROR', `Duplicate IDs found in batch input: [${input.id}]`),
        };
      ids.add(input.id);
      const errors = this.validateProperties(input.properties);
      if (errors.length) return this.propertyErrorReply(errors);
    }
    const started = new Date(this.now()).toISOString();
    const results: unknown[] = [];
    const missingIds: string[] = [];
    for (const input of inputs as Array<{
      id: string;
      properties: Record<string, string>;
      objectWriteTraceId?: string;
    }>) {
      const existing = this.byId.get(input.id);
      if (!existing) {
        missingIds.push(input.id);
        continue;
      }
      const { email, ...rest } = input.properties;
      Object.assign(existing.properties, rest);
      if (email !== undefined && email.toLowerCase() !== existing.properties.email) {
        if (existing.properties.email) this.byEmail.delete(existing.properties.email);
        existing.properties.email = email.toLowerCase();
        this.byEmail.set(existing.properties.email, existing);
      }
      existing.updatedAt = new Date(this.now()).toISOString();
      const trace = input.objectWriteTraceId !== undefined ? { objectWriteTraceId: input.objectWriteTraceId } : {};
      results.push({ ...this.view(existing), ...trace });
    }
    return batchReply(results, started, new Date(this.now()).toISOString(), missingIds);
  }

  /** Stores contacts as if the portal already had them (an admin route: no validation, no rate limit). */
  seed(contacts: Array<Record<string, string>>): number {
    let n = 0;
    for (const props of contacts) {
      if (props.email && this.byEmail.has(props.email.toLowerCase())) continue;
      this.store(props);
      n++;
    }
    return n;
  }

  /** POST /crm/v3/objects/contacts/search: EQ / IN / HAS_PROPERTY filters, OR between groups, AND within. */
  search(body: unknown): HubSpotReply {
    if (!isObject(body))
      return missing('PublicObjectSearchRequest', ['after', 'filterGroups', 'limit', 'properties', 'sorts']);
    const absent = ['after', 'filterGroups', 'limit', 'properties', 'sorts'].filter((k) => body[k] === undefined);
    if (absent.length) return missing('PublicObjectSearchRequest', absent);
    if (!Array.isArray(body.filterGroups) || body.filterGroups.length > 5) {
      return {
        status: 400,
        body: hubspotError('VALIDATION_ERROR', 'filterGroups must be an array of at most 5 groups'),
      };
    }
    const limit = Math.min(200, Math.max(1, Number(body.limit) || 10));
    const after = Number(body.after) || 0;
    const groups = body.filterGroups as Array<{
      filters?: Array<{ propertyName?: string; operator?: string; value?: string; values?: string[] }>;
    }>;
    for (const g of groups) {
      for (const f of g.filters ?? []) {
        if (!f.propertyName || !['EQ', 'IN', 'HAS_PROPERTY'].includes(f.operator ?? '')) {
          return {
            status: 400,
            body: hubspotError(
              'VALIDATION_ERROR',
              `Unsupported filter ${JSON.stringify(f)} (the emulator knows EQ, IN, HAS_PROPERTY)`,
            ),
          };
        }
      }
    }
    const visibleBefore = this.now() - this.searchLagMs;
    const norm = (name: string, v: string): string => (name === 'email' ? v.toLowerCase() : v);
    const matches = [...this.byId.values()].filter((c) => {
      if (Date.parse(c.createdAt) > visibleBefore) return false;
      if (groups.length === 0) return true;
      return groups.some((g) =>
        (g.filters ?? []).every((f) => {
          const name = f.propertyName ?? '';
          const have = c.properties[name];
          if (f.operator === 'HAS_PROPERTY') return have !== undefined && have !== '';
          if (have === undefined) return false;
          if (f.operator === 'IN') return (f.values ?? []).some((v) => norm(name, v) === norm(name, have));
          return f.value !== undefined && norm(name, f.value) === norm(name, have);
        }),
      );
    });
    const page = matches.slice(after, after + limit).map((c) => this.view(c));
    const next = after + limit < matches.length ? { paging: { next: { after: String(after + limit) } } } : {};
    return { status: 200, body: { total: matches.length, results: page, ...next } };
  }

  /**
   * GET /crm/v3/objects/contacts?limit=N[&after=C]: a page of contacts, oldest first (HubSpot's "list" endpoint,
   * CollectionResponseSimplePublicObjectWithAssociationsForwardPaging: results, and paging.next.after while more
   * remain). limit takes 1 to 100 (default 10), as HubSpot documents it.
   */
  list(query: URLSearchParams): HubSpotReply {
    const limit = Number(query.get('limit') ?? 10);
    const after = Number(query.get('after') ?? 0);
    if (!Number.isInteger(limit) || limit < 1 || limit > 100 || !Number.isInteger(after) || after < 0)
      return { status: 400, body: hubspotError('VALIDATION_ERROR', 'limit must be between 1 and 100') };
    const all = [...this.byId.values()];
    const page = all.slice(after, after + limit).map((c) => this.view(c));
    const next = after + limit < all.length ? { paging: { next: { after: String(after + limit) } } } : {};
    return { status: 200, body: { results: page, ...next } };
  }

  /** GET /crm/v3/objects/contacts/{contactId}[?idProperty=email] */
  get(idOrValue: string, idProperty: string | null): HubSpotReply {
    const found = idProperty === 'email' ? this.byEmail.get(idOrValue.toLowerCase()) : this.byId.get(idOrValue);
    if (!found) return { status: 404, body: hubspotError('OBJECT_NOT_FOUND', 'resource not found') };
    return { status: 200, body: this.view(found) };
  }

  /** A contact by id, or by the value of a unique property (email, hs_object_id, a portal's unique property). */
  private find(value: string, idProperty: string | undefined): StoredContact | undefined {
    if (idProperty === undefined || idProperty === 'hs_object_id') return this.byId.get(value);
    if (idProperty === 'email') return this.byEmail.get(value.toLowerCase());
    const id = this.byUnique.get(idProperty)?.get(value);
    return id === undefined ? undefined : this.byId.get(id);
  }

  private store(props: Record<string, string>): StoredContact {
    const now = new Date(this.now()).toISOString();
    const properties = { ...props };
    if (properties.email) properties.email = properties.email.toLowerCase();
    const contact: StoredContact = { id: String(this.nextId++), properties, createdAt: now, updatedAt: now };
    this.byId.set(contact.id, contact);
    if (properties.email) this.byEmail.set(properties.email, contact);
    for (const [name, values] of this.byUnique) {
      const value = properties[name];
      if (value !== undefined && value !== '') values.set(value, contact.id);
    }
    return contact;
  }

  /** The conflict message when a unique property's value is taken (by a contact, or earlier in the same batch). */
  private uniqueTaken(props: Record<string, unknown>, inBatch?: Set<string>): string | undefined {
    for (const [name, values] of this.byUnique) {
      const value = props[name];
      if (typeof value !== 'string' || value === '') continue;
      if (values.has(value) || inBatch?.has(`${name}\u0000${value}`))
        return `Property ${name} must have a unique value: "${value}" is already used by another contact`;
    }
    return undefined;
  }

  private view(c: StoredContact): Record<string, unknown> {
    return {
      id: c.id,
      properties: { ...c.properties, hs_object_id: c.id, createdate: c.createdAt, lastmodifieddate: c.updatedAt },
      createdAt: c.createdAt,
      updatedAt: c.updatedAt,
      archived: false,
    };
  }

  private validateProperties(props: Record<string, unknown>): PropertyError[] {
    const errors: PropertyError[] = [];
    for (const [name, value] of Object.entries(props)) {
      if (!this.known.has(name)) {
        errors.push({
          isValid: false,
          message: `Property "${name}" does not exist`,
          error: 'PROPERTY_DOESNT_EXIST',
          name,
        });
      } else if (typeof value !== 'string') {
        errors.push({
          isValid: false,
          message: `${JSON.stringify(value)} is not a valid value for ${name}`,
          error: 'INVALID_OPTION',
          name,
        });
      } else if (name === 'email' && !EMAIL_RE.test(value)) {
        errors.push({ isValid: false, message: `Email address ${value} is invalid`, error: 'INVALID_EMAIL', name });
      }
    }
    return errors;
  }

  private propertyErrorReply(errors: PropertyError[]): HubSpotReply {
    return {
      status: 400,
      body: hubspotError('VALIDATION_ERROR', `Property values were not valid: ${JSON.stringify(errors)}`, {
        errors: errors.map((e) => ({ message: e.message, code: e.error, context: { propertyName: [e.name] } })),
      }),
    };
  }

  private conflictReply(id: string): HubSpotReply {
    return { status: 409, body: hubspotError('CONFLICT', `Contact already exists. Existing ID: ${id}`) };
  }

  private uniqueConflictReply(message: string): HubSpotReply {
    return { status: 409, body: hubspotError('CONFLICT', message) };
  }
}
