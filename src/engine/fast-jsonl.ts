// The fast path of JSONL mapping, for the map workers: a line of a shape already seen is checked byte by byte
// against a template of that shape and mapped straight into the block, without JSON.parse, a mapped object or
// a string per field. Exports repeat one shape for millions of lines; parsing each into objects, mapping them and
// encoding the result took ~3 µs a line (measured), most of it allocation and garbage collection.
//
// What makes it exact: a template is learned from a line that the general path (JSON.parse, createMapper) has
// just mapped, and is bound to the mapper's plan for that shape. A later line takes the fast path only when
//  - it is valid JSON with exactly the template's structure: the same keys, byte for byte and in order, at every
//    level, and the same kind of value (string, number, literal, array, object) under each key, so JSON.parse
//    would give an object of the same shape and the mapper would use the same plan;
//  - every mapped value is a string without escapes, in ASCII or two-byte UTF-8 (so its bytes are exactly the
//    UTF-8 of the string JSON.parse would give), already trimmed and normalized as the mapper would leave it;
//  - the email is ASCII and valid, the phone is one fastE164 decides, and the time is canonical ISO UTC.
// Anything else (an escape, a number where a string was, a stray byte, an invalid email) goes the general way,
// which maps or rejects it with its reason. A test compares both paths on many lines (fast-jsonl.test.ts).
import { isUtf8 } from 'node:buffer';
import type { BlockEncoder } from './block.js';
import { FAST_FIELDS, fastPlan, LeadWriter } from './fast-emit.js';
import { isWrapperPath, type FieldPlan } from '../mapping/fields.js';
import { mapItem, type Mapper } from '../mapping/map-record.js';
import { lineEnd, lineItem, lineStart } from '../sources/read-jsonl.js';
import type { Selector } from '../sources/select-path.js';

// Template operations, in document order.
const OBJ = 1; // an object opens (its members follow, then END)
const KEY_FIRST = 2; // the first member's key (argument: index into keys)
const KEY_NEXT = 3; // a later member's key, after a comma
const STR = 4; // a string value (argument: the field of FAST_FIELDS it is, -1 for none; see Template.spans)
const NUM = 5;
const TRUE = 6;
const FALSE = 7;
const NULL = 8;
const ARR = 9; // an array: validated, not templated
const END = 10; // the object closes

const LF = 0x0a;
const CR = 0x0d;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const MAX_DEPTH = 64;
// Templates kept per plan: lines of one shape may differ in the kinds of a few values (null or a string).
const MAX_TEMPLATES = 8;

interface Template {
  ops: Int32Array;
  /** The keys of the object members, byte for byte. */
  keys: Literal[];
  /**
   * Where each of FAST_FIELDS' texts starts and ends in the line (2 numbers a field): match() writes those of the
   * fields the plan reads straight here, from the STR ops' arguments; the others stay -1.
   */
  spans: Int32Array;
  /** Lines of it hold objects or lists besides their wrappers, where a lacking phone or name may be (see learn). */
  inner: boolean;
  /** Bit f: field f has later places in the plan, read by the general path when its string is empty. */
  fallback: number;
  /** Fields read from the same string as another field (a plan may read one path twice): [field, from] pairs. */
  aliases: Int32Array;
  /**
   * The learned line as literal bytes between its values (keys, quotes, colons, commas, braces and the spacing
   * between them): a line with the same bytes there and values of the same kinds is one of this shape too, checked
   * a word at a time (matchLiterals). lits[i] precedes value i; the last one ends the line.
   */
  lits: Literal[];
  /** The op of each value (STR, NUM, TRUE, FALSE, NULL, ARR). */
  kinds: Int32Array;
  /** For each value, the field its string is (-1: none, or not a string). */
  fields: Int32Array;
  /**
   * No array among its values: matched from a line's start with the rest of the block after it (tryAt), no value
   * can run past the line's end (strings stop at its LF, a control byte; an array's whitespace would not).
   */
  open: boolean;
}

interface Literal {
  /** Its bytes as little-endian words, then its last bytes (fewer than four) on their own. */
  words: Int32Array;
  tail: Uint8Array;
  length: number;
}

function literalOf(bytes: Uint8Array): Literal {
  const words = new Int32Array(bytes.length >>> 2);
  const v = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  for (let w = 0; w < words.length; w++) words[w] = v.getInt32(w * 4, true);
  return { words, tail: Uint8Array.from(bytes.subarray(words.length * 4)), length: bytes.length };
}

