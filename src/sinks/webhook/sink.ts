// Webhook sink: one POST of JSON per lead, with Idempotency-Key, an optional HMAC-SHA256 signature of the exact
// body bytes, and the created id read from a dotted path of the answer.
import { createHmac } from 'node:crypto';
import { CredentialsError, UsageError } from '../../errors.js';
import type { HttpClient } from '../transport/http.js';
import { checkSinkUrl, redactUrl, urlSecrets } from '../transport/secure-url.js';
import type { FieldNotHeld, SendItem, Sink, SinkCapabilities, SinkCheck, SinkOutcome } from '../types.js';
import { checkAnswer } from '../transport/check.js';
import { buildDefaultBody, fieldsOutsideTemplate, renderTemplate, templateUse, type TemplateUse } from './body.js';
import { shadowedCustomFields } from '../lead-body.js';

export { buildDefaultBody, renderTemplate } from './body.js';

/** The `webhook` section of the config file. */
export interface WebhookConfig {
  /** JSON template with {{lead.email}}-style placeholders; the default body when absent. */
  template?: unknown;
  /** Static headers added to every request (no secrets here: use the signature secret env var). */
  headers?: Record<string, string>;
  /** Sign the body with HMAC-SHA256 (default true when the secret env var is set). */
  sign?: boolean;
  /** Env var holding the HMAC secret (default LEADLEDGER_WEBHOOK_SECRET). */
  secretEnv?: string;
  /** Signature header (default X-Leadledger-Signature), value `sha256=<hex>`. */
  signatureHeader?: string;
  /** Dotted path of the created id in the JSON answer (default `id`). */
  idPath?: string;
  /** The receiver drops repeated Idempotency-Keys, so in-doubt leads may simply be re-sent (default false). */
  honoursIdempotencyKey?: boolean;
  /**
   * What the receiver's 409 says: `failure` (the default: a refusal, retryable unless its body says `"retryable":
   * false`) or `duplicate` (it already holds the lead: `exists`, with the id at idPath when the body has one).
   */
  conflictMeans?: 'failure' | 'duplicate';
}

export interface WebhookSinkOptions {
  url: string;
  http: HttpClient;
  config?: WebhookConfig;
  env?: Record<string, string | undefined>;
  allowInsecure?: boolean;
}

/** Read a dotted path ("data.id") from a parsed JSON value; numbers are turned into strings. */
export function readPath(value: unknown, path: string): string | undefined {
  let cur = value;
  for (const part of path.split('.')) {
    if (typeof cur !== 'object' || cur === null) return undefined;
    cur = (cur as Record<string, unknown>)[part];
  }
  return typeof cur === 'string' || typeof cur === 'number' ? String(cur) : undefined;
}

/** HMAC-SHA256 of the exact body bytes, as `sha256=<hex>`. */
export function signBody(body: string, secret: string): string {
  return `sha256=${createHmac('sha256', secret).update(body, 'utf8').digest('hex')}`;
}

/** A generic JSON webhook destination. */
export class WebhookSink implements Sink {
  readonly name = 'webhook';
  readonly capabilities: SinkCapabilities;
  private readonly url: URL;
  private readonly http: HttpClient;
  private readonly config: WebhookConfig;
  private readonly secret: string | undefined;
  /** The fields the config's template places (undefined: the default body, which has them all). */
  private readonly use: TemplateUse | undefined;

  constructor(opts: WebhookSinkOptions) {
    this.url = checkSinkUrl(opts.url, 'webhook', opts.allowInsecure);
    this.http = opts.http;
    // A key in the URL's query string is a secret like the signing one: no echoed error body may show it.
    for (const secret of urlSecrets(this.url)) this.http.addSecret(secret);
    this.config = opts.config ?? {};
    this.use = this.config.template !== undefined ? templateUse(this.config.template) : undefined;
    const secretEnv = this.config.secretEnv ?? 'LEADLEDGER_WEBHOOK_SECRET';
    const secret = (opts.env ?? process.env)[secretEnv];
    if (this.config.sign === true && !secret) throw new UsageError(`webhook signing is on but ${secretEnv} is not set`);
    this.secret = this.config.sign === false ? undefined : secret || undefined;
    if (this.secret) this.http.addSecret(this.secret);
    for (const [name, value] of Object.entries(this.config.headers ?? {})) {
      if (/[\r\n]/.test(name) || /[\r\n]/.test(value))
        throw new UsageError(`webhook header ${name} contains a line break`);
    }
    this.capabilities = {
      maxBatch: 1,
      honoursIdempotencyKey: this.config.honoursIdempotencyKey ?? false,
    };
  }

  /**
   * doctor: a HEAD to the URL (no body, no lead): the receiver answers. A receiver that takes only POST answers 405:
   * it is there all the same (404 is a warning: some frameworks answer so, and so does a wrong path). 401/403 mean it wants credentials the config's headers or
   * signature must give.
   */
  async check(signal?: AbortSignal): Promise<SinkCheck> {
    const r = await this.http.request({
      method: 'HEAD',
      url: this.url.href,
      headers: { ...this.config.headers },
      ...(signal ? { signal } : {}),
    });
    if (r.kind === 'response' && r.response.status === 404)
      return {
        status: 'warn',
        message: `${this.describe()} answered 404 to a HEAD`,
        hint: 'a receiver that takes only POST may answer so; else the path is wrong',
      };
    return checkAnswer(this.describe(), r, {
      ok: 'the receiver is there (a HEAD sends no lead)',
      credentialsHint:
        "the receiver wants credentials: set them in the config's sinks.webhook.headers (by reference) or sign (secretEnv)",
      fine: [405, 501],
    });
  }

