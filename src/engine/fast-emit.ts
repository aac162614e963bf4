// Writes a lead event into a block from the byte ranges of its fields, exactly as the general path (the mapper and
// the block encoder) would write it, for the fast JSONL and CSV paths (fast-jsonl.ts, fast-csv.ts), or declines.
// The ranges are raw text: no escapes or quotes (the callers make sure), so a value's bytes are the UTF-8 of the
// string the general path would read, provided they are ASCII or two-byte UTF-8 (checked here).
import { Kind, STRS, S_DK, S_HASH, S_KEY, S_LEAD, S_NAT, S_TIME, S_TYPE, S_WARN, type BlockEncoder } from './block.js';
import { plainPath, type FieldName, type FieldPlan } from '../mapping/fields.js';
import { timeInRange } from '../mapping/map-record.js';
import { MAX_EMAIL, MAX_EMAIL_LOCAL, MAX_LABEL } from '../mapping/normalize.js';
import { e164, E164_VALID, fastE164Bytes } from '../mapping/phone-fast.js';
import { screenType } from '../mapping/screen.js';

/** The fields the fast paths read, in the order of FieldSpans. */
export const FAST_FIELDS: FieldName[] = ['id', 'type', 'time', 'email', 'phone', 'name', 'company', 'source'];
const F_ID = 0;
const F_TYPE = 1;
const F_TIME = 2;
const F_EMAIL = 3;
const F_PHONE = 4;
const F_NAME = 5;
const PHONE_AND_NAME = (1 << F_PHONE) | (1 << F_NAME);
const AS_IS = [0, 1, 5, 6, 7]; // id, type, name, company, source: kept as they are (after trim and spacing)

// The lead fields, in canonical JSON order (keys.ts LEAD_KEYS, without custom, firstName and lastName, which the
// fast paths leave to the general path), and what goes before each value.
const BACKSLASH = 0x5c;
const LEAD_FIELDS = ['company', 'email', 'name', 'phone', 'source'] as const;
const LEAD_FIELD_INDEX = LEAD_FIELDS.map((f) => FAST_FIELDS.indexOf(f));
const LEAD_OPEN = LEAD_FIELDS.map((f) => Buffer.from(`{"${f}":"`));
const LEAD_NEXT = LEAD_FIELDS.map((f) => Buffer.from(`","${f}":"`));
const LEAD_CLOSE = Buffer.from('"}');

/** Whether a plan can be served by the fast paths: an event id, and no first or last name (their join is the general path's). */
export function fastPlan(plan: FieldPlan): boolean {
  // A shape whose records may say they are no lead (screen.ts) is looked at record by record.
  if (plan.screened) return false;
  if (plan.id.length === 0 || plan.firstName.length > 0 || plan.lastName.length > 0) return false;
  // A search in a list (answers[type=email].email) is the general path's to walk.
  for (const f of FAST_FIELDS) if (!plan[f].every(plainPath)) return false;
  return true;
}

/**
 * Writes the event of one record into the encoder; false (nothing written) when a value needs the general path's
 * normalization or its verdict. spans: for each of FAST_FIELDS, where its text starts and ends in b (2 numbers),
 * start -1 where the plan has no such field. An empty text is an absent field, as the mapper reads it, unless the
 * plan has another place to look for that field (bit f of `fallback`): then the general path reads it there.
 */
export class LeadWriter {
  private readonly lower = Buffer.allocUnsafeSlow(256);
  private readonly lowerView = new DataView(this.lower.buffer, this.lower.byteOffset, this.lower.byteLength);

  // The last event type seen and whether screenType filters it: an export repeats a few types, decoded once each.
  private lastType = Buffer.alloc(0);
  private lastScreened = false;

  private screenedType(b: Buffer, start: number, end: number): boolean {
    const last = this.lastType;
    const len = end - start;
    // Compared byte by byte: a type is a few bytes, and a native compare per record costs more than the loop.
    let same = len === last.length;
    for (let i = 0; same && i < len; i++) same = b[start + i] === last[i];
    if (!same) {
      this.lastType = Buffer.from(b.subarray(start, end));
      this.lastScreened = screenType(this.lastType.toString('utf8')) !== undefined;
    }
    return this.lastScreened;
  }

