// `leadledger ledger export`: every event (filtered like `list`) as CSV or JSONL, for audits, backups and moving a
// ledger; `ledger import` reads the file back (export-row.ts). The file holds personal data: it is written 0600.
import { stringify } from 'csv-stringify/sync';
import { once } from 'node:events';
import { constants, createWriteStream, openSync, renameSync, rmSync, type WriteStream } from 'node:fs';
import { resolve } from 'node:path';
import { ExitCode, LeadledgerError, UsageError } from '../../errors.js';
import { ledgerFailure } from '../../ledger/failure.js';
import type { LedgerEventRow } from '../../ledger/types.js';
import { iterateEvents } from '../../ledger/queries.js';
import type { CommandContext } from '../context.js';
import { EXPORT_COLUMNS, exportCell } from './export-row.js';
import { buildFilter, ledgerName, openExistingLedger, resolveLedger, type EventFilterOptions } from './access.js';

/** Options of `ledger export`. */
export interface LedgerExportOptions extends EventFilterOptions {
  ledger?: string;
  /** A .csv or .jsonl file, or - for `stdout`. */
  output: string;
  /** Needed only when the name does not say it; - defaults to jsonl. */
  format?: 'csv' | 'jsonl';
  /** Where `-` writes (the CLI passes process.stdout). */
  stdout?: NodeJS.WritableStream;
}

/** What an export wrote. */
export interface LedgerExportResult {
  ledger: string;
  output: string;
  format: 'csv' | 'jsonl';
  rows: number;
}

/**
 * The temp file is always a new file of this process, created 0600 in the open itself: a file or link planted at its
 * predictable name (${target}.${pid}.tmp) is refused rather than followed, truncated and filled with personal data.
 */
const CREATE_NEW_NO_FOLLOW = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | (constants.O_NOFOLLOW ?? 0);

/** Writes the ledger's events to a file or stdout; a file appears complete or not at all (temp file + rename). */
export async function ledgerExport(o: LedgerExportOptions, ctx: CommandContext): Promise<LedgerExportResult> {
  const format = exportFormat(o.output, o.format);
  const filter = buildFilter(o);
  const path = resolveLedger(o.ledger, ctx);
  const toStdout = o.output === '-';
  if (toStdout && !o.stdout) throw new UsageError('export to - needs a stdout stream');
  const target = toStdout ? '-' : resolve(ctx.cwd, o.output);
  const tmp = `${target}.${process.pid}.tmp`;
  const ledger = await openExistingLedger(path, { readonly: true, env: ctx.env });
  let out: NodeJS.WritableStream;
  try {
    // Opened synchronously so that a bad path fails here, with its reason, before anything is read.
    out = toStdout ? o.stdout! : createWriteStream('', { fd: openSync(tmp, CREATE_NEW_NO_FOLLOW, 0o600) });
  } catch (e) {
    await ledger.close();
    if ((e as NodeJS.ErrnoException).code === 'EEXIST')
      throw new UsageError(
        `cannot write ${target}: its temporary file ${tmp} already exists (a link, or left by an earlier export); remove it and run again`,
      );
    throw new UsageError(`cannot write ${target}: ${(e as Error).message}`);
  }
  let failed: Error | undefined;
  const onError = (e: Error) => (failed ??= e);
  out.on('error', onError);
  let rows = 0;
  try {
    // One statement on one connection reads a consistent snapshot, even while a push writes.
    for await (const chunk of chunks(iterateEvents(ledger.sql, filter), format)) {
      if (failed) throw failed;
      rows += chunk.rows;
      if (!out.write(chunk.text)) await once(out, 'drain');
    }
    if (failed) throw failed;
    if (!toStdout) {
      const file = out as WriteStream;
      await new Promise<void>((res, rej) => {
        file.once('error', rej);
        file.end(() => res());
      });
      renameSync(tmp, target);
    }
  } catch (e) {
    if (!toStdout) {
      (out as WriteStream).destroy();
      rmSync(tmp, { force: true });
    }
    // Stdout that cannot be written (a full disk behind `> file`) is said as such; a reader that has gone (EPIPE) is
    // left to the CLI, for which it is a normal end.
    const code = (e as NodeJS.ErrnoException).code;
    if (toStdout && e === failed && code !== 'EPIPE')
      throw new LeadledgerError(`cannot write stdout: ${(e as Error).message}`, ExitCode.incomplete);
    throw ledgerFailure(e, ledger.path);
  } finally {
    out.off('error', onError);
    await ledger.close();
  }
  return { ledger: ledgerName(path), output: target, format, rows };
}

/** The export format: --format, else the file extension; stdout defaults to JSONL. */
export function exportFormat(output: string, format?: string): 'csv' | 'jsonl' {
  if (format !== undefined) {
    if (format !== 'csv' && format !== 'jsonl') throw new UsageError(`--format takes csv or jsonl, not '${format}'`);
    return format;
  }
  if (output === '-') return 'jsonl';
  const f = output.toLowerCase();
  if (f.endsWith('.csv')) return 'csv';
  if (f.endsWith('.jsonl') || f.endsWith('.ndjson')) return 'jsonl';
  throw new UsageError(`cannot tell the export format from '${output}': name it .csv or .jsonl, or pass --format`);
}

// Rows become text 2000 at a time, so memory stays flat on a ledger of millions.
async function* chunks(
  rows: AsyncIterable<LedgerEventRow>,
  format: 'csv' | 'jsonl',
): AsyncGenerator<{ text: string; rows: number }> {
  if (format === 'csv') yield { text: stringify([[...EXPORT_COLUMNS]]), rows: 0 };
  let buf: string[] = [];
  for await (const r of rows) {
    buf.push(
      format === 'csv'
        ? stringify([EXPORT_COLUMNS.map((c) => exportCell(r[c]))])
        : JSON.stringify(Object.fromEntries(EXPORT_COLUMNS.map((c) => [c, r[c]]))) + '\n',
    );
    if (buf.length >= 2000) {
      yield { text: buf.join(''), rows: buf.length };
      buf = [];
    }
  }
  if (buf.length) yield { text: buf.join(''), rows: buf.length };
}
