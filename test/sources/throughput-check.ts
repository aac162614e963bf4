// Throughput check for the JSONL hot path (not a test: timing depends on the machine).
// usage: node /work/shared/tools/gen-events.mjs 1000000 > /tmp/ev1m.jsonl
//        node --import tsx test/sources/throughput-check.ts /tmp/ev1m.jsonl [more inputs...]

import { statSync } from 'node:fs';
import { readInputs } from '../../src/sources/read-inputs.js';

const inputs = process.argv.slice(2);
if (inputs.length === 0) {
  console.error('usage: throughput-check.ts FILE...');
  process.exit(2);
}
const bytes = inputs.reduce((n, f) => n + (f === '-' ? 0 : statSync(f).size), 0);
const t0 = performance.now();
let recordCount = 0;
let rejectCount = 0;
let peakRss = 0;
let batches = 0;
for await (const batch of readInputs(inputs, {})) {
  for (const item of batch) {
    if (item.kind === 'record') recordCount++;
    else rejectCount++;
  }
  if (++batches % 100 === 0) peakRss = Math.max(peakRss, process.memoryUsage().rss);
}
const seconds = (performance.now() - t0) / 1000;
const items = recordCount + rejectCount;
console.log(
  `${items.toLocaleString('en')} items (${rejectCount} rejects) from ${(bytes / 1e6).toFixed(0)} MB in ${seconds.toFixed(2)} s: ` +
    `${Math.round(items / seconds).toLocaleString('en')} items/s, ${(bytes / 1e6 / seconds).toFixed(0)} MB/s, peak RSS ${(peakRss / 1e6).toFixed(0)} MB`,
);