/**
 * Maps a block of whole JSONL lines (the last may lack its newline) into the encoder, numbered from 1, exactly as
 * readJsonl and the mapper would: lines of a shape the fast path knows go straight into the block, the others are
 * parsed and mapped (and teach the fast path their shape). Returns the number of lines.
 */
export function mapJsonlBlock(
  buf: Buffer,
  first: boolean,
  enc: BlockEncoder,
  mapper: Mapper,
  fast: FastJsonl | undefined,
  selector: Selector | null,
  recoded?: (line: number) => void,
): number {
  if (first) fast?.startInput();
  const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  // A line that is not UTF-8 is read as Windows-1252 by the general path (lineItem), and counted: never the fast
  // path's, which reads bytes as UTF-8. One check of the block tells whether any line needs its own.
  const valid = isUtf8(buf);
  let line = 0;
  for (let start = 0; start < buf.length;) {
    // Most lines: a template's literal bytes from their first byte, ending where the line does, found without
    // looking for the line's end first (the input's first line is not: it may open with a BOM).
    if (fast !== undefined && valid && (start > 0 || !first)) {
      const next = fast.tryAt(buf, view, start, line + 1, enc);
      if (next >= 0) {
        line++;
        start = next;
        continue;
      }
    }
    let end = buf.indexOf(LF, start);
    const next = end < 0 ? buf.length : end + 1;
    if (end < 0) end = buf.length;
    line++;
    const from = lineStart(buf, start, end, first && line === 1);
    const to = lineEnd(buf, from, end);
    start = next;
    if (to < 0) continue;
    const utf8 = valid || isUtf8(buf.subarray(from, to));
    if (utf8 && fast?.tryLine(buf, view, from, to, line, enc)) continue;
    const item = lineItem(buf, from, to, line, '', selector, recoded);
    if (Array.isArray(item)) for (const x of item) enc.add(mapItem(mapper, x));
    else {
      enc.add(mapItem(mapper, item));
      if (item.kind === 'record' && utf8) fast?.learn(buf, from, to);
    }
  }
  return line;
}

/** Per-worker fast path: learns templates from lines the general path mapped, and maps matching lines itself. */
export class FastJsonl {
  private templates: Template[] = [];
  private planId = -1;
  /** Lines mapped by the fast path (in this input; tests read it). */
  hits = 0;
  private learned = 0;
  private off = false;
  private readonly writer: LeadWriter;

  constructor(private readonly mapper: Mapper) {
    this.writer = new LeadWriter(!mapper.hashLater);
  }

  /** Whether these options leave mapping to the plan alone, so the fast path may be used. */
  static allowed(mapper: Mapper, select: string | undefined): boolean {
    return mapper.plain && select === undefined;
  }

  /**
   * Maps line buf[start..end) (a non-blank JSONL line) into the encoder if it fits a template; false when it must
   * go the general way.
   */
  tryLine(buf: Buffer, view: DataView, start: number, end: number, line: number, enc: BlockEncoder): boolean {
    const cur = this.mapper.current();
    if (this.off || !cur || cur.id !== this.planId) return false;
    for (const t of this.templates) {
      if (matchLiterals(t, buf, view, start, end) || match(t, buf, view, start, end))
        return this.write(t, buf, view, line, enc);
    }
    return false;
  }

  /**
   * Maps the line that starts at buf[start] if it has a template's literal bytes (and values of its kinds) and
   * ends right after them, at a LF, a CR LF or the end of the block: returns where the next line starts; -1 when
   * the line must be read the usual way (from its end, found first).
   */
  tryAt(buf: Buffer, view: DataView, start: number, line: number, enc: BlockEncoder): number {
    const cur = this.mapper.current();
    if (this.off || !cur || cur.id !== this.planId) return -1;
    const n = buf.length;
    for (const t of this.templates) {
      if (!t.open) continue;
      const p = literalEnd(t, buf, view, start, n);
      if (p < 0) continue;
      let next: number;
      const c = buf[p];
      if (p === n) next = n;
      else if (c === LF) next = p + 1;
      else if (c === CR && (p + 1 === n || buf[p + 1] === LF))
        next = p + 1 === n ? n : p + 2; // lineEnd drops the CR
      else continue; // the line goes on: it is not of this template
      return this.write(t, buf, view, line, enc) ? next : -1;
    }
    return -1;
  }

