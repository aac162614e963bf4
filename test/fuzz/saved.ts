// The counterexamples the fuzz runner found, saved as fixtures (fixtures/fuzz/*.json) so they are tried forever.
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FuzzCase, FuzzInput } from './paths.js';
import type { ReaderCase } from './readers.js';

const DIR = fileURLToPath(new URL('../../fixtures/fuzz/', import.meta.url));

/** One saved case, as a file holds it: the input's bytes in base64, the ledger, and what went wrong. */
interface SavedCase {
  found: string;
  failure: string;
  inputs: Array<{ format: FuzzInput['format']; bytesBase64: string }>;
  ledger: FuzzCase['ledger'];
  map?: FuzzCase['map'];
}

/** Every saved case. */
export function savedCases(): Array<{ name: string; fuzzCase: FuzzCase }> {
  return readdirSync(DIR)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((f) => {
      const s = JSON.parse(readFileSync(join(DIR, f), 'utf8')) as SavedCase;
      const inputs = s.inputs.map((x) => ({ format: x.format, bytes: Buffer.from(x.bytesBase64, 'base64') }));
      return { name: f, fuzzCase: { inputs, ledger: s.ledger, ...(s.map ? { map: s.map } : {}) } };
    });
}

/** Saves a counterexample; returns its file. */
export function saveCase(c: FuzzCase, failure: string): string {
  const found = new Date().toISOString();
  const file = join(DIR, `${found.replace(/[:.]/g, '-')}.json`);
  const inputs = c.inputs.map((x) => ({ format: x.format, bytesBase64: x.bytes.toString('base64') }));
  const s: SavedCase = { found, failure: failure.slice(0, 4000), inputs, ledger: c.ledger };
  if (c.map) s.map = c.map;
  writeFileSync(file, JSON.stringify(s, null, 2) + '\n');
  return file;
}

/** Every saved reader case (fixtures/fuzz/readers/*.json). */
export function savedReaderCases(): Array<{ name: string; readerCase: ReaderCase }> {
  const dir = join(DIR, 'readers');
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((f) => {
      const s = JSON.parse(readFileSync(join(dir, f), 'utf8')) as {
        format: ReaderCase['format'];
        gzip: boolean;
        bytesBase64: string;
      };
      return { name: f, readerCase: { format: s.format, gzip: s.gzip, bytes: Buffer.from(s.bytesBase64, 'base64') } };
    });
}

/** Saves a reader counterexample; returns its file. */
export function saveReaderCase(c: ReaderCase, failure: string): string {
  const found = new Date().toISOString();
  mkdirSync(join(DIR, 'readers'), { recursive: true });
  const file = join(DIR, 'readers', `${found.replace(/[:.]/g, '-')}.json`);
  const s = {
    found,
    failure: failure.slice(0, 4000),
    format: c.format,
    gzip: c.gzip,
    bytesBase64: c.bytes.toString('base64'),
  };
  writeFileSync(file, JSON.stringify(s, null, 2) + '\n');
  return file;
}