  /** hashPayloads: write each event's payload hash, as the mapper does without hashLater (else it is left empty). */
  constructor(private readonly hashPayloads = false) {}

  /** view: a DataView over b (the callers make one a block), to copy values a word at a time. */
  write(
    b: Buffer,
    view: DataView,
    spans: Int32Array,
    line: number,
    enc: BlockEncoder,
    fallback = 0,
    inner = false,
  ): boolean {
    // Bit f: field f has a non-empty text.
    let present = 0;
    for (let f = 0; f < FAST_FIELDS.length; f++)
      if (spans[f * 2]! >= 0 && spans[f * 2 + 1]! > spans[f * 2]!) present |= 1 << f;
    if ((fallback & ~present) !== 0) return false;
    // A record with objects besides its wrappers and no phone or name: the general path looks for them in there.
    if (inner && (present & PHONE_AND_NAME) !== PHONE_AND_NAME) return false;
    if ((present & (1 << F_ID)) === 0) return false; // no event id: the general path says why the record is invalid
    // A name with no letter ("#1041", an order's) is no person's name: the general path leaves it out.
    if (present & (1 << F_NAME) && !hasAsciiLetter(b, spans[F_NAME * 2]!, spans[F_NAME * 2 + 1]!)) return false;
    // An event named as no lead (a test, a refund, a product's event: screen.ts) is the general path's to filter.
    if (present & (1 << F_TYPE) && this.screenedType(b, spans[F_TYPE * 2]!, spans[F_TYPE * 2 + 1]!)) return false;
    for (let k = 0; k < AS_IS.length; k++) {
      const f = AS_IS[k]!;
      if (present & (1 << f) && !plainText(b, view, spans[f * 2]!, spans[f * 2 + 1]!)) return false;
    }
    const time = (present & (1 << F_TIME)) !== 0;
    if (time && (spans[F_TIME * 2 + 1]! - spans[F_TIME * 2]! !== 24 || !canonicalTime(b, spans[F_TIME * 2]!)))
      return false;
    const email = (present & (1 << F_EMAIL)) !== 0;
    let emailLen = 0;
    if (email) {
      emailLen = lowerEmail(b, spans[F_EMAIL * 2]!, spans[F_EMAIL * 2 + 1]!, this.lower);
      if (emailLen < 0) return false;
    }
    // The phone's E.164 number, written as '+', e164.callingCode and e164.nationalNumber.
    const phone = (present & (1 << F_PHONE)) !== 0;
    if (phone && fastE164Bytes(b, spans[F_PHONE * 2]!, spans[F_PHONE * 2 + 1]!) !== E164_VALID) return false;
    if (!email && !phone) return false; // no email and no phone: the general path says why it is invalid

    const r = enc.begin(line);
    const s = r * STRS;
    enc.putView(s + S_KEY, view, b, spans[F_ID * 2]!, spans[F_ID * 2 + 1]!);
    enc.open(s + S_NAT);
    if (email) enc.appendView(this.lowerView, this.lower, 0, emailLen);
    else appendE164(enc);
    enc.open(s + S_LEAD);
    let first = true;
    for (let k = 0; k < LEAD_FIELDS.length; k++) {
      const f = LEAD_FIELD_INDEX[k]!;
      if ((present & (1 << f)) === 0) continue;
      const lit = first ? LEAD_OPEN[k]! : LEAD_NEXT[k]!;
      enc.append(lit, 0, lit.length);
      first = false;
      if (f === F_EMAIL) enc.appendView(this.lowerView, this.lower, 0, emailLen);
      else if (f === F_PHONE) appendE164(enc);
      else enc.appendView(view, b, spans[f * 2]!, spans[f * 2 + 1]!);
    }
    enc.append(LEAD_CLOSE, 0, LEAD_CLOSE.length);
    if (this.hashPayloads) enc.putPayloadHash(s + S_HASH, s + S_LEAD);
    else enc.open(s + S_HASH);
    if (present & (1 << F_TYPE)) enc.putView(s + S_TYPE, view, b, spans[F_TYPE * 2]!, spans[F_TYPE * 2 + 1]!);
    else enc.open(s + S_TYPE);
    if (time) enc.putView(s + S_TIME, view, b, spans[F_TIME * 2]!, spans[F_TIME * 2 + 1]!);
    else enc.open(s + S_TIME);
    enc.open(s + S_WARN);
    enc.putDownstreamKey(s + S_DK, s + S_KEY);
    enc.seal(r, Kind.IdEvent);
    return true;
  }
}

