// What every format reader gets: where it reads from, the selector, and a progress cell that lets
// read-inputs name the line reached when the input fails midway (a corrupt gzip, a vanished file).

import type { Recoded } from './decode-text.js';
import type { Selector } from './select-path.js';
import type { FieldDates } from './types.js';

/** Items per yielded batch: big enough that the per-batch await costs nothing, small enough to stream. */
export const BATCH_SIZE = 1000;

/** Shared state of one input's reader. */
export interface ReaderContext {
  source: string;
  selector: Selector | null;
  /** The last line the reader has fully consumed; updated at least once per chunk. */
  progress: { line: number };
  /** The bytes are a block from the middle of the input (parallel reading): its first line is not the input's first, so no BOM. */
  midInput?: boolean;
  /** Added to every line number (a CSV block parsed behind a copy of the header: see read-csv-parallel.ts). */
  lineOffset?: number;
  /** Set by the CSV reader when the text ended inside a quoted field. */
  unclosedQuote?: boolean;
  /** Items per batch, when not BATCH_SIZE (map workers take small batches so parsed records die young). */
  batchSize?: number;
  /** Lines of a UTF-8 input that were not UTF-8 and were read as Windows-1252 (set once the reader ends). */
  recoded?: Recoded;
  /** Notes on the input as a whole that a person should read (a header that repeats a name). */
  notes?: string[];
  /** What the input's records were recognized as (a source's title → its events), filled while they are mapped. */
  readAs?: Map<string, number>;
  /** How the times of its fields are read, as its first records showed them (presets/date-sample.ts). */
  dates?: FieldDates[];
}
