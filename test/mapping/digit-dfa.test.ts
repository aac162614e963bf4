// The digit automata must answer exactly what the RegExps of the same patterns answer, for every pattern of the
// library's metadata they compile, on digit strings that match and that do not.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import metadataJson from 'libphonenumber-js/metadata.min.json';
import { compileDigitPattern } from '../../src/mapping/digit-dfa.js';
import { seededRandom } from '../../src/sandbox/faults.js';

// The national number patterns (index 2) and the national prefixes for parsing (5, 7) of every country.
function metadataPatterns(): string[] {
  const out = new Set<string>();
  const countries = (metadataJson as unknown as { countries: Record<string, unknown[]> }).countries;
  for (const c of Object.values(countries))
    for (const i of [2, 5, 7]) if (typeof c[i] === 'string' && c[i]) out.add(c[i] as string);
  return [...out];
}

const rand = seededRandom(7);
const digits = (n: number): string => Array.from({ length: n }, () => String(Math.floor(rand() * 10))).join('');

// Every start of one to three digits, then random digits: the patterns branch on their leading digits.
function samples(): string[] {
  const out = [''];
  for (let lead = 0; lead < 1110; lead++) {
    const head =
      lead < 10 ? String(lead) : lead < 110 ? String(lead - 10).padStart(2, '0') : String(lead - 110).padStart(3, '0');
    for (let k = 0; k < 4; k++) out.push(head + digits(Math.floor(rand() * 15)));
  }
  return out;
}

test('digit automata answer as the RegExps do, matching whole numbers and their starts, on every metadata pattern', () => {
  const patterns = metadataPatterns();
  const inputs = samples().map((s) => Buffer.from(s));
  let compiled = 0;
  let whole = 0;
  let starts = 0;
  for (const p of patterns) {
    const dfa = compileDigitPattern(p);
    if (!dfa) {
      // Only patterns outside the part the compiler reads are left to their RegExp.
      assert.match(p, /[$^*+]|\(\?[^:]/, `'${p}' was not compiled`);
      continue;
    }
    compiled++;
    const entire = new RegExp('^(?:' + p + ')$');
    const prefix = new RegExp('^(?:' + p + ')');
    for (const b of inputs) {
      const s = b.toString();
      const e = entire.test(s);
      assert.equal(dfa.matchesEntirely(b, 0, b.length), e, `'${s}' against ^(?:${p})$`);
      const st = prefix.test(s);
      assert.equal(dfa.matchesPrefix(b, 0, b.length), st, `'${s}' against ^(?:${p})`);
      if (e) whole++;
      if (st) starts++;
    }
  }
  assert.ok(compiled >= patterns.length * 0.9, `${compiled} of ${patterns.length} patterns compiled`);
  assert.ok(whole > 10_000 && starts > 10_000, `the samples exercise matches (${whole} whole, ${starts} starts)`);
});

test('a digit automaton reads the bytes it is given, at any offset', () => {
  const dfa = compileDigitPattern('(?:0|90)(?:(1[245]|2[1-35]|31|4[13]|[56]5|99)(\\d{10,11}))?')!;
  const b = Buffer.from('xx9012345678901yy');
  assert.equal(dfa.matchesPrefix(b, 2, 15), true);
  assert.equal(dfa.matchesEntirely(b, 2, 4), true); // "90"
  assert.equal(dfa.matchesEntirely(b, 2, 5), false); // "901"
  assert.equal(compileDigitPattern('[1-467]\\d{9,10}')!.matchesEntirely(Buffer.from('51234567890'), 0, 11), false);
  assert.equal(compileDigitPattern('[1-467]\\d{9,10}')!.matchesEntirely(Buffer.from('61234567890'), 0, 11), true);
});

test('patterns outside the compiled part are refused, not guessed', () => {
  for (const p of ['([457]\\d{6})$|1', '[^0]\\d', 'a\\d', '(?=1)\\d', '\\w', '1{3,2}', '[9-1]', '(1', '1)', '1??']) {
    assert.equal(compileDigitPattern(p), undefined, p);
  }
});
