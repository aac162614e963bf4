// Wiring of the `leadledger ledger ...` subcommands (stats, list, show, runs, export, forget, prune, verify,
// import). Each action lazy-imports its command and views, so `--help` loads commander and this file only.
// Listings are the data asked for: tables and --json go to stdout; confirmations, notes and warnings to stderr.
import { Option, type Command } from 'commander';
import type { CommandContext } from '../commands/context.js';
import type { LedgerShowResult } from '../commands/ledger/show.js';
import { camelRow, machineJson, runDocument } from './machine-json.js';
import { addOptions, OPTIONS } from './options.js';
import type { Output } from './output.js';

type Flags = Record<string, unknown>;

const whole = (name: string, min: number) => (v: string) => {
  const n = Number(v);
  if (!Number.isInteger(n) || n < min) throw new Error(`${name} takes a whole number ≥ ${min}, not '${v}'`);
  return n;
};

// Flags only the management commands take; the shared ones (--ledger, --json, ...) come from the option table.
const LOCAL: Record<string, () => Option> = {
  status: () =>
    new Option('--status <status>', 'only events in these statuses: pending, sent, failed, in_doubt (comma-separated)'),
  timeField: () =>
    new Option('--time-field <field>', '--since/--until apply to when the event was first seen or last updated')
      .choices(['first_seen', 'updated'])
      .default('first_seen'),
  source: () => new Option('--source <file>', 'only events read from this input file (whole path, or its last part)'),
  run: () =>
    new Option('--run <id>', 'only events last touched by this run (see `ledger runs`)').argParser(whole('--run', 1)),
  limit: () => new Option('--limit <n>', 'at most n rows; 0 for all').argParser(whole('--limit', 0)),
  dryRun: () =>
    new Option('-n, --dry-run', 'show what would change and change nothing (the ledger is opened read-only)'),
  yes: () =>
    new Option('-y, --yes', 'do not ask for confirmation (required when stdin is not a terminal, e.g. in cron)'),
};

