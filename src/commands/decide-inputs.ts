// The audit half of the pipeline, shared by push, its dry-run and replay --from: read → map → decide, in batches.
import { Decider } from '../decide/decide.js';
import type { Decision } from '../decide/types.js';
import type { Ledger } from '../ledger/ledger.js';
import { createMapper, type MapOptions } from '../mapping/map-record.js';
import type { Mapped } from '../mapping/types.js';
import { readInputs } from '../sources/read-inputs.js';
import type { ReadOptions } from '../sources/types.js';

/** What the audit half needs. */
export interface DecideInputsOptions {
  inputs: string[];
  read: ReadOptions;
  map: MapOptions;
  /** Absent in a dry-run before the ledger file exists. */
  ledger?: Ledger;
  /** Stops reading between batches. */
  stop?: AbortSignal;
}

/** Yields the decisions for every record of the inputs, in input order, a batch at a time. */
export async function* decideInputs(o: DecideInputsOptions): AsyncGenerator<Decision[]> {
  const mapper = createMapper(o.map);
  const decider = new Decider({ ledger: o.ledger });
  try {
    for await (const batch of readInputs(o.inputs, o.read)) {
      if (o.stop?.aborted) return;
      const mapped: Mapped[] = batch.map((item) =>
        item.kind === 'reject' ? { kind: 'invalid', source: item.source, line: item.line, reason: item.reason } : mapper(item),
      );
      yield decider.decideBatch(mapped);
    }
  } finally {
    decider.close();
  }
}
