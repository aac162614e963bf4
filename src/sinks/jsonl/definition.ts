// The jsonl sink's definition: its flag and how it opens (registry.ts lists it). It takes no config settings.
import { UsageError } from '../../errors.js';
import { defineSink } from '../definition.js';

interface JsonlOptions {
  output?: string;
}

/** One JSON line per lead, appended to a file or written to stdout. */
export const jsonl = defineSink({
  name: 'jsonl',
  summary: "append one JSON line per lead to --output (a file, or '-' for stdout)",
  docs: {
    sends:
      'one JSON line per lead, `{"key": "<downstream key>", "occurred_at": "<event time>", "lead": {...}}` (the lead as in the webhook\'s default body), appended one batch at a time (fsync per batch on a regular file; a device such as `/dev/null` or a FIFO is not fsynced); never through a symlink; a file whose last line was cut (a run killed mid-write) gets its new lines after a newline, the cut line left as it was',
    batch: '2000',
    inDoubt:
      'looked for in the file (its whole lines, by the downstream key each carries): those found are settled; the rest stay in doubt (the file may have been rotated since) for `replay --in-doubt --resend`, which looks first too; stdout, a device or a FIFO cannot be looked in',
  },
  flags: [{ flags: '--output <file>', description: 'jsonl sink: file to append to, - for stdout' }],
  // The section may be there, empty.
  configSchema: (z) => z.object({}).strict(),
  read: ({ flags }): JsonlOptions => ({ output: typeof flags.output === 'string' ? flags.output : undefined }),
  shown: (o) => ({ output: o.output }),
  replayArgs: (o) => (o.output ? ['--output', o.output] : []),
  // Opening creates the file: doctor looks at it, and at its folder, instead.
  async check(o) {
    const { checkOutput } = await import('./check.js');
    return checkOutput(o.output);
  },
  async open(o, ctx) {
    if (!o.output) throw new UsageError("the jsonl sink needs --output (a file path, or '-' for stdout)");
    const { JsonlSink } = await import('./sink.js');
    const sink = new JsonlSink({ output: o.output, ...(ctx.stdout ? { stdout: ctx.stdout } : {}) });
    await sink.open();
    return { sink };
  },
});