  // After a match against t: the event into the encoder (false: a value needs the general path).
  private write(t: Template, buf: Buffer, view: DataView, line: number, enc: BlockEncoder): boolean {
    const fs = t.spans;
    const aliases = t.aliases;
    for (let k = 0; k < aliases.length; k += 2) {
      fs[aliases[k]! * 2] = fs[aliases[k + 1]! * 2]!;
      fs[aliases[k]! * 2 + 1] = fs[aliases[k + 1]! * 2 + 1]!;
    }
    if (!this.writer.write(buf, view, fs, line, enc, t.fallback, t.inner)) return false;
    this.hits++;
    return true;
  }

  /** A new input starts: the fast path is tried again even if the last input's shapes kept it off. */
  startInput(): void {
    this.learned = 0;
    this.hits = 0;
    this.off = false;
  }

  /** After the general path mapped line buf[start..end): learns its template if it has none. */
  learn(buf: Buffer, start: number, end: number): void {
    if (this.off) return;
    const cur = this.mapper.current();
    if (!cur) return;
    if (cur.id !== this.planId) {
      this.templates = [];
      this.planId = cur.id;
    }
    if (this.templates.length >= MAX_TEMPLATES) return;
    const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
    for (const t of this.templates) if (match(t, buf, view, start, end)) return; // a value the fast path refuses
    // Templates hold for the mapper's current shape only: lines that keep changing shape would make this learn
    // (about a third of a general line's cost) on nearly every line and use little, so past a few thousand
    // learnings with fewer than half as many lines to show for them, the rest of the input goes the general way.
    if (++this.learned >= 2000 && this.hits * 2 < this.learned) {
      this.off = true;
      return;
    }
    const t = learnTemplate(buf, start, end, cur.plan);
    if (t) this.templates.push(t);
  }
}

// ---- matching a line against a template ----

/** True when buf[start..end) is one JSON object of the template's structure; fills t.spans for its fields. */
function match(t: Template, b: Uint8Array, view: DataView, start: number, end: number): boolean {
  const { ops, keys, spans } = t;
  let p = ws(b, start, end);
  for (let pc = 0; pc < ops.length;) {
    const op = ops[pc++]!;
    switch (op) {
      case OBJ:
        if (b[p] !== 0x7b) return false;
        p = ws(b, p + 1, end);
        break;
      case KEY_FIRST:
      case KEY_NEXT: {
        if (op === KEY_NEXT) {
          if (b[p] !== 0x2c) return false;
          p = ws(b, p + 1, end);
        }
        const k = keys[ops[pc++]!]!;
        if (b[p] !== QUOTE || p + k.length + 2 > end) return false;
        p++;
        if (!literalAt(k, b, view, p)) return false;
        p += k.length;
        if (b[p] !== QUOTE) return false;
        p = ws(b, p + 1, end);
        if (b[p] !== 0x3a) return false;
        p = ws(b, p + 1, end);
        break;
      }
      case STR: {
        const f = ops[pc++]!;
        if (b[p] !== QUOTE) return false;
        const q = stringEnd(b, view, p, end);
        if (q < 0) return false;
        if (f >= 0) {
          spans[f * 2] = p + 1;
          spans[f * 2 + 1] = q - 1;
        }
        p = ws(b, q, end);
        break;
      }
      case END:
        if (b[p] !== 0x7d) return false;
        p = ws(b, p + 1, end);
        break;
      default: {
        const q = skipKind(op, b, p, end);
        if (q < 0) return false;
        p = ws(b, q, end);
      }
    }
  }
  return p === end;
}

/**
 * match(), for a line whose bytes between values are those of the line the template was learned from: one word
 * compare per four bytes of keys and punctuation, instead of a step per token. False sends the line to match().
 */
function matchLiterals(t: Template, b: Uint8Array, view: DataView, start: number, end: number): boolean {
  return literalEnd(t, b, view, start, end) === end;
}

/** Whether b holds the literal's bytes at p (the caller checked that they fit), compared a word at a time. */
function literalAt(lit: Literal, b: Uint8Array, view: DataView, p: number): boolean {
  const words = lit.words;
  for (let w = 0; w < words.length; w++, p += 4) if (view.getInt32(p, true) !== words[w]) return false;
  const tail = lit.tail;
  for (let k = 0; k < tail.length; k++, p++) if (b[p] !== tail[k]) return false;
  return true;
}

