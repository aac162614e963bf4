// Fast path for the commonest phone shape, "+<calling code> <national number>" with plain separators.
//
// fastE164(text) must return exactly what normalize.ts gets from libphonenumber-js,
// `parsePhoneNumberFromString(text, anyCountry)` then `isValid() ? number : invalid`:
//   string    -> the E.164 number the library returns for a valid phone,
//   null      -> the library says "not valid" (or returns no number at all),
//   undefined -> not decided here; the caller must ask the library.
// It only decides inputs whose whole path through the library was traced by hand (libphonenumber-js
// source/parse.js and the helpers it calls; comments below name them). Everything else is undefined.
// test/mapping/phone-fast.test.ts checks this against the library on a large generated corpus; re-run
// it whenever libphonenumber-js is upgraded.
//
// Metadata: the default export of 'libphonenumber-js' binds metadata.min.json
// (min/exports/withMetadataArgument.js imports '../../metadata.min.json.js'), the very module
// 'libphonenumber-js/metadata.min.json' resolves to. Its array layout (v4) is read in source/metadata.js
// (NumberingPlan): [0] calling code, [2] national number pattern, [3] possible lengths,
// [5] national prefix, [7] national prefix for parsing, [8] national prefix transform rule, [11] types.
import metadataJson from 'libphonenumber-js/metadata.min.json';
import { compileDigitPattern, type DigitDfa } from './digit-dfa.js';

// parse.js: MIN_LENGTH_FOR_NSN / MAX_LENGTH_FOR_NSN in constants.js. A national number outside
// these bounds makes parse() throw TOO_SHORT / TOO_LONG, and parsePhoneNumberFromString returns undefined.
const MIN_LENGTH_FOR_NSN = 2;
const MAX_LENGTH_FOR_NSN = 17;
// constants.js MAX_LENGTH_COUNTRY_CODE, the longest calling code extractCountryCallingCode tries.
const MAX_LENGTH_COUNTRY_CODE = 3;
// Far below parse.js MAX_INPUT_STRING_LENGTH (250), so the length cut-off never applies to decided input.
const MAX_FAST_INPUT_LENGTH = 64;

interface Automata {
  national: DigitDfa;
  /** Undefined: the plan has no national prefix to strip. */
  prefix: DigitDfa | undefined;
}

interface Plan {
  callingCode: string;
  /** The metadata's patterns, as written: the national number's, and the national prefix's for parsing. */
  nationalSource: string;
  prefixSource: string | undefined;
  /** Their automata, compiled when the plan is first used; null when one of them cannot be (see digit-dfa.ts). */
  automata?: Automata | null;
  /** matchesEntirely() anchoring: '^(?:' + pattern + ')$', no flags. */
  nationalNumber: RegExp;
  /** extractNationalNumberFromPossiblyIncompleteNumber(): '^(?:' + prefix + ')', no flags. */
  prefixForParsing: RegExp | undefined;
  transformRule: string | undefined;
  possibleLengths: readonly number[] | undefined;
}

/**
 * Every calling code the library knows (Metadata.hasCallingCode), mapped to the plan the fast path uses, or
 * null when the fast path leaves that code to the library (shared codes such as 1, 7, 44; non-geographic
 * codes such as 800; anything whose metadata does not have the shape checked below).
 */
const PLANS: ReadonlyMap<string, Plan | null> = buildPlans(metadataJson);

/** PLANS by the calling code's number (codes have no leading zero, so the number stands for the digits). */
const PLANS_BY_CODE: Array<Plan | null | undefined> = [];
for (const [code, plan] of PLANS) PLANS_BY_CODE[Number(code)] = plan;

// The bytes of a phone given as text, and its digits (only inputs of at most MAX_FAST_INPUT_LENGTH are decided).
const TEXT = Buffer.alloc(MAX_FAST_INPUT_LENGTH);
const DIGITS = Buffer.alloc(MAX_FAST_INPUT_LENGTH);
// Buffer's own latin1 decoder, without toString's argument checks.
const latin1Slice = (
  Buffer.prototype as unknown as { latin1Slice?: (this: Buffer, start: number, end: number) => string }
).latin1Slice;

