// Text from the data (keys, emails, file names, a CRM's error messages) reaches a person's terminal: a control
// character in it would move the cursor, retitle the window or hide what follows (ESC, OSC, BEL, NUL). It is shown
// escaped instead, and a value of megabytes is cut to a width a line can hold.

// C0 and C1 controls, DEL, and the characters that reorder text on screen (bidi embeddings, overrides, isolates).
// eslint-disable-next-line no-control-regex -- control characters are exactly what it looks for
const UNPRINTABLE = /[\u0000-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

/** Longest text of one value in a line a person reads. */
export const MAX_SHOWN = 160;

/** The text with every control character shown as an escape (\x1b, \u202e), cut to `max` characters with an ellipsis. */
export function printable(text: string, max = MAX_SHOWN): string {
  const cut = text.length > max ? text.slice(0, max - 1) + '…' : text;
  return cut.replace(UNPRINTABLE, escape);
}

/** A message of several lines: as printable, but line breaks and tabs stay, and nothing is cut. */
export function printableLines(text: string): string {
  return text.replace(UNPRINTABLE, (ch) => (ch === '\n' || ch === '\t' ? ch : escape(ch)));
}

function escape(ch: string): string {
  const code = ch.charCodeAt(0);
  return code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
}
