// Wiring of `leadledger ledger ...` subcommands.
import { ledgerImport } from '../commands/ledger-import.js';
import { createOutput } from './output.js';
import { installStopSignals } from './signals.js';

/** Runs `ledger import`; returns the exit code. */
export async function runLedgerImport(files: string[], flags: Record<string, unknown>): Promise<number> {
  const out = await createOutput(flags);
  const signals = installStopSignals();
  try {
    const r = await ledgerImport(
      { files, ledger: flags.ledger as string | undefined, as: (flags.as as 'auto' | 'keys' | 'emails') ?? 'auto',
        read: { format: flags.format as 'csv' | 'json' | 'jsonl' | undefined, encoding: flags.encoding as string | undefined, delimiter: flags.delimiter as string | undefined, select: flags.select as string | undefined } },
      { env: process.env, cwd: process.cwd(), stop: signals.stop, hardStop: signals.hardStop, warn: out.warn },
    );
    if (flags.json) process.stdout.write(JSON.stringify(r, null, 2) + '\n');
    out.info(`ledger ${r.ledger}: imported ${r.keys} keys and ${r.emails} emails as delivered (${r.added} new, ${r.alreadyPresent} already there)`);
    for (const x of r.rejected) out.warn(`${x.source}:${x.line}: ${x.reason}`);
    if (r.rejectedCount > r.rejected.length) out.warn(`… and ${r.rejectedCount - r.rejected.length} more rejected lines`);
    return r.rejectedCount ? 1 : 0;
  } finally {
    signals.dispose();
  }
}
