// The only place that reads argv, prints errors and calls process.exit. Commands are imported lazily so that
// --help and --version load commander and nothing else.
import { Command, CommanderError, Option } from 'commander';
import { readFileSync } from 'node:fs';
import { isClosedStdout, watchClosedOutput } from './closed-output.js';
import {
  addAuthOptions,
  addOptions,
  authorizingSinks,
  EXIT_CODES,
  EXIT_PRECEDENCE_TEXT,
  valuesFromEnv,
} from './options.js';
import { registerLedgerCommands } from './ledger-commands.js';
import { addExamples } from './help-examples.js';
import { ERROR_PREFIX, reportError } from './errors.js';
import { SINKS } from '../sinks/registry.js';

const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };

const EXAMPLES = `
Examples:
  $ leadledger push events.jsonl -n                          audit: what would be sent, and why not the rest
  $ leadledger push export.csv -n --report plan.csv          the decision for every row, as a spreadsheet
  $ leadledger push 'logs/*.jsonl.gz' --select body -n
${SINKS.flatMap((s) => s.examples.map((e) => `  $ ${e}\n`)).join('')}  $ leadledger ledger import crm-contacts.csv --as emails    adopt leadledger on a CRM that has data
  $ leadledger replay --failed --sink ${SINKS[0].name}                 after an outage, send what failed
  $ leadledger presets                                        the exports and webhooks read without configuration
  $ leadledger init export.csv                                what it recognizes, written as leadledger.config.json
  $ leadledger push --help                                    every command's --help ends with its own examples

Sinks (--sink):
${SINKS.map((s) => `  ${s.name.padEnd(10)} ${s.summary}`).join('\n')}

Exit codes:
${EXIT_CODES.map(([c, d]) => `  ${String(c).padEnd(4)} ${d}`).join('\n')}
  ${EXIT_PRECEDENCE_TEXT}
`;