function buildPlans(json: unknown): Map<string, Plan | null> {
  const plans = new Map<string, Plan | null>();
  if (!isRecord(json) || json.version !== 4) return plans; // unknown layout: decide nothing
  const countries = json.countries;
  const callingCodes = json.country_calling_codes;
  if (!isRecord(countries) || !isRecord(callingCodes)) return plans;
  // Metadata.nonGeographic(): `nonGeographic || nonGeographical`; those codes (800, 808, ...) are left to the library.
  for (const table of [json.nonGeographic, json.nonGeographical]) {
    if (isRecord(table)) for (const code of Object.keys(table)) plans.set(code, null);
  }
  for (const [code, list] of Object.entries(callingCodes)) {
    plans.set(code, Array.isArray(list) && list.length === 1 ? planFor(code, list[0], countries) : null);
  }
  return plans;
}

function planFor(code: string, country: unknown, countries: Record<string, unknown>): Plan | null {
  // A single two-letter country: Metadata.getCountryCodesForCallingCode returns it, so
  // getCountryByCallingCode picks it without looking at the number (no leading-digits selection), and
  // getNumberingPlanMetadata(code) is this same country's metadata.
  if (typeof country !== 'string' || country.length !== 2 || !/^\d{1,3}$/.test(code)) return null;
  if (!Object.prototype.hasOwnProperty.call(countries, country)) return null;
  const m = countries[country];
  if (!Array.isArray(m) || m[0] !== code || typeof m[2] !== 'string') return null;
  // With phone number types present, isValidNumber() goes through getNumberType() instead of the plain
  // national-number pattern. In metadata.min.json only countries sharing a calling code have types;
  // should that change, such a country is simply left to the library.
  if (m[11]) return null;
  const possibleLengths: unknown = m[3];
  // checkNumberLength() reads possible lengths as a non-empty ascending list; anything else is left to the library.
  if (possibleLengths && !isAscendingNumberList(possibleLengths)) return null;
  // NumberingPlan.nationalPrefixForParsing(): metadata[7] || metadata[5] (truthiness, as the library).
  const prefix: unknown = m[7] || m[5];
  const transform: unknown = m[8];
  if (prefix && typeof prefix !== 'string') return null;
  if (transform && typeof transform !== 'string') return null;
  return {
    callingCode: code,
    nationalSource: m[2],
    prefixSource: prefix ? (prefix as string) : undefined,
    nationalNumber: new RegExp('^(?:' + m[2] + ')$'),
    prefixForParsing: prefix ? new RegExp('^(?:' + (prefix as string) + ')') : undefined,
    transformRule: transform ? (transform as string) : undefined,
    possibleLengths: possibleLengths ? (possibleLengths as number[]) : undefined,
  };
}

function isAscendingNumberList(x: unknown): x is number[] {
  if (!Array.isArray(x) || x.length === 0) return false;
  let prev = -Infinity;
  for (const n of x as unknown[]) {
    if (typeof n !== 'number' || !(n > prev)) return false;
    prev = n;
  }
  return true;
}

function isRecord(x: unknown): x is Record<string, unknown> {
  return typeof x === 'object' && x !== null && !Array.isArray(x);
}

/**
 * E.164 for `text` exactly as libphonenumber-js would give it, null if it would call it invalid,
 * undefined if this fast path does not decide `text`.
 */
export function fastE164(text: string): string | null | undefined {
  // Only ASCII is decided: the text's characters are its bytes.
  const len = text.length;
  if (len > MAX_FAST_INPUT_LENGTH) return undefined;
  for (let i = 0; i < len; i++) {
    const c = text.charCodeAt(i);
    if (c > 0x7f) return undefined;
    TEXT[i] = c;
  }
  const v = fastE164Bytes(TEXT, 0, len);
  if (v !== E164_VALID) return v === E164_INVALID ? null : undefined;
  const national = e164.from >= 0 ? latin1Slice!.call(DIGITS, e164.from, e164.to) : e164.nationalNumber;
  return '+' + e164.callingCode + national;
}

