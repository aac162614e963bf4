// What the tests of presets run: the built CLI on an input (a fixture of fixtures/sources/, or a file the test
// wrote), its --json report, the row per record of its --report, and the leads a push wrote to the JSONL sink.
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ReportRow } from '../../src/report/report-file.js';
import { runCli, ROOT } from '../helpers/cli.js';
import { tmpDir } from '../helpers/tmp.js';

/** A fixture of fixtures/sources/. */
export const fx = (f: string): string => join(ROOT, 'fixtures', 'sources', f);

/** The part of the --json report these tests read. */
export interface Doc {
  counts: Record<string, number>;
  delivery?: Record<string, number>;
  readAs: Array<{ readAs?: Array<{ as: string; events: number }> }>;
  /** Parts of the inputs not read, records that could not be read among them. */
  unread: Array<{ source: string; line: number; toLine?: number; reason: string }>;
  exitCode: number;
}

/** The fields of a --report row (JSONL) these tests read. */
export type Row = Pick<ReportRow, 'line' | 'item' | 'key' | 'email' | 'decision' | 'reason' | 'warnings'>;

/** One lead as the JSONL sink wrote it. */
export interface Sent {
  key: string;
  lead: { email?: string; phone?: string; name?: string; company?: string; source?: string; [more: string]: unknown };
}

/** The records of a JSONL text. */
export const parseJsonLines = <T>(text: string): T[] =>
  text
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as T);

/** The records of a JSONL file; none where it was never written (a sink that had nothing to send). */
export const jsonLines = <T>(file: string): T[] =>
  existsSync(file) ? parseJsonLines<T>(readFileSync(file, 'utf8')) : [];

/** A run of the CLI: its --json report, the rows of its --report (none without one), and what it printed. */
export interface Ran {
  doc: Doc;
  rows: Row[];
  stdout: string;
  stderr: string;
}

/**
 * Runs `leadledger <args> --json`, with `--report <report>` when one is named. It must exit 0, or with `orFailed`
 * 0 or 1 (finished, but some events failed or are in doubt), or with one of `exit` when given.
 */
export async function runJson(
  args: string[],
  opts: { report?: string; orFailed?: boolean; exit?: number[] } = {},
): Promise<Ran> {
  const r = await runCli([...args, '--json', ...(opts.report ? ['--report', opts.report] : [])]);
  const exit = opts.exit ?? (opts.orFailed ? [0, 1] : [0]);
  assert.ok(exit.includes(r.code!), `exit ${r.code}: ${r.stderr}`);
  const rows = opts.report ? jsonLines<Row>(opts.report) : [];
  return { doc: JSON.parse(r.stdout) as Doc, rows, stdout: r.stdout, stderr: r.stderr };
}

/**
 * A dry-run audit as a user runs it: `push <input> --dry-run` (flags after) against an empty ledger, in a directory
 * of its own, with its per-record report there (`report`); it must exit 0.
 */
export async function audit(input: string, ...flags: string[]): Promise<Ran & { report: string }> {
  const dir = tmpDir();
  const report = join(dir, 'report.jsonl');
  const ran = await runJson(['push', input, '--dry-run', '--ledger', join(dir, 'l.db'), ...flags], { report });
  return { ...ran, report };
}

/**
 * Runs `leadledger <args> --json --report <dir>/<name>.jsonl`, which may exit 1 (or, given `exit`, must end with
 * one of those codes); the report and its rows.
 */
export function run(dir: string, name: string, args: string[], exit = [0, 1]): Promise<Ran> {
  return runJson(args, { report: join(dir, `${name}.jsonl`), exit });
}

/** `push <input> --dry-run` in the test's dir, against a ledger of its own unless `extra` names one. */
export function dryRun(dir: string, input: string, ...extra: string[]): Promise<Ran> {
  const ledger = extra.includes('--ledger') ? [] : ['--ledger', join(dir, 'dry.db')];
  return run(dir, 'dry-run', ['push', input, '--dry-run', ...ledger, ...extra]);
}

/** What a report said it read its input as. */
export const readAs = (doc: Doc): Array<{ as: string; events: number }> => doc.readAs.flatMap((x) => x.readAs ?? []);

/** The counts that are not zero. */
export const nonZero = (doc: Doc): Record<string, number> =>
  Object.fromEntries(Object.entries(doc.counts).filter(([, n]) => n > 0));

/** The rows of one decision, as [line, item?, reason] for readable assertions. */
export const decided = (rows: Row[], decision: string): Array<[number, number | '', string]> =>
  rows.filter((r) => r.decision === decision).map((r) => [r.line, r.item, r.reason]);

/** The emails of the rows decided new, in input order. */
export const emailsOfNew = (rows: Row[]): string[] => rows.filter((r) => r.decision === 'new').map((r) => r.email);

/**
 * Pushes the input to the JSONL sink, then pushes it again: the first sends `sends` leads (returned as the sink wrote
 * them), the second sends nothing, since every key is in the ledger.
 */
export function pushTwice(dir: string, input: string, sends: number, ...extra: string[]): Promise<Sent[]> {
  return pushTwiceEnding([0, 1], dir, input, sends, ...extra);
}

/** pushTwice of an input whose pushes end with one of the codes `exit` (3: a record of it cannot be read). */
export async function pushTwiceEnding(
  exit: number[],
  dir: string,
  input: string,
  sends: number,
  ...extra: string[]
): Promise<Sent[]> {
  const out = join(dir, 'out.jsonl');
  const args = ['push', input, '--ledger', join(dir, 'push.db'), '--sink', 'jsonl', '--output', out, ...extra];
  const first = await run(dir, 'push-1', args, exit);
  assert.equal(first.doc.delivery?.sent, sends, JSON.stringify(first.doc.delivery));
  const sent = jsonLines<Sent>(out);
  assert.equal(sent.length, sends);
  const second = await run(dir, 'push-2', args, exit);
  assert.equal(second.doc.delivery?.sent, 0, 'the second push sends nothing');
  assert.equal(second.doc.counts.new, 0);
  assert.equal(jsonLines<Sent>(out).length, sends, 'nothing more was written to the sink');
  return sent;
}

/** email → phone of the leads sent. */
export const phones = (sent: Sent[]): Record<string, string | undefined> =>
  Object.fromEntries(sent.map((s) => [s.lead.email ?? '', s.lead.phone]));
