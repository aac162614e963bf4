// Phone patterns of libphonenumber's metadata compiled into automata over the ten digits, so that the fast phone
// path checks a national number on its bytes: no string made of it and no RegExp run on it. The patterns use a
// small part of JavaScript's regular expressions: digits, \d, classes of digits and ranges, groups ((...) and
// (?:...)), alternatives and the quantifiers ?, *, +, {n}, {n,} and {n,m}. Over that part a pattern is a regular
// language, so a deterministic automaton answers exactly what the RegExp answers. A pattern with anything else
// (an anchor such as $, a negated class, a letter) is not compiled: its plan keeps the RegExp.

/** A deterministic automaton over the digits '0'-'9'. */
export class DigitDfa {
  constructor(
    /** next[state * 10 + digit]: the next state, -1 for none (no word with this start is in the language). */
    private readonly next: Int32Array,
    /** Whether each state accepts. */
    private readonly accepts: Uint8Array,
  ) {}

  /** Whether the ASCII digits b[start..end) are a word of the pattern (RegExp `^(?:pattern)$`). */
  matchesEntirely(b: Uint8Array, start: number, end: number): boolean {
    const next = this.next;
    let s = 0;
    for (let i = start; i < end; i++) {
      s = next[s * 10 + b[i]! - 0x30]!;
      if (s < 0) return false;
    }
    return this.accepts[s] === 1;
  }

  /** Whether some prefix of the ASCII digits b[start..end) (the empty one too) is a word of the pattern (`^(?:pattern)`). */
  matchesPrefix(b: Uint8Array, start: number, end: number): boolean {
    const next = this.next;
    const accepts = this.accepts;
    let s = 0;
    if (accepts[s] === 1) return true;
    for (let i = start; i < end; i++) {
      s = next[s * 10 + b[i]! - 0x30]!;
      if (s < 0) return false;
      if (accepts[s] === 1) return true;
    }
    return false;
  }

  /** States (tests). */
  get size(): number {
    return this.accepts.length;
  }
}

// Past this many states a pattern keeps its RegExp (the metadata's largest need a few hundred).
const MAX_STATES = 20_000;
const ALL_DIGITS = 0x3ff;

/** The automaton of a metadata pattern, or undefined when it uses something outside the part described above. */
export function compileDigitPattern(source: string): DigitDfa | undefined {
  let nfa: Nfa;
  try {
    nfa = new Parser(source).parse();
  } catch {
    return undefined;
  }
  return determinize(nfa);
}

// ---- parsing into a nondeterministic automaton (Thompson's construction) ----

// NFA states: each has epsilon moves, and at most one digit move (a set of digits to one state).
interface Nfa {
  eps: number[][];
  on: number[]; // digit mask (bit d: digit d), 0 for none
  to: number[];
  start: number;
  accept: number;
}

interface Fragment {
  start: number;
  end: number;
}

// A syntax tree first: quantifiers copy their operand, which a tree makes easy.
type Node =
  | { t: 'set'; mask: number }
  | { t: 'seq'; items: Node[] }
  | { t: 'alt'; options: Node[] }
  | { t: 'rep'; node: Node; min: number; max: number }; // max -1: unbounded

class Parser {
  private i = 0;
  private readonly eps: number[][] = [];
  private readonly on: number[] = [];
  private readonly to: number[] = [];

  constructor(private readonly src: string) {}

  parse(): Nfa {
    const tree = this.alt();
    if (this.i !== this.src.length) throw new Error('unexpected ' + this.src[this.i]);
    const f = this.build(tree);
    return { eps: this.eps, on: this.on, to: this.to, start: f.start, accept: f.end };
  }

  private alt(): Node {
    const options = [this.seq()];
    while (this.src[this.i] === '|') {
      this.i++;
      options.push(this.seq());
    }
    return options.length === 1 ? options[0]! : { t: 'alt', options };
  }

  private seq(): Node {
    const items: Node[] = [];
    for (;;) {
      const c = this.src[this.i];
      if (c === undefined || c === '|' || c === ')') break;
      items.push(this.quantified(this.atom()));
    }
    return { t: 'seq', items };
  }

  private atom(): Node {
    const src = this.src;
    const c = src[this.i++];
    if (c === undefined) throw new Error('end of pattern');
    if (c >= '0' && c <= '9') return { t: 'set', mask: 1 << (c.charCodeAt(0) - 0x30) };
    if (c === '\\') {
      if (src[this.i++] !== 'd') throw new Error('escape');
      return { t: 'set', mask: ALL_DIGITS };
    }
    if (c === '(') {
      if (src.startsWith('?:', this.i)) this.i += 2;
      else if (src[this.i] === '?') throw new Error('group kind');
      const node = this.alt();
      if (src[this.i++] !== ')') throw new Error('unclosed group');
      return node;
    }
    if (c === '[') return { t: 'set', mask: this.digitClass() };
    throw new Error('unsupported ' + c);
  }

