import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parsePhoneNumberFromString, type CountryCode } from 'libphonenumber-js';
import metadataJson from 'libphonenumber-js/metadata.min.json';
import { fastE164 } from '../../src/mapping/phone-fast.js';
import { normalizePhone, type Normalized } from '../../src/mapping/normalize.js';
import { seededRandom } from '../../src/sandbox/faults.js';

// fastE164 must never disagree with libphonenumber-js. The corpus is generated from the library's own metadata
// with a seeded PRNG, so a failure reproduces; every mismatch is listed.

/** What normalize.ts got from the library before the fast path existed. */
function viaLibrary(text: string, defaultCountry?: string): string | null | 'THROWS' {
  try {
    const n = parsePhoneNumberFromString(text, defaultCountry as CountryCode | undefined);
    return n && n.isValid() ? n.number : null;
  } catch {
    return 'THROWS';
  }
}

const rand = seededRandom(20240611);
const int = (lo: number, hi: number) => lo + Math.floor(rand() * (hi - lo + 1)); // inclusive
const chance = (p: number) => rand() < p;
function pick<T>(xs: readonly T[]): T {
  if (xs.length === 0) throw new Error('pick from empty list');
  return xs[Math.floor(rand() * xs.length)] as T;
}
const randomDigits = (n: number) => Array.from({ length: n }, () => String(int(0, 9))).join('');

// --- A tiny generator of strings matching the metadata's regular expressions -------------------------------
// The patterns use only literals, \d, [classes with ranges], (groups), (?:groups), |, ?, {n}, {n,m} and '$'.
type Item = { atom: Atom; min: number; max: number };
type Atom = { kind: 'chars'; chars: string[] } | { kind: 'group'; alts: Item[][] } | { kind: 'empty' };

function parsePattern(p: string): Item[][] {
  let i = 0;
  const digits = '0123456789'.split('');
  function alts(): Item[][] {
    const out = [seq()];
    while (p[i] === '|') {
      i++;
      out.push(seq());
    }
    return out;
  }
  function seq(): Item[] {
    const items: Item[] = [];
    while (i < p.length && p[i] !== '|' && p[i] !== ')') {
      const atom = parseAtom();
      let min = 1;
      let max = 1;
      if (p[i] === '?') {
        i++;
        min = 0;
      } else if (p[i] === '{') {
        const end = p.indexOf('}', i);
        const [a, b] = p.slice(i + 1, end).split(',');
        min = Number(a);
        max = b === undefined ? min : Number(b);
        i = end + 1;
      }
      items.push({ atom, min, max });
    }
    return items;
  }
  function parseAtom(): Atom {
    const c = p[i];
    if (c === '(') {
      i += p.startsWith('(?:', i) ? 3 : 1;
      const a = alts();
      if (p[i] !== ')') throw new Error(`unbalanced pattern ${p}`);
      i++;
      return { kind: 'group', alts: a };
    }
    if (c === '[') {
      const chars: string[] = [];
      i++;
      while (p[i] !== ']') {
        if (p[i] === '\\' && p[i + 1] === 'd') {
          chars.push(...digits);
          i += 2;
        } else if (p[i + 1] === '-' && p[i + 2] !== ']') {
          for (let k = p.charCodeAt(i); k <= p.charCodeAt(i + 2); k++) chars.push(String.fromCharCode(k));
          i += 3;
        } else chars.push(p[i++] as string);
      }
      i++;
      return { kind: 'chars', chars };
    }
    if (c === '\\' && p[i + 1] === 'd') {
      i += 2;
      return { kind: 'chars', chars: digits };
    }
    if (c === '$') {
      i++;
      return { kind: 'empty' };
    }
    if (c === undefined || !/[0-9]/.test(c)) throw new Error(`unsupported pattern syntax '${c}' in ${p}`);
    i++;
    return { kind: 'chars', chars: [c] };
  }
  const out = alts();
  if (i !== p.length) throw new Error(`trailing pattern text in ${p}`);
  return out;
}

