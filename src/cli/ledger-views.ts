// Human renderings of the `ledger ...` management commands' results. Pure text: the caller picks the stream.
import type { ChalkInstance } from 'chalk';
import type { ErasureCommandResult, ForgetKeysResult } from '../commands/ledger/forget.js';
import type { LedgerListResult } from '../commands/ledger/list.js';
import type { LedgerPruneResult } from '../commands/ledger/prune.js';
import type { LedgerRunsResult } from '../commands/ledger/runs.js';
import type { LedgerShowResult } from '../commands/ledger/show.js';
import type { LedgerStatsResult } from '../commands/ledger/stats.js';
import type { LedgerVerifyResult } from '../commands/ledger/verify.js';
import type { RunSummary } from '../commands/ledger/run-summary.js';
import { printable } from '../report/printable.js';
import { formatTable } from './table.js';

const time = (iso: string | null | undefined) => (iso ? iso.replace('T', ' ').replace(/\.\d{3}Z$/, 'Z') : '');

/** Bytes as B, KB, MB or GB. */
export function formatBytes(n: number): string {
  const units = ['B', 'KB', 'MB', 'GB'];
  let v = n;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return i === 0 ? `${n} B` : `${v.toFixed(v < 10 ? 1 : 0)} ${units[i]}`;
}