/** Adds stats, list, show, runs, export, forget, prune, verify and import to the `ledger` command. */
export function registerLedgerCommands(ledger: Command): void {
  common(
    ledger
      .command('stats')
      .description('counts by status, source and run; oldest and newest event; size on disk; schema version'),
  ).action(async (flags: Flags) => {
    const { out, ctx } = await setup(flags);
    const [{ ledgerStats }, v] = await Promise.all([
      import('../commands/ledger/stats.js'),
      import('./ledger-views.js'),
    ]);
    const r = await ledgerStats({ ledger: str(flags.ledger) }, ctx);
    // The ledger's own schema version is named so beside the document's schemaVersion.
    const { schemaVersion: ledgerSchemaVersion, ...stats } = r;
    print(flags.json ? json({ ...stats, ledgerSchemaVersion }) : v.formatStats(r, out.chalk));
  });

  filters(
    common(
      ledger
        .command('list')
        .description('list events, most recently updated first (the stored lead is left out: see show and export)'),
    ),
  )
    .addOption(LOCAL.limit!().default(50))
    .action(async (flags: Flags) => {
      const { out, ctx } = await setup(flags);
      const [{ ledgerList }, v] = await Promise.all([
        import('../commands/ledger/list.js'),
        import('./ledger-views.js'),
      ]);
      const r = await ledgerList(
        { ledger: str(flags.ledger), ...filterFlags(flags), limit: flags.limit as number },
        ctx,
      );
      print(flags.json ? json({ ...r, events: r.events.map(camelRow) }) : r.events.length ? v.formatEventList(r) : '');
      if (!r.events.length) out.info('no matching events');
      else if (r.total > r.events.length)
        out.info(
          `showing ${r.events.length} of ${r.total} matching events (--limit ${flags.limit as number}; 0 for all)`,
        );
    });

  common(
    ledger
      .command('show')
      .description('one event: its row, the lead stored for it, its attempts and the runs that touched it')
      .argument('<key>', 'the event key'),
  ).action(async (key: string, flags: Flags) => {
    const { out, ctx } = await setup(flags);
    const [{ ledgerShow }, v] = await Promise.all([import('../commands/ledger/show.js'), import('./ledger-views.js')]);
    const r = await ledgerShow({ ledger: str(flags.ledger), key }, ctx);
    print(flags.json ? json(showDocument(r)) : v.formatShow(r, out.chalk));
  });

  common(
    ledger
      .command('runs')
      .description('recorded runs, newest first: command, status, times, counts and arguments (secrets masked)'),
  )
    .addOption(LOCAL.limit!().default(20))
    .action(async (flags: Flags) => {
      const { out, ctx } = await setup(flags);
      const [{ ledgerRuns }, v] = await Promise.all([
        import('../commands/ledger/runs.js'),
        import('./ledger-views.js'),
      ]);
      const r = await ledgerRuns({ ledger: str(flags.ledger), limit: flags.limit as number }, ctx);
      print(flags.json ? json({ ...r, runs: r.runs.map(runDocument) }) : r.runs.length ? v.formatRuns(r) : '');
      if (!r.runs.length) out.info('no runs recorded');
      else if (r.total > r.runs.length) out.info(`showing ${r.runs.length} of ${r.total} runs (--limit 0 for all)`);
    });

  filters(
    common(
      ledger
        .command('export')
        .summary('write events (filtered like list) as CSV or JSONL')
        .description(
          'Write events (filtered like list) as CSV or JSONL; `ledger export --status sent` then `ledger import` moves what was delivered to another ledger. The file holds personal data: it is written with mode 0600.',
        ),
    ),
  )
    .addOption(new Option('-o, --output <file>', 'a .csv or .jsonl file, or - for stdout').makeOptionMandatory())
    .addOption(
      new Option('--format <format>', 'csv or jsonl (default: from the file name; jsonl for -)').choices([
        'csv',
        'jsonl',
      ]),
    )
    .action(async (flags: Flags) => {
      const { out, ctx } = await setup(flags);
      const { ledgerExport } = await import('../commands/ledger/export.js');
      const r = await ledgerExport(
        {
          ledger: str(flags.ledger),
          ...filterFlags(flags),
          output: flags.output as string,
          format: flags.format as 'csv' | 'jsonl' | undefined,
          stdout: process.stdout,
        },
        ctx,
      );
      // With -, stdout is the export itself: the JSON summary would corrupt it.
      if (flags.json && r.output !== '-') print(json(r));
      out.info(`exported ${r.rows} events from ${r.ledger} to ${r.output === '-' ? 'stdout' : r.output} (${r.format})`);
    });

  common(
    ledger
      .command('forget')
      .summary('delete events so they are sent again; --email: erase a person (LGPD/GDPR)')
      .description(
        'Delete events (and their attempts) so they are eligible to be sent again.\n\nWith --email, erase a person (LGPD/GDPR): every event whose natural key or stored lead holds the address is deleted, its key kept only as a hash (old events of theirs are still skipped as duplicates), the address is scrubbed from the text of other rows, and the file is compacted so no copy remains in ledger.db or its WAL.',
      )
      .argument('[keys...]', 'event keys to forget'),
  )
    .addOption(new Option('--email <address>', 'erase every event of this person, and every mention of the address'))
    .addOption(LOCAL.dryRun!())
    .addOption(LOCAL.yes!())
    .action(async (keys: string[], flags: Flags) => {
      const { out, ctx } = await setup(flags);
      const [{ ledgerForget }, { createConfirm }, v, { ExitCode }] = await Promise.all([
        import('../commands/ledger/forget.js'),
        import('./confirm.js'),
        import('./ledger-views.js'),
        import('../errors.js'),
      ]);
      const r = await ledgerForget(
        {
          ledger: str(flags.ledger),
          keys,
          email: str(flags.email),
          dryRun: !!flags.dryRun,
          confirm: createConfirm({ yes: !!flags.yes, command: 'ledger forget' }),
        },
        ctx,
      );
      report(flags, out, r, v.formatForget(r, out.chalk));
      if (r.mode === 'email' && r.erasure && !r.erasure.walTruncated) {
        out.warn('another process kept the WAL open: stop it and run this command again to finish the erasure');
        process.exitCode = ExitCode.ledger;
      } else if (declined(r)) process.exitCode = ExitCode.incomplete;
    });

  common(
    ledger
      .command('prune')
      .summary('retention: clear the stored lead of old sent events (--rows: delete them)')
      .description(
        'Retention: clear the stored lead of sent events last updated before the cutoff; they still count as delivered, but can no longer be replayed.\n\nWith --rows, delete those rows instead. Pruned rows are not tombstoned: they no longer count as delivered, and a later push that reads those events sends them again.\n\nPending, failed and in-doubt events are never touched.',
      ),
  )
    .addOption(
      new Option(
        '--older-than <age>',
        'cutoff: an age (90d, 12h, 30min, 2w, 6mo, 1y; a bare m is refused) or an ISO date',
      ).makeOptionMandatory(),
    )
    .addOption(
      new Option('--rows', 'delete the sent rows instead of clearing their payload (the events become eligible again)'),
    )
    .addOption(LOCAL.dryRun!())
    .addOption(LOCAL.yes!())
    .action(async (flags: Flags) => {
      const { out, ctx } = await setup(flags);
      const [{ ledgerPrune }, { createConfirm }, v, { ExitCode }] = await Promise.all([
        import('../commands/ledger/prune.js'),
        import('./confirm.js'),
        import('./ledger-views.js'),
        import('../errors.js'),
      ]);
      const r = await ledgerPrune(
        {
          ledger: str(flags.ledger),
          olderThan: str(flags.olderThan),
          rows: !!flags.rows,
          dryRun: !!flags.dryRun,
          confirm: createConfirm({ yes: !!flags.yes, command: 'ledger prune' }),
        },
        ctx,
      );
      report(flags, out, r, v.formatPrune(r, out.chalk));
      if (declined(r)) process.exitCode = ExitCode.incomplete;
    });

  common(
    ledger
      .command('verify')
      .description('check the file (SQLite integrity_check) and the ledger invariants; exit 5 when a problem is found'),
  ).action(async (flags: Flags) => {
    const { out, ctx } = await setup(flags);
    const [{ ledgerVerify }, v, { ExitCode }] = await Promise.all([
      import('../commands/ledger/verify.js'),
      import('./ledger-views.js'),
      import('../errors.js'),
    ]);
    const r = await ledgerVerify({ ledger: str(flags.ledger) }, ctx);
    if (flags.json) print(json(r));
    else if (!r.ok || !out.quiet) print(v.formatVerify(r, out.chalk));
    if (!r.ok) process.exitCode = ExitCode.ledger;
  });

  common(
    ledger
      .command('migrate')
      .description(
        'copy this ledger (events, runs, attempts, tombstones) into a new one, e.g. PostgreSQL for several hosts; the counts are checked and the source is left as it is, but for the record of this run, which holds it while it copies (exit 5 while a push holds it, or --wait)',
      )
      .requiredOption('--to <ledger>', 'the new ledger: postgres://user@host/db[?schema=name], or a file')
      .addOption(tableOption('--wait [seconds]')),
  ).action(async (flags: Flags) => {
    const { out, ctx } = await setup(flags);
    const { ledgerMigrate } = await import('../commands/ledger/migrate.js');
    const wait = flags.wait === true ? 600_000 : typeof flags.wait === 'number' ? flags.wait : undefined;
    const r = await ledgerMigrate({ ledger: str(flags.ledger), to: str(flags.to)!, wait }, ctx);
    if (flags.json) print(json(r));
    const t = r.tables;
    out.info(
      `copied ${r.ledger} to ${r.to}: ${t.events.copied} events, ${t.runs.copied} runs, ${t.attempts.copied} attempts, ${t.tombstones.copied} tombstones (counts checked)`,
    );
  });

  addOptions(
    ledger
      .command('import')
      .description('mark event keys or people (emails) as already delivered: adopting leadledger on an existing CRM')
      .argument('<files...>', 'text (one key or email per line), CSV or JSONL; a CRM contact export works')
      .addOption(new Option('--as <what>', 'what the values are').choices(['auto', 'keys', 'emails']).default('auto')),
    'ledger',
  ).action(async (files: string[], flags: Flags) => {
    const [{ ledgerImport }, { createOutput }, { installStopSignals }, { ExitCode }] = await Promise.all([
      import('../commands/ledger/import.js'),
      import('./output.js'),
      import('./signals.js'),
      import('../errors.js'),
    ]);
    const out = await createOutput(flags);
    const signals = installStopSignals();
    try {
      const r = await ledgerImport(
        {
          files,
          ledger: str(flags.ledger),
          as: (flags.as as 'auto' | 'keys' | 'emails' | undefined) ?? 'auto',
          read: {
            format: flags.format as 'csv' | 'json' | 'jsonl' | undefined,
            encoding: str(flags.encoding),
            delimiter: str(flags.delimiter),
            select: str(flags.select),
          },
        },
        { env: process.env, cwd: process.cwd(), stop: signals.stop, hardStop: signals.hardStop, warn: out.warn },
      );
      if (flags.json) print(json(r));
      out.info(
        `ledger ${r.ledger}: imported ${r.keys} keys and ${r.emails} emails as delivered (${r.added} new, ${r.alreadyPresent} already there)`,
      );
      for (const x of r.rejected) out.warn(`${x.source}:${x.line}: ${x.reason}`);
      if (r.rejectedCount > r.rejected.length)
        out.warn(`… and ${r.rejectedCount - r.rejected.length} more rejected lines`);
      for (const u of r.unread) out.warn(`${u.source}: not read from line ${u.line} to the end: ${u.reason}`);
      process.exitCode = r.unread.length ? ExitCode.input : r.rejectedCount ? ExitCode.incomplete : ExitCode.ok;
    } finally {
      signals.dispose();
    }
  });
}

