// V8's optimized code assumes that no ArrayBuffer has been detached yet, until one is: then all of it that relied
// on that is thrown away and compiled again. The map pool detaches buffers from its first block on (every transfer
// to or from a worker does), so each thread of an audit detaches one first, before anything is hot: its hot code
// is then compiled once. Measured: a map worker recompiled every hot function after its first reply
// (--trace-deopt: "code dependencies"), about a fifth of the audit's compiling.

let done = false;

/** Detaches a small buffer of this thread's own, once. */
export function detachEarly(): void {
  if (done) return;
  done = true;
  const b = new ArrayBuffer(8);
  structuredClone(b, { transfer: [b] });
}