  /** "webhook at https://host/path" (a query string, which may hold a key, shown as ?redacted). */
  describe(): string {
    return `webhook at ${redactUrl(this.url)}`;
  }

  /** The lead's fields the body leaves out: those the template has no placeholder for, custom ones shadowed. */
  fieldsNotHeld(item: SendItem): readonly FieldNotHeld[] {
    return this.use ? fieldsOutsideTemplate(item.lead, this.use) : shadowedCustomFields(item.lead, 'the webhook body');
  }

  /** POST each lead on its own; one outcome per item. */
  async send(items: SendItem[], signal?: AbortSignal): Promise<SinkOutcome[]> {
    const out: SinkOutcome[] = [];
    for (const item of items) out.push(await this.sendOne(item, signal));
    return out;
  }

  /** Release sockets. */
  async close(): Promise<void> {
    this.http.close();
  }

  private async sendOne(item: SendItem, signal?: AbortSignal): Promise<SinkOutcome> {
    const payload =
      this.config.template !== undefined
        ? renderTemplate(this.config.template, item.downstreamKey, item.lead, item.occurredAt)
        : buildDefaultBody(item.downstreamKey, item.lead, item.occurredAt);
    const body = JSON.stringify(payload);
    const headers: Record<string, string> = {
      ...this.config.headers,
      'content-type': 'application/json',
      'idempotency-key': item.downstreamKey,
    };
    if (this.secret)
      headers[(this.config.signatureHeader ?? 'X-Leadledger-Signature').toLowerCase()] = signBody(body, this.secret);
    // A receiver that does not drop repeated keys would store a second copy of a request that timed out after
    // arriving: such a request is not retried, its lead is reported in doubt instead.
    const retryInDoubt = this.config.honoursIdempotencyKey === true;
    const result = await this.http.request({
      method: 'POST',
      url: this.url.href,
      headers,
      body,
      retryInDoubt,
      ...(signal ? { signal } : {}),
    });
    if (result.kind === 'failure') {
      const f = result.failure;
      return f.inDoubt ? { kind: 'unknown', reason: f.reason } : { kind: 'failed', permanent: false, reason: f.reason };
    }
    const res = result.response;
    if (res.status === 401 || res.status === 403) {
      const said = receiverMessage(res.text, parseJson(res.text), (t) => this.http.redact(t));
      throw new CredentialsError(
        `${this.describe()} refused the request (HTTP ${res.status})${said ? `: ${said}` : ''}`,
      );
    }
    const parsed = parseJson(res.text);
    const id = readPath(parsed, this.config.idPath ?? 'id');
    const crmId = id !== undefined ? { crmId: id } : {};
    if (res.status >= 200 && res.status < 300) return { kind: 'created', ...crmId };
    // Only a 2xx is a delivery. A 409 is a duplicate only where the config says the receiver means that by it;
    // elsewhere it is a refusal (Stripe's, on an Idempotency-Key, means "a request with this key is in progress").
    if (res.status === 409 && this.config.conflictMeans === 'duplicate') return { kind: 'exists', ...crmId };
    const retryable =
      res.status === 408 || res.status === 429 || res.status >= 500 || (res.status === 409 && !saysPermanent(parsed));
    const said = receiverMessage(res.text, parsed, (t) => this.http.redact(t));
    const reason = `HTTP ${res.status}${said ? `: ${said}` : ''}`;
    if (retryable && res.maybeCommitted)
      return { kind: 'unknown', reason: `${reason} (an earlier attempt may have been applied)` };
    return { kind: 'failed', permanent: !retryable, reason, status: res.status };
  }
}

/** The longest receiver message a failure reason quotes. */
export const MAX_RECEIVER_MESSAGE = 200;

function parseJson(text: string): unknown {
  try {
    return text ? (JSON.parse(text) as unknown) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * What a receiver said in a refusal, for the failure reason: the message of a JSON error body (`message`, `error`,
 * `error.message`, `error_description`, `detail`, `title`, `errors[0].message`), else the body's text; secrets
 * redacted before it is cut (a cut secret would still show its start), whitespace collapsed, at most
 * MAX_RECEIVER_MESSAGE characters.
 */
export function receiverMessage(text: string, parsed: unknown, redactText: (t: string) => string): string {
  const said = messageOf(parsed) ?? text;
  const clean = redactText(said).replace(/\s+/g, ' ').trim();
  return clean.length > MAX_RECEIVER_MESSAGE ? `${clean.slice(0, MAX_RECEIVER_MESSAGE - 1)}…` : clean;
}

function messageOf(v: unknown): string | undefined {
  if (typeof v !== 'object' || v === null) return undefined;
  const o = v as Record<string, unknown>;
  const errors = Array.isArray(o.errors) ? (o.errors as unknown[]) : [];
  for (const c of [o.message, o.error, messageOf(o.error), o.error_description, o.detail, o.title, errors[0]])
    if (typeof c === 'string' && c.trim() !== '') return c;
  return errors.length ? messageOf(errors[0]) : undefined;
}

/** A refusal whose body says a retry cannot help: `"retryable": false`, at the top level or under `error`. */
function saysPermanent(parsed: unknown): boolean {
  if (typeof parsed !== 'object' || parsed === null) return false;
  const o = parsed as { retryable?: unknown; error?: unknown };
  if (o.retryable === false) return true;
  return typeof o.error === 'object' && o.error !== null && (o.error as { retryable?: unknown }).retryable === false;
}
