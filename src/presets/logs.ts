// Logs whose lines (or entries) hold the webhook bodies their handlers logged: application logs (pino, winston,
// bunyan, any JSON log with a level and a message), platforms' log exports (CloudWatch Logs, Cloud Logging, the
// systemd journal, a container's log), a receiver's log of the requests it got (their headers and body) and a web
// server's access log whose last field is the request body. Each is recognized by its own fields (observed from
// the tools' output and documentation); the body is looked for where handlers put it, then in the line's message
// (a body after its words), then in a structured payload. A line without one is not an event, and says what it was.
import { getPath, normalizeHeader, parsePath } from '../mapping/fields.js';
import { bodyInText, messageText, plainText } from '../sources/log-text.js';
import { formBody } from '../sources/select-path.js';
import type { JsonSignature, LogDef } from './types.js';

export { LOG_LISTS } from '../sources/log-text.js';

const BODIES = ['body', 'payload', 'req.body', 'request.body', 'rawBody'];
const HEADERS = ['headers', 'req.headers', 'request.headers'];
// What a request's form is logged as by frameworks that parse it (Flask's request.form).
const REQUEST_BODIES = [...BODIES, 'form'];
const MESSAGES = ['msg', 'message', 'short_message', 'full_message'];

// A JSON log with a level and a message (or a body), or a time and a message, whatever its logger:
// python-json-logger, zap, logrus, Serilog's compact JSON, ECS, GELF, a log drain's (Vercel's, Heroku's).
const LEVELS = ['level', 'levelname', 'severity', 'lvl', 'loglevel', 'log.level', '@l', 'level_name'];
const TIMES = ['timestamp', 'time', 'ts', '@timestamp', 'datetime', 'dt', 'date', 'asctime', '@t'];

