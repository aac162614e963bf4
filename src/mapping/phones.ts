// What becomes of the phone of a record: read as E.164, or unreadable with its reason (Excel's scientific notation
// among them). Users' exports are full of odd phones: one that cannot be read never makes a lead with a valid email
// invalid (map-record.ts leaves it out, or sends it as written, with a warning that says so).
import { INVALID_PHONE, NATIONAL_HINT, normalizePhone, quoted } from './normalize.js';

/** A phone as read from a record. */
export type PhoneReading =
  /** Valid: its E.164 number. `national`: written without a calling code, so read in the default country. */
  | { kind: 'e164'; value: string; national: boolean }
  /**
   * Not a phone number leadledger can vouch for: why (quoting the text), and the text as written (trimmed, without
   * Excel's apostrophe). `excel`: scientific notation, whose digits are lost (never sent, not even as written).
   */
  | { kind: 'unreadable'; reason: string; text: string; national: boolean; excel: boolean }
  /** Nothing but Excel's apostrophe: no phone at all. */
  | { kind: 'none' };

/** What a config asks for a phone that cannot be read (config.phones.invalid): left out, or sent as written. */
export type InvalidPhonePolicy = 'omit' | 'as-written';

// How Excel shows a number too long for its column once the cell is saved as a number: 5,5119E+12, 5.5119E+12,
// 1E+10. Only the first digits survive: no phone can be read back from it, and none is guessed.
const SCIENTIFIC = /^\d+(?:[.,]\d+)?[eE][+-]?\d+$/;

const EXCEL_REASON = "is Excel's scientific notation: its digits are lost (re-export the column as text)";

/** Reads a phone: Excel's apostrophe stripped, scientific notation refused, then E.164 in the default country. */
export function readPhone(raw: string, defaultCountry?: string): PhoneReading {
  let text = raw.trim();
  // Excel and Pipedrive write a leading apostrophe to keep a number as text ('+55 11 98765-4321): no part of it.
  if (text.charCodeAt(0) === 0x27) {
    text = text.slice(1).trim();
    if (text === '') return { kind: 'none' };
  }
  if (SCIENTIFIC.test(text))
    return { kind: 'unreadable', reason: `${quoted(text)} ${EXCEL_REASON}`, text, national: false, excel: true };
  // A plus sign anywhere means a calling code is written (libphonenumber reads from it on); otherwise the number is
  // national, and the default country decides how it reads.
  const national = !text.includes('+') && !text.includes('\uff0b');
  const n = normalizePhone(text, defaultCountry);
  if (n.ok) return { kind: 'e164', value: n.value, national };
  return { kind: 'unreadable', reason: n.reason, text, national, excel: false };
}

const LINE_BREAK = /[\n\r]/g;

/** The warning of a lead whose phone could not be read, saying what was done with it. */
export function phoneWarning(p: Extract<PhoneReading, { kind: 'unreadable' }>, sentAsWritten: boolean): string {
  // A warning is one line (a block keeps a record's warnings one a line): a line break the phone holds is written
  // as \n, as it would be in JSON.
  const reason = p.reason.replace(LINE_BREAK, (c) => (c === '\n' ? '\\n' : '\\r'));
  // Excel's reason says it all: the digits are lost, so the phone is left out whatever the config says.
  if (p.excel) return `phone: ${reason}`;
  return `phone: ${reason}${sentAsWritten ? SENT_AS_WRITTEN : LEFT_OUT}`;
}

const LEFT_OUT = ': left out';
const SENT_AS_WRITTEN = ': sent as written';

// The tails of every phone warning after its quoted value.
const TAILS = [
  EXCEL_REASON,
  ...[INVALID_PHONE, INVALID_PHONE + NATIONAL_HINT].flatMap((r) => [r + LEFT_OUT, r + SENT_AS_WRITTEN]),
];

/**
 * The warning with the value it quotes taken out, to count warnings by kind: each phone of an export is different,
 * and a summary of a million odd phones must say "×1,000,000" once, not list them. Other warnings are their own kind.
 */
export function warningKind(w: string): string {
  // A time that is not a date: one kind whatever the value (map-record.ts NOT_A_DATE).
  const time = /^(.*?): '.*' (is not a date leadledger reads: .*)$/s.exec(w);
  if (time) return `${time[1]}: '…' ${time[2]}`;
  if (!w.startsWith("phone: '")) return w;
  for (const t of TAILS) if (w.endsWith(`' ${t}`) || w.endsWith(` characters) ${t}`)) return `phone: '…' ${t}`;
  return w;
}