/** fastE164Bytes: the phone is valid, and its E.164 number is '+', e164.callingCode and the national number (see e164). */
export const E164_VALID = 1;
/** fastE164Bytes: the library would call the phone invalid. */
export const E164_INVALID = 0;
/** fastE164Bytes: not decided here; the caller must ask the library. */
export const E164_UNDECIDED = -1;

/**
 * The parts of the number the last fastE164Bytes call found valid (written so, the caller makes no string of it):
 * the calling code, and the national number as the bytes digits[from..to), or (from -1) as nationalNumber.
 */
export const e164 = { callingCode: '', nationalNumber: '', digits: DIGITS as Uint8Array, from: -1, to: -1 };

/** fastE164 for the text whose bytes are b[start..end) (not decided unless ASCII): E164_VALID, _INVALID or _UNDECIDED. */
export function fastE164Bytes(b: Uint8Array, start: number, end: number): number {
  // Grammar: ASCII '+', then ASCII digits, spaces, '-', '.', '(' and ')', ending in a digit. Why this is safe:
  // - parse.js extractFormattedPhoneNumber: starts at the first '+' (index 0) and strips only trailing
  //   non-digits (there are none); the 250-char limit is not reached.
  // - extractPhoneContext / ';isub=' (RFC 3966 handling): need ';', absent.
  // - isViablePhoneNumber: '+' then any mix of VALID_PUNCTUATION (all five separators belong to it) and at
  //   least three digits matches VALID_PHONE_NUMBER; fewer digits is left to the library.
  // - extractExtension: every extension form needs a letter, 'x', '#', '~', ',' or ';'; none can match.
  // - parseIncompletePhoneNumber then keeps just '+' and the digits; the separators leave no trace.
  // Leading/trailing whitespace, '＋', non-ASCII digits, letters, a second '+' etc. are not decided.
  const len = end - start;
  if (len < 4 || len > MAX_FAST_INPUT_LENGTH || b[start] !== 0x2b /* + */) return E164_UNDECIDED;
  // The digits, collected as bytes: the calling code becomes a number, the national number a string only where
  // RegExps must check it (below).
  const d = DIGITS;
  let n = 0;
  for (let i = start + 1; i < end; i++) {
    const c = b[i]!;
    if (c >= 0x30 && c <= 0x39) d[n++] = c;
    else if (c !== 0x20 && c !== 0x2d && c !== 0x2e && c !== 0x28 && c !== 0x29) return E164_UNDECIDED; // ' ' - . ( )
  }
  const last = b[end - 1]!;
  if (last < 0x30 || last > 0x39) return E164_UNDECIDED; // ends in a separator
  if (n < 3) return E164_UNDECIDED;

  // extractCountryCallingCode: a leading 0 is never a calling code (left to the library); otherwise the first
  // of the 1-, 2-, 3-digit prefixes for which Metadata.hasCallingCode() holds is the calling code. PLANS holds
  // every code hasCallingCode() accepts, so a miss at every length means the library finds none either
  // (also left to the library, it rejects those). Without a leading 0, a prefix's number stands for its digits.
  if (d[0] === 0x30) return E164_UNDECIDED;
  let plan: Plan | null | undefined;
  let i = 1;
  for (let code = 0; i <= MAX_LENGTH_COUNTRY_CODE && i <= n; i++) {
    code = code * 10 + d[i - 1]! - 0x30;
    plan = PLANS_BY_CODE[code];
    if (plan !== undefined) break;
  }
  if (!plan) return E164_UNDECIDED;
  if (n - i < MIN_LENGTH_FOR_NSN) return E164_UNDECIDED;

  // The plan's patterns as automata over the digits' bytes: when no national prefix can match (the prefix
  // pattern matches no start of the digits, so extractNationalNumber leaves them as they are), the national
  // number is the digits, checked without a string or a RegExp. Otherwise, the library's steps below.
  const automata = plan.automata === undefined ? (plan.automata = automataFor(plan)) : plan.automata;
  if (automata !== null && (automata.prefix === undefined || !automata.prefix.matchesPrefix(d, i, n))) {
    if (n - i > MAX_LENGTH_FOR_NSN || !automata.national.matchesEntirely(d, i, n)) return E164_INVALID;
    e164.callingCode = plan.callingCode;
    e164.from = i;
    e164.to = n;
    return E164_VALID;
  }
  const rest = latin1Slice ? latin1Slice.call(d, i, n) : d.toString('latin1', i, n);

  // parse.js parsePhoneNumber: extractNationalNumber() strips a national prefix even from an international
  // number (e.g. "+49 (0)30 …" becomes 30…), with the calling code's (here: the only) country selected.
  const nationalNumber = extractNationalNumber(rest, plan);

  // parse.js: TOO_SHORT / TOO_LONG are thrown, so parsePhoneNumberFromString returns undefined.
  if (nationalNumber.length < MIN_LENGTH_FOR_NSN || nationalNumber.length > MAX_LENGTH_FOR_NSN) return E164_INVALID;
  // isValid.js isValidNumber: the country has no types (checked in planFor), so validity is
  // matchesEntirely(nationalNumber, nationalNumberPattern) and nothing else (no length check).
  if (!plan.nationalNumber.test(nationalNumber)) return E164_INVALID;
  // PhoneNumber constructor: number = '+' + countryCallingCode + nationalNumber.
  e164.callingCode = plan.callingCode;
  e164.nationalNumber = nationalNumber;
  e164.from = -1;
  return E164_VALID;
}

