// gzip files as gzip -dc reads them: every member, wherever the chunks of the file cut it, its CRC and length
// checked, and what follows the last member told apart (zero padding, or bytes that are not gzip).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { gzipSync } from 'node:zlib';
import { gunzipMembers, memberHeaderLength, type GzipEnd } from '../../src/sources/gunzip-members.js';
import { seededRandom } from '../../src/sandbox/faults.js';
import { chunked, fakeStdin, readAll, records, scratch, unread } from './helpers.js';

async function gunzip(chunks: Buffer[]): Promise<{ text: Buffer; end: GzipEnd; error?: string; idle: number }> {
  const end: GzipEnd = {};
  const out: Buffer[] = [];
  let idle = 0;
  async function* raw(): AsyncGenerator<Buffer> {
    yield* chunks;
  }
  try {
    for await (const c of gunzipMembers(raw(), end)) {
      if (c.length === 0) idle++;
      out.push(c);
    }
  } catch (e) {
    return { text: Buffer.concat(out), end, error: (e as Error).message, idle };
  }
  return { text: Buffer.concat(out), end, idle };
}

// A member with every optional header field: extra, file name, comment, header CRC (RFC 1952).
function memberWithHeaderFields(text: string): Buffer {
  const plain = gzipSync(text);
  const extra = Buffer.from([4, 0, 0x41, 0x42, 1, 0]);
  const header = Buffer.concat([
    Buffer.from([0x1f, 0x8b, 8, 4 | 8 | 16 | 2]),
    plain.subarray(4, 10),
    extra,
    Buffer.from('events.jsonl\0comment\0'),
    Buffer.from([0, 0]),
  ]);
  return Buffer.concat([header, plain.subarray(10)]);
}

describe('gzip members', () => {
  const rnd = seededRandom(11);
  const text = (n: number, tag: string) =>
    Array.from({ length: n }, (_, i) => `{"event_id":"${tag}${i}","n":${Math.floor(rnd() * 1e9)}}\n`).join('');
  const a = text(300, 'a');
  const b = text(10, 'b');
  const c = text(500, 'c');
  const members = Buffer.concat([gzipSync(a), gzipSync(b), memberWithHeaderFields(c)]);

  it('reads every member, wherever the chunks cut them, and says nothing followed', async () => {
    for (const size of [1, 7, 10, 11, 512, 4096, members.length]) {
      const r = await gunzip(chunked(members, size));
      assert.equal(r.error, undefined, `chunks of ${size}`);
      assert.equal(r.text.toString(), a + b + c, `chunks of ${size}`);
      assert.deepEqual(r.end, {}, `chunks of ${size}`);
    }
  });

  it('zero padding after the last member is a tail of zeros; other bytes are not read, from their offset', async () => {
    const zeros = await gunzip(chunked(Buffer.concat([members, Buffer.alloc(3000)]), 1000));
    assert.equal(zeros.text.toString(), a + b + c);
    assert.deepEqual(zeros.end.tail, { offset: members.length, bytes: 3000, zeros: true });
    for (const junk of [
      Buffer.from('garbage'),
      Buffer.concat([Buffer.alloc(512), Buffer.from('x')]),
      Buffer.from([0x1f]),
    ]) {
      const r = await gunzip(chunked(Buffer.concat([members, junk]), 333));
      assert.equal(r.error, undefined);
      assert.equal(r.text.toString(), a + b + c, 'every member is read before the tail');
      assert.equal(r.end.tail?.offset, members.length);
      assert.equal(r.end.tail?.zeros, false);
      assert.equal(r.end.tail?.cutHeader, junk.length === 1 ? true : undefined);
    }
  });

  it('a member cut short, or whose CRC or length does not match, fails after the text before it', async () => {
    const cut = await gunzip(chunked(members.subarray(0, members.length - 2000), 4096));
    assert.equal(cut.error, 'unexpected end of file');
    assert.ok((a + b + c).startsWith(cut.text.toString()) && cut.text.length > a.length + b.length);
    const noTrailer = await gunzip([members.subarray(0, members.length - 5)]);
    assert.equal(noTrailer.error, 'unexpected end of file');
    assert.equal(noTrailer.text.toString(), a + b + c);
    const badCrc = Buffer.from(members);
    badCrc[badCrc.length - 8]! ^= 0xff;
    assert.equal((await gunzip([badCrc])).error, 'incorrect data check');
    const badSize = Buffer.from(members);
    badSize[badSize.length - 4]! ^= 0x01;
    assert.equal((await gunzip([badSize])).error, 'incorrect length check');
    assert.equal((await gunzip([Buffer.from([0x1f, 0x8b, 9, 0])])).error, 'incorrect header check');
  });

  it('an empty chunk (a quiet stdin) is passed on, after the text of the bytes before it', async () => {
    const half = Math.floor(members.length / 2);
    const r = await gunzip([members.subarray(0, half), Buffer.alloc(0), members.subarray(half)]);
    assert.equal(r.text.toString(), a + b + c);
    assert.equal(r.idle, 1);
  });

  it('member headers are measured as RFC 1952 lays them out', () => {
    const m = memberWithHeaderFields('x');
    const len = 10 + 6 + 'events.jsonl\0comment\0'.length + 2;
    for (let n = 0; n < len; n++) assert.equal(memberHeaderLength(m.subarray(0, n)), 0, `${n} bytes`);
    assert.equal(memberHeaderLength(m), len);
    assert.equal(memberHeaderLength(Buffer.from('{"a":1}')), -1);
    assert.equal(memberHeaderLength(Buffer.from([0x1f, 0x8b, 8, 0x20])), -1);
  });

  it('through readInputs: a file, stdin, JSONL and CSV: every member read, trailing garbage unread from its line', async () => {
    const { write } = scratch();
    const jsonl = (tag: string, n: number) =>
      Array.from({ length: n }, (_, i) =>
        JSON.stringify({ event_id: `${tag}${i}`, email: `${tag}${i}@example.com` }),
      ).join('\n') + '\n';
    const bytes = Buffer.concat([gzipSync(jsonl('a', 20)), gzipSync(jsonl('b', 5)), Buffer.from('\n\ngarbage')]);
    const file = write('events.jsonl.gz', bytes);
    const csv = write(
      'export.csv.gz',
      Buffer.concat([gzipSync('event_id,email\ne1,a@example.com\n'), gzipSync('e2,b@example.com\n'), Buffer.alloc(10)]),
    );
    for (const [inputs, opts] of [
      [[file], {}],
      [['-'], { stdin: fakeStdin(...chunked(bytes, 50)), format: 'jsonl' as const }],
    ] as const) {
      const { items } = await readAll([...inputs], opts);
      assert.equal(records(items).length, 25);
      assert.deepEqual(
        unread(items).map((u) => [u.line, u.reason]),
        [
          [
            26,
            `the bytes from byte ${bytes.length - 9} of the compressed file on, after its last whole gzip member, are not gzip data (trailing garbage): not read`,
          ],
        ],
      );
    }
    const notes: string[][] = [];
    const { items } = await readAll([csv], { onInputRead: (r) => notes.push(r.notes) });
    assert.deepEqual(
      records(items).map((r) => r.fields['event_id']),
      ['e1', 'e2'],
    );
    assert.deepEqual(unread(items), []);
    assert.match(notes[0]![0]!, /^10 zero bytes after the last gzip member \(from byte \d+\) were ignored/);
  });
});
