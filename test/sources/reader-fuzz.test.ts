// Random and mutated bytes never crash a reader or make it hang, and every line is accounted for: read into a
// record, rejected with its line, or named unread (test/fuzz/readers.ts). `npm run fuzz` tries many more.
import { test } from 'node:test';
import fc from 'fast-check';
import { assertReadersAccountFor, readerCase } from '../fuzz/readers.js';
import { savedReaderCases } from '../fuzz/saved.js';

test('saved reader counterexamples of the fuzz runner are still read without a crash, every line accounted for', async () => {
  for (const { name, readerCase: c } of savedReaderCases()) {
    await assertReadersAccountFor(c).catch((e: Error) => {
      throw new Error(`${name}: ${e.message}`);
    });
  }
});

test('mutated JSONL, JSON, CSV and gzip: no crash, no hang, every line accounted for, the engine reads alike', async () => {
  await fc.assert(fc.asyncProperty(readerCase, assertReadersAccountFor), { seed: 20261201, numRuns: 25 });
});