/** Builds the commander program. */
export function buildProgram(): Command {
  const program = new Command('leadledger')
    .description(
      'Replay exported webhook events and CSV lead exports into a CRM exactly once.\nA local ledger of event keys skips what was already delivered.',
    )
    .version(pkg.version, '-v, --version')
    // Commander's own errors (unknown option, missing argument) start as leadledger's do; --token is explained.
    .configureOutput({ outputError: (text, write) => write(commanderErrorText(text)) })
    .showHelpAfterError('(run with --help for usage)')
    .addHelpText('after', EXAMPLES)
    .exitOverride()
    // Flags that mean the same to every command, accepted before the command too (`leadledger -q push x`).
    .addOption(new Option('-q, --quiet', 'print nothing but errors (and --json)').helpGroup('Global options:'))
    .addOption(new Option('--verbose', 'stack traces and HTTP retry details').helpGroup('Global options:'))
    .addOption(new Option('--no-color', 'no colour (also NO_COLOR=1)').helpGroup('Global options:'))
    // A ledger URL is refused with a password in it when it comes from the command line (--pg-url is refused so
    // by the sink, which also reads it from LEADLEDGER_PG_URL): LEADLEDGER_LEDGER may hold the whole URL.
    .hook('preAction', async (program, action) => {
      passGlobalFlags(program, action);
      for (const [name, envVar] of [
        ['ledger', 'LEADLEDGER_LEDGER'],
        ['to', undefined],
      ] as const) {
        const v: unknown = action.getOptionValue(name);
        if (action.getOptionValueSource(name) !== 'cli' || typeof v !== 'string') continue;
        const [{ isPostgresUrl }, { passwordInArgv, pgUrlHoldsPassword }] = await Promise.all([
          import('../ledger/store.js'),
          import('../pg-url.js'),
        ]);
        if (isPostgresUrl(v) && pgUrlHoldsPassword(v)) throw passwordInArgv(`--${name}`, envVar);
      }
    });

  addOptions(
    program
      .command('push')
      .description('read inputs, skip what the ledger already holds, send the rest (or --dry-run: report it)')
      .argument('<inputs...>', 'files (.jsonl .json .csv .tsv, optionally .gz), globs, or - for stdin'),
    'push',
  ).action(async (inputs: string[], flags: Record<string, unknown>, cmd: Command) => {
    const { runPush } = await import('./run-push.js');
    process.exitCode = await runPush(inputs, flags, valuesFromEnv(cmd));
  });

  addOptions(
    program
      .command('replay')
      .description(
        're-send from the ledger what failed or is in doubt (or, with --force, what was sent), exactly once',
      ),
    'replay',
  ).action(async (flags: Record<string, unknown>, cmd: Command) => {
    const { runReplay } = await import('./run-replay.js');
    process.exitCode = await runReplay(flags, valuesFromEnv(cmd));
  });

  addOptions(
    program
      .command('serve')
      .description(
        'receive webhooks live: verified, committed to the ledger before the 2xx, a repeat answered 200, each event delivered once',
      )
      .option('--port <n>', "port to listen on (0: any free one) (default: 8080, or the config's serve.port)")
      .option(
        '--host <address>',
        'address to listen on; beyond loopback only with a signature on every endpoint (default: 127.0.0.1)',
      )
      .option(
        '--endpoint <names...>',
        'an endpoint POST /hooks/<name> of the generic source with no signature check (loopback only, for trying it out); real endpoints go in the config (serve.endpoints)',
      )
      .option(
        '--archive <dir>',
        'append every accepted request to dir/requests-YYYY-MM-DD.jsonl (gzipped daily), which push reads',
      )
      .option(
        '--max-inbox <n>',
        'events acknowledged and not yet delivered before requests are answered 503 (default: 100000)',
      ),
    'serve',
  ).action(async (flags: Record<string, unknown>, cmd: Command) => {
    const { runServe } = await import('./run-serve.js');
    process.exitCode = await runServe(flags, valuesFromEnv(cmd));
  });

  addOptions(
    program
      .command('doctor')
      .description(
        'check, in a few seconds, what a push would meet: the config, the ledger, the credentials, the CRM (changes nothing)',
      ),
    'doctor',
  ).action(async (flags: Record<string, unknown>, cmd: Command) => {
    const { runDoctor } = await import('./run-doctor.js');
    process.exitCode = await runDoctor(flags, valuesFromEnv(cmd));
  });

  program
    .command('presets')
    .description('list the sources leadledger recognizes (exports, webhooks, logs) and what each maps')
    .argument('[name]', 'one source, e.g. typeform')
    .option('--json', 'the listing as JSON')
    .action(async (name: string | undefined, flags: Record<string, unknown>) => {
      const { runPresets } = await import('./run-presets.js');
      process.exitCode = runPresets(name, flags);
    });

  addOptions(
    program
      .command('init')
      .description(
        'read sample inputs, say what leadledger recognizes in them, write leadledger.config.json; with --sink, what to create in the CRM first, and whether it is there',
      )
      .argument('[samples...]', 'exports or webhook logs, as push takes them (none: --sink alone)')
      .option('-o, --output <file>', 'where the config goes', 'leadledger.config.json')
      .option('--format <format>', 'jsonl, json or csv (default: from the name and content)')
      .option('--encoding <name>', 'CSV text encoding (default: detected)')
      .option('--delimiter <char>', 'CSV delimiter (default: detected)')
      .option('--default-country <code>', "country of national phone numbers (default: the locale's)")
      .option('-n, --dry-run', 'print what was found and the config; write nothing')
      .option('-y, --yes', 'write without asking, and ask nothing (needed off a terminal)')
      .option('--force', 'replace an existing config')
      .option('--json', 'what was found, as JSON'),
    'init',
  ).action(async (samples: string[], flags: Record<string, unknown>, cmd: Command) => {
    const { runInit } = await import('./run-init.js');
    process.exitCode = await runInit(samples, flags, valuesFromEnv(cmd));
  });

  addAuthOptions(
    program
      .command('auth')
      .description('obtain credentials that expire (OAuth 2) for a sink and store them for unattended runs')
      .argument(
        '<sink>',
        authorizingSinks()
          .map((s) => `${s.name}: ${s.authorizeHelp ?? ''}`)
          .join('; '),
      ),
  ).action(async (sink: string, flags: Record<string, unknown>) => {
    const { runAuth } = await import('./run-auth.js');
    process.exitCode = await runAuth(sink, flags);
  });

  const ledger = program.command('ledger').description('inspect and manage the ledger');
  registerLedgerCommands(ledger);
  program
    .command('version')
    .description('print the version of leadledger')
    .action(() => {
      process.stdout.write(`${pkg.version}\n`);
    });

  program
    .command('completion')
    .description('print a shell completion script: commands, options, sink and preset names')
    .argument('<shell>', 'bash, zsh or fish')
    .action(async (shell: string) => {
      const { completionScript } = await import('./completion.js');
      process.stdout.write(completionScript(shell, program));
    });

  addOptions(
    program
      .command('sandbox')
      .description(
        'run a local CRM emulator (HubSpot contacts API, RD Station Marketing and a webhook receiver) for trying leadledger safely',
      )
      .option('--port <n>', 'port on 127.0.0.1', '8765')
      .option(
        '--token-env <name>',
        'environment variable holding the only token the emulator accepts (default: any bearer token)',
      )
      .option('--latency <ms>', 'added latency per request', '0')
      .option('--rate-limit <n/interval>', 'HubSpot-style limit, e.g. 100/10s', '100/10s')
      .option('--rdstation-rate-limit <n/interval>', "the RD Station account's limit, e.g. 500/1m", '120/1m')
      .option('--faults <json>', 'fault injection, e.g. {"error5xxRate":0.1,"commitThenDropRate":0.05}')
      .option(
        '--webhook-secret-env <name>',
        'environment variable holding the HMAC secret the webhook receiver verifies',
      )
      .option('--honour-idempotency-key', 'the webhook receiver drops repeated Idempotency-Keys'),
    'sandbox',
  ).action(async (flags: Record<string, unknown>) => {
    const { runSandboxCommand } = await import('./run-sandbox.js');
    process.exitCode = await runSandboxCommand(flags);
  });
  addExamples(program);
  return program;
}