const parsed = new Map<string, Item[][]>();
function sample(pattern: string): string {
  let ast = parsed.get(pattern);
  if (!ast) parsed.set(pattern, (ast = parsePattern(pattern)));
  const gen = (alts: Item[][]): string =>
    pick(alts)
      .map((it) => {
        let s = '';
        for (let n = int(it.min, it.max); n > 0; n--) {
          if (it.atom.kind === 'chars') s += pick(it.atom.chars);
          else if (it.atom.kind === 'group') s += gen(it.atom.alts);
        }
        return s;
      })
      .join('');
  return gen(ast);
}

// --- Metadata views -------------------------------------------------------------------------------------------
type Plan = unknown[];
const meta = metadataJson as unknown as {
  country_calling_codes: Record<string, string[]>;
  countries: Record<string, Plan>;
  nonGeographic?: Record<string, Plan>;
};
const callingCodes = [...Object.keys(meta.country_calling_codes), ...Object.keys(meta.nonGeographic ?? {})];
const singleCountryCodes = Object.keys(meta.country_calling_codes).filter(
  (c) => meta.country_calling_codes[c]?.length === 1,
);
/** Numbering plans to draw national numbers from, with the calling code they are dialled with. */
const plans: { code: string; plan: Plan }[] = [
  ...Object.values(meta.countries).map((plan) => ({ code: String(plan[0]), plan })),
  ...Object.entries(meta.nonGeographic ?? {}).map(([code, plan]) => ({ code, plan })),
];

/** A national number that matches the plan's pattern (usually valid), or a near miss of one. */
function nationalNumber(plan: Plan, mutate: boolean): string {
  let n = sample(String(plan[2]));
  if (mutate) {
    const k = int(0, Math.max(0, n.length - 1));
    switch (int(0, 3)) {
      case 0:
        n = n.slice(0, k) + String(int(0, 9)) + n.slice(k + 1);
        break;
      case 1:
        n = n.slice(0, k) + n.slice(k + 1);
        break;
      case 2:
        n = n + String(int(0, 9));
        break;
      default:
        n = n.slice(0, k) + String(int(0, 9)) + n.slice(k);
        break;
    }
  }
  // National prefixes are stripped from international numbers too, so put some in front.
  const prefix = plan[5];
  const prefixForParsing = plan[7];
  if (typeof prefix === 'string' && chance(0.15)) n = prefix + n;
  else if (typeof prefixForParsing === 'string' && chance(0.15)) n = sample(prefixForParsing) + n;
  return n;
}

/** Writes "+<code><nsn>" the ways people do. */
function format(code: string, nsn: string): string {
  const groups = (s: string, seps: readonly string[]) => {
    let out = '';
    let i = 0;
    while (i < s.length) {
      const g = int(1, 5);
      out += (i > 0 ? pick(seps) : '') + s.slice(i, i + g);
      i += g;
    }
    return out;
  };
  switch (int(0, 8)) {
    case 0:
      return '+' + code + nsn;
    case 1:
      return '+' + code + ' ' + nsn;
    case 2:
      return '+' + code + ' ' + groups(nsn, [' ', '-', '.']);
    case 3:
      return `+${code} (${nsn.slice(0, 2)}) ${nsn.slice(2, -4)}-${nsn.slice(-4)}`;
    case 4:
      return (
        '+' +
        code +
        pick([' ', '  ', '-', '.', ' - ', '']) +
        groups(nsn, [' ', '  ', '-', '.', '(', ')', ' (', ') ', '--', ''])
      );
    case 5:
      return `+(${code}) ${nsn}`;
    case 6:
      return `+ ${code} ${groups(nsn, [' '])}`;
    case 7:
      return groups('+' + code + nsn, [' ', '-', '.', '(', ')', '']);
    default:
      return `+${code}-${groups(nsn, ['-'])}`;
  }
}