export const LOG_DEFS: readonly LogDef[] = [
  {
    name: 'bunyan',
    title: 'bunyan log',
    docs: ['https://github.com/trentm/node-bunyan#core-fields'],
    signature: { has: ['v', 'level', 'name', 'hostname', 'pid', 'time', 'msg'] },
    bodies: BODIES,
    messages: ['msg'],
    headers: HEADERS,
  },
  {
    name: 'pino',
    title: 'pino log',
    docs: ['https://getpino.io/#/docs/api?id=logger'],
    signature: { has: ['level', 'time', 'pid', 'hostname'] },
    bodies: BODIES,
    messages: ['msg'],
    headers: HEADERS,
  },
  {
    name: 'winston',
    title: 'winston log',
    docs: ['https://github.com/winstonjs/winston#formats'],
    signature: { has: ['level', 'message'] },
    bodies: BODIES,
    messages: ['message'],
    headers: HEADERS,
  },
  {
    name: 'cloudwatch-logs',
    title: 'CloudWatch Logs export',
    docs: [
      'https://docs.aws.amazon.com/cli/latest/reference/logs/filter-log-events.html',
      'https://docs.aws.amazon.com/AmazonCloudWatchLogs/latest/APIReference/API_FilteredLogEvent.html',
      'https://docs.aws.amazon.com/AmazonCloudWatchLogs/latest/logs/SubscriptionFilters.html',
      'https://docs.aws.amazon.com/lambda/latest/dg/nodejs-logging.html',
    ],
    signature: { has: ['timestamp', 'message'], anyOf: ['eventId', 'ingestionTime', 'logStreamName'] },
    bodies: [],
    messages: ['message'],
    // The id CloudWatch gives each log event: two lines that logged one event have two.
    own: ['eventId', 'ingestionTime', 'logStreamName'],
    unit: 'entry',
  },
  {
    // A subscription filter's payload (`{"messageType", "logGroup", "logEvents": [...]}`): events with an id.
    name: 'cloudwatch-subscription',
    title: 'CloudWatch Logs subscription payload',
    docs: ['https://docs.aws.amazon.com/AmazonCloudWatchLogs/latest/logs/SubscriptionFilters.html'],
    signature: { has: ['id', 'timestamp', 'message'] },
    bodies: [],
    messages: ['message'],
    own: ['id'],
    unit: 'entry',
    lists: ['logEvents'],
  },
  {
    name: 'vercel-log-drain',
    title: 'Vercel log drain',
    docs: ['https://vercel.com/docs/drains/reference/logs'],
    signature: { has: ['message', 'timestamp'], anyOf: ['deploymentId', 'projectId'] },
    bodies: [],
    messages: ['message'],
    own: ['id', 'requestId', 'deploymentId', 'projectId', 'buildId'],
    unit: 'entry',
  },
  {
    name: 'cloud-logging',
    title: 'Google Cloud Logging export',
    docs: [
      'https://cloud.google.com/logging/docs/reference/v2/rest/v2/LogEntry',
      'https://cloud.google.com/sdk/gcloud/reference/logging/read',
      'https://cloud.google.com/run/docs/logging',
    ],
    signature: { has: ['logName'], anyOf: ['insertId', 'timestamp', 'receiveTimestamp'] },
    bodies: ['jsonPayload.body', 'jsonPayload.payload'],
    messages: ['textPayload', 'jsonPayload.message'],
    payloads: ['jsonPayload'],
    own: ['insertId', 'logName', 'trace', 'spanId', 'receiveTimestamp'],
    unit: 'entry',
  },
  {
    name: 'journald',
    title: 'systemd journal',
    docs: [
      'https://systemd.io/JOURNAL_EXPORT_FORMATS/',
      'https://www.freedesktop.org/software/systemd/man/latest/systemd.journal-fields.html',
    ],
    signature: {
      has: ['MESSAGE'],
      anyOf: ['__REALTIME_TIMESTAMP', '__CURSOR', '_SYSTEMD_UNIT', 'SYSLOG_IDENTIFIER', '_PID', 'PRIORITY'],
    },
    bodies: [],
    messages: ['MESSAGE'],
    // The journal's fields: its cursor, boot, machine and the writer's (`_*`, `__*`); MESSAGE_ID, the id of a kind
    // of message (systemd's "unit started", an application's catalog entry), is the same on every such line.
    own: ['_*', 'MESSAGE_ID', 'INVOCATION_ID', 'USER_INVOCATION_ID', 'CODE_FILE', 'CODE_LINE', 'CODE_FUNC'],
    unit: 'entry',
  },
  {
    name: 'container-log',
    title: 'container log',
    docs: [
      'https://docs.docker.com/engine/logging/drivers/json-file/',
      'https://docs.fluentbit.io/manual/pipeline/filters/kubernetes',
    ],
    signature: {
      has: ['log'],
      anyOf: ['stream', 'time', 'kubernetes', 'date', '@timestamp', 'timestamp', 'container_name', 'container_id'],
    },
    bodies: [],
    messages: ['log'],
  },
  {
    name: 'access-log',
    title: 'web server access log',
    docs: [
      'https://nginx.org/en/docs/http/ngx_http_log_module.html#log_format',
      'https://nginx.org/en/docs/http/ngx_http_core_module.html#var_request_body',
      'https://httpd.apache.org/docs/current/mod/mod_log_config.html#formats',
    ],
    signature: [
      { has: ['request', 'status'], anyOf: ['time_local', 'remote_addr', 'request_body'] },
      // A JSON log_format of its own: the body, beside what the request was.
      { has: ['request_body'], anyOf: ['status', 'method', 'uri', 'request_uri', 'remote_addr'] },
    ],
    bodies: ['request_body', 'requestBody', 'req_body'],
  },
  {
    name: 'azure-monitor',
    title: 'Azure Monitor export',
    docs: [
      'https://learn.microsoft.com/en-us/azure/azure-monitor/essentials/resource-logs-schema',
      'https://learn.microsoft.com/en-us/azure/azure-functions/monitor-functions-reference',
    ],
    signature: {
      has: ['resourceId'],
      anyOf: ['properties.message', 'properties.resultDescription', 'resultDescription'],
    },
    bodies: [],
    messages: ['properties.message', 'properties.resultDescription', 'resultDescription'],
    unit: 'entry',
  },
  {
    name: 'splunk',
    title: 'Splunk export',
    docs: [
      'https://docs.splunk.com/Documentation/Splunk/latest/Data/FormateventsforHTTPEventCollector',
      'https://docs.splunk.com/Documentation/Splunk/latest/RESTREF/RESTsearch#search.2Fjobs.2Fexport',
    ],
    signature: [{ has: ['result._raw'] }, { has: ['sourcetype', 'event'] }],
    bodies: ['event'],
    messages: ['result._raw', 'event'],
    unit: 'entry',
  },
  {
    name: 'request-log',
    title: 'log of webhook requests',
    docs: [
      'https://expressjs.com/en/api.html#req.body',
      'https://flask.palletsprojects.com/en/stable/api/#flask.Request',
    ],
    signature: HEADERS.map((h) => ({ has: [h], anyOf: REQUEST_BODIES })),
    bodies: REQUEST_BODIES,
    messages: MESSAGES,
    headers: HEADERS,
  },
  {
    name: 'json-log',
    title: 'JSON log',
    docs: [
      'https://github.com/nhairs/python-json-logger',
      'https://www.elastic.co/guide/en/ecs-logging/overview/current/intro.html',
      'https://go2docs.graylog.org/current/getting_in_log_data/gelf.html',
    ],
    signature: [
      ...LEVELS.map((l) => ({ has: [l], anyOf: [...MESSAGES, ...REQUEST_BODIES] })),
      ...TIMES.map((t) => ({ has: [t], anyOf: ['msg', 'message'] })),
    ],
    bodies: REQUEST_BODIES,
    messages: MESSAGES,
    headers: HEADERS,
  },
  {
    name: 'log-entries',
    title: 'log export',
    docs: [],
    signature: { has: [], anyOf: ['message', 'msg', 'textPayload', 'MESSAGE', 'log'] },
    bodies: BODIES,
    messages: ['message', 'msg', 'textPayload', 'MESSAGE', 'log'],
    headers: HEADERS,
    unit: 'entry',
    only: 'list',
  },
  {
    // Any other line of a text log (a line of words, a logfmt line): a body after its words, or none.
    name: 'text-log',
    title: 'text log',
    docs: ['https://www.rfc-editor.org/rfc/rfc5424', 'https://brandur.org/logfmt'],
    signature: { has: [] },
    bodies: BODIES,
    messages: ['message', 'msg'],
    only: 'text',
  },
];

