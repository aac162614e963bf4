// Reader fuzzing: random and mutated bytes (JSONL, JSON, CSV, and gzip of them) must never crash a reader or make it
// hang, and every line of the input must be accounted for: read into a record, rejected with its line, or named
// as unread. The engine, given the same bytes, must read them as the in-thread readers do.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync, gzipSync } from 'node:zlib';
import fc from 'fast-check';
import type * as DecideInputsModule from '../../src/engine/decide-inputs.js';
import { readInputs } from '../../src/sources/read-inputs.js';
import type { RawItem } from '../../src/sources/types.js';
import { csvInput, jsonInput, jsonlInput } from './arbitraries.js';

const { decideInputs } = (await import(
  new URL('../../dist/engine/decide-inputs.js', import.meta.url).href
)) as typeof DecideInputsModule;

/** One mutated input: its bytes, the format it is read as, and whether they are gzip. */
export interface ReaderCase {
  format: 'jsonl' | 'json' | 'csv';
  bytes: Buffer;
  gzip: boolean;
}

// Bytes that mean something to a reader: quotes, brackets, separators, line ends, a BOM, NUL, bytes no UTF-8 has.
const MEANINGFUL = [
  0x22, 0x5b, 0x5d, 0x7b, 0x7d, 0x2c, 0x3b, 0x09, 0x0a, 0x0d, 0x00, 0x5c, 0xef, 0xbb, 0xbf, 0xff, 0xfe, 0xc3, 0x80,
];

const mutation = fc.oneof(
  fc.record({ op: fc.constant('flip' as const), at: fc.nat(), byte: fc.constantFrom(...MEANINGFUL) }),
  fc.record({
    op: fc.constant('insert' as const),
    at: fc.nat(),
    bytes: fc.array(fc.constantFrom(...MEANINGFUL), { minLength: 1, maxLength: 4 }),
  }),
  fc.record({ op: fc.constant('cut' as const), at: fc.nat() }),
  fc.record({ op: fc.constant('repeat' as const), at: fc.nat(), length: fc.integer({ min: 1, max: 64 }) }),
);
type Mutation = typeof mutation extends fc.Arbitrary<infer T> ? T : never;

function mutate(b: Buffer, ms: Mutation[]): Buffer {
  let out = Buffer.from(b);
  for (const m of ms) {
    if (out.length === 0) break;
    const at = m.at % out.length;
    if (m.op === 'flip') out[at] = m.byte;
    else if (m.op === 'insert') out = Buffer.concat([out.subarray(0, at), Buffer.from(m.bytes), out.subarray(at)]);
    else if (m.op === 'cut') out = out.subarray(0, at);
    else out = Buffer.concat([out.subarray(0, at), out.subarray(at, at + m.length), out.subarray(at)]);
  }
  return out;
}

/** Mutated inputs of every format, some as gzip (mutated before or after compression), some pure noise. */
export const readerCase: fc.Arbitrary<ReaderCase> = fc.oneof(
  fc
    .tuple(
      fc.oneof(
        jsonlInput.map((b) => ['jsonl', b] as const),
        jsonInput.map((b) => ['json', b] as const),
        csvInput.map((b) => ['csv', b] as const),
      ),
      fc.array(mutation, { maxLength: 6 }),
      fc.constantFrom('plain', 'plain', 'gzip', 'gzip-then-mutate'),
    )
    .map(([[format, bytes], ms, wrap]) => {
      if (wrap === 'plain') return { format, bytes: mutate(bytes, ms), gzip: false };
      if (wrap === 'gzip') return { format, bytes: gzipSync(mutate(bytes, ms)), gzip: true };
      return { format, bytes: mutate(gzipSync(bytes), ms.slice(0, 2)), gzip: true };
    }),
  fc
    .tuple(fc.constantFrom('jsonl' as const, 'json' as const, 'csv' as const), fc.uint8Array({ maxLength: 3000 }))
    .map(([format, bytes]) => ({ format, bytes: Buffer.from(bytes), gzip: false })),
);

const HANG_MS = 20_000;

