// How deep the generated-case tests and kill loops go. `npm test` runs the quick tier; LEADLEDGER_TEST_DEEP=1 the full counts
// (before a release, or on a machine with time to spare). The seeds are fixed, so the quick tier tries the first cases
// of the full run: a strict subset, never other cases.

/** Whether LEADLEDGER_TEST_DEEP=1 asks for the full counts. */
export const DEEP = process.env.LEADLEDGER_TEST_DEEP === '1';

/** A property's numRuns: `full` under LEADLEDGER_TEST_DEEP=1, else `quick`. */
export function runs(full: number, quick: number): number {
  return DEEP ? full : Math.min(quick, full);
}
