// `npm run fuzz -- --minutes N`: the differential and reader properties of the test suite, with new seeds, for N
// minutes (default 2). A counterexample (shrunk by fast-check) is saved under fixtures/fuzz/, where the test suite
// replays it from then on, and the run ends with exit code 1. Progress goes to stderr.
import fc from 'fast-check';
import { fuzzCase } from './arbitraries.js';
import { assertPathsAgree } from './paths.js';
import { assertReadersAccountFor, readerCase } from './readers.js';
import { saveCase, saveReaderCase } from './saved.js';

function minutesFromArgs(argv: string[]): number {
  const i = argv.indexOf('--minutes');
  const v = i >= 0 ? Number(argv[i + 1]) : 2;
  if (!Number.isFinite(v) || v <= 0) {
    process.stderr.write('usage: npm run fuzz -- [--minutes N]\n');
    process.exit(2);
  }
  return v;
}

/** What a batch of runs of one property came to. */
interface Outcome {
  failed: boolean;
  numRuns: number;
  errorInstance?: unknown;
  counterexample?: unknown[] | null;
}
const outcome = <T extends [unknown]>(r: fc.RunDetails<T>): Outcome => ({
  failed: r.failed,
  numRuns: r.numRuns,
  errorInstance: r.failed ? r.errorInstance : undefined,
  counterexample: r.counterexample,
});

const deadline = Date.now() + minutesFromArgs(process.argv.slice(2)) * 60_000;
const tried = { inThread: 0, workers: 0, readers: 0 };
// Rounds of each property in turn, a short batch each, until the time is up.
const rounds: Array<{
  name: keyof typeof tried;
  check: (seed: number) => Promise<Outcome>;
}> = [
  {
    name: 'inThread',
    check: (seed) =>
      fc
        .check(
          fc.asyncProperty(fuzzCase(4), (c) => assertPathsAgree(c, { workers: false })),
          { seed, numRuns: 40 },
        )
        .then(outcome),
  },
  {
    name: 'workers',
    check: (seed) =>
      fc
        .check(
          fc.asyncProperty(fuzzCase(8), (c) => assertPathsAgree(c, { workers: true })),
          { seed, numRuns: 5 },
        )
        .then(outcome),
  },
  {
    name: 'readers',
    check: (seed) =>
      fc.check(fc.asyncProperty(readerCase, assertReadersAccountFor), { seed, numRuns: 20 }).then(outcome),
  },
];

for (let r = 0; Date.now() < deadline; r++) {
  const round = rounds[r % rounds.length]!;
  const seed = Math.floor(Math.random() * 2 ** 31);
  const result = await round.check(seed);
  tried[round.name] += result.numRuns;
  if (result.failed) {
    const failure = String(result.errorInstance);
    const example = result.counterexample?.[0];
    process.stderr.write(`\n${round.name} failed (seed ${seed}): ${failure.slice(0, 2000)}\n`);
    const file =
      round.name === 'readers'
        ? saveReaderCase(example as Parameters<typeof saveReaderCase>[0], failure)
        : saveCase(example as Parameters<typeof saveCase>[0], failure);
    process.stderr.write(`saved as ${file}: npm test replays it from now on\n`);
    process.exit(1);
  }
  process.stderr.write(`\r${JSON.stringify(tried)}`);
}
process.stderr.write(`\nno counterexample: ${JSON.stringify(tried)} cases tried\n`);