const ARABIC_INDIC = '٠١٢٣٤٥٦٧٨٩';
const FULLWIDTH = '０１２３４５６７８９';
/** Things the fast path must refuse (or get right): odd characters, extensions, URIs, lengths. */
function disturb(s: string): string {
  switch (int(0, 24)) {
    case 0:
      return '  ' + s;
    case 1:
      return s + '  ';
    case 2:
      return '\t' + s + '\u00a0';
    case 3:
      return (
        s +
        pick([' ext 12', ' ext. 1234', ' x12', ' #', '#', ' ext', ';ext=5', ',,12', ', 3', ' ~ 7', ' int 4', ' доб 5'])
      );
    case 4: {
      const k = int(1, s.length);
      return s.slice(0, k) + pick(['a', 'O', 'x', 'e', 'I', 'l', 'é']) + s.slice(k);
    }
    case 5:
      return '+' + s;
    case 6:
      return s.replace('+', '＋');
    case 7:
      return s.replace(/[0-9]/g, (d) => ARABIC_INDIC[Number(d)] ?? d);
    case 8:
      return s.replace(/[0-9]/g, (d) => (chance(0.3) ? (FULLWIDTH[Number(d)] ?? d) : d));
    case 9:
      return s + pick([')', '-', '.', ' ', '(', ' )']);
    case 10:
      return s.replace('+', '');
    case 11:
      return s.replace('+', '00');
    case 12:
      return s + ' ' + s;
    case 13:
      return s + randomDigits(int(250, 300));
    case 14:
      return s.replace(/ /g, pick(['/', '~', '\u2013', '\u00a0', '\u3000', '\t']));
    case 15:
      return 'tel:' + s.replace(/ /g, '');
    case 16:
      return s.replace(/ /g, '') + ';phone-context=' + pick(['+55', 'example.com', '', '+1 ']);
    case 17:
      return s.replace(/ /g, '') + ';isub=1234';
    case 18:
      return s.replace('+', '+0');
    case 19:
      return 'Phone: ' + s;
    case 20:
      return s.replace(/[0-9]$/, '');
    case 21:
      return s + randomDigits(int(1, 30));
    case 22:
      return s.slice(0, int(1, 4));
    case 23:
      return s.replace('+', '+' + pick(['', ' ', '(', '-']) + '+');
    default:
      return s.replace(/ /g, '  ');
  }
}

function buildCorpus(): { inputs: string[]; plainValidCandidates: string[]; bench: string[] } {
  const inputs: string[] = [];
  const plainValidCandidates: string[] = []; // "+CC NSN" from single-country codes, pattern-generated
  const bench: string[] = [];
  const add = (s: string) => inputs.push(chance(0.2) ? disturb(s) : s);

  // Every calling code with random digits of every length 1..17 after it.
  for (const code of callingCodes) {
    for (let len = 1; len <= 17; len++) for (let k = 0; k < 10; k++) add(format(code, randomDigits(len)));
  }
  // Numbers generated from each plan's national number pattern: mostly valid, some near misses.
  for (const { code, plan } of plans) {
    for (let k = 0; k < 400; k++) {
      const nsn = nationalNumber(plan, chance(0.3));
      add(format(code, nsn));
      if (singleCountryCodes.includes(code)) plainValidCandidates.push(`+${code} ${sample(String(plan[2]))}`);
    }
  }
  // Random codes, including ones that do not exist and ones starting with 0.
  for (let k = 0; k < 30_000; k++) add(format(randomDigits(int(1, 4)), randomDigits(int(0, 18))));
  // Pure noise over the phone alphabet.
  const alphabet = '+0123456789 -.()/x#,;e';
  for (let k = 0; k < 10_000; k++)
    inputs.push(Array.from({ length: int(0, 30) }, () => pick(alphabet.split(''))).join(''));
  // The benchmark shape.
  for (let k = 0; k < 20_000; k++) bench.push('+55 11 9' + randomDigits(8));
  for (const s of [...bench, ...plainValidCandidates]) inputs.push(s);
  return { inputs, plainValidCandidates, bench };
}

const corpus = buildCorpus();

