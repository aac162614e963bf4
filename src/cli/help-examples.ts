// Examples each command's --help ends with (as gh's EXAMPLES): a line or two a person can adapt, for every command
// and subcommand. Kept beside no heavy import: --help loads this file.
import type { Command } from 'commander';
import { SINKS } from '../sinks/registry.js';

/** Examples by command path ('push', 'ledger show'): the command line, and what it does when that is not plain. */
export const COMMAND_EXAMPLES: Readonly<Record<string, ReadonlyArray<readonly [string, string?]>>> = {
  push: [
    ['leadledger push events.jsonl -n', 'audit: what would be sent, and why not the rest'],
    ['leadledger push export.csv -n --report plan.csv', 'the decision for every row, as a spreadsheet'],
    ["leadledger push 'logs/*.jsonl.gz' --select body -n", 'webhook bodies inside a log'],
    ...SINKS.flatMap((s) => s.examples.map((e): readonly [string] => [e])),
    ['leadledger -q push exports/*.csv --sink hubspot --wait', 'for cron: errors only, wait for a run in progress'],
  ],
  replay: [
    ['leadledger replay', 'after an outage: send again what failed, to the sink it was sent to'],
    [`leadledger replay --sink ${SINKS[0].name}`, 'the same, to a sink named here'],
    [`leadledger replay --in-doubt --sink ${SINKS[0].name}`, 'settle what a crash left in doubt'],
    ['leadledger replay --permanent --keys evt_1,evt_2 -n', 'what fixing the mapping would re-send'],
  ],
  serve: [
    [
      'leadledger serve --sink hubspot --endpoint app',
      'try it: POST /hooks/app on 127.0.0.1:8080 (no signature check: loopback only)',
    ],
    [
      'leadledger serve -c /etc/leadledger/config.json --host 0.0.0.0 --archive /var/lib/leadledger/archive',
      'in production: the endpoints and their signatures come from the config',
    ],
  ],
  doctor: [
    [`leadledger doctor --sink ${SINKS[0].name}`, 'before a long push: config, ledger, credentials, the CRM'],
    ['leadledger doctor --json', 'the same checks, for a script (exit 0 when none fails)'],
  ],
  presets: [
    ['leadledger presets', 'every source read without configuration'],
    ['leadledger presets typeform --json', 'one of them, as JSON'],
  ],
  init: [
    ['leadledger init export.csv', 'what it recognizes, then asks to write leadledger.config.json'],
    ['leadledger init sample.jsonl --default-country BR -y', 'write without asking (cron, CI)'],
    ['leadledger init export.csv -n', 'print the config, write nothing'],
  ],
  auth: [['leadledger auth rdstation', 'obtain and store RD Station credentials (opens the consent page)']],
  sandbox: [
    ['leadledger sandbox --port 8765', 'a local CRM to try leadledger on'],
    [
      'leadledger push events.jsonl --sink hubspot --hubspot-url http://127.0.0.1:8765',
      'in another terminal (HUBSPOT_TOKEN=anything)',
    ],
  ],
  ledger: [
    ['leadledger ledger stats', 'what the ledger holds'],
    ['leadledger ledger list --status failed', 'the events that failed'],
  ],
  'ledger stats': [['leadledger ledger stats --ledger .leadledger/ledger.db']],
  'ledger list': [
    ['leadledger ledger list --status failed,in_doubt --limit 20'],
    ['leadledger ledger list --since 7d --json', 'the last week, as JSON'],
  ],
  'ledger show': [['leadledger ledger show evt_01JA0009', 'one event: its lead, attempts and runs']],
  'ledger runs': [['leadledger ledger runs --limit 5', 'the last five runs']],
  'ledger export': [['leadledger ledger export -o events.csv --status sent', 'what was delivered, as CSV']],
  'ledger forget': [
    ['leadledger ledger forget --email ana@example.com -n', 'what erasing a person would remove'],
    ['leadledger ledger forget evt_1 evt_2 -y', 'forget two events (they may be sent again)'],
  ],
  'ledger prune': [['leadledger ledger prune --older-than 90d -n', 'what clearing old payloads would free']],
  'ledger verify': [['leadledger ledger verify', 'check the file and the ledger invariants (exit 5 on a problem)']],
  'ledger migrate': [['leadledger ledger migrate --to postgres://app@db.example.com/leads', 'move to PostgreSQL']],
  'ledger import': [
    ['leadledger ledger import crm-contacts.csv --as emails', 'adopt leadledger on a CRM that has data'],
  ],
  version: [['leadledger version']],
  completion: [
    ['leadledger completion bash > ~/.local/share/bash-completion/completions/leadledger'],
    ['leadledger completion zsh > "${fpath[1]}/_leadledger"'],
    ['leadledger completion fish > ~/.config/fish/completions/leadledger.fish'],
  ],
};

/** A command's path below the program: 'push', 'ledger show'. */
export function commandPath(cmd: Command): string {
  const names: string[] = [];
  for (let c: Command | null = cmd; c?.parent; c = c.parent) names.unshift(c.name());
  return names.join(' ');
}

/** The text of an Examples section. */
export function examplesText(examples: ReadonlyArray<readonly [string, string?]>): string {
  const width = Math.min(60, Math.max(...examples.map(([line]) => line.length)));
  const lines = examples.map(([line, what]) =>
    what ? (line.length > width ? `  $ ${line}\n      ${what}` : `  $ ${line.padEnd(width)}   ${what}`) : `  $ ${line}`,
  );
  return `\nExamples:\n${lines.join('\n')}\n`;
}

/** Ends the --help of every command below `program` with its examples. */
export function addExamples(program: Command): void {
  const walk = (cmd: Command) => {
    for (const sub of cmd.commands) {
      const ex = COMMAND_EXAMPLES[commandPath(sub)];
      if (ex) sub.addHelpText('after', examplesText(ex));
      walk(sub);
    }
  };
  walk(program);
}
