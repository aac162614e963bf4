// A stray quote in a CSV export (an opening `"` in a name that never closes, or that closes 50,000 rows later at
// another stray `"`) makes a parser read every row after it into one field: tens of thousands of leads folded into
// one `name`, with no error. A quoted field that runs over many lines or many kilobytes is almost always such a
// quote, so the guard, which sits between the decoded text and csv-parse and follows the same quoting rules, holds
// back a record while it is inside a quoted field; once the field passes the limits (or the input ends inside it),
// the record is given up as a stray quote and the text after the line of its opening quote is read again, as rows,
// the way a spreadsheet user expects. The given-up lines are passed on blank (so every later line keeps its number),
// and the reader reports the record with its line range.
//
// The rules are csv-parse's with relax_quotes: a quote opens a quoted field only as a field's first character; in a
// quoted field "" is a quote, and a quote followed by the delimiter, a line end or the end closes it; followed by
// anything else the field goes on unquoted (the quote kept). Lines end at LF (CRLF was made LF before).

/** A quoted field spanning more line breaks than this is taken for a stray quote. */
export const MAX_QUOTED_LINES = 100;
/** A quoted field of more characters than this is taken for a stray quote. */
export const MAX_QUOTED_CHARS = 64 * 1024;
// An unfinished record held without an open quote, at most (a longer row is csv-parse's to report).
const MAX_HELD_CHARS = 1 << 20;

const LF = 0x0a;
const QUOTE = 0x22;

/** A record given up because of a stray quote: its lines (1-based), and why. */
export interface StrayQuote {
  line: number;
  toLine: number;
  reason: string;
}

const enum State {
  /** Outside a quoted field, at the start of a field (or of a record). */
  FieldStart,
  /** Outside a quoted field, inside a field. */
  Unquoted,
  /** Inside a quoted field. */
  Quoted,
  /** Inside a quoted field, just after a quote: what follows decides. */
  QuoteInQuoted,
}

/** Feeds csv-parse the decoded text of one input, giving up records whose quoted field runs away (see above). */
export class CsvGuard {
  /** Records given up, in line order, not yet taken by the reader. */
  readonly strays: StrayQuote[] = [];
  private state = State.FieldStart;
  // Text not yet passed on: from the start of the record that holds an open quoted field.
  private held = '';
  // Line of the held text's first character, and of the open quote; LFs passed on so far.
  private heldLine = 1;
  private quoteLine = 0;
  // Where the open quoted field started in `held`, and line breaks inside it.
  private quoteAt = -1;
  private quotedLines = 0;
  // Set when the input's records end at a lone CR (csv-parse then splits on CR): the guard lets the text through.
  private off = false;
  private sawLf = false;
  private readonly d: number;

  /** lineOffset: added to the lines the messages name (a block read behind a copy of its input's header). */
  constructor(
    delimiter: string,
    private readonly lineOffset = 0,
  ) {
    this.d = delimiter.charCodeAt(0);
  }

  /** Decoded text in; the text that may be parsed now out (what is held waits for its quoted field to end). */
  push(text: string): string {
    if (this.off) return text;
    this.held += text;
    return this.scan(false);
  }

  /** The input ended: an open quoted field is a stray quote; the rest is passed on. */
  end(): string {
    if (this.off) return '';
    return this.scan(true);
  }

  // Scans the held text from where the last scan stopped; gives up the record of a runaway quote and scans again.
  private scan(atEnd: boolean): string {
    let out = '';
    for (;;) {
      const r = this.walk(atEnd);
      out += r;
      if (this.quoteAt < 0 || !(atEnd || this.runaway())) return out;
      out += this.giveUp(atEnd && !this.runaway());
    }
  }

  // Where the scan of held stopped, and the line there.
  private pos = 0;
  private line = 1;