/**
 * The program takes the global flags wherever they are (commander gives the program an option it knows before
 * and after the command): each is handed to the command about to run, when that command has it.
 */
function passGlobalFlags(program: Command, action: Command): void {
  for (const name of ['quiet', 'verbose', 'color']) {
    if (program.getOptionValueSource(name) !== 'cli') continue;
    if (!action.options.some((o) => o.attributeName() === name)) continue;
    action.setOptionValueWithSource(name, program.getOptionValue(name), 'cli');
  }
}

// Options that would carry a secret on the command line. Their values are never echoed: `--token=...` included.
const SECRET_OPTION = /unknown option '(--[\w-]*(?:token|secret|password|api-key)[\w-]*)(?:=[^']*)?'/;

/** Commander's error text with leadledger's prefix; a secret-bearing option gets the way secrets come in. */
export function commanderErrorText(text: string): string {
  const secret = SECRET_OPTION.exec(text);
  if (secret) {
    const envs = [...new Set(SINKS.flatMap((s) => (s.tokenEnv ? [s.tokenEnv] : [])))].join(', ');
    return `${ERROR_PREFIX}${secret[1]} is not an option: tokens never go on the command line (every user of the machine sees it in ps, and the shell keeps it in its history); set it in the environment (${envs}) or put it in a file readable by you only and pass --token-file FILE\n`;
  }
  return text.startsWith('error: ') ? `${ERROR_PREFIX}${text.slice('error: '.length)}` : text;
}

/** Runs the CLI with argv; exits with the code of the outcome. */
export async function main(argv: string[]): Promise<void> {
  watchClosedOutput();
  const program = buildProgram();
  // -V was the version flag before -v: still accepted, unlisted.
  if (argv[2] === '-V') argv = [...argv.slice(0, 2), '--version', ...argv.slice(3)];
  try {
    await program.parseAsync(argv);
  } catch (e) {
    if (e instanceof CommanderError) {
      process.exitCode = e.exitCode === 0 ? 0 : 2;
      return;
    }
    // Its reader took what it wanted (`| head`) and closed the pipe: the command stops there, quietly.
    if (isClosedStdout(e)) {
      process.exitCode = 0;
      return;
    }
    process.exitCode = reportError(e, argv.includes('--verbose'));
  }
}

await main(process.argv);