/** Where a record is: a line of JSON, a line of a text log, or an entry of a document's list (RawRecord.within). */
export interface LogPlace {
  text?: boolean;
  within?: string;
}

/** The log a line (or an entry) belongs to, where it is one: checked in order, the first that matches. */
export function logOf(
  record: Record<string, unknown>,
  at: LogPlace,
  matches: (r: Record<string, unknown>, s: JsonSignature) => boolean,
): LogDef | undefined {
  const l = signatureOf(record, at, matches);
  // A line holding a person's email or phone outside where bodies are is that person's record, logged as it is
  // (a contact form's `{"date", "message", "email"}`, a logger's fields merged into its line).
  return l && !personOutside(record, l) ? l : undefined;
}

/**
 * The log whose entry a record is although it holds the person itself (logOf gives none: it is read whole, by field
 * names), where that log has fields of its own (LogDef.own) that are no part of the event.
 */
export function entryOwner(
  record: Record<string, unknown>,
  at: LogPlace,
  matches: (r: Record<string, unknown>, s: JsonSignature) => boolean,
): LogDef | undefined {
  const l = signatureOf(record, at, matches);
  return l?.own && personOutside(record, l) ? l : undefined;
}

/** The record without its log's own fields (LogDef.own: `_*` is every key that starts with `_`). */
export function withoutOwn(record: Record<string, unknown>, log: LogDef): Record<string, unknown> {
  const own = log.own ?? [];
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(record))
    if (!own.some((o) => (o.endsWith('*') ? k.startsWith(o.slice(0, -1)) : k === o))) out[k] = v;
  return out;
}