/** A duration as 850 ms, 12.3 s, 4 min 5 s or 2 h 3 min. */
export function formatDuration(ms: number | null): string {
  if (ms === null) return '';
  if (ms < 1000) return `${ms} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  const s = Math.round(ms / 1000);
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
}

/** `ledger stats` as text. */
export function formatStats(r: LedgerStatsResult, c: ChalkInstance): string {
  const lines = [
    c.bold(`ledger ${r.ledger}`),
    `schema v${r.schemaVersion} · ${formatBytes(r.size.total)} on disk (db ${formatBytes(r.size.db)}, wal ${formatBytes(r.size.wal)}, shm ${formatBytes(r.size.shm)})`,
    `${r.events} events${r.events ? `, first seen ${time(r.oldestFirstSeen)} … ${time(r.newestFirstSeen)}` : ''}`,
    `${r.attempts} attempts · ${r.runs} runs · ${r.tombstones} erased keys (tombstones) · ${r.payloadsPruned} sent events with payload pruned`,
  ];
  if (r.byStatus.length) {
    lines.push(
      '',
      formatTable(
        [{ header: 'status' }, { header: 'events', right: true }],
        r.byStatus.map((s) => [s.failure ? `${s.status} (${s.failure})` : s.status, String(s.count)]),
      ),
    );
  }
  if (r.bySource.length) {
    lines.push(
      '',
      formatTable(
        [
          { header: 'source', max: 60 },
          { header: 'events', right: true },
        ],
        r.bySource.map((s) => [s.source ?? '(none)', String(s.count)]),
      ),
    );
  }
  if (r.byRun.length) {
    lines.push(
      '',
      formatTable(
        [
          { header: 'last run', right: true },
          { header: 'command' },
          { header: 'run status' },
          { header: 'events', right: true },
        ],
        r.byRun.map((x) => [
          x.runId === null ? '(none)' : String(x.runId),
          x.command ?? (x.runId === null ? '' : '(missing)'),
          x.status ?? '',
          String(x.count),
        ]),
      ),
    );
  }
  return lines.join('\n');
}

/** `ledger list` as a table. */
export function formatEventList(r: LedgerListResult): string {
  return formatTable(
    [
      { header: 'key', max: 40 },
      { header: 'status' },
      { header: 'natural key', max: 32 },
      { header: 'crm id', max: 20 },
      { header: 'attempts', right: true },
      { header: 'last error', max: 48 },
      { header: 'updated' },
    ],
    r.events.map((e) => [
      e.key,
      e.failure && e.status === 'failed' ? `failed (${e.failure})` : e.status,
      e.natural_key ?? '',
      e.crm_id ?? '',
      String(e.attempts),
      e.last_error ?? '',
      time(e.updated_at),
    ]),
  );
}

/** `ledger show` as labelled fields, then the history. */
export function formatShow(r: LedgerShowResult, c: ChalkInstance): string {
  const e = r.event;
  const fields: Array<[string, unknown]> = [
    ['key', e.key],
    ['key kind', e.key_kind],
    ['status', e.failure && e.status === 'failed' ? `failed (${e.failure})` : e.status],
    ['outcome', e.outcome],
    ['natural key', e.natural_key],
    ['crm id', e.crm_id],
    ['attempts', e.attempts],
    ['last error', e.last_error],
    ['sink', e.sink],
    ['downstream key', e.downstream_key],
    ['payload hash', e.payload_hash],
    ['source', e.source === null ? null : `${e.source}${e.source_line ? `:${e.source_line}` : ''}`],
    ['event time', e.event_time],
    ['first seen', time(e.first_seen_at)],
    ['updated', time(e.updated_at)],
    ['sent', time(e.sent_at)],
    ['last run', e.run_id],
  ];
  const w = Math.max(...fields.map(([k]) => k.length));
  const lines = fields
    .filter(([, v]) => v !== null && v !== '')
    .map(([k, v]) => `${c.dim(k.padEnd(w))}  ${printable(String(v), 4000)}`);
  lines.push(
    `${c.dim('lead'.padEnd(w))}  ${e.lead === null ? '(not stored: pruned or imported)' : printable(JSON.stringify(e.lead), 4000)}`,
  );
  lines.push('', c.bold('attempts'));
  lines.push(
    r.attempts.length
      ? formatTable(
          [{ header: 'at' }, { header: 'run', right: true }, { header: 'outcome' }, { header: 'detail', max: 80 }],
          r.attempts.map((a) => [time(a.at), a.run_id === null ? '' : String(a.run_id), a.outcome, a.detail ?? '']),
        )
      : '  (none)',
  );
  lines.push('', c.bold('runs'));
  lines.push(r.runs.length ? runTable(r.runs, false) : '  (none)');
  return lines.join('\n');
}

/** `ledger runs` as a table. */
export function formatRuns(r: LedgerRunsResult): string {
  return runTable(r.runs, true);
}

function runTable(runs: RunSummary[], withArgs: boolean): string {
  // A run records its counts grouped ({counts: {read, new, ...}, delivery: {sent, ...}}, with a figure or an error
  // of its own beside them; older runs, flat): what was delivered first, then the run's own values, then the rest
  // (the column is cut at its width). Zeros are left out.
  const isRecord = (v: unknown): v is Record<string, unknown> => !!v && typeof v === 'object' && !Array.isArray(v);
  const rank = ([k, v]: [string, unknown]) => (k === 'delivery' ? 0 : isRecord(v) ? 2 : 1);
  const numbers = (o: Record<string, unknown>): string[] =>
    Object.entries(o)
      .sort((a, b) => rank(a) - rank(b))
      .flatMap(([k, n]) =>
        isRecord(n)
          ? numbers(n)
          : (typeof n === 'number' && n !== 0) || typeof n === 'string' || typeof n === 'boolean'
            ? [`${k}=${String(n)}`]
            : [],
      );
  const counts = (v: unknown) => (isRecord(v) ? numbers(v).join(' ') : v === null ? '' : JSON.stringify(v));
  return formatTable(
    [
      { header: 'id', right: true },
      { header: 'command' },
      { header: 'status' },
      { header: 'started' },
      { header: 'duration', right: true },
      { header: 'counts', max: 60 },
      ...(withArgs ? [{ header: 'args', max: 60 }] : []),
    ],
    runs.map((x) => [
      String(x.id),
      x.command,
      x.status,
      time(x.startedAt),
      formatDuration(x.durationMs),
      counts(x.counts),
      ...(withArgs ? [x.args === null ? '' : JSON.stringify(x.args)] : []),
    ]),
  );
}

/** `ledger verify`: each problem with examples, or one line saying all is well. */
export function formatVerify(r: LedgerVerifyResult, c: ChalkInstance): string {
  if (r.ok) return c.green(`ledger ${r.ledger}: ok (integrity check and ledger invariants)`);
  const lines = [c.red(`ledger ${r.ledger}: ${r.problems.length} problem${r.problems.length === 1 ? '' : 's'}`)];
  for (const p of r.problems) {
    lines.push(`  ${c.yellow(p.check)}: ${p.count} × ${p.message}`);
    if (p.examples.length)
      lines.push(
        `    e.g. ${p.examples.map((x) => printable(x)).join(', ')}${p.count > p.examples.length ? ', …' : ''}`,
      );
  }
  return lines.join('\n');
}

/** What `forget` would do or did. */
export function formatForget(r: ForgetKeysResult | ErasureCommandResult, c: ChalkInstance): string {
  const lines: string[] = [];
  const head = r.dryRun ? c.bold('dry run: nothing was changed') : '';
  if (head) lines.push(head);
  if (r.mode === 'keys') {
    const verb = r.dryRun ? 'would forget' : r.applied ? 'forgot' : 'not forgotten';
    if (r.plan.found.length) {
      lines.push(
        `${verb} ${r.plan.found.length} event${r.plan.found.length === 1 ? '' : 's'} (${r.applied ? `${r.attemptsDeleted} attempts deleted` : 'with their attempts'}); they are eligible to be sent again:`,
      );
      for (const f of r.plan.found) lines.push(`  ${printable(f.key)}  ${f.status}`);
    } else lines.push('no matching events in the ledger: nothing to forget');
    for (const k of r.plan.tombstoned)
      lines.push(
        c.yellow(`  ${printable(k)}: erased earlier (forget --email); its tombstone stays, so it is still skipped`),
      );
    for (const k of r.plan.missing) lines.push(c.yellow(`  ${printable(k)}: not in the ledger`));
    return lines.join('\n');
  }
  const p = r.plan;
  const verb = r.dryRun ? 'would erase' : r.applied ? 'erased' : 'not erased';
  lines.push(
    `${verb} ${p.found.length} event${p.found.length === 1 ? '' : 's'} of this person (${p.attempts} attempts); their keys stay known as tombstones`,
  );
  for (const f of p.found) lines.push(`  ${printable(f.key)}  ${f.status}`);
  const m = p.scrub;
  if (m.attempts + m.events + m.runs)
    lines.push(
      `${r.dryRun ? 'would scrub' : 'scrubbed'} the address from ${m.attempts} attempts, ${m.events} other events and ${m.runs} runs`,
    );
  if (r.erasure)
    lines.push(
      r.erasure.walTruncated
        ? 'compacted the ledger: no copy of the address remains in ledger.db or its WAL'
        : c.red('another process holds the ledger open: its WAL could not be emptied, and may still hold the address'),
    );
  return lines.join('\n');
}

/** What `prune` would do or did. */
export function formatPrune(r: LedgerPruneResult, c: ChalkInstance): string {
  const lines: string[] = [];
  if (r.dryRun) lines.push(c.bold('dry run: nothing was changed'));
  const what = `${r.matched} sent event${r.matched === 1 ? '' : 's'} last updated before ${time(r.cutoff)}`;
  if (!r.matched)
    lines.push(
      `no ${r.mode === 'rows' ? '' : 'stored payloads of '}sent events last updated before ${time(r.cutoff)}: nothing to prune`,
    );
  else if (r.mode === 'rows') {
    lines.push(
      `${r.dryRun ? 'would delete' : r.applied ? 'deleted' : 'kept'} ${what}${r.matched ? ` (${time(r.oldest)} … ${time(r.newest)})` : ''}`,
    );
    lines.push('pruned rows no longer count as delivered: a later push that reads those events sends them again');
  } else {
    lines.push(
      `${r.dryRun ? 'would clear' : r.applied ? 'cleared' : 'kept'} the stored lead of ${what}; they still count as delivered but can no longer be replayed`,
    );
  }
  return lines.join('\n');
}
