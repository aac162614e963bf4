// A JSON document whose top-level object wraps a log's entries (`{"events": [...]}`, as `aws logs
// filter-log-events` prints them): each entry is a record at its own line, numbered as an array's elements are.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { chunked, fakeStdin, readAll, records, rejects, scratch, unread } from './helpers.js';

const export4 = JSON.stringify(
  {
    events: [
      { logStreamName: 's', timestamp: 1, message: 'START RequestId: a\n', eventId: '1' },
      { logStreamName: 's', timestamp: 2, message: 'lead {"email":"a@example.com"}\n', eventId: '2' },
    ],
    searchedLogStreams: [],
  },
  null,
  4,
);

describe('a document that wraps a list of log entries', () => {
  it('gives each entry of the list as a record at the line it starts on, marked with the list', async () => {
    const s = scratch();
    const { items } = await readAll([s.write('events.json', export4)]);
    assert.deepEqual(
      items.map((i) => [i.kind, i.line, i.kind === 'record' ? [i.item, i.within, i.fields.eventId] : null]),
      [
        ['record', 3, [1, 'events', '1']],
        ['record', 9, [2, 'events', '2']],
      ],
    );
  });

  it('reads the same whatever the chunks its bytes come in, and several wrappers one after another', async () => {
    const twice = `${export4}${JSON.stringify({ logGroup: '/aws/lambda/x', logEvents: [{ id: '3', timestamp: 3, message: 'x' }] })}`;
    for (const size of [1, 3, 7, 64]) {
      const { items } = await readAll(['-'], {
        stdin: fakeStdin(...chunked(Buffer.from(twice), size)),
        format: 'json',
      });
      assert.deepEqual(
        items.map((i) => [i.kind, i.line, i.kind === 'record' ? [i.item, i.within] : null]),
        [
          ['record', 3, [1, 'events']],
          ['record', 9, [2, 'events']],
          ['record', 17, [1, 'logEvents']],
        ],
        `chunks of ${size}`,
      );
    }
  });

  it('leaves a list of anything but objects, and other keys, to the record it is part of', async () => {
    const s = scratch();
    const doc = '{"event_id":"e1","email":"a@example.com","events":["opened","clicked"],"records":[]}';
    const { items } = await readAll([s.write('one.json', doc)]);
    assert.deepEqual(
      records(items).map((r) => [r.line, r.item, r.within, r.fields]),
      [[1, undefined, undefined, JSON.parse(doc)]],
    );
  });

  it('says what is wrong in an entry, and where a document cut short ends', async () => {
    const s = scratch();
    const broken = await readAll([s.write('b.json', '{"entries": [\n{"message": "a"},\n{"message": },\n3\n]}')]);
    assert.deepEqual(
      broken.items.map((i) => [i.kind, i.line, i.kind === 'unread' ? null : i.item]),
      [
        ['record', 2, 1],
        ['reject', 3, 2],
        ['reject', 4, 3],
      ],
    );
    assert.match(rejects(broken.items)[1]!.reason, /'entries' item 3 is number/);
    const cut = await readAll([s.write('c.json', '{"events": [{"message": "a"}, {"mess')]);
    assert.equal(records(cut.items).length, 1);
    assert.match(unread(cut.items)[0]!.reason, /ends inside/);
  });

  it('reads objects that span lines one after another as documents (journalctl -o json-pretty), not as JSON lines', async () => {
    const s = scratch();
    const entry = (n: number) => JSON.stringify({ __CURSOR: `s=${n}`, MESSAGE: `line ${n}` }, null, '\t');
    const { items } = await readAll([s.write('journal.json', `${entry(1)}\n${entry(2)}\n${entry(3)}\n`)]);
    assert.deepEqual(
      items.map((i) => [i.kind, i.line, i.kind === 'record' ? i.fields.MESSAGE : null]),
      [
        ['record', 1, 'line 1'],
        ['record', 5, 'line 2'],
        ['record', 9, 'line 3'],
      ],
    );
  });
});
