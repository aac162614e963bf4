// Shared helpers for the sources/ tests: run readInputs to completion, fake stdin, scratch files.

import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { readInputs } from '../../src/sources/read-inputs.js';
import type { RawItem, RawRecord, RawReject, RawUnread, ReadOptions } from '../../src/sources/types.js';

/** Absolute path of a file in fixtures/. */
export const fixture = (name: string): string => fileURLToPath(new URL(`../../fixtures/${name}`, import.meta.url));

/** Reads all inputs and returns every item, plus the size of each batch. */
export async function readAll(
  inputs: string[],
  opts: ReadOptions = {},
): Promise<{ items: RawItem[]; batches: number[] }> {
  const items: RawItem[] = [];
  const batches: number[] = [];
  for await (const batch of readInputs(inputs, opts)) {
    batches.push(batch.length);
    for (const item of batch) items.push(item);
  }
  return { items, batches };
}

export const records = (items: RawItem[]): RawRecord[] => items.filter((i): i is RawRecord => i.kind === 'record');
export const rejects = (items: RawItem[]): RawReject[] => items.filter((i): i is RawReject => i.kind === 'reject');
export const unread = (items: RawItem[]): RawUnread[] => items.filter((i): i is RawUnread => i.kind === 'unread');

/** A stdin stand-in that delivers the given chunks one by one (to exercise chunk boundaries). */
export function fakeStdin(...chunks: (string | Buffer)[]): NodeJS.ReadableStream {
  return Readable.from(
    chunks.map((c) => (typeof c === 'string' ? Buffer.from(c) : c)),
    { objectMode: false },
  );
}

/** Splits a buffer into chunks of `size` bytes. */
export function chunked(buf: Buffer, size: number): Buffer[] {
  const out: Buffer[] = [];
  for (let i = 0; i < buf.length; i += size) out.push(buf.subarray(i, i + size));
  return out;
}

/** A fresh scratch directory; `write` puts a file in it and returns its path. */
export function scratch(): { dir: string; write(name: string, data: string | Buffer): string } {
  const dir = mkdtempSync(path.join(tmpdir(), 'leadledger-sources-'));
  return {
    dir,
    write(name, data) {
      const p = path.join(dir, name);
      writeFileSync(p, data);
      return p;
    },
  };
}
