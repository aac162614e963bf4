import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { fakeStdin, readAll, records, rejects, scratch, unread } from './helpers.js';

describe('JSON documents', () => {
  it('reads an array: one record per element, `line` where each element starts', async () => {
    const s = scratch();
    const file = s.write(
      'events.json',
      '[\n  {\n    "event_id": "evt_1",\n    "note": "a [bracket], a \\"quote\\" and {brace}"\n  },\n  {"event_id": "evt_2"}, {"event_id": "evt_3"},\n\n  {\n    "event_id": "evt_4"\n  }\n]\n',
    );
    const { items } = await readAll([file]);
    assert.deepEqual(
      items.map((i) => [i.kind, i.line, i.kind === 'record' ? i.fields['event_id'] : null]),
      [
        ['record', 2, 'evt_1'],
        ['record', 6, 'evt_2'],
        ['record', 6, 'evt_3'],
        ['record', 8, 'evt_4'],
      ],
    );
  });

  it('numbers the elements of an array (item), so that two on one line are told apart; an empty element too', async () => {
    const s = scratch();
    const file = s.write('one-line.json', '[{"event_id":"a"},{"event_id":"b"},,{"event_id":"c"}]');
    const { items } = await readAll([file]);
    assert.deepEqual(
      items.map((i) => [i.kind, i.line, i.kind === 'unread' ? null : i.item]),
      [
        ['record', 1, 1],
        ['record', 1, 2],
        ['reject', 1, 3],
        ['record', 1, 4],
      ],
    );
    // A document that is one object is no array: no item.
    const one = await readAll([s.write('one.json', '{"event_id":"z"}')]);
    assert.deepEqual(
      one.items.map((i) => [i.kind, i.kind === 'record' ? i.item : null]),
      [['record', undefined]],
    );
  });

  it('finds the line where each element starts, whatever its kind, brackets and quotes in strings included', async () => {
    const { items } = await readAll(['-'], {
      stdin: fakeStdin('[\n{"a":"[,]"},\n\n 2, [3,\n4], "x\\"y"\n]'),
      format: 'json',
    });
    assert.deepEqual(
      items.map((i) => i.line),
      [2, 4, 4, 5],
    );
  });

  it('reads a single (pretty-printed) object as one record, also sniffed from stdin', async () => {
    const doc = '\n\n{\n  "event_id": "evt_9",\n  "data": {"email": "x@example.com"}\n}\n';
    const { items } = await readAll(['-'], { stdin: fakeStdin(doc) });
    assert.equal(items.length, 1);
    assert.deepEqual([items[0]?.kind, items[0]?.line], ['record', 3]);
  });

  it('rejects array elements that are not objects, with the element number', async () => {
    const { items } = await readAll(['-'], { stdin: fakeStdin('[{"a":1},\n"oops",\n[1]]') });
    assert.deepEqual(
      items.map((i) => (i.kind === 'reject' ? [i.line, i.reason] : [i.line, 'ok'])),
      [
        [1, 'ok'],
        [2, 'not a JSON object (array element 2 is string)'],
        [3, 'not a JSON object (array element 3 is array)'],
      ],
    );
  });

  it('streams an array: a malformed element is one reject at its line, the elements after it are read; a cut-short document is unread from there', async () => {
    const s = scratch();
    const good = s.write('good.jsonl', '{"a":1}\n');
    const bad = s.write(
      'bad.json',
      '[\n  {"event_id": "evt_1"},\n  {"event_id": "evt_2" "x": 1},\n  {"event_id": "evt_3"}\n]\n',
    );
    const unexpected = s.write('token.json', '[\n  {"a": 1},\n  {"b": tru}\n]');
    const truncated = s.write('cut.json', '[\n  {"a": 1},\n  {"b": 2');
    const { items } = await readAll([bad, unexpected, truncated, good]);
    assert.deepEqual(
      items.map((i) => [i.kind, i.line]),
      [
        ['record', 2],
        ['reject', 3],
        ['record', 4],
        ['record', 2],
        ['reject', 3],
        ['record', 2],
        ['unread', 3],
        ['record', 1],
      ],
    );
    const [r1, r2] = rejects(items);
    assert.equal(r1?.reason, "invalid JSON: Expected ',' or '}' after property value at line 3, column 24");
    assert.match(r2?.reason ?? '', /^invalid JSON: .* at line 3, column \d+$/);
    assert.equal(unread(items)[0]?.reason, 'the JSON document ends inside array element 2 (truncated?)');
  });

  it('reads a .json file that really holds JSONL as JSONL', async () => {
    const s = scratch();
    const file = s.write('mislabelled.json', '{"event_id":"a"}\n{"event_id":"b"}\n{broken\n');
    const { items } = await readAll([file]);
    assert.deepEqual(
      items.map((i) => [i.kind, i.line]),
      [
        ['record', 1],
        ['record', 2],
        ['reject', 3],
      ],
    );
    assert.equal(records(items)[1]?.fields['event_id'], 'b');
  });

  it('applies --select to each element', async () => {
    const { items } = await readAll(['-'], {
      stdin: fakeStdin('[{"payload":{"event_id":"p1"}},{"payload":"{\\"event_id\\":\\"p2\\"}"},{"other":1}]'),
      select: 'payload',
    });
    assert.deepEqual(
      items.map((i) => (i.kind === 'record' ? i.fields['event_id'] : i.reason)),
      ['p1', 'p2', '--select payload: field missing'],
    );
  });
});
