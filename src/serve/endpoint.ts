// One endpoint of the receiver: how its requests are verified, read and mapped. A request becomes the line an
// archive keeps of it ({receivedAt, endpoint, headers, body}: a log of webhook requests, which push and replay read
// as any other log), and its events are mapped from that line as push maps the archive's, so an event has the same
// key whether it came live or from the archive.
import { createHash } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { UsageError } from '../errors.js';
import { canonicalLeadJson, downstreamKey, payloadHashOfJson } from '../mapping/keys.js';
import { createMapper, type MapOptions } from '../mapping/map-record.js';
import type { Mapped } from '../mapping/types.js';
import { resolvePreset } from '../presets/catalog.js';
import { deliveryOf, LOG_DEFS } from '../presets/logs.js';
import { Recognizer } from '../presets/recognize.js';
import type { LogDef } from '../presets/types.js';
import { formBody } from '../sources/select-path.js';
import type { RawRecord } from '../sources/types.js';
import type { InboxItem } from './inbox.js';
import {
  makeVerifier,
  secretHeaders,
  type SignatureConfig,
  type VerifyRequest,
  type VerifyResult,
} from './signatures.js';

/** An endpoint as the config (serve.endpoints.<name>) or --endpoint declares it. */
export interface EndpointConfig {
  /** A source (`leadledger presets`), `generic` (by field names), or absent: each request recognized on its own. */
  source?: string;
  signature?: SignatureConfig;
}

/** A request's body read: the JSON value or form it holds, or why it holds none. */
export type ReadBody = { ok: true; value: unknown } | { ok: false; reason: string };

/** What a request gave: the archive's line of it, and its items for the inbox. */
export interface ReadRequest {
  line: Record<string, unknown>;
  items: InboxItem[];
}

const REQUEST_LOG: LogDef = LOG_DEFS.find((d) => d.name === 'request-log')!;
// Headers never kept, whatever the scheme: credentials and what a proxy adds about the hop.
const NEVER_KEPT = /^(authorization|proxy-authorization|cookie|set-cookie)$|signature|secret|token|password|api-?key/i;

/** A configured endpoint, ready to take requests. */
export class Endpoint {
  readonly path: string;
  readonly verify: (req: VerifyRequest) => VerifyResult;
  private readonly hidden: Set<string>;
  private readonly recognizer: Recognizer | undefined;
  private readonly generic: ((rec: RawRecord) => Mapped) | undefined;
  private readonly forced: boolean;
  private seq = 0;