// Whether b[start..end) holds an ASCII letter (a name that has none is the general path's to judge).
function hasAsciiLetter(b: Buffer, start: number, end: number): boolean {
  for (let i = start; i < end; i++) {
    const c = b[i]! | 0x20;
    if (c >= 0x61 && c <= 0x7a) return true;
  }
  return false;
}

// The phone fastE164Bytes just found valid, in E.164.
function appendE164(enc: BlockEncoder): void {
  enc.appendAscii('+');
  enc.appendAscii(e164.callingCode);
  if (e164.from >= 0) enc.append(e164.digits, e164.from, e164.to);
  else enc.appendAscii(e164.nationalNumber);
}

/**
 * A value the mapper would keep as it is: no escapes, simple UTF-8, not empty, no leading or trailing space and
 * no whitespace other than single spaces between words (trim and normalizeName leave it alone; U+00A0 counts as
 * whitespace there, so it is refused).
 */
function plainText(b: Uint8Array, view: DataView, start: number, end: number): boolean {
  if (end <= start || b[start] === 0x20 || b[end - 1] === 0x20) return false;
  for (let i = start; i < end;) {
    // Four bytes a step while they are all plain ASCII: none below 0x21 (a space, a control byte), none of 0x80 or
    // above, no backslash (bit tricks on a 32-bit word); a word with one of them is read byte by byte.
    for (; i + 4 <= end; i += 4) {
      const w = view.getInt32(i, true);
      const e = w ^ 0x5c5c5c5c;
      if ((w | ((w - 0x21212121) & ~w) | ((e - 0x01010101) & ~e)) & 0x80808080) break;
    }
    for (const stop = Math.min(i + 4, end); i < stop; i++) {
      const kind = TEXT_BYTE[b[i]!]!;
      if (kind === T_PLAIN) continue;
      if (kind === T_SPACE) {
        if (b[i + 1] === 0x20) return false;
        continue;
      }
      if (kind !== T_LEAD2) return false; // an escape, a control byte (a tab is whitespace), or not two-byte UTF-8
      const d = b[++i];
      if (i >= end || d === undefined || (d & 0xc0) !== 0x80 || (b[i - 1] === 0xc2 && d === 0xa0)) return false;
    }
  }
  return true;
}

// What plainText makes of a byte: kept, a space, the lead byte of a two-byte UTF-8 character, or refused.
const T_PLAIN = 0;
const T_SPACE = 1;
const T_LEAD2 = 2;
const T_REFUSED = 3;
const TEXT_BYTE = new Uint8Array(256).map((_, c) =>
  c === 0x20
    ? T_SPACE
    : c === BACKSLASH || c < 0x20
      ? T_REFUSED
      : c < 0x80
        ? T_PLAIN
        : c >= 0xc2 && c <= 0xdf
          ? T_LEAD2
          : T_REFUSED,
);

/** yyyy-mm-ddThh:mm:ss.sssZ with every field in range (what the mapper keeps as it is; see isoTime). */
function canonicalTime(b: Uint8Array, s: number): boolean {
  if (
    b[s + 4] !== 0x2d ||
    b[s + 7] !== 0x2d ||
    b[s + 10] !== 0x54 ||
    b[s + 13] !== 0x3a ||
    b[s + 16] !== 0x3a ||
    b[s + 19] !== 0x2e ||
    b[s + 23] !== 0x5a
  )
    return false;
  const y = digits(b, s, 4);
  const m = digits(b, s + 5, 2);
  const d = digits(b, s + 8, 2);
  const hh = digits(b, s + 11, 2);
  const mm = digits(b, s + 14, 2);
  const ss = digits(b, s + 17, 2);
  if (y < 0 || m < 0 || d < 0 || hh < 0 || mm < 0 || ss < 0 || digits(b, s + 20, 3) < 0) return false;
  return timeInRange(y, m, d, hh, mm, ss);
}

