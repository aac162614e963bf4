// An email address's one canonical form, and RFC 5321/5322's rules for it: shared by mapping (every address read)
// and the ledger (whose schema v4 upgrade writes the addresses it holds that way).
import { domainToASCII, domainToUnicode } from 'node:url';

/** A normalized value, or why there is none. */
export type Normalized = { ok: true; value: string } | { ok: false; reason: string };

/** RFC 5321's limits: 254 characters in all (a path of 256 less its brackets), 64 before the @. */
export const MAX_EMAIL = 254;
export const MAX_EMAIL_LOCAL = 64;
/** RFC 1035's limits on a domain: 253 characters (written without its final dot), 63 in a label. */
export const MAX_DOMAIN = 253;
export const MAX_LABEL = 63;

// Past this many characters as typed, an address is refused as too long before any of it is read (NFC and IDNA's
// mapping can shorten what was typed, by joining code points or dropping ignorable ones, but not a real address by
// this much).
const MAX_TYPED = 4 * MAX_EMAIL;

// RFC 5322's atext (letters, digits and these), and, after NFC, letters, marks and digits of any script (RFC 6531):
// a dot-atom local part is runs of them joined by single dots. No quoted local parts: CRMs refuse them.
const LOCAL_CHAR = /^[a-z0-9!#$%&'*+\-/=?^_`{|}~\p{L}\p{M}\p{N}]$/u;
const LOCAL_RUN = /^[a-z0-9!#$%&'*+\-/=?^_`{|}~\p{L}\p{M}\p{N}]+$/u;
// A domain's label once in ASCII (A-labels included): letters, digits and hyphens (RFC 1035's LDH rule).
const LDH = /^[a-z0-9-]+$/;
// The address most records hold: ASCII, a dot-atom, LDH labels of 1 to 63 characters, a top-level domain of letters.
// Lower-cased, with no "--" in its domain (no xn-- label for IDNA to check), it is its own canonical form: what the
// full rule below makes of it too (test/mapping/normalize.test.ts holds both to that).
const PLAIN_EMAIL =
  /^[a-z0-9!#$%&'*+\-/=?^_`{|}~]+(?:\.[a-z0-9!#$%&'*+\-/=?^_`{|}~]+)*@(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$/i;
// Its domain alone: lower-cased, and without "--", what domainToASCII makes of it too (`joão@exemplo.com.br`).
const PLAIN_DOMAIN = /^(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$/i;

/**
 * The canonical form of an email address, the one natural key of one person whatever form it was typed in: trimmed,
 * without a mailto: prefix; the local part in NFC and lower case; the domain in ASCII and lower case (an IDN becomes
 * its punycode A-labels, as url.domainToASCII writes them: `foo@bücher.example` is `foo@xn--bcher-kva.example`). An
 * ASCII address is kept as typed, lower-cased. What RFC 5321/5322 (and 6531) do not allow is refused, with why.
 */
export function normalizeEmail(raw: string): Normalized {
  const typed = raw.trim();
  if (typed.length > MAX_TYPED) return tooLong(typed);
  const v = typed.length >= 7 && typed.slice(0, 7).toLowerCase() === 'mailto:' ? typed.slice(7) : typed;
  const value = PLAIN_EMAIL.test(v) && v.indexOf('--', v.indexOf('@')) < 0 ? v.toLowerCase() : canonicalEmail(v, false);
  if (typeof value !== 'string')
    return { ok: false, reason: `${quoted(typed)} is not a valid email address: ${value.why}` };
  if (value.length > MAX_EMAIL) return tooLong(typed);
  if (value.indexOf('@') > MAX_EMAIL_LOCAL)
    return {
      ok: false,
      reason: `${quoted(typed)} has more than ${MAX_EMAIL_LOCAL} characters before the @ (RFC 5321)`,
    };
  return { ok: true, value };
}

function tooLong(typed: string): Normalized {
  return { ok: false, reason: `${quoted(typed)} is longer than ${MAX_EMAIL} characters (RFC 5321)` };
}

/**
 * The canonical form of an address (without a mailto: prefix), or why it is none. normalizeEmail takes shortcuts
 * for plain addresses and plain domains; `full` takes none (for the test that holds the shortcuts to the rule).
 */
export function canonicalEmail(v: string, full = true): string | { why: string } {
  const at = v.indexOf('@');
  if (at < 0) return { why: 'no @' };
  if (v.indexOf('@', at + 1) >= 0) return { why: 'more than one @' };
  if (at === 0) return { why: 'nothing before the @' };
  if (at === v.length - 1) return { why: 'nothing after the @' };
  // NFC again after lower-casing: a lower-case letter may decompose where its capital did not.
  const local = v.slice(0, at).normalize('NFC').toLowerCase().normalize('NFC');
  const why = localFault(local);
  if (why !== undefined) return { why };
  const typed = v.slice(at + 1);
  const plain = !full && PLAIN_DOMAIN.test(typed) && !typed.includes('--');
  const domain = plain ? typed.toLowerCase() : asciiDomain(typed);
  return typeof domain === 'string' ? local + '@' + domain : domain;
}

// What is wrong with a local part (NFC, lower case), if anything.
function localFault(local: string): string | undefined {
  if (local.startsWith('.')) return 'it starts with a dot';
  if (local.endsWith('.')) return 'a dot right before the @';
  if (local.includes('..')) return 'two dots in a row';
  if (LOCAL_RUN.test(local.replaceAll('.', ''))) return undefined;
  for (const c of local) if (c !== '.' && !LOCAL_CHAR.test(c)) return `${charName(c)} before the @`;
  return undefined;
}

// The domain in ASCII, lower case (url.domainToASCII: IDNA's mapping and punycode, which also validates A-labels),
// held to the LDH rule; or why it is no domain. Not lower-cased before: IDNA maps capitals itself (ẞ is ss there).
function asciiDomain(typed: string): string | { why: string } {
  // The host parser behind domainToASCII decodes %XX first ('x%41.com' would be xa.com): of ASCII, only letters,
  // digits, hyphens and dots are taken as written; anything else is refused, whatever IDNA would make of it.
  const bad = /[^a-zA-Z0-9.\-\u0080-\u{10ffff}]/u.exec(typed);
  if (bad) return { why: `${charName(bad[0])} after the @` };
  const ascii = domainToASCII(typed);
  // An ASCII domain that IDNA refuses is told by its shape where it has a fault; otherwise it is an A-label
  // (xn--...) that is no punycode, or a name IDNA does not allow.
  const why =
    ascii === ''
      ? ((isAscii(typed) ? domainFault(typed.toLowerCase()) : undefined) ??
        'the domain is not a valid internationalized domain name (IDNA)')
      : domainFault(ascii);
  return why === undefined ? ascii : { why };
}

// What is wrong with a domain in ASCII, lower case, if anything.
function domainFault(d: string): string | undefined {
  if (d.startsWith('.')) return 'a dot right after the @';
  if (d.endsWith('.')) return 'it ends with a dot';
  if (d.includes('..')) return 'two dots in a row';
  const labels = d.split('.');
  if (labels.length < 2) return `the domain '${cut(d)}' has no dot (name.tld)`;
  for (const l of labels) {
    if (!LDH.test(l)) {
      const c = [...l].find((x) => !/[a-z0-9-]/.test(x))!;
      return `${charName(c)} after the @`;
    }
    if (l.startsWith('-')) return `the domain's label '${cut(l)}' starts with a hyphen`;
    if (l.endsWith('-')) return `the domain's label '${cut(l)}' ends with a hyphen`;
    if (l.length > MAX_LABEL) return `the domain's label '${cut(l)}' is longer than ${MAX_LABEL} characters`;
  }
  if (d.length > MAX_DOMAIN) return `the domain is longer than ${MAX_DOMAIN} characters`;
  const tld = labels[labels.length - 1]!;
  if (/^[0-9]+$/.test(tld)) return `the top-level domain '${tld}' is a number`;
  if (!/^[a-z]{2,}$/.test(tld) && !tld.startsWith('xn--'))
    return `the top-level domain '${cut(tld)}' is not two or more letters (or an xn-- label)`;
  return undefined;
}

// A character as a reason names it: quoted when it can be seen, its code point when it cannot.
function charName(c: string): string {
  if (c === ' ') return 'a space';
  if (/^[\p{L}\p{M}\p{N}\p{P}\p{S}]$/u.test(c)) return `'${c}'`;
  return 'U+' + c.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0');
}

function cut(s: string): string {
  return s.length > 40 ? s.slice(0, 30) + '…' : s;
}

function isAscii(s: string): boolean {
  // eslint-disable-next-line no-control-regex -- any character past ASCII
  return !/[^\u0000-\u007f]/.test(s);
}

/** A value quoted in a reason, cut so that a 1M-character value makes a reason a line can hold. */
export function quoted(v: string): string {
  return v.length > 80 ? `'${v.slice(0, 60)}…' (${v.length} characters)` : `'${v}'`;
}

/**
 * The spellings of a canonical address that a ledger or a CRM may hold besides it (its local part in NFC or NFD, its
 * domain in punycode or in Unicode, NFC or NFD): what an erasure looks for. One spelling for an ASCII address.
 */
export function emailSpellings(canonical: string): string[] {
  const at = canonical.lastIndexOf('@');
  const local = canonical.slice(0, at);
  const domain = canonical.slice(at + 1);
  const unicode = domain.includes('xn--') ? domainToUnicode(domain) : '';
  const locals = new Set([local, local.normalize('NFD')]);
  const domains = new Set(unicode ? [domain, unicode, unicode.normalize('NFD')] : [domain]);
  return [...locals].flatMap((l) => [...domains].map((d) => l + '@' + d));
}