function signatureOf(
  record: Record<string, unknown>,
  at: LogPlace,
  matches: (r: Record<string, unknown>, s: JsonSignature) => boolean,
): LogDef | undefined {
  for (const l of LOG_DEFS) {
    if (l.only === 'text' && !at.text) continue;
    if (l.only === 'list' && at.within === undefined) continue;
    if (l.lists && (at.within === undefined || !l.lists.includes(at.within))) continue;
    const sigs: readonly JsonSignature[] = Array.isArray(l.signature) ? l.signature : [l.signature as JsonSignature];
    if (sigs.some((s) => matches(record, s))) return l;
  }
  return undefined;
}

const PERSON_KEYS = new Set([
  'email',
  'emailaddress',
  'phone',
  'phonenumber',
  'telefone',
  'celular',
  'whatsapp',
  'mobile',
]);

function personAtTop(record: Record<string, unknown>): boolean {
  for (const k in record) if (PERSON_KEYS.has(normalizeHeader(k))) return true;
  return false;
}

const EMAIL = /^[^\s@<>"]+@[^\s@<>".]+(?:\.[^\s@<>".]+)+$/;
const PERSON_ENDS = ['email', 'emailaddress', 'phone', 'phonenumber', 'telefone', 'celular', 'whatsapp', 'mobile'];

// Whether a record holds an email (a value that is one, or a field named so) or a phone outside the places a log
// keeps its bodies, messages and headers: then it is no log line around a body, but a record of the person.
function personOutside(record: Record<string, unknown>, log: LogDef): boolean {
  const places = [...log.bodies, ...(log.messages ?? []), ...(log.payloads ?? []), ...(log.headers ?? [])];
  const skip = new Set(places.map((p) => normalizeHeader(p.split('.')[0]!)));
  const walk = (v: unknown, depth: number, top: boolean): boolean => {
    if (typeof v === 'string') return v.length < 320 && EMAIL.test(v.trim());
    if (v === null || typeof v !== 'object' || depth > 3) return false;
    if (Array.isArray(v)) return v.some((x) => walk(x, depth + 1, false));
    for (const [k, x] of Object.entries(v)) {
      const n = normalizeHeader(k);
      if (top && skip.has(n)) continue;
      const named = PERSON_ENDS.some((w) => n.endsWith(w));
      if (named && (typeof x === 'string' ? x.trim() !== '' : typeof x === 'number')) return true;
      if (walk(x, depth + 1, false)) return true;
    }
    return false;
  };
  return walk(record, 0, true);
}

/** What a log line holds: the body (an object or a list) and where; a body cut short; or nothing, and why. */
export type LogBody =
  | { kind: 'body'; body: Record<string, unknown> | unknown[]; at: string; replaced?: boolean }
  | { kind: 'broken'; at: string; reason: string }
  | { kind: 'none'; reason: string };

/** Finds the body a line of `log` holds (see the file's head); `unit` names the line in reasons. */
export function logBody(log: LogDef, line: Record<string, unknown>): LogBody {
  for (const at of log.bodies) {
    const v = getPath(line, parsePath(at));
    if (typeof v === 'string') {
      const text = v.trim();
      // A form the handler logged as it came (application/x-www-form-urlencoded), or a JSON body.
      const form = formBody(text);
      if (form) {
        if (Object.keys(form.value).length === 0) continue;
        return form.replaced
          ? { kind: 'body', body: form.value, at, replaced: true }
          : { kind: 'body', body: form.value, at };
      }
      if (!text.startsWith('{') && !text.startsWith('[')) continue;
      let body: unknown;
      try {
        body = JSON.parse(text);
      } catch (e) {
        return { kind: 'broken', at, reason: `${at}: the logged body is not whole JSON (${(e as Error).message})` };
      }
      if (nonEmpty(body)) return { kind: 'body', body, at };
      continue;
    }
    // An empty body is none: Express's body-parser gives a GET `{}`, and a list with no events yields nothing.
    if (nonEmpty(v)) return { kind: 'body', body: v, at };
  }
  let said: string | undefined;
  for (const at of log.messages ?? []) {
    const v = getPath(line, parsePath(at));
    // A message logged as its arguments (console.log("lead", body) in a Workers trace): an object among them is the
    // body, its words are the rest.
    const args: unknown[] | undefined =
      Array.isArray(v) && v.some((x) => typeof x !== 'number') ? (v as unknown[]) : undefined;
    const arg = args?.find((x) => nonEmpty(x) && !Array.isArray(x) && errorIn(x) === undefined);
    if (arg !== undefined) return { kind: 'body', body: arg as Record<string, unknown>, at };
    const text = args ? args.filter((x) => typeof x === 'string').join(' ') : messageText(v);
    if (text === undefined) continue;
    const found = bodyInText(text);
    if (found) {
      const error = errorIn(found.body);
      if (error !== undefined)
        return { kind: 'none', reason: `not an event: an error logged in ${an(unitOf(log))}${error}` };
      return found.replaced
        ? { kind: 'body', body: found.body, at, replaced: true }
        : { kind: 'body', body: found.body, at };
    }
    said ??= plainText(text);
  }
  for (const at of log.payloads ?? []) {
    const v = getPath(line, parsePath(at));
    if (v === null || typeof v !== 'object' || Array.isArray(v)) continue;
    const own = Object.keys(v).filter((k) => !MESSAGE_KEYS.has(normalizeHeader(k)) && !k.includes('/'));
    if (own.length > 0) return { kind: 'body', body: v as Record<string, unknown>, at };
  }
  return { kind: 'none', reason: noBody(log, line, said) };
}

const MESSAGE_KEYS = new Set(['message', 'msg']);

function nonEmpty(v: unknown): v is Record<string, unknown> | unknown[] {
  return v !== null && typeof v === 'object' && Object.keys(v).length > 0;
}

function unitOf(log: LogDef): string {
  return `${log.title} ${log.unit ?? 'line'}`;
}

// "a" or "an", as the words after it are said (an Azure Monitor export entry).
function an(words: string): string {
  return /^[AEIOUaeiou]/.test(words) ? `an ${words}` : `a ${words}`;
}

// Where the body of a line of this log is looked for, in order ("body, payload, msg").
function bodyPlaces(log: LogDef): string {
  return [...log.bodies, ...(log.messages ?? []), ...(log.payloads ?? [])].join(', ');
}

// Why a line with no body is not an event: a request with none, else what the line said (its first words).
function noBody(log: LogDef, line: Record<string, unknown>, said: string | undefined): string {
  if (log.name === 'access-log') {
    // The request as the text log's reader split it, or as a JSON log_format wrote it (`$request`).
    const req = typeof line.request === 'string' ? /^([A-Z]{3,10}) (\S+)/.exec(line.request) : null;
    const method = typeof line.method === 'string' ? line.method : req?.[1];
    const path = typeof line.path === 'string' ? line.path : req?.[2];
    if (method !== undefined && path !== undefined)
      return `not an event: ${method} ${printablePath(path)} with no request body (${an(unitOf(log))})`;
  }
  const what = `not an event: ${an(unitOf(log))} with no webhook body (${bodyPlaces(log)})`;
  if (said === undefined || said === '') return what;
  return `${what}: "${preview(said)}"`;
}

function printablePath(p: string): string {
  const q = p.indexOf('?');
  return q === -1 ? p : `${p.slice(0, q)}?…`;
}

const PREVIEW = 60;

/** The first words of a message, on one line, for a reason: up to PREVIEW characters, cut at a word. */
export function preview(text: string): string {
  // eslint-disable-next-line no-control-regex -- control characters are exactly what it takes out
  const one = text.replace(/[\s\u0000-\u001f\u007f]+/g, ' ').trim();
  if (one.length <= PREVIEW) return one;
  const cut = one.slice(0, PREVIEW);
  const space = cut.lastIndexOf(' ');
  return `${space > PREVIEW / 2 ? cut.slice(0, space) : cut}…`;
}

// Keys of an error a runtime or a logger writes as JSON (Lambda's errorType/errorMessage/stack, a serialized Error,
// a Python traceback).
const ERROR_KEYS = new Set(['errortype', 'errormessage', 'stack', 'stacktrace', 'traceback', 'exception']);

// ` (TypeError: Cannot read ...)` where a body found in a message is an error, not a request's body; else undefined.
function errorIn(body: Record<string, unknown> | unknown[]): string | undefined {
  if (Array.isArray(body)) return undefined;
  const keys = Object.keys(body);
  if (!keys.some((k) => ERROR_KEYS.has(normalizeHeader(k))) || personAtTop(body)) return undefined;
  const pick = (...names: string[]) => {
    const k = keys.find((x) => names.includes(normalizeHeader(x)));
    const v = k === undefined ? undefined : body[k];
    return typeof v === 'string' && v.trim() ? v.trim() : undefined;
  };
  const type = pick('errortype', 'name', 'type');
  const message = pick('errormessage', 'message');
  const words = [type, message].filter(Boolean).join(': ');
  return words ? ` (${preview(words)})` : '';
}

/** What the headers a receiver logged say of the delivery: its id (a retry has the same) and its event type. */
export function deliveryOf(log: LogDef, line: Record<string, unknown>): { id?: string; type?: string } | undefined {
  let id: { rank: number; value: string } | undefined;
  let type: { rank: number; value: string } | undefined;
  for (const at of log.headers ?? []) {
    const h = getPath(line, parsePath(at));
    if (h === null || typeof h !== 'object' || Array.isArray(h)) continue;
    for (const [name, raw] of Object.entries(h as Record<string, unknown>)) {
      const value: unknown = Array.isArray(raw) && raw.length === 1 ? (raw as unknown[])[0] : raw;
      if (typeof value !== 'string' || value.trim() === '' || value.length > 200) continue;
      const words = name
        .toLowerCase()
        .split(/[^a-z0-9]+/)
        .filter(Boolean);
      const r = idRank(name.toLowerCase(), words);
      if (r !== undefined && (!id || r < id.rank)) id = { rank: r, value: value.trim() };
      const t = typeRank(words);
      if (t !== undefined && (!type || t < type.rank)) type = { rank: t, value: value.trim() };
    }
  }
  if (!id && !type) return undefined;
  const out: { id?: string; type?: string } = {};
  if (id) out.id = id.value;
  if (type) out.type = type.value;
  return out;
}

const ID_WORDS = new Set(['id', 'uuid', 'guid']);

// How surely a header holds the id of a delivery, the same on its retries (1 the surest); undefined: it does not. A
// request's or a trace's id is one per attempt; a webhook's own id (x-wc-webhook-id) is its configuration's.
function idRank(name: string, words: string[]): number | undefined {
  if (words.some((w) => w === 'request' || w === 'trace' || w === 'span' || w === 'correlation')) return undefined;
  const last = words[words.length - 1] ?? '';
  if (words.includes('idempotency')) return 1;
  if (words.includes('event') && ID_WORDS.has(last)) return 2;
  if (words.includes('delivery') && (ID_WORDS.has(last) || last === 'delivery')) return 3;
  if ((words.includes('message') || words.includes('notification')) && ID_WORDS.has(last)) return 4;
  // The Standard Webhooks headers (Svix): the message's id, the same on every attempt.
  if (name === 'webhook-id' || name === 'svix-id') return 5;
  return undefined;
}

// How surely a header names the event's type: a topic (x-shopify-topic), an event type, an event (x-github-event).
function typeRank(words: string[]): number | undefined {
  const last = words[words.length - 1] ?? '';
  const before = words[words.length - 2];
  if (last === 'topic') return 1;
  if (before === 'event' && (last === 'type' || last === 'name' || last === 'key')) return 2;
  if (last === 'event') return 3;
  return undefined;
}