// The number the ASCII digits b[at..at+len) write, or -1 when one of them is not a digit.
function digits(b: Uint8Array, at: number, len: number): number {
  let v = 0;
  for (let i = at; i < at + len; i++) {
    const c = b[i]! - 0x30;
    if (c < 0 || c > 9) return -1;
    v = v * 10 + c;
  }
  return v;
}

// Each ASCII byte lowerEmail takes, as it writes it (lower-cased): for the local part, the atext of RFC 5322
// (email.ts LOCAL_CHAR: letters, digits and ! # $ % & ' * + - / = ? ^ _ ` { | } ~), the dot and the @; 0 for the
// rest, which the general path refuses or normalizes (non-ASCII: NFC, IDNA), and for the backslash of an escape.
const EMAIL_BYTE = new Uint8Array(256);
for (const c of "abcdefghijklmnopqrstuvwxyz0123456789!#$%&'*+-/=?^_`{|}~.@")
  EMAIL_BYTE[c.charCodeAt(0)] = c.charCodeAt(0);
for (let c = 0x41; c <= 0x5a; c++) EMAIL_BYTE[c] = c + 0x20;
// What a domain's byte is to lowerEmail (as written there, lower-cased): a letter, a digit, a hyphen or a dot; any
// other is refused after the @ (email.ts asciiDomain), so the general path says why.
const D_OTHER = 0;
const D_LETTER = 1;
const D_DIGIT = 2;
const D_HYPHEN = 3;
const D_DOT = 4;
const DOMAIN_BYTE = new Uint8Array(256).map((_, c) =>
  c >= 0x61 && c <= 0x7a
    ? D_LETTER
    : c >= 0x30 && c <= 0x39
      ? D_DIGIT
      : c === 0x2d
        ? D_HYPHEN
        : c === 0x2e
          ? D_DOT
          : D_OTHER,
);

/**
 * The email at b[start..end) lower-cased into out, as normalizeEmail would return it; -1 when it is not plain
 * ASCII or not an address its plain rule (email.ts PLAIN_EMAIL) takes: a dot-atom before the @, LDH labels of 1
 * to 63 characters after it, at least two, the last of two or more letters, and no "--" (an xn-- label is IDNA's to
 * check). The general path then says why, or normalizes it (a mailto: prefix, NFC, an IDN).
 */
function lowerEmail(b: Uint8Array, start: number, end: number, out: Buffer): number {
  const n = end - start;
  if (n > out.length || n > MAX_EMAIL) return -1;
  let at = -1;
  for (let i = 0; i < n; i++) {
    const c = EMAIL_BYTE[b[start + i]!]!;
    if (c === 0) return -1;
    out[i] = c;
    if (c === 0x40) {
      if (at >= 0) return -1;
      at = i;
    } else if (c === 0x2e && (i === 0 || out[i - 1] === 0x2e || out[i - 1] === 0x40)) return -1; // .a, a..b, @.
  }
  // A local part of 1 to 64 characters that does not end in a dot.
  if (at < 1 || at > MAX_EMAIL_LOCAL || out[at - 1] === 0x2e) return -1;
  // The domain, label by label: `len` characters so far in this one, `letters` whether all were letters.
  let len = 0;
  let letters = true;
  let labels = 0;
  for (let i = at + 1; i < n; i++) {
    const c = out[i]!;
    const kind = DOMAIN_BYTE[c]!;
    if (kind === D_DOT) {
      if (len === 0 || out[i - 1] === 0x2d) return -1; // an empty label; one ending in a hyphen
      labels++;
      len = 0;
      letters = true;
      continue;
    }
    if (kind === D_OTHER) return -1;
    if (kind === D_HYPHEN && (len === 0 || out[i - 1] === 0x2d)) return -1; // one starting with a hyphen; "--"
    if (++len > MAX_LABEL) return -1;
    if (kind !== D_LETTER) letters = false;
  }
  // The last label: the top-level domain, two or more letters (so it neither is empty nor ends in a hyphen).
  if (labels < 1 || len < 2 || !letters) return -1;
  return n;
}
