// Which log a line belongs to, and the body it holds: each kind of log leadledger unwraps, on a line as its tool
// writes it; a record of a person is never taken for a log line; and what a receiver's headers say of a delivery.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { deliveryOf, logBody } from '../../src/presets/logs.js';
import { recognizeLog } from '../../src/presets/recognize.js';

const body = { email: 'ana@example.com', name: 'Ana Lima' };
const text = `lead received ${JSON.stringify(body)}`;

test('each log is told by its own fields, and its body found where it keeps it', () => {
  const cases: Array<[string, Record<string, unknown>, { text?: boolean; within?: string }?]> = [
    ['pino', { level: 30, time: 1, pid: 7, hostname: 'web-1', msg: 'webhook', body }],
    ['json-log', { level: 'info', ts: 1, caller: 'main.go:12', msg: text }],
    ['json-log', { levelname: 'INFO', name: 'hooks', message: 'form', form: { email: ['ana@example.com'] } }],
    ['json-log', { timestamp: 1742338870123, type: 'stdout', source: 'lambda', message: text }],
    ['cloudwatch-logs', { logStreamName: 's', timestamp: 1, message: text, ingestionTime: 2, eventId: '3' }],
    ['cloud-logging', { logName: 'projects/p/logs/run', insertId: 'x', jsonPayload: { message: 'lead', body } }],
    ['journald', { __CURSOR: 's=1', _SYSTEMD_UNIT: 'a.service', MESSAGE: [...Buffer.from(text)] }],
    ['container-log', { log: `${text}\n`, stream: 'stdout', time: '2025-03-18T23:01:10Z' }],
    ['access-log', { request: 'POST /leads HTTP/1.1', status: 201, request_body: 'email=ana%40example.com' }],
    ['azure-monitor', { time: 't', resourceId: '/SUBSCRIPTIONS/X', properties: { message: text } }],
    ['splunk', { preview: false, result: { _raw: text, _time: 't' } }],
    ['splunk', { time: 1, host: 'h', sourcetype: '_json', event: { message: text, severity: 'INFO' } }],
    ['request-log', { received_at: 't', headers: { 'content-type': 'application/json' }, body }],
    ['cloudwatch-subscription', { id: '1', timestamp: 1, message: text }, { within: 'logEvents' }],
    ['vercel-log-drain', { id: '1', timestamp: 1, message: text, deploymentId: 'dpl_1', source: 'lambda' }],
    ['log-entries', { id: '1', message: text }, { within: 'entries' }],
    ['text-log', { message: `Mar 18 20:01:10 web-1 app[1]: ${text}` }, { text: true }],
  ];
  for (const [name, line, at] of cases) {
    const log = recognizeLog(line, at);
    assert.equal(log?.name, name, JSON.stringify(line));
    const found = logBody(log!, line);
    assert.equal(found.kind, 'body', `${name}: ${JSON.stringify(found)}`);
  }
  // A Workers trace logs console.log's arguments: the object among them is the body.
  const workers = { level: 'log', message: ['lead received', body], timestamp: 1 };
  assert.deepEqual(logBody(recognizeLog(workers)!, workers), { kind: 'body', body, at: 'message' });
});

test('a record of a person is no log line, whatever it shares with one: it is read by field names', () => {
  for (const record of [
    { date: '2025-03-18', message: 'Quero um orçamento', email: 'ana@example.com' },
    { level: 'gold', message: 'hi', contact: { phone: '+55 11 99999-0000' } },
    { timestamp: 1, message: 'hello', from: 'ana@example.com' },
    { level: 30, time: 1, pid: 7, hostname: 'web-1', msg: 'lead', customerEmail: 'ana@example.com' },
  ])
    assert.equal(recognizeLog(record), undefined, JSON.stringify(record));
  // Webhook bodies of sources without a log's fields stay what they are.
  assert.equal(recognizeLog({ id: 'evt_1', created_at: 't', event: 'lead.created', data: body }), undefined);
  // Only a text log's lines are read as a text log, only a list's entries as a log export's.
  assert.equal(recognizeLog({ message: text }), undefined);
  assert.equal(recognizeLog({ id: '1', message: text }), undefined);
});

test('a line with no body says what it was', () => {
  const start = { logStreamName: 's', timestamp: 1, message: 'START RequestId: 6f1c Version: $LATEST\n', eventId: '1' };
  assert.deepEqual(logBody(recognizeLog(start)!, start), {
    kind: 'none',
    reason:
      'not an event: a CloudWatch Logs export entry with no webhook body (message): "START RequestId: 6f1c Version: $LATEST"',
  });
  const error = {
    ...start,
    message: 'ERROR\tInvoke Error \t{"errorType":"TypeError","errorMessage":"x is undefined","stack":[]}',
  };
  assert.deepEqual(logBody(recognizeLog(error)!, error), {
    kind: 'none',
    reason: 'not an event: an error logged in a CloudWatch Logs export entry (TypeError: x is undefined)',
  });
  const get = {
    request: 'GET /healthz?probe=1 HTTP/1.1',
    method: 'GET',
    path: '/healthz?probe=1',
    status: '200',
    time_local: 't',
  };
  assert.deepEqual(logBody(recognizeLog(get)!, get), {
    kind: 'none',
    reason: 'not an event: GET /healthz?… with no request body (a web server access log line)',
  });
  const request = { logName: 'projects/p/logs/requests', insertId: 'x', httpRequest: { status: 201 } };
  assert.match(
    (logBody(recognizeLog(request)!, request) as { reason: string }).reason,
    /no webhook body \(jsonPayload\.body, /,
  );
});

test("a receiver's headers: the delivery's id (the same on a retry) and its topic; a webhook's or a request's own id is none", () => {
  const log = recognizeLog({ headers: {}, body })!;
  const of = (headers: Record<string, unknown>) => deliveryOf(log, { headers, body });
  assert.deepEqual(
    of({ 'x-shopify-topic': 'orders/create', 'x-shopify-webhook-id': 'w1', 'x-shopify-event-id': 'e1' }),
    { id: 'e1', type: 'orders/create' },
  );
  assert.deepEqual(
    of({
      'x-wc-webhook-id': '7',
      'x-wc-webhook-delivery-id': 'd1',
      'x-wc-webhook-event': 'created',
      'x-wc-webhook-topic': 'order.created',
    }),
    { id: 'd1', type: 'order.created' },
  );
  assert.deepEqual(of({ 'I-Twilio-Idempotency-Token': ['t1'] }), { id: 't1' });
  assert.deepEqual(of({ 'X-GitHub-Delivery': 'g1', 'X-GitHub-Event': 'push' }), { id: 'g1', type: 'push' });
  assert.deepEqual(of({ 'webhook-id': 'msg_1' }), { id: 'msg_1' });
  assert.equal(of({ 'x-request-id': 'r1', 'x-wc-webhook-id': '7', 'x-amzn-trace-id': 'Root=1' }), undefined);
});
