// The engine's contract, tried on generated inputs: every path decides every record as the general path does, one
// record at a time (test/fuzz/reference.ts). `npm run fuzz -- --minutes N` runs the same properties longer, and
// saves each counterexample under fixtures/fuzz/, which this file replays first.
import { test } from 'node:test';
import fc from 'fast-check';
import { fuzzCase } from '../fuzz/arbitraries.js';
import { assertPathsAgree } from '../fuzz/paths.js';
import { savedCases } from '../fuzz/saved.js';
import { runs } from '../helpers/deep.js';

// Fixed seeds: npm test tries the same cases every run (the fuzz runner tries new ones); the first of them by default,
// all of them with LEADLEDGER_TEST_DEEP=1 (test/helpers/deep.ts).
const SEED = 20261201;

test('saved counterexamples of the fuzz runner still decide alike on every path', async () => {
  for (const { name, fuzzCase: c } of savedCases()) {
    await assertPathsAgree(c, { workers: true }).catch((e: Error) => {
      throw new Error(`${name}: ${e.message}`);
    });
  }
});

test('in-thread paths decide every generated record as the general path does, one record at a time', async () => {
  await fc.assert(
    fc.asyncProperty(fuzzCase(3), async (c) => assertPathsAgree(c, { workers: false })),
    { seed: SEED, numRuns: runs(40, 15) },
  );
});

test('map workers and blocks cut anywhere decide every generated record as the general path does', async () => {
  await fc.assert(
    fc.asyncProperty(fuzzCase(8), async (c) => assertPathsAgree(c, { workers: true })),
    { seed: SEED, numRuns: runs(4, 2) },
  );
});
