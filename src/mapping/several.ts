// A cell that holds several emails or phones of one person: "ana@x.com, ana@y.org" (Bitrix24 joins the values of one
// type in one column), "WORK: +55 21 3333-1002; MOBILE: +55 21 98888-1002" (labelled, as its API writes them). Read
// only where the whole cell is not one address or one number.
import { EMAIL_LABEL_ORDER, labelOfText, PHONE_LABEL_ORDER } from './column-roles.js';

/** The value taken from a cell of several, how many it held, and the label that chose it, if one did. */
export interface OneOfSeveral {
  value: string;
  of: number;
  label?: string;
}

// Values are separated by a comma, a semicolon, a pipe or a slash between spaces (a phone's own slashes stay).
const SEPARATOR = /\s*[,;|]\s*|\s+\/\s+/;
const EXCEL_NUMBER = /^[+-]?\d+[.,]\d+E[+-]?\d+$/i;
const LABELLED = /^([\p{L}][\p{L} _-]{0,23}?)\s*:\s*(\S.*)$/u;

/** Whether a cell may hold several values, or a labelled one (has a separator or a colon). */
export function mayHoldSeveral(text: string): boolean {
  return /[,;|:]|\s\/\s/.test(text);
}

/**
 * The person's value of a cell of several: by label where they have one (the order of column-roles.ts: for an email
 * the primary, unlabelled, work, personal, other; for a phone the mobile first; a fax never), else the first.
 * Undefined when the cell holds fewer than two and no labelled one.
 */
export function oneOfSeveral(text: string, field: 'email' | 'phone'): OneOfSeveral | undefined {
  // Excel's scientific notation with a decimal comma ("5,5119E+12") is one number whose digits are lost, not two
  // values: the phone reader says so.
  if (field === 'phone' && EXCEL_NUMBER.test(text.trim())) return undefined;
  const parts = text
    .split(SEPARATOR)
    .map((p) => p.trim())
    .filter((p) => p !== '');
  if (parts.length === 0 || (parts.length === 1 && !LABELLED.test(parts[0]!))) return undefined;
  const order = field === 'phone' ? PHONE_LABEL_ORDER : EMAIL_LABEL_ORDER;
  let best: { value: string; rank: number; label?: string } | undefined;
  for (const part of parts) {
    const m = LABELLED.exec(part);
    // "mailto:" is no label: the address reads with it.
    const label = m && m[1]!.toLowerCase() !== 'mailto' ? labelOfText(m[1]!, field === 'phone') : undefined;
    if (label === 'fax') continue;
    const value = label !== undefined ? m![2]!.trim() : part;
    const rank = label !== undefined ? order[label] : order.plain;
    if (!best || rank < best.rank) best = label !== undefined ? { value, rank, label: m![1]! } : { value, rank };
  }
  if (!best || (parts.length === 1 && best.label === undefined)) return undefined;
  const out: OneOfSeveral = { value: best.value, of: parts.length };
  if (best.label !== undefined) out.label = best.label;
  return out;
}
