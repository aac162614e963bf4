// How the `ledger ...` management commands find and open the ledger, and read the filters they share.
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { LedgerError, UsageError } from '../../errors.js';
import { ledgerFailure } from '../../ledger/failure.js';
import { ledgerPath } from '../../ledger/ledger.js';
import { ledgerName, openLedgerStore } from '../../ledger/open.js';
import { isPostgresUrl, type LedgerStore } from '../../ledger/store.js';
import type { EventStatus } from '../../ledger/types.js';
import { EVENT_STATUSES, type EventFilter, type TimeField } from '../../ledger/queries.js';
import { AGE_UNITS, readAge } from '../../mapping/age.js';
import { loadConfig } from '../../mapping/config.js';
import { readTimeBound } from '../../mapping/map-record.js';
import type { CommandContext } from '../context.js';

/** The filter flags of `ledger list` and `ledger export`, as typed. */
export interface EventFilterOptions {
  /** One status or a comma-separated list: pending, sent, failed, in_doubt (in-doubt is accepted too). */
  status?: string;
  since?: string;
  until?: string;
  timeField?: TimeField;
  source?: string;
  run?: number;
}

/**
 * The absolute ledger path from --ledger, LEADLEDGER_LEDGER, the config's "ledger" or the default, relative to the
 * command's cwd; a PostgreSQL URL as it is. `configured`: the config's ledger, null for none; undefined: looked up
 * (the config found as push finds it without --config), so that `ledger ...` reads the ledger a push wrote.
 */
export function resolveLedger(
  flag: string | undefined,
  ctx: Pick<CommandContext, 'env' | 'cwd'>,
  configured?: string | null,
): string {
  const looked =
    configured === undefined && flag === undefined && !ctx.env.LEADLEDGER_LEDGER?.trim()
      ? loadConfig(undefined, ctx.cwd, ctx.env).config.ledger
      : (configured ?? undefined);
  const l = ledgerPath(flag, ctx.env, looked);
  return isPostgresUrl(l) ? l : resolve(ctx.cwd, l);
}

/** How a result names the ledger: the path, or the URL without a password. */
export { ledgerName };

/**
 * Opens an existing ledger. Management commands never create one: a typo in --ledger must not look like an empty
 * ledger (read-only) or leave a stray file behind (writable).
 */
export async function openExistingLedger(
  path: string,
  opts: { readonly: boolean; env?: Record<string, string | undefined>; stop?: AbortSignal },
): Promise<LedgerStore> {
  const pg = isPostgresUrl(path);
  const ledger =
    pg || existsSync(path) ? await openLedgerStore(path, { ...opts, readonly: pg || opts.readonly }) : undefined;
  if (!ledger) {
    throw new LedgerError(
      `no ledger at ${ledgerName(path)}: nothing has been pushed with this ledger yet (pass --ledger <file> or set LEADLEDGER_LEDGER)`,
    );
  }
  // A PostgreSQL ledger is looked for read-only (nothing is created for a typo), then opened as asked.
  if (pg && !opts.readonly) {
    await ledger.close();
    return (await openLedgerStore(path, opts))!;
  }
  return ledger;
}

/**
 * Runs fn with a ledger open and closes it afterwards, also when fn throws. A SQLite error of fn's is the ledger's
 * (exit 5): a damaged ledger says so, as it does wherever it is read.
 */
export async function withLedger<T>(
  path: string,
  opts: { readonly: boolean; env?: Record<string, string | undefined> },
  fn: (ledger: LedgerStore) => T | Promise<T>,
): Promise<T> {
  const ledger = await openExistingLedger(path, opts);
  try {
    return await fn(ledger);
  } catch (e) {
    throw ledgerFailure(e, ledger.path);
  } finally {
    await ledger.close();
  }
}

/** Parses a time flag (ISO date/time or an age like 90d, 12h, 30min, 2w, 6mo); anything else is a usage error. */
export function parseTimeFlag(flag: string, raw: string, now = Date.now()): Date {
  const d = readTimeBound(raw, now);
  if (d instanceof Date) return d;
  // An age with a unit that cannot be read says why (a bare m: minutes or months?); anything else, what is taken.
  if (readAge(raw, now)) throw new UsageError(`${flag}: ${d.error}`);
  throw new UsageError(
    `${flag} takes an ISO date or time, or an age like 90d, 12h, 30min, 2w, 6mo, 1y (units ${AGE_UNITS}); not '${raw}'`,
  );
}

/** Turns the filter flags into a ledger query filter, rejecting unknown statuses and bad times. */
export function buildFilter(o: EventFilterOptions, now = Date.now()): EventFilter {
  const f: EventFilter = { timeField: o.timeField ?? 'first_seen' };
  if (o.status !== undefined) {
    f.status = o.status
      .split(',')
      .map((s) => s.trim().replace(/-/g, '_'))
      .filter(Boolean) as EventStatus[];
    const bad = f.status.filter((s) => !EVENT_STATUSES.includes(s));
    if (bad.length || !f.status.length)
      throw new UsageError(`--status takes ${EVENT_STATUSES.join(', ')} (comma-separated); not '${o.status}'`);
  }
  if (o.since !== undefined) f.since = parseTimeFlag('--since', o.since, now);
  if (o.until !== undefined) f.until = parseTimeFlag('--until', o.until, now);
  if (f.since && f.until && f.since >= f.until) throw new UsageError('--since must be before --until');
  if (o.source !== undefined) f.source = o.source;
  if (o.run !== undefined) f.runId = o.run;
  return f;
}
