// A JSON document: an array of event objects, or one object. The document is read fully into memory, because
// JSON.parse needs all of it; exports large enough for that to matter are JSONL in practice. A malformed
// document becomes one reject at the line of the error. A ".json" file that is really JSONL (one object per
// line, a common mislabel) is read as JSONL instead of being rejected whole.

import { describeJsonError, lineAndColumn } from './json-error.js';
import { jsonArrayElementLines } from './json-element-lines.js';
import { readJsonl } from './read-jsonl.js';
import { BATCH_SIZE, type ReaderContext } from './reader-context.js';
import { kindOf } from './select-path.js';
import type { RawItem } from './types.js';

/** Reads a whole JSON document and yields its object(s) as records, in batches. */
export async function* readJson(chunks: AsyncIterable<Buffer>, ctx: ReaderContext): AsyncGenerator<RawItem[]> {
  const { source, progress } = ctx;
  const parts: Buffer[] = [];
  for await (const c of chunks) parts.push(c);
  const bytes = Buffer.concat(parts);
  let text = bytes.toString('utf8');
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  progress.line = 1;

  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    if (looksLikeJsonl(text)) {
      yield* readJsonl(single(bytes), ctx);
      return;
    }
    const e = describeJsonError(err, text);
    const at = lineAndColumn(text, e.offset);
    yield [
      {
        kind: 'reject',
        source,
        line: at.line,
        reason: `invalid JSON document: ${e.message} at line ${at.line}, column ${at.column}`,
      },
    ];
    return;
  }

  if (Array.isArray(doc)) {
    const lines = jsonArrayElementLines(text);
    let batch: RawItem[] = [];
    for (let i = 0; i < doc.length; i++) {
      const line = lines[i] ?? 1;
      batch.push(toItem(doc[i], line, ctx, `array element ${i + 1}`));
      if (batch.length >= BATCH_SIZE) {
        progress.line = line;
        yield batch;
        batch = [];
      }
    }
    if (batch.length > 0) yield batch;
    return;
  }
  const start = lineAndColumn(text, text.length - text.trimStart().length).line;
  yield [toItem(doc, start, ctx, 'document')];
}

function toItem(value: unknown, line: number, ctx: ReaderContext, what: string): RawItem {
  const { source, selector } = ctx;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return { kind: 'reject', source, line, reason: `not a JSON object (${what} is ${kindOf(value)})` };
  }
  if (selector === null) return { kind: 'record', source, line, fields: value as Record<string, unknown> };
  const s = selector.apply(value as Record<string, unknown>);
  return s.ok ? { kind: 'record', source, line, fields: s.value } : { kind: 'reject', source, line, reason: s.reason };
}

/** True when the text is several lines whose first non-blank line is a JSON object on its own. */
function looksLikeJsonl(text: string): boolean {
  const lines = text.split('\n').filter((l) => l.trim() !== '');
  if (lines.length < 2) return false;
  try {
    const first: unknown = JSON.parse(lines[0] as string);
    return typeof first === 'object' && first !== null && !Array.isArray(first);
  } catch {
    return false;
  }
}

async function* single(b: Buffer): AsyncGenerator<Buffer> {
  yield b;
}