  private digitClass(): number {
    const src = this.src;
    let mask = 0;
    if (src[this.i] === '^') throw new Error('negated class');
    for (;;) {
      const c = src[this.i++];
      if (c === ']') break;
      if (c === '\\' && src[this.i] === 'd') {
        this.i++;
        mask |= ALL_DIGITS;
        continue;
      }
      if (c === undefined || c < '0' || c > '9') throw new Error('class member');
      const lo = c.charCodeAt(0) - 0x30;
      let hi = lo;
      if (src[this.i] === '-' && src[this.i + 1] !== ']') {
        const h = src[this.i + 1];
        if (h === undefined || h < '0' || h > '9') throw new Error('range');
        hi = h.charCodeAt(0) - 0x30;
        this.i += 2;
        if (hi < lo) throw new Error('range order');
      }
      for (let d = lo; d <= hi; d++) mask |= 1 << d;
    }
    if (mask === 0) throw new Error('empty class');
    return mask;
  }

  private quantified(node: Node): Node {
    const src = this.src;
    const c = src[this.i];
    let min: number;
    let max: number;
    if (c === '?') [min, max] = [0, 1];
    else if (c === '*') [min, max] = [0, -1];
    else if (c === '+') [min, max] = [1, -1];
    else if (c === '{') {
      const m = /^\{(\d+)(,(\d*))?\}/.exec(src.slice(this.i));
      if (!m) throw new Error('quantifier');
      min = Number(m[1]);
      max = m[2] === undefined ? min : m[3] === '' ? -1 : Number(m[3]);
      if (max !== -1 && max < min) throw new Error('quantifier order');
      this.i += m[0].length - 1;
    } else return node;
    this.i++;
    if (src[this.i] === '?') throw new Error('lazy quantifier'); // the same language, but not worth trusting blind
    return { t: 'rep', node, min, max };
  }

  private state(): number {
    this.eps.push([]);
    this.on.push(0);
    this.to.push(-1);
    if (this.eps.length > MAX_STATES * 4) throw new Error('too large');
    return this.eps.length - 1;
  }

  private build(n: Node): Fragment {
    switch (n.t) {
      case 'set': {
        const start = this.state();
        const end = this.state();
        this.on[start] = n.mask;
        this.to[start] = end;
        return { start, end };
      }
      case 'seq': {
        const start = this.state();
        let end = start;
        for (const item of n.items) {
          const f = this.build(item);
          this.eps[end]!.push(f.start);
          end = f.end;
        }
        return { start, end };
      }
      case 'alt': {
        const start = this.state();
        const end = this.state();
        for (const o of n.options) {
          const f = this.build(o);
          this.eps[start]!.push(f.start);
          this.eps[f.end]!.push(end);
        }
        return { start, end };
      }
      case 'rep': {
        const start = this.state();
        let end = start;
        for (let k = 0; k < n.min; k++) {
          const f = this.build(n.node);
          this.eps[end]!.push(f.start);
          end = f.end;
        }
        if (n.max === -1) {
          const f = this.build(n.node); // any number more: a loop
          this.eps[end]!.push(f.start);
          this.eps[f.end]!.push(f.start);
          const out = this.state();
          this.eps[end]!.push(out);
          this.eps[f.end]!.push(out);
          end = out;
        } else {
          const out = this.state();
          for (let k = n.min; k < n.max; k++) {
            this.eps[end]!.push(out); // stop here
            const f = this.build(n.node);
            this.eps[end]!.push(f.start);
            end = f.end;
          }
          this.eps[end]!.push(out);
          end = out;
        }
        return { start, end };
      }
    }
  }
}

// ---- subset construction ----

function determinize(nfa: Nfa): DigitDfa | undefined {
  const closure = (states: number[]): number[] => {
    const seen = new Set<number>(states);
    const stack = [...states];
    while (stack.length > 0) {
      const s = stack.pop()!;
      for (const t of nfa.eps[s]!) {
        if (!seen.has(t)) {
          seen.add(t);
          stack.push(t);
        }
      }
    }
    return [...seen].sort((a, b) => a - b);
  };
  const ids = new Map<string, number>();
  const sets: number[][] = [];
  const next: number[] = [];
  const accepts: number[] = [];
  const add = (set: number[]): number => {
    const key = set.join(',');
    let id = ids.get(key);
    if (id === undefined) {
      id = sets.push(set) - 1;
      ids.set(key, id);
      accepts.push(set.includes(nfa.accept) ? 1 : 0);
    }
    return id;
  };
  add(closure([nfa.start]));
  for (let s = 0; s < sets.length; s++) {
    if (sets.length > MAX_STATES) return undefined;
    for (let d = 0; d < 10; d++) {
      const targets: number[] = [];
      for (const q of sets[s]!) if (nfa.on[q]! & (1 << d)) targets.push(nfa.to[q]!);
      next[s * 10 + d] = targets.length === 0 ? -1 : add(closure(targets));
    }
  }
  return new DigitDfa(Int32Array.from(next), Uint8Array.from(accepts));
}
