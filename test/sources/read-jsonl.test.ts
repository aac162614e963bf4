import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { chunked, fakeStdin, fixture, readAll, records, rejects, scratch } from './helpers.js';

describe('JSONL', () => {
  it('reads the webhook fixture: one record per line, 1-based lines, fields as parsed', async () => {
    const { items } = await readAll([fixture('webhook-events.jsonl')]);
    assert.equal(items.length, 25);
    assert.equal(rejects(items).length, 0);
    const first = items[0];
    assert.ok(first && first.kind === 'record');
    assert.equal(first.source, fixture('webhook-events.jsonl'));
    assert.equal(first.line, 1);
    assert.equal(first.fields['event_id'], 'evt_01JA0001');
    assert.deepEqual(
      items.map((i) => i.line),
      Array.from({ length: 25 }, (_, i) => i + 1),
    );
  });

  it('rejects broken lines with their line and a reason, skips blank lines, keeps going (CRLF, no final newline)', async () => {
    const { items } = await readAll([fixture('broken-events.jsonl')]);
    assert.deepEqual(
      items.map((i) => [i.kind, i.line]),
      [
        ['record', 1],
        ['record', 2],
        ['reject', 3],
        ['record', 4],
        ['reject', 6],
        ['reject', 6],
        ['record', 7],
        ['reject', 9],
        ['record', 10],
      ],
    );
    const [truncated, first, second, nul] = rejects(items);
    assert.match(truncated?.reason ?? '', /^invalid JSON: .+ at column \d+$/);
    // A JSON array is a line of several events: each of its items is one, and these two are not objects.
    assert.deepEqual(
      [first, second].map((r) => [r?.item, r?.reason]),
      [
        [1, 'not a JSON object (item 1 is string)'],
        [2, 'not a JSON object (item 2 is string)'],
      ],
    );
    assert.equal(nul?.reason, 'not a JSON object (found null)');
    // the CR of CRLF never reaches a value
    const last = records(items).at(-1);
    assert.equal((last?.fields['data'] as Record<string, unknown>)['source'], 'webinar');
  });

  it('does not quote the input in a JSON error reason (it may hold personal data)', async () => {
    const { items } = await readAll(['-'], { stdin: fakeStdin('{"email":"secret@example.com" x}\n'), format: 'jsonl' });
    const r = rejects(items)[0];
    assert.ok(r);
    assert.doesNotMatch(r.reason, /secret/);
    assert.match(r.reason, /column 31/);
  });

  it('strips a UTF-8 BOM and handles lines and multi-byte characters split across chunks', async () => {
    const text = '\uFEFF{"name":"João Conceição","n":1}\r\n\r\n{"name":"Olívia","n":2}\n{"n":3}';
    for (const size of [1, 2, 3, 7, 64]) {
      const { items } = await readAll(['-'], { stdin: fakeStdin(...chunked(Buffer.from(text), size)) });
      assert.deepEqual(
        items.map((i) => (i.kind === 'record' ? [i.line, i.fields['n'], i.fields['name']] : i.reason)),
        [
          [1, 1, 'João Conceição'],
          [3, 2, 'Olívia'],
          [4, 3, undefined],
        ],
        `chunk size ${size}`,
      );
    }
  });

  it('yields batches of at most 1000 items and loses none across chunk boundaries', async () => {
    const s = scratch();
    const n = 2500;
    const lines = Array.from({ length: n }, (_, i) =>
      JSON.stringify({ event_id: `evt_${i}`, pad: 'x'.repeat(i % 700) }),
    );
    const file = s.write('many.ndjson', lines.join('\n') + '\n');
    const { items, batches } = await readAll([file]);
    assert.equal(items.length, n);
    assert.ok(
      batches.every((b) => b > 0 && b <= 1001),
      `batches ${batches.join(',')}`,
    );
    assert.ok(batches.length >= 3);
    assert.deepEqual(
      items.map((i) => (i.kind === 'record' ? i.fields['event_id'] : null)),
      lines.map((_, i) => `evt_${i}`),
    );
    assert.equal(items.at(-1)?.line, n);
  });

  it('reads a line longer than the read chunk (1 MB)', async () => {
    const s = scratch();
    const big = 'y'.repeat(3_000_000);
    const file = s.write('long.jsonl', `{"a":1}\n{"big":"${big}"}\n{"a":3}\n`);
    const { items } = await readAll([file]);
    assert.deepEqual(
      items.map((i) => i.line),
      [1, 2, 3],
    );
    const rec = items[1];
    assert.ok(rec?.kind === 'record');
    assert.equal((rec.fields['big'] as string).length, big.length);
  });
});