  // Walks held from pos; returns all of it once no quoted field is open, else the text before the record that holds
  // the open field (which stays held).
  private walk(atEnd: boolean): string {
    const s = this.held;
    const d = this.d;
    if (!this.sawLf) {
      const lf = s.indexOf('\n');
      const cr = s.indexOf('\r');
      if (cr >= 0 && (lf < 0 || cr < lf)) {
        // Records that end at a lone CR: not this guard's grammar; the text goes through as it is.
        this.off = true;
        this.held = '';
        return s;
      }
      if (lf >= 0) this.sawLf = true;
    }
    let i = this.pos;
    let line = this.line;
    // Held text always starts at a record's start; the current record starts here (after the last line end outside
    // quotes), on this line.
    let recordStart = 0;
    let recordLine = this.heldLine;
    while (i < s.length) {
      if (this.state === State.Quoted) {
        const q = s.indexOf('"', i);
        const stop = q < 0 ? s.length : q;
        for (let k = s.indexOf('\n', i); k !== -1 && k < stop; k = s.indexOf('\n', k + 1)) {
          line++;
          this.quotedLines++;
        }
        i = q < 0 ? s.length : q + 1;
        if (q >= 0) this.state = State.QuoteInQuoted;
        if (this.runaway(i)) {
          i = s.length; // given up by scan()
          break;
        }
        continue;
      }
      if (this.state === State.QuoteInQuoted) {
        const c = s.charCodeAt(i);
        if (c === QUOTE) {
          this.state = State.Quoted; // "" inside a quoted field
          i++;
          continue;
        }
        // Closed: a delimiter or a line end starts the next field or record; anything else goes on unquoted.
        this.quoteAt = -1;
        this.state = c === d || c === LF ? State.FieldStart : State.Unquoted;
        if (c !== d && c !== LF) i++;
        continue;
      }
      // Outside quotes only a quote that starts a field matters, and line ends.
      const q = s.indexOf('"', i);
      const stop = q < 0 ? s.length : q;
      let lastLf = -1;
      for (let k = s.indexOf('\n', i); k !== -1 && k < stop; k = s.indexOf('\n', k + 1)) {
        line++;
        lastLf = k;
      }
      if (lastLf >= 0) {
        recordStart = lastLf + 1;
        recordLine = line;
      }
      if (q < 0) {
        if (stop > i)
          this.state =
            s.charCodeAt(stop - 1) === LF || s.charCodeAt(stop - 1) === d ? State.FieldStart : State.Unquoted;
        i = s.length;
        break;
      }
      const atFieldStart =
        q === i ? this.state === State.FieldStart : s.charCodeAt(q - 1) === LF || s.charCodeAt(q - 1) === d;
      if (atFieldStart) {
        this.state = State.Quoted;
        this.quoteAt = q;
        this.quoteLine = line;
        this.quotedLines = 0;
      } else this.state = State.Unquoted;
      i = q + 1;
    }
    if (this.state === State.QuoteInQuoted && atEnd) {
      this.state = State.Unquoted; // a quote at the very end closes the field
      this.quoteAt = -1;
    }
    // Whole records are passed on; the current one is held while it may still be given up (its quoted field is open)
    // or is not complete yet, unless the input ended or it grew past any record a row could be (then csv-parse,
    // which keeps its own state across chunks, reads it and reports it).
    const cut =
      (atEnd && this.quoteAt < 0) || (this.quoteAt < 0 && s.length - recordStart > MAX_HELD_CHARS)
        ? s.length
        : recordStart;
    const out = s.slice(0, cut);
    this.held = s.slice(cut);
    if (this.quoteAt >= 0) this.quoteAt -= cut;
    this.pos = i - cut;
    this.line = line;
    this.heldLine = cut === recordStart ? recordLine : line;
    return out;
  }

  // The open quoted field, read up to `at`, is past the limits.
  private runaway(at = this.held.length): boolean {
    return this.quoteAt >= 0 && (this.quotedLines > MAX_QUOTED_LINES || at - this.quoteAt > MAX_QUOTED_CHARS);
  }

  // The held record has a runaway (or never closed) quoted field: its lines up to the quote's are passed on blank and
  // reported; the text after that line is scanned again from a record's start.
  private giveUp(neverClosed: boolean): string {
    const s = this.held;
    const nl = s.indexOf('\n', this.quoteAt);
    const from = this.heldLine;
    const to = this.quoteLine;
    const blanks = '\n'.repeat(to - from + (nl >= 0 ? 1 : 0));
    const at = (l: number) => l + this.lineOffset;
    const what = from === to ? `row ${at(from)} is` : `lines ${at(from)}-${at(to)} are`;
    const why = neverClosed
      ? 'is never closed'
      : `is not closed within ${MAX_QUOTED_LINES} lines or ${MAX_QUOTED_CHARS / 1024} KB`;
    const reason = `stray quote? a quote opened at line ${at(to)} ${why}: ${what} left out${nl >= 0 ? `, and reading goes on at line ${at(to + 1)}` : ''}`;
    this.strays.push({ line: from, toLine: to, reason });
    this.held = nl >= 0 ? s.slice(nl + 1) : '';
    this.heldLine = to + 1;
    this.line = to + 1;
    this.pos = 0;
    this.state = State.FieldStart;
    this.quoteAt = -1;
    return blanks;
  }
}