// The options every management subcommand takes, from the shared option table.
function common(cmd: Command): Command {
  for (const flags of ['--ledger <file>', '--json', '--quiet', '--verbose', '--no-color'])
    cmd.addOption(tableOption(flags));
  return cmd;
}

function filters(cmd: Command): Command {
  cmd.addOption(LOCAL.status!()).addOption(tableOption('--since <time>')).addOption(tableOption('--until <time>'));
  return cmd.addOption(LOCAL.timeField!()).addOption(LOCAL.source!()).addOption(LOCAL.run!());
}

// The table's --json text speaks of a run report; these commands print their own result.
const DESCRIPTIONS: Record<string, string> = { '--json': 'print the result as JSON on stdout' };

function tableOption(flags: string): Option {
  // By the long flag: the table may give it a short one too ('-q, --quiet').
  const def = OPTIONS.find((d) => d.flags === flags || d.flags.endsWith(`, ${flags}`));
  if (!def) throw new Error(`option ${flags} is missing from the option table`);
  // Defaults are applied by the commands (resolveLedger, which also reads LEADLEDGER_LEDGER), so only shown here.
  const shown = def.default !== undefined ? ` (default: ${String(def.default)})` : '';
  const o = new Option(def.flags, (DESCRIPTIONS[flags] ?? def.description) + shown);
  if (def.env) o.env(def.env);
  if (def.parse) o.argParser(def.parse);
  return o;
}

