// A node:test reporter that writes how long each test file took, as one JSON object (file → ms), for
// scripts/run-tests.mjs to start the longest files first next time. A file's time is the sum of its outermost tests'
// (Node 20 reports each file as one test around its own; later Nodes report its top-level tests).
export default async function* testTimes(source) {
  const files = new Map();
  for await (const event of source) {
    if (event.type !== 'test:pass' && event.type !== 'test:fail') continue;
    const { file, nesting, details } = event.data;
    if (!file) continue;
    const f = files.get(file) ?? { nesting: Infinity, ms: 0 };
    if (nesting < f.nesting) Object.assign(f, { nesting, ms: 0 });
    if (nesting === f.nesting) f.ms += details?.duration_ms ?? 0;
    files.set(file, f);
  }
  yield JSON.stringify(Object.fromEntries([...files].map(([file, f]) => [file, Math.round(f.ms)]))) + '\n';
}
