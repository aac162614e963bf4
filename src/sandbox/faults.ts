// Fault injection for the emulator: random faults drawn from a seeded RNG (so tests are deterministic) and a script
// of faults for "the next N requests".

/** One scripted fault, applied to one request. */
export type FaultKind = '429' | '503' | 'hang' | 'reset' | 'commit-then-drop';

export interface Faults {
  /** Added before every answer (ms). */
  latencyMs?: number;
  /** Share of requests answered 503 with a body, before processing. */
  error5xxRate?: number;
  /** The next N requests get a 429 (HubSpot's TEN_SECONDLY_ROLLING body). */
  burst429?: number;
  /** Share of requests never answered: the client times out. */
  hangRate?: number;
  /** Share of requests whose socket is destroyed before processing. */
  resetRate?: number;
  /** Share of requests processed (stored) and then dropped without an answer: a naive retry makes a duplicate. */
  commitThenDropRate?: number;
  /** Every request gets 503 until switched off. */
  outage?: boolean;
  /** Retry-After header value sent with injected 429s and 503s (seconds or an HTTP date). */
  retryAfter?: string;
  /** Faults for the next requests, one per request, in order. */
  script?: FaultKind[];
}

/** mulberry32: a tiny seeded PRNG; good enough for fault draws and reproducible across runs. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Decide which fault, if any, hits the current request; consumes scripted faults and burst counters. */
export function drawFault(faults: Faults, random: () => number): FaultKind | undefined {
  if (faults.outage) return '503';
  if (faults.script && faults.script.length > 0) return faults.script.shift();
  if (faults.burst429 !== undefined && faults.burst429 > 0) {
    faults.burst429--;
    return '429';
  }
  // Always draw every rate so one setting doesn't shift the sequence another setting sees.
  const draws = { hang: random(), reset: random(), e5xx: random(), drop: random() };
  if (faults.hangRate && draws.hang < faults.hangRate) return 'hang';
  if (faults.resetRate && draws.reset < faults.resetRate) return 'reset';
  if (faults.error5xxRate && draws.e5xx < faults.error5xxRate) return '503';
  if (faults.commitThenDropRate && draws.drop < faults.commitThenDropRate) return 'commit-then-drop';
  return undefined;
}
