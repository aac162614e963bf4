import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createReadStream } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { describe, it } from 'node:test';
import { UsageError } from '../../src/errors.js';
import { item, openSinkFor } from './helpers.js';

describe('jsonl sink', () => {
  it('appends one line per lead to a 0600 file, across batches', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'll-jsonl-'));
    const file = join(dir, 'out.jsonl');
    const s = await openSinkFor('jsonl', { output: file });
    assert.deepEqual(
      await s.send([item(1, { email: 'a@x.com', firstName: 'A' }), item(2, { phone: '+15550001111' })]),
      [{ kind: 'created' }, { kind: 'created' }],
    );
    await s.send([item(3, { email: 'c@x.com' })]);
    await s.close?.();
    const lines = (await readFile(file, 'utf8'))
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as unknown);
    assert.equal(lines.length, 3);
    assert.deepEqual(lines[0], { key: item(1, {}).downstreamKey, lead: { email: 'a@x.com', first_name: 'A' } });
    assert.equal((await stat(file)).mode & 0o777, 0o600);
    assert.equal(s.capabilities.maxBatch, 2000);
  });

  it('a file whose last line was cut (a run killed mid-write) gets its new lines each on a line of its own', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'll-jsonl-'));
    const file = join(dir, 'out.jsonl');
    const whole = JSON.stringify({ key: 'k0', lead: { email: 'z@x.com' } });
    await writeFile(file, `${whole}\n{"key":"k1","lead":{"ema`);
    const s = await openSinkFor('jsonl', { output: file });
    await s.send([item(1, { email: 'a@x.com' })]);
    await s.send([item(2, { email: 'b@x.com' })]);
    await s.close?.();
    const lines = (await readFile(file, 'utf8')).split('\n');
    assert.deepEqual(lines, [
      whole,
      '{"key":"k1","lead":{"ema', // left as it was: its events are in doubt in the ledger, and re-sent whole
      JSON.stringify({ key: item(1, {}).downstreamKey, lead: { email: 'a@x.com' } }),
      JSON.stringify({ key: item(2, {}).downstreamKey, lead: { email: 'b@x.com' } }),
      '',
    ]);
    // A file that ends whole, or is empty, gets no extra line.
    const clean = join(dir, 'clean.jsonl');
    await writeFile(clean, `${whole}\n`);
    const c = await openSinkFor('jsonl', { output: clean });
    await c.send([item(3, { email: 'c@x.com' })]);
    await c.close?.();
    assert.equal((await readFile(clean, 'utf8')).split('\n').length, 3);
  });

  it('findWritten: the downstream keys the file holds on whole lines (the last one may lack its newline); a cut line or another key holds none', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'll-jsonl-'));
    const file = join(dir, 'out.jsonl');
    const s = await openSinkFor('jsonl', { output: file });
    assert.equal(typeof s.findWritten, 'function', 'a file can be read back');
    assert.equal(s.describe(), `JSONL file ${file}`);
    const [a, b, c, d, e] = [1, 2, 3, 4, 5].map((n) => item(n, { email: `p${n}@x.com` }));
    const keys = [a, b, c, d, e].map((x) => x!.downstreamKey);
    assert.deepEqual(await s.findWritten!([keys[0]!]), new Set(), 'no file yet: none there');
    await s.send([a!, b!]);
    // The cut line of a run killed mid-write: c's key is there, its lead is not.
    await writeFile(file, `${await readFile(file, 'utf8')}{"key":"${c!.downstreamKey}","lead":{"ema`);
    const again = await openSinkFor('jsonl', { output: file });
    await again.send([d!]);
    assert.deepEqual(await again.findWritten!([...keys, 'f'.repeat(64)]), new Set([keys[0], keys[1], keys[3]]));
    assert.deepEqual(await again.findWritten!([keys[1]!]), new Set([keys[1]]), 'only the keys asked for');
    await again.close?.();
    // Cut between the JSON and its newline: the line is whole, and found (the next write adds the newline).
    await writeFile(
      file,
      `${await readFile(file, 'utf8')}${JSON.stringify({ key: keys[4], lead: { email: 'p5@x.com' } })}`,
    );
    const third = await openSinkFor('jsonl', { output: file });
    assert.deepEqual(await third.findWritten!([keys[4]!]), new Set([keys[4]]));
    await third.close?.();
    await s.close?.();
    const out = await openSinkFor('jsonl', { output: '-' }, { stdout: new PassThrough() });
    assert.equal(out.findWritten, undefined, 'stdout cannot be read back');
    const dev = await openSinkFor('jsonl', { output: '/dev/null' });
    assert.equal(dev.findWritten, undefined, 'nor can a device');
  });

  it('findWritten skips a line longer than any lead (16 Mi characters) instead of holding it, and reads on after it', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'll-jsonl-'));
    const file = join(dir, 'out.jsonl');
    const [k1, k2] = [1, 2].map((n) => item(n, { email: `p${n}@x.com` }).downstreamKey);
    const huge = JSON.stringify({ key: k1, lead: { note: 'y'.repeat(20 << 20) } });
    await writeFile(file, `${huge}\n${JSON.stringify({ key: k2, lead: {} })}\n`);
    const s = await openSinkFor('jsonl', { output: file });
    assert.deepEqual(await s.findWritten!([k1!, k2!]), new Set([k2]));
  });

  it('a FIFO output has no findWritten: it cannot be read back', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'll-jsonl-'));
    const fifo = join(dir, 'leads.fifo');
    execFileSync('mkfifo', [fifo]);
    const s = await openSinkFor('jsonl', { output: fifo });
    assert.equal(s.findWritten, undefined, 'a FIFO cannot be read back');
  });

  it("writes to stdout for '-'", async () => {
    const out = new PassThrough();
    let text = '';
    out.on('data', (c: Buffer) => (text += c.toString()));
    const s = await openSinkFor('jsonl', { output: '-' }, { stdout: out });
    await s.send([item(1, { email: 'a@x.com' })]);
    assert.equal(text, `${JSON.stringify({ key: item(1, {}).downstreamKey, lead: { email: 'a@x.com' } })}\n`);
    assert.equal(s.describe(), 'JSONL on stdout');
  });

  it('refuses a symlink as the output when the sink is built, naming it', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'll-jsonl-'));
    const target = join(dir, 'target.txt');
    await writeFile(target, 'keep\n');
    const link = join(dir, 'out.jsonl');
    await symlink(target, link);
    await assert.rejects(
      openSinkFor('jsonl', { output: link }),
      (err: unknown) => err instanceof UsageError && err.message.includes(link) && /symbolic link/.test(err.message),
    );
    assert.equal(await readFile(target, 'utf8'), 'keep\n');
  });

  it('writes to a FIFO without fsync (which a pipe refuses): the reader gets the lines, the leads are created', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'll-jsonl-'));
    const fifo = join(dir, 'leads.fifo');
    execFileSync('mkfifo', [fifo]);
    let text = '';
    const reader = createReadStream(fifo, 'utf8').on('data', (c) => (text += String(c)));
    const ended = new Promise((resolve) => reader.on('close', resolve));
    const s = await openSinkFor('jsonl', { output: fifo });
    assert.deepEqual(await s.send([item(1, { email: 'a@x.com' })]), [{ kind: 'created' }]);
    await s.close?.();
    await ended;
    assert.equal(text, `${JSON.stringify({ key: item(1, {}).downstreamKey, lead: { email: 'a@x.com' } })}\n`);
  });

  it('refuses, when the sink is built, an output in a missing directory or that is a directory, naming it', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'll-jsonl-'));
    const missing = join(dir, 'no-such-dir', 'out.jsonl');
    await assert.rejects(
      openSinkFor('jsonl', { output: missing }),
      (err: unknown) =>
        err instanceof UsageError && err.message.includes(missing) && /no-such-dir does not exist/.test(err.message),
    );
    await assert.rejects(
      openSinkFor('jsonl', { output: dir }),
      (err: unknown) => err instanceof UsageError && err.message.includes(dir) && /is a directory/.test(err.message),
    );
    const file = join(dir, 'plain.txt');
    await writeFile(file, '');
    await assert.rejects(
      openSinkFor('jsonl', { output: join(file, 'out.jsonl') }),
      (err: unknown) => err instanceof UsageError && /is not a directory/.test(err.message),
    );
  });

  it('a file that cannot be opened when a batch comes fails the batch, retryable: nothing of it was written', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'll-jsonl-'));
    const sub = join(dir, 'out');
    await mkdir(sub);
    const s = await openSinkFor('jsonl', { output: join(sub, 'leads.jsonl') });
    await rm(sub, { recursive: true });
    const [o] = await s.send([item(1, { email: 'a@x.com' })]);
    assert.equal(o?.kind, 'failed');
    assert.equal((o as { permanent?: boolean }).permanent, false);
    assert.match((o as { reason: string }).reason, /cannot write JSONL file .*ENOENT/);
    // The directory back, the next batch opens the file and is written.
    await mkdir(sub);
    assert.deepEqual(await s.send([item(2, { email: 'b@x.com' })]), [{ kind: 'created' }]);
    await s.close?.();
    assert.equal((await readFile(join(sub, 'leads.jsonl'), 'utf8')).split('\n').length, 2);
  });

  it('a write that fails once the file is open makes the batch in doubt (some lines may be there)', async () => {
    // /dev/full opens, and every write to it fails with ENOSPC, as a full disk does.
    const s = await openSinkFor('jsonl', { output: '/dev/full' });
    const [o] = await s.send([item(1, { email: 'a@x.com' })]);
    assert.equal(o?.kind, 'unknown');
    assert.match((o as { reason: string }).reason, /ENOSPC/);
  });
});