  constructor(
    readonly name: string,
    readonly config: EndpointConfig,
    map: MapOptions,
    private readonly namespace: string,
    env: Record<string, string | undefined>,
    onWarning?: (w: string) => void,
  ) {
    if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/.test(name))
      throw new UsageError(
        `endpoint name '${name}': use letters, digits, '.', '_' and '-' (it is the path /hooks/${name})`,
      );
    this.path = `/hooks/${name}`;
    const where = `endpoint "${name}"`;
    const sig = config.signature ?? { scheme: 'none' };
    this.verify = makeVerifier(sig, env, where, onWarning);
    this.hidden = secretHeaders(sig);
    const preset = config.source ? resolvePreset(config.source, `${where}'s "source"`) : undefined;
    if (preset && preset !== 'generic' && preset.reads === 'csv')
      throw new UsageError(`${where}: source ${preset.name} reads CSV exports; a webhook endpoint takes JSON or forms`);
    this.forced = !!preset && preset !== 'generic';
    if (preset === 'generic') this.generic = createMapper(map);
    else this.recognizer = new Recognizer({ map, format: 'json', forced: preset === undefined ? undefined : preset });
  }

  /** The headers an archive keeps and the key may come from (a delivery id): never a credential or signature. */
  keptHeaders(headers: IncomingHttpHeaders): Record<string, string> {
    const out: Record<string, string> = {};
    for (const [k, v] of Object.entries(headers)) {
      if (v === undefined || this.hidden.has(k) || NEVER_KEPT.test(k)) continue;
      out[k] = Array.isArray(v) ? v.join(', ') : v;
    }
    return out;
  }

  /**
   * Maps a verified request's body to the inbox's items, with the archive's line of it. A body that could not be read
   * (its text kept in the line) is one invalid record, with why.
   */
  read(read: ReadBody, raw: Buffer, headers: IncomingHttpHeaders, receivedAt: string): ReadRequest {
    const body = read.ok ? read.value : raw.toString('utf8');
    const line: Record<string, unknown> = {
      receivedAt,
      endpoint: this.name,
      headers: this.keptHeaders(headers),
      body,
    };
    const source = `serve:${this.name}`;
    const at = ++this.seq;
    const mapped: Mapped[] = [];
    if (!read.ok) mapped.push({ kind: 'invalid', source, line: at, reason: read.reason });
    else if (body === null || typeof body !== 'object') {
      mapped.push({ kind: 'invalid', source, line: at, reason: 'the body is not a JSON object, an array or a form' });
    } else if (this.generic || this.forced) {
      // Every record of the body, with the delivery id its headers carry (a retry has the same).
      const wrapper = deliveryOf(REQUEST_LOG, line);
      const records = Array.isArray(body) ? body : [body];
      records.forEach((r, i) => {
        if (r === null || typeof r !== 'object' || Array.isArray(r)) {
          mapped.push({ kind: 'invalid', source, line: at, item: i + 1, reason: `item ${i + 1} is not a JSON object` });
          return;
        }
        const rec: RawRecord = {
          kind: 'record',
          source,
          line: at,
          ...(records.length > 1 ? { item: i + 1 } : {}),
          fields: r as Record<string, unknown>,
          ...(wrapper ? { wrapper } : {}),
        };
        if (this.generic) mapped.push(this.generic(rec));
        else this.recognizer!.push(rec, mapped);
      });
    } else this.recognizer!.push({ kind: 'record', source, line: at, fields: line }, mapped);
    return { line, items: mapped.map((m) => this.item(m, line)) };
  }

  private item(m: Mapped, line: Record<string, unknown>): InboxItem {
    if (m.kind === 'event') {
      const leadJson = m.leadJson ?? canonicalLeadJson(m.lead);
      return {
        kind: 'event',
        event: {
          key: m.key,
          keyKind: m.keyKind,
          payloadHash: m.payloadHash || payloadHashOfJson(leadJson),
          naturalKey: m.naturalKey,
          downstreamKey: m.downstreamKey ?? downstreamKey(this.namespace, m.key),
          leadJson,
          source: m.source,
          line: m.line,
          eventTime: m.occurredAt,
        },
      };
    }
    // A record that is no lead is still recorded, once: by its key where it has one, else by its body.
    const key =
      m.key ??
      `serve:${createHash('sha256')
        .update(`${this.name}|${m.item ?? 1}|${JSON.stringify(line.body)}`)
        .digest('hex')
        .slice(0, 40)}`;
    const field = m.kind === 'invalid' && m.field ? `${m.field}: ` : '';
    return { kind: m.kind, key, reason: field + m.reason, source: m.source, line: m.line };
  }
}

/** A request body as JSON or a form, by its content type (or, without one, by what it looks like). */
export function readBody(raw: Buffer, contentType: string | undefined): ReadBody {
  const text = raw.toString('utf8');
  const type = (contentType ?? '').split(';')[0]!.trim().toLowerCase();
  // A JSON body sent as a form (curl -d, some senders' defaults) is read as the JSON it is.
  const json = /^\s*[[{]/.test(text);
  if (type === 'application/x-www-form-urlencoded' && !json) {
    const f = formBody(text);
    return f ? { ok: true, value: f.value } : { ok: false, reason: 'the form body cannot be read' };
  }
  if (json || type === '' || type === 'application/json' || type.endsWith('+json') || type === 'text/plain') {
    try {
      return { ok: true, value: JSON.parse(text) as unknown };
    } catch (e) {
      if (type === '') {
        const f = formBody(text);
        if (f) return { ok: true, value: f.value };
      }
      return { ok: false, reason: `the body is not JSON: ${(e as Error).message}` };
    }
  }
  return { ok: false, reason: `content type ${type} is not JSON or a form` };
}