/** Where the template's last literal ends, matched from b[start] on (nothing past `end` read); -1: no match. */
function literalEnd(t: Template, b: Uint8Array, view: DataView, start: number, end: number): number {
  const { lits, kinds, fields, spans } = t;
  let p = start;
  for (let i = 0; ; i++) {
    const lit = lits[i]!;
    if (p + lit.length > end || !literalAt(lit, b, view, p)) return -1;
    p += lit.length;
    if (i === kinds.length) return p;
    const kind = kinds[i]!;
    if (kind === STR) {
      // The literal ended with the string's opening quote.
      const q = stringEnd(b, view, p - 1, end);
      if (q < 0) return -1;
      const f = fields[i]!;
      if (f >= 0) {
        spans[f * 2] = p;
        spans[f * 2 + 1] = q - 1;
      }
      p = q;
    } else {
      p = skipKind(kind, b, p, end);
      if (p < 0) return -1;
    }
  }
}

// ---- learning a template ----

function learnTemplate(b: Uint8Array, start: number, end: number, plan: FieldPlan): Template | undefined {
  const ops: number[] = [];
  const keys: Literal[] = [];
  const stringAt = new Map<string, number>(); // path (keys joined by \0) → string index
  const kindOf = new Map<string, number>(); // path → the op of its value (OBJ for an object)
  let strings = 0;
  // Every value in order: its op, where it starts (a string: just after its opening quote) and ends, and its
  // string index (-1: not a string).
  const values: Array<{ kind: number; start: number; end: number; string: number }> = [];
  const path: string[] = [];

  // Returns the position after the object at p, or -1 when the line is not what a template can describe.
  const object = (p: number, depth: number): number => {
    if (b[p] !== 0x7b || depth > MAX_DEPTH) return -1;
    ops.push(OBJ);
    p = ws(b, p + 1, end);
    const seen = new Set<string>();
    if (b[p] === 0x7d) {
      ops.push(END);
      return p + 1;
    }
    for (let first = true; ; first = false) {
      if (!first) {
        if (b[p] !== 0x2c) return -1;
        p = ws(b, p + 1, end);
      }
      if (b[p] !== QUOTE) return -1;
      const q = skipString(b, p, end);
      if (q < 0) return -1;
      const kb = b.subarray(p + 1, q - 1);
      // Keys compared byte for byte must mean one string each: no escapes, ASCII or two-byte UTF-8.
      if (!simpleUtf8(kb, 0, kb.length)) return -1;
      const key = Buffer.from(kb).toString('utf8');
      if (seen.has(key)) return -1; // JSON.parse keeps the last of duplicate keys
      seen.add(key);
      ops.push(first ? KEY_FIRST : KEY_NEXT, keys.push(literalOf(kb)) - 1);
      p = ws(b, q, end);
      if (b[p] !== 0x3a) return -1;
      p = ws(b, p + 1, end);
      path.push(key);
      const c = b[p];
      if (c === QUOTE) {
        const v = skipString(b, p, end);
        if (v < 0) return -1;
        stringAt.set(path.join('\0'), strings);
        kindOf.set(path.join('\0'), STR);
        values.push({ kind: STR, start: p + 1, end: v, string: strings });
        ops.push(STR, strings++);
        p = v;
      } else if (c === 0x7b) {
        kindOf.set(path.join('\0'), OBJ);
        p = object(p, depth + 1);
        if (p < 0) return -1;
      } else {
        const kind = kindAt(c);
        if (kind === 0) return -1;
        const v = skipKind(kind, b, p, end);
        if (v < 0) return -1;
        values.push({ kind, start: p, end: v, string: -1 });
        kindOf.set(path.join('\0'), kind);
        ops.push(kind);
        p = v;
      }
      path.pop();
      p = ws(b, p, end);
      if (b[p] === 0x7d) {
        ops.push(END);
        return p + 1;
      }
    }
  };

  const p = object(ws(b, start, end), 0);
  if (p < 0 || ws(b, p, end) !== end) return undefined;
  if (!fastPlan(plan)) return undefined;
  // Objects or lists besides the wrappers: where a line lacks a phone or a name, the general path looks for them there
  // (FieldPlan.complement), and the writer leaves such lines to it.
  const inner =
    !!plan.complement &&
    [...kindOf].some(([k, kind]) => kind === ARR || (kind === OBJ && !isWrapperPath(k.split('\0'))));
  const slots = new Int32Array(FAST_FIELDS.length).fill(-1);
  let fallback = 0;
  for (let f = 0; f < FAST_FIELDS.length; f++) {
    // The general path reads the first of the plan's places that holds a string or a number: in lines of this
    // template, the first string among them, as long as no number (text the fast path does not write) comes
    // first, nor a value whose kind the template does not fix (an array position takes any value). Objects, null,
    // true and false hold no field's value.
    const paths = plan[FAST_FIELDS[f]!];
    let chosen = -1;
    for (const fp of paths) {
      const k = fp.join('\0');
      const kind = kindOf.get(k);
      const maybeText = kind === STR || kind === NUM || kind === ARR || kind === undefined;
      if (chosen >= 0) {
        if (maybeText) fallback |= 1 << f; // read by the general path when the chosen string is empty
        continue;
      }
      if (kind === STR) chosen = stringAt.get(k)!;
      else if (maybeText) return undefined;
    }
    slots[f] = chosen;
  }
  // Each STR op names the first field read from its string; a field read from a string another field reads first
  // is an alias, copied after the match.
  const aliases: number[] = [];
  for (let pc = 0; pc < ops.length; pc++) {
    const op = ops[pc]!;
    if (op === KEY_FIRST || op === KEY_NEXT) pc++;
    else if (op === STR) {
      const i = ops[++pc]!;
      const fields = [...slots.keys()].filter((f) => slots[f] === i);
      ops[pc] = fields[0] ?? -1;
      for (const f of fields.slice(1)) aliases.push(f, fields[0]!);
    }
  }
  // The bytes between values, as literals, and each value's field (through its string index).
  const lits: Literal[] = [];
  let at = start;
  for (const v of values) {
    lits.push(literalOf(b.subarray(at, v.start)));
    at = v.end;
  }
  lits.push(literalOf(b.subarray(at, end)));
  const fieldOfString = (i: number): number => (i < 0 ? -1 : slots.indexOf(i));
  return {
    ops: Int32Array.from(ops),
    keys,
    spans: new Int32Array(FAST_FIELDS.length * 2).fill(-1),
    fallback,
    inner,
    aliases: Int32Array.from(aliases),
    lits,
    kinds: Int32Array.from(values, (v) => v.kind),
    fields: Int32Array.from(values, (v) => fieldOfString(v.string)),
    open: values.every((v) => v.kind !== ARR),
  };
}