/** Reads the case in-thread and through the engine; asserts no crash or hang, and that every line is accounted for. */
export async function assertReadersAccountFor(c: ReaderCase): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'leadledger-readfuzz-'));
  try {
    const file = join(dir, `input.${c.format}${c.gzip ? '.gz' : ''}`);
    writeFileSync(file, c.bytes);
    const items: RawItem[] = [];
    await withinTime(
      (async () => {
        for await (const batch of readInputs([file], {})) items.push(...batch);
      })(),
      'in-thread read',
    );
    accountFor(c, items);
    // The engine, in-thread and with workers, reads the same records, rejects and unread parts.
    for (const workers of [0, 2]) {
      const lines: number[] = [];
      const unread: number[] = [];
      await withinTime(
        (async () => {
          for await (const batch of decideInputs({
            inputs: [file],
            read: {},
            map: { config: {} },
            workers,
            blockBytes: 512,
            onUnread: (u) => unread.push(u.line),
          }))
            for (const d of batch) lines.push(d.line);
        })(),
        `engine with ${workers} workers`,
      );
      assert.deepEqual(
        lines,
        items.filter((i) => i.kind !== 'unread').map((i) => i.line),
        `engine with ${workers} workers: the lines of its decisions`,
      );
      assert.deepEqual(
        unread,
        items.filter((i) => i.kind === 'unread').map((i) => i.line),
        `engine with ${workers} workers: unread parts`,
      );
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function withinTime(p: Promise<void>, what: string): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const hang = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not end within ${HANG_MS / 1000} s (a hang)`)), HANG_MS);
  });
  try {
    await Promise.race([p, hang]);
  } finally {
    clearTimeout(timer);
  }
}

// Every line is accounted for: lines of items in order and within the input; for JSONL, every non-blank line read
// before the input failed is exactly one record or reject, and whatever follows a failure is named unread.
function accountFor(c: ReaderCase, items: RawItem[]): void {
  let text: Buffer = c.bytes;
  if (c.gzip) {
    try {
      text = gunzipSync(c.bytes);
    } catch {
      text = Buffer.alloc(0); // damaged: what was read before the damage is checked for order only
    }
  }
  // A CSV whose rows end at a lone CR (old Macs) numbers them by CR. JSON lines end at LF, or at a lone CR too
  // when the input's first line end is one (open-input.ts gives those inputs with LF).
  const firstCr = text.indexOf(0x0d);
  const firstLf = text.indexOf(0x0a);
  const crLines = firstCr >= 0 && (firstLf < 0 || firstCr < firstLf) && text[firstCr + 1] !== 0x0a;
  const lineEnd = c.format === 'csv' || crLines ? /\r\n|\r|\n/ : '\n';
  const total = text.length === 0 ? 0 : text.toString('latin1').split(lineEnd).length;
  let last = 0;
  for (const it of items) {
    assert.ok(it.line >= 1, `line ${it.line} of ${it.kind}`);
    if (total > 0) assert.ok(it.line <= total, `${it.kind} at line ${it.line} past the input's ${total} lines`);
    if (it.kind === 'unread' && it.toLine !== undefined) assert.ok(it.toLine >= it.line);
    // CSV records that hold a line break, and JSON elements on one line, may share or skip lines; never go back.
    assert.ok(it.line >= last, `${it.kind} at line ${it.line} after line ${last}`);
    last = it.line;
  }
  if (c.format !== 'jsonl' || c.gzip) return;
  const lines = text.toString('latin1').split(lineEnd);
  const covered = new Set<number>();
  let unreadFrom = Infinity;
  for (const it of items) {
    if (it.kind === 'unread') {
      if (it.toLine === undefined) unreadFrom = Math.min(unreadFrom, it.line);
      else for (let l = it.line; l <= it.toLine; l++) covered.add(l);
    } else {
      assert.ok(!covered.has(it.line), `line ${it.line} read twice`);
      covered.add(it.line);
    }
  }
  lines.forEach((l, i) => {
    const n = i + 1;
    const blank = l.replace(/^\ufeff|^\xef\xbb\xbf/, '').trim() === '';
    if (blank || n >= unreadFrom) return;
    assert.ok(
      covered.has(n),
      `line ${n} was neither read, rejected nor named unread: ${JSON.stringify(l.slice(0, 80))}`,
    );
  });
}