describe('--select', () => {
  it('picks the event out of log lines: JSON strings parsed, objects taken as they are, missing → reject', async () => {
    const { items } = await readAll([fixture('app-log-wrapped.jsonl')], { select: 'body' });
    assert.deepEqual(
      items.map((i) => [i.kind, i.line]),
      [
        ['reject', 1],
        ['record', 2],
        ['record', 3],
        ['reject', 4],
        ['record', 5],
        ['record', 6],
        ['record', 7],
        ['reject', 8],
        ['record', 9],
        ['reject', 10],
        ['record', 11],
      ],
    );
    const reasons = rejects(items).map((r) => r.reason);
    assert.equal(reasons[0], '--select body: field missing');
    assert.match(reasons[2] ?? '', /^--select body: invalid JSON: /);
    const fromString = records(items)[0];
    const fromObject = records(items)[2];
    assert.equal(fromString?.fields['event_id'], 'evt_01JC0001');
    assert.equal(fromObject?.fields['event_id'], 'evt_01JC0003');
  });

  it('reads a form-encoded body (+ a space, %XX bytes of UTF-8) and a decoded form whose values are lists of one', async () => {
    const stdin = fakeStdin(
      [
        { body: 'event_id=a&email=ana%40example.com&name=Ana+Lima+%C3%A9' },
        { body: { event_id: ['b'], email: ['b@example.com'] } },
        { Body: 'event_id=c&event_id=second&__proto__=x' },
        { body: 'event_id=d&email=c%E9%40example.com' },
        { body: 'YWJjZA==' },
        { body: 'hello world' },
        { body: { event_id: ['e'], tags: ['x', 'y'] } },
      ]
        .map((l) => JSON.stringify(l))
        .join('\n'),
    );
    const { items } = await readAll(['-'], { stdin, select: 'body' });
    assert.deepEqual(
      items.map((i) => (i.kind === 'record' ? [i.fields, i.replaced ?? false] : i.reason)),
      [
        [{ event_id: 'a', email: 'ana@example.com', name: 'Ana Lima é' }, false],
        [{ event_id: 'b', email: 'b@example.com' }, false],
        [JSON.parse('{"event_id":"c","__proto__":"x"}'), false],
        [{ event_id: 'd', email: 'c\ufffd@example.com' }, true],
        "--select body: invalid JSON: Unexpected token 'Y'",
        "--select body: invalid JSON: Unexpected token 'h'",
        [{ event_id: ['e'], tags: ['x', 'y'] }, false],
      ],
    );
  });

  it('follows dotted paths, also through a JSON string, and rejects non-objects naming the path', async () => {
    const stdin = fakeStdin(
      [
        JSON.stringify({ request: { body: { event_id: 'a' } } }),
        JSON.stringify({ request: { body: JSON.stringify({ event_id: 'b' }) } }),
        JSON.stringify({ request: JSON.stringify({ body: { event_id: 'c' } }) }),
        JSON.stringify({ request: { body: [1, 2] } }),
        JSON.stringify({ request: { body: 42 } }),
        JSON.stringify({ request: {} }),
        JSON.stringify({ 'request.body': { event_id: 'g' } }),
      ].join('\n'),
    );
    const { items } = await readAll(['-'], { stdin, select: 'request.body' });
    assert.deepEqual(
      items.map((i) => (i.kind === 'record' ? i.fields['event_id'] : i.reason)),
      [
        'a',
        'b',
        'c',
        '--select request.body: not a JSON object (found array)',
        '--select request.body: not a JSON object (found number)',
        '--select request.body: field missing',
        'g',
      ],
    );
  });
});
