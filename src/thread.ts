// Starting a worker thread of leadledger's own: built, the worker is the .js beside its caller; under tsx (the
// tests) both are .ts files, and Node 20 does not pass tsx's loader hooks on to workers, so the worker registers
// them first.
import { Worker, type WorkerOptions } from 'node:worker_threads';

/**
 * Starts the worker module `name` (without extension) that sits beside the module whose import.meta.url is `from`.
 */
export function startWorker(name: string, from: string, opts: WorkerOptions): Worker {
  const underTsx = from.endsWith('.ts');
  const url = new URL(`./${name}${underTsx ? '.ts' : '.js'}`, from);
  if (!underTsx) return new Worker(url, opts);
  // Test-only: scripts/run-tests.mjs sets this once it has checked that dist/ was built from the src/ under test;
  // the built worker then starts without tsx compiling its whole import graph again in every thread (a second or
  // more of CPU per worker, and the suite starts hundreds).
  if (process.env.LEADLEDGER_TEST_BUILT_WORKERS === '1') {
    const src = new URL('./', import.meta.url).href;
    if (url.href.startsWith(src))
      return new Worker(
        new URL(`../dist/${url.href.slice(src.length).replace(/\.ts$/, '.js')}`, import.meta.url),
        opts,
      );
  }
  const boot = `import('tsx/esm/api').then((t) => { t.register(); return import(${JSON.stringify(url.href)}); })`;
  return new Worker(boot, { ...opts, eval: true });
}
