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
  const boot = `import('tsx/esm/api').then((t) => { t.register(); return import(${JSON.stringify(url.href)}); })`;
  return new Worker(boot, { ...opts, eval: true });
}