// ---- JSON tokens ----

function ws(b: Uint8Array, p: number, end: number): number {
  while (p < end) {
    const c = b[p]!;
    if (c !== 0x20 && c !== 0x09 && c !== 0x0d && c !== 0x0a) break;
    p++;
  }
  return p;
}

/** The kind of value starting with byte c (not a string or object), 0 if none. */
function kindAt(c: number | undefined): number {
  if (c === 0x5b) return ARR;
  if (c === 0x74) return TRUE;
  if (c === 0x66) return FALSE;
  if (c === 0x6e) return NULL;
  if (c === 0x2d || (c !== undefined && c >= 0x30 && c <= 0x39)) return NUM;
  return 0;
}

function skipKind(kind: number, b: Uint8Array, p: number, end: number): number {
  switch (kind) {
    case NUM:
      return skipNumber(b, p, end);
    case TRUE:
      return literal(b, p, end, 0x74, 0x72, 0x75, 0x65);
    case FALSE:
      return b[p] === 0x66 ? literal(b, p + 1, end, 0x61, 0x6c, 0x73, 0x65) : -1;
    case NULL:
      return literal(b, p, end, 0x6e, 0x75, 0x6c, 0x6c);
    case ARR:
      return skipValue(b, p, end, 0);
    default:
      return -1;
  }
}

function literal(b: Uint8Array, p: number, end: number, c0: number, c1: number, c2: number, c3: number): number {
  if (p + 4 > end || b[p] !== c0 || b[p + 1] !== c1 || b[p + 2] !== c2 || b[p + 3] !== c3) return -1;
  return p + 4;
}

/** After the string whose opening quote is at p, or -1 when it is not valid JSON (raw control byte, bad escape). */
function skipString(b: Uint8Array, p: number, end: number): number {
  for (let i = p + 1; i < end; i++) {
    const c = b[i]!;
    if (c === QUOTE) return i + 1;
    if (c < 0x20) return -1;
    if (c === BACKSLASH && (i = escapeEnd(b, i, end)) < 0) return -1;
  }
  return -1;
}