function filterFlags(flags: Flags) {
  return {
    status: str(flags.status),
    since: str(flags.since),
    until: str(flags.until),
    timeField: flags.timeField as 'first_seen' | 'updated' | undefined,
    source: str(flags.source),
    run: flags.run as number | undefined,
  };
}

async function setup(flags: Flags): Promise<{ out: Output; ctx: CommandContext }> {
  const { createOutput } = await import('./output.js');
  const out = await createOutput(flags);
  // These commands do no long sends: Ctrl-C may stop them at once, so the signals are never aborted.
  const never = new AbortController().signal;
  return { out, ctx: { env: process.env, cwd: process.cwd(), stop: never, hardStop: never, warn: out.warn } };
}

// Destructive commands: --json is the result on stdout; a dry run's plan is the data asked for (stdout); after a
// change, the account of it is a message for the person (stderr).
function report(flags: Flags, out: Output, r: { dryRun: boolean }, text: string): void {
  if (flags.json) print(json(r));
  else if (r.dryRun) print(text);
  else out.info(text);
}

function declined(
  r: { dryRun: boolean; applied: boolean } & (
    { mode: 'keys'; plan: { found: unknown[] } } | { mode: 'email' } | { matched: number }
  ),
): boolean {
  if (r.dryRun || r.applied) return false;
  if ('matched' in r) return r.matched > 0;
  return r.mode === 'keys' ? r.plan.found.length > 0 : true;
}

const str = (v: unknown) => (typeof v === 'string' ? v : undefined);
// Every --json document: its schemaVersion first (machine-json.ts); print adds the newline.
const json = (v: object) => machineJson(v as Record<string, unknown>).trimEnd();

// `ledger show --json`: the event's columns in camelCase with its lead parsed (not also as the stored text), its
// attempts likewise, its runs as `ledger runs` gives them.
function showDocument(r: LedgerShowResult): Record<string, unknown> {
  const { lead_json: _text, lead, ...row } = r.event;
  return {
    ledger: r.ledger,
    event: { ...camelRow(row), lead },
    attempts: r.attempts.map(camelRow),
    runs: r.runs.map(runDocument),
  };
}

function print(text: string): void {
  if (text) process.stdout.write(text + '\n');
}