test('fastE164 agrees with libphonenumber-js on every input it decides', (t) => {
  const mismatches: string[] = [];
  let decided = 0;
  let validDecided = 0;
  for (const s of corpus.inputs) {
    const fast = fastE164(s);
    if (fast === undefined) continue;
    decided++;
    if (fast !== null) validDecided++;
    const lib = viaLibrary(s);
    if (fast !== lib && mismatches.length < 25) mismatches.push(`${JSON.stringify(s)}: fast ${fast}, library ${lib}`);
  }
  t.diagnostic(`${corpus.inputs.length} inputs, ${decided} decided by the fast path (${validDecided} valid)`);
  assert.deepEqual(mismatches, []);
  assert.ok(corpus.inputs.length >= 200_000, `corpus too small: ${corpus.inputs.length}`);
});

test('the default country never changes the answer for a decided input', () => {
  const mismatches: string[] = [];
  for (let k = 0; k < corpus.inputs.length; k += 7) {
    const s = corpus.inputs[k] as string;
    const fast = fastE164(s);
    if (fast === undefined) continue;
    for (const country of ['BR', 'US', 'DE', 'GB', 'AR', 'XX', 'constructor']) {
      const lib = viaLibrary(s, country);
      if (fast !== lib && mismatches.length < 25)
        mismatches.push(`${JSON.stringify(s)} (${country}): fast ${fast}, library ${lib}`);
    }
  }
  assert.deepEqual(mismatches, []);
});

test('the fast path decides the common shapes instead of deferring everything', () => {
  for (const s of corpus.bench) assert.equal(fastE164(s), viaLibrary(s), s);
  assert.equal(fastE164('+55 11 930029883'), '+5511930029883');
  assert.equal(fastE164('+5511930029883'), '+5511930029883');
  assert.equal(fastE164('+55 (11) 93002-9883'), '+5511930029883');
  assert.equal(fastE164('+49 (0)30 1234567'), viaLibrary('+49 (0)30 1234567'));
  assert.notEqual(fastE164('+49 (0)30 1234567'), undefined);

  const valid = corpus.plainValidCandidates.filter((s) => viaLibrary(s) !== null);
  const decided = valid.filter((s) => fastE164(s) !== undefined).length;
  assert.ok(valid.length > 10_000, `too few valid single-country samples: ${valid.length}`);
  assert.ok(
    decided / valid.length >= 0.8,
    `fast path decided only ${decided} of ${valid.length} valid "+CC NSN" inputs`,
  );
});

test('inputs outside the strict grammar are left to the library', () => {
  for (const s of [
    ' +5511930029883',
    '+5511930029883 ',
    '++5511930029883',
    '＋5511930029883',
    '+55 11 93002-9883 ext 12',
    '+55 11 93002-9883#',
    '+55 11 93002-9883)',
    '+٥٥١١٩٣٠٠٢٩٨٨٣',
    '5511930029883',
    '+55/11/930029883',
    'tel:+5511930029883',
    '+1 (415) 555-2671',
    '+44 20 7946 0958',
    '+7 912 345 67 89',
    '+800 1234 5678',
    '+0 11 930029883',
    '+55',
  ])
    assert.equal(fastE164(s), undefined, s);
});

test('normalizePhone keeps its results and messages', () => {
  const before = (raw: string, defaultCountry?: string): Normalized => {
    const v = raw.trim();
    const n = parsePhoneNumberFromString(v, defaultCountry as CountryCode | undefined);
    if (n && n.isValid()) return { ok: true, value: n.number };
    const hint = v.startsWith('+') || defaultCountry ? '' : ' (national number: set --default-country, e.g. BR)';
    // A long value is quoted cut short, so that a huge value cannot make a huge reason.
    const quoted = v.length > 80 ? `'${v.slice(0, 60)}…' (${v.length} characters)` : `'${v}'`;
    return { ok: false, reason: `${quoted} is not a valid phone number${hint}` };
  };
  for (let k = 0; k < corpus.inputs.length; k += 13) {
    const s = corpus.inputs[k] as string;
    if (viaLibrary(s) === 'THROWS') continue;
    const country = pick([undefined, 'BR', 'US', 'DE']);
    assert.deepEqual(normalizePhone(s, country), before(s, country), `${JSON.stringify(s)} ${country}`);
  }
});