// A plan's automata, or null when a pattern cannot be compiled (the plan then keeps its RegExps).
function automataFor(plan: Plan): Automata | null {
  const national = compileDigitPattern(plan.nationalSource);
  if (!national) return null;
  if (plan.prefixSource === undefined) return { national, prefix: undefined };
  const prefix = compileDigitPattern(plan.prefixSource);
  return prefix ? { national, prefix } : null;
}

/** Mirrors helpers/extractNationalNumber.js for a numbering plan with exactly one country and no types. */
function extractNationalNumber(number: string, plan: Plan): string {
  // helpers/extractNationalNumberFromPossiblyIncompleteNumber.js, verbatim apart from the carrier code and
  // national prefix outputs, which do not affect the result.
  const prefix = plan.prefixForParsing;
  if (!prefix) return number;
  const match = prefix.exec(number);
  if (!match) return number;
  const capturedGroupsCount = match.length - 1;
  const hasCapturedGroups = capturedGroupsCount > 0 && match[capturedGroupsCount];
  const stripped =
    plan.transformRule && hasCapturedGroups
      ? number.replace(prefix, plan.transformRule)
      : number.slice((match[0] ?? '').length);
  if (stripped === number) return number;
  // shouldHaveExtractedNationalPrefix(): keep the digits as typed when they were valid and stripping breaks them.
  if (plan.nationalNumber.test(number) && !plan.nationalNumber.test(stripped)) return number;
  // isPossibleIncompleteNationalNumber() -> checkNumberLength(): only TOO_SHORT and INVALID_LENGTH undo the strip.
  const lengths = plan.possibleLengths;
  if (lengths && !isPossibleIncompleteLength(stripped.length, lengths)) return number;
  return stripped;
}

/** helpers/checkNumberLength.js checkNumberLengthForType() with no type; true unless TOO_SHORT or INVALID_LENGTH. */
function isPossibleIncompleteLength(length: number, lengths: readonly number[]): boolean {
  const min = lengths[0];
  if (min === undefined) return false; // unreachable: planFor() rejects [] (for which the library says INVALID_LENGTH)
  if (min === length) return true; // IS_POSSIBLE
  if (min > length) return false; // TOO_SHORT
  if ((lengths[lengths.length - 1] ?? 0) < length) return true; // TOO_LONG counts as possible here
  return lengths.indexOf(length, 1) >= 0; // IS_POSSIBLE : INVALID_LENGTH
}
