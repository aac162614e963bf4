// Whether a config's mapping is what made every record of a push invalid: the first records are mapped again
// without it, and any of them that then maps to an event shows that the config was written for another input.
import type { Config } from '../mapping/config.js';
import type { MapOptions } from '../mapping/map-record.js';
import { mapInputs } from '../presets/read-as.js';
import type { ReadOptions } from '../sources/types.js';

// The reading options alone: the run's callbacks (what it read, globs that matched nothing) are not called again.
function only(r: Pick<ReadOptions, 'format' | 'encoding' | 'delimiter' | 'select'>): ReadOptions {
  const o: ReadOptions = {};
  if (r.format !== undefined) o.format = r.format;
  if (r.encoding !== undefined) o.encoding = r.encoding;
  if (r.delimiter !== undefined) o.delimiter = r.delimiter;
  if (r.select !== undefined) o.select = r.select;
  return o;
}

/** Records mapped again at most: enough to tell, few enough to cost nothing beside the run. */
const SAMPLE = 200;

/**
 * Whether any of the first records of the inputs maps to an event once the config's field mapping (fields, key,
 * preset) is left out. Standard input, read already, cannot be read again: false for it.
 */
export async function mapsWithoutConfig(
  inputs: readonly string[],
  read: Pick<ReadOptions, 'format' | 'encoding' | 'delimiter' | 'select'>,
  map: MapOptions,
): Promise<boolean> {
  const files = inputs.filter((i) => i !== '-');
  if (files.length === 0) return false;
  const { fields: _f, key: _k, preset: _p, ...rest } = map.config;
  const config: Config = rest;
  let seen = 0;
  for await (const batch of mapInputs(files, only(read), { ...map, config }, undefined)) {
    for (const m of batch) {
      if (m.kind === 'event') return true;
      if (++seen >= SAMPLE) return false;
    }
  }
  return false;
}