/** Where the escape whose backslash is at b[i] ends (its last byte), or -1 when it is not a JSON escape. */
function escapeEnd(b: Uint8Array, i: number, end: number): number {
  const e = b[++i];
  if (e === 0x75) {
    if (i + 4 >= end) return -1;
    for (let h = 1; h <= 4; h++) if (!isHex(b[i + h]!)) return -1;
    return i + 4;
  }
  return e === QUOTE ||
    e === BACKSLASH ||
    e === 0x2f ||
    e === 0x62 ||
    e === 0x66 ||
    e === 0x6e ||
    e === 0x72 ||
    e === 0x74
    ? i
    : -1;
}

/**
 * skipString, for the string values of a line matched against a template: four bytes a step while none of them is
 * a quote, a backslash or a control byte (bit tricks on a 32-bit word, whose flags are exact up to the first such
 * byte), then byte by byte through that word, escapes and all.
 */
function stringEnd(b: Uint8Array, view: DataView, p: number, end: number): number {
  let i = p + 1;
  for (;;) {
    for (; i + 4 <= end; i += 4) {
      const w = view.getInt32(i, true);
      const q = w ^ 0x22222222;
      const e = w ^ 0x5c5c5c5c;
      if ((((q - 0x01010101) & ~q) | ((e - 0x01010101) & ~e) | ((w - 0x20202020) & ~w)) & 0x80808080) break;
    }
    for (const stop = Math.min(i + 4, end); i < stop; i++) {
      const c = b[i]!;
      if (c === QUOTE) return i + 1;
      if (c < 0x20) return -1;
      if (c === BACKSLASH && (i = escapeEnd(b, i, end)) < 0) return -1;
    }
    if (i >= end) return -1;
  }
}

function isHex(c: number): boolean {
  return (c >= 0x30 && c <= 0x39) || (c >= 0x61 && c <= 0x66) || (c >= 0x41 && c <= 0x46);
}

/** After the JSON number at p, or -1: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? */
function skipNumber(b: Uint8Array, p: number, end: number): number {
  if (b[p] === 0x2d) p++;
  if (b[p] === 0x30) p++;
  else if (isDigit(b[p])) while (isDigit(b[p]) && p < end) p++;
  else return -1;
  if (b[p] === 0x2e) {
    p++;
    if (!isDigit(b[p])) return -1;
    while (isDigit(b[p]) && p < end) p++;
  }
  if (b[p] === 0x65 || b[p] === 0x45) {
    p++;
    if (b[p] === 0x2b || b[p] === 0x2d) p++;
    if (!isDigit(b[p])) return -1;
    while (isDigit(b[p]) && p < end) p++;
  }
  return p > end ? -1 : p;
}

function isDigit(c: number | undefined): boolean {
  return c !== undefined && c >= 0x30 && c <= 0x39;
}

/** After any JSON value at p (inside an array), or -1. */
function skipValue(b: Uint8Array, p: number, end: number, depth: number): number {
  if (depth > MAX_DEPTH) return -1;
  const c = b[p];
  if (c === QUOTE) return skipString(b, p, end);
  if (c === 0x7b || c === 0x5b) {
    const close = c === 0x7b ? 0x7d : 0x5d;
    p = ws(b, p + 1, end);
    if (b[p] === close) return p + 1;
    for (;;) {
      if (c === 0x7b) {
        if (b[p] !== QUOTE) return -1;
        p = skipString(b, p, end);
        if (p < 0) return -1;
        p = ws(b, p, end);
        if (b[p] !== 0x3a) return -1;
        p = ws(b, p + 1, end);
      }
      p = skipValue(b, p, end, depth + 1);
      if (p < 0) return -1;
      p = ws(b, p, end);
      if (b[p] === close) return p + 1;
      if (b[p] !== 0x2c) return -1;
      p = ws(b, p + 1, end);
    }
  }
  const kind = kindAt(c);
  return kind === 0 || kind === ARR ? -1 : skipKind(kind, b, p, end);
}

// ---- values ----

/** ASCII, or two-byte UTF-8 sequences (U+0080..U+07FF): bytes that decode to one string and encode back to themselves. */
function simpleUtf8(b: Uint8Array, start: number, end: number): boolean {
  for (let i = start; i < end; i++) {
    const c = b[i]!;
    if (c < 0x80) continue;
    if (c < 0xc2 || c > 0xdf) return false;
    const d = b[++i];
    if (i >= end || d === undefined || (d & 0xc0) !== 0x80) return false;
  }
  return true;
}
