// `leadledger ledger import`: mark event keys or people as already delivered, so that adopting leadledger on a
// CRM that already has the data creates no duplicates (and so tests and benchmarks can seed a ledger).
import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { createGunzip } from 'node:zlib';
import { canonicalEventRow } from '../../ledger/email-keys.js';
import { ledgerName, openLedgerStore } from '../../ledger/open.js';
import { planFields, readField } from '../../mapping/fields.js';
import { normalizeEmail } from '../../mapping/normalize.js';
import { readInputs } from '../../sources/read-inputs.js';
import type { ReadOptions } from '../../sources/types.js';
import { unreadPart, type Unread } from '../../report/run-report.js';
import { isExportRow, readExportRow } from './export-row.js';
import type { CommandContext } from '../context.js';
import { resolveLedger } from './access.js';

/** Options of `ledger import`. */
export interface LedgerImportOptions {
  files: string[];
  ledger?: string;
  as: 'auto' | 'keys' | 'emails';
  read?: ReadOptions;
}

/** What an import did. */
export interface LedgerImportResult {
  ledger: string;
  added: number;
  alreadyPresent: number;
  keys: number;
  emails: number;
  rejected: Array<{ source: string; line: number; reason: string }>;
  rejectedCount: number;
  /** Parts of the files that could not be read (the command then ends with exit code 3). */
  unread: Unread[];
}

/** Imports keys and emails from text (one value per line), CSV or JSON(L) files into the ledger as delivered. */
export async function ledgerImport(o: LedgerImportOptions, ctx: CommandContext): Promise<LedgerImportResult> {
  // A relative file is the command's cwd's, as for every other subcommand.
  const path = resolveLedger(o.ledger, ctx);
  // Ctrl-C ends a wait for another process's upgrade of the ledger, as it ends the import.
  const ledger = (await openLedgerStore(path, { env: ctx.env, stop: ctx.stop }))!;
  const res: LedgerImportResult = {
    ledger: ledgerName(path),
    added: 0,
    alreadyPresent: 0,
    keys: 0,
    emails: 0,
    rejected: [],
    rejectedCount: 0,
    unread: [],
  };
  let batch: Array<{ key?: string; naturalKey?: string; crmId?: string }> = [];
  const reject = (source: string, line: number, reason: string) => {
    res.rejectedCount++;
    if (res.rejected.length < 20) res.rejected.push({ source, line, reason });
  };
  const flush = async (source: string) => {
    if (!batch.length) return;
    const r = await ledger.importDelivered(batch, source);
    res.added += r.added;
    res.alreadyPresent += r.present;
    batch = [];
  };
  const addValue = async (raw: string, source: string, line: number): Promise<void> => {
    const v = raw.trim();
    if (!v) return;
    const looksEmail = v.includes('@');
    if (o.as === 'emails' || (o.as === 'auto' && looksEmail)) {
      const e = normalizeEmail(v);
      if (!e.ok) return reject(source, line, e.reason);
      batch.push({ naturalKey: e.value });
      res.emails++;
    } else {
      batch.push({ key: v });
      res.keys++;
    }
    if (batch.length >= 10_000) await flush(source);
  };
  // Recorded as a run, not holding the lock (an import may go on beside a push): a push that reads its ledger
  // through a snapshot (decide-inputs.ts) asks the ledger again once a run started after its own, so the people
  // imported meanwhile are known leads to it, not new ones.
  let run: number | undefined;
  let failure: Error | undefined;
  try {
    run = await ledger.startRun('ledger import', { files: o.files.length, as: o.as }, { exclusive: false });
    for (const file of o.files) {
      if (isPlainList(file) && !o.read?.format) {
        const input = file.endsWith('.gz') ? createReadStream(file).pipe(createGunzip()) : createReadStream(file);
        let line = 0;
        for await (const text of createInterface({ input, crlfDelay: Infinity })) await addValue(text, file, ++line);
        await flush(file);
        continue;
      }
      for await (const items of readInputs([file], o.read ?? {})) {
        for (const it of items) {
          if (it.kind === 'reject') {
            reject(it.source, it.line, it.reason);
            continue;
          }
          if (it.kind === 'unread') {
            res.unread.push(unreadPart(it));
            continue;
          }
          // A leadledger export: its key column is the event key, and only its sent rows were delivered.
          if (isExportRow(it.fields)) {
            const x = readExportRow(it.fields);
            if (x.ok) {
              // An export of a ledger from before emails had one form: its person, and a key taken of the address,
              // as this ledger holds them (the upgrade of a ledger does the same: email-keys.ts).
              const now = canonicalEventRow({
                key: x.key,
                key_kind: typeof it.fields.key_kind === 'string' ? it.fields.key_kind : 'id',
                natural_key: x.naturalKey ?? null,
                lead_json: typeof it.fields.lead_json === 'string' && it.fields.lead_json ? it.fields.lead_json : null,
              });
              batch.push({ key: now?.key ?? x.key, naturalKey: now?.natural_key ?? x.naturalKey, crmId: x.crmId });
              res.keys++;
            } else reject(it.source, it.line, x.reason);
            if (batch.length >= 10_000) await flush(it.source);
            continue;
          }
          const plan = planFields(it.fields, {});
          const email = readField(it.fields, plan.email) ?? '';
          const id = readField(it.fields, plan.id) ?? '';
          if (o.as !== 'keys' && email) {
            const e = normalizeEmail(email);
            if (!e.ok) reject(it.source, it.line, `email: ${e.reason}`);
            // In a CRM export the id column is the CRM's record id; for event files it is the event key.
            else {
              batch.push(
                o.as === 'emails'
                  ? { naturalKey: e.value, crmId: id || undefined }
                  : { key: id || undefined, naturalKey: e.value },
              );
              res.emails++;
            }
          } else if (o.as !== 'emails' && id) {
            batch.push({ key: id });
            res.keys++;
          } else reject(it.source, it.line, o.as === 'emails' ? 'no email' : 'no event key or email');
          if (batch.length >= 10_000) await flush(it.source);
        }
        await flush(file);
      }
    }
  } catch (e) {
    failure = e as Error;
    throw e;
  } finally {
    try {
      if (run !== undefined)
        await ledger.finishRun(
          run,
          failure ? 'failed' : 'done',
          failure ? { error: failure.message } : { added: res.added, alreadyPresent: res.alreadyPresent },
        );
    } finally {
      await ledger.close();
    }
  }
  return res;
}

function isPlainList(file: string): boolean {
  const f = file.toLowerCase().replace(/\.gz$/, '');
  return f.endsWith('.txt') || f.endsWith('.ids') || f.endsWith('.list') || !/\.[a-z]+$/.test(f.split('/').pop() ?? '');
}
