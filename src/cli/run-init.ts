// Wiring of `init`: what it found, printed (or --json), then the config written once confirmed.
import chalk from 'chalk';
import { initSink, planInit, writeInitConfig, type InitPlan, type InitSinkReport } from '../commands/init.js';
import { SINK_NAMES, sinkFlagValues } from '../sinks/registry.js';
import { UsageError } from '../errors.js';
import { printable } from '../report/printable.js';
import { isPhoneCountry } from '../mapping/default-country.js';
import { ask, askLine, type ConfirmIO } from './confirm.js';
import { machineJson } from './machine-json.js';
import { csvDelimiter } from './run-push.js';
import { installStopSignals } from './signals.js';
import type { InputFormat } from '../sources/types.js';

/** Runs `init` from parsed flags; returns the exit code. */
export async function runInit(
  samples: string[],
  flags: Record<string, unknown>,
  fromEnv: Record<string, string>,
): Promise<number> {
  const signals = installStopSignals(1000, () => undefined);
  try {
    const str = (k: string) => (typeof flags[k] === 'string' ? flags[k] : undefined);
    // --sink only: LEADLEDGER_SINK, set for push and replay, must not turn every init into a call to the CRM.
    const sink = fromEnv.sink ? undefined : str('sink') || undefined;
    if (!samples.length && !sink)
      throw new UsageError(
        'init takes sample inputs (exports or webhook logs), or --sink <name> for what a sink needs created in the CRM',
      );
    if (sink !== undefined && !(SINK_NAMES as readonly string[]).includes(sink))
      throw new UsageError(`--sink takes ${SINK_NAMES.join(', ')}, not '${sink}'`);
    const ctx = {
      env: process.env,
      cwd: process.cwd(),
      stdin: process.stdin,
      stop: signals.stop,
      hardStop: signals.hardStop,
      warn: (m: string) => process.stderr.write(`warning: ${m}\n`),
    };
    let setup: InitSinkReport | undefined;
    if (sink !== undefined) {
      const given = sinkFlagValues(flags, fromEnv);
      setup = await initSink(
        {
          sink,
          sinkFlags: given.flags,
          sinkFlagsFromEnv: given.fromEnv,
          config: str('config'),
          allowInsecure: !!flags.allowInsecure,
        },
        ctx,
      );
    }
    // With --sink alone: the sink's setup, nothing read, nothing written.
    if (!samples.length) {
      if (flags.json) process.stdout.write(machineJson({ sinkSetup: setup }));
      else process.stdout.write(describeSetup(setup!));
      return setup!.exitCode;
    }
    const plan = await planInit(
      {
        samples,
        read: {
          format: str('format') as InputFormat | undefined,
          encoding: str('encoding'),
          delimiter: csvDelimiter(str('delimiter')),
        },
        defaultCountry: str('defaultCountry'),
        defaultCountryFrom: fromEnv.defaultCountry,
        output: str('output'),
        // On a terminal, what init cannot infer is asked; off one (cron, CI, a pipe) or with --yes, it is assumed.
        ...(process.stdin.isTTY && process.stderr.isTTY && !flags.yes
          ? { askCountry: (q) => askCountry(q, { input: process.stdin, output: process.stderr }) }
          : {}),
      },
      ctx,
    );
    if (flags.json) process.stdout.write(machineJson({ ...plan, ...(setup ? { sinkSetup: setup } : {}) }));
    else process.stdout.write(describe(plan) + (setup ? describeSetup(setup) : ''));
    if (flags.dryRun) return setup?.exitCode ?? 0;
    if (plan.exists && !flags.force) throw new UsageError(`${plan.path} exists: nothing written (--force replaces it)`);
    if (!flags.yes) {
      if (!process.stdin.isTTY)
        throw new UsageError(
          `stdin is not a terminal, so nobody can confirm: nothing written (pass --yes to write ${plan.path})`,
        );
      if (!(await ask(`Write ${plan.path}? [y/N] `, { input: process.stdin, output: process.stderr }))) {
        process.stderr.write('nothing written\n');
        return 1;
      }
    }
    writeInitConfig(plan, !!flags.force);
    process.stderr.write(
      `wrote ${plan.path}: push, replay and ledger read it from the working directory (or --config ${plan.path})\n`,
    );
    return setup?.exitCode ?? 0;
  } finally {
    signals.dispose();
  }
}

/**
 * Asks the country of national phone numbers until the answer is a known ISO code; an empty answer keeps what was
 * assumed (shown in brackets).
 */
export async function askCountry(
  q: { national: number; total: number; assumed?: string },
  io: ConfirmIO,
): Promise<string | undefined> {
  const prompt = `${q.national} of ${q.total} phone numbers have no country code. Which country are they from (ISO code, e.g. BR, US)${q.assumed ? ` [${q.assumed}]` : ''}? `;
  for (;;) {
    const answer = await askLine(prompt, io);
    if (answer === undefined || answer === '') return undefined;
    if (isPhoneCountry(answer.toUpperCase())) return answer.toUpperCase();
    io.output.write(`'${printable(answer, 20)}' is not a country code known for phone numbers\n`);
  }
}

// The sink's setup as a person reads it: a line per step or finding, marked as doctor marks its checks.
function describeSetup(r: InitSinkReport): string {
  const c = chalk;
  const mark = { todo: 'todo', ok: c.green('ok  '), warn: c.yellow('warn'), fail: c.red('fail') } as const;
  const out = [`--sink ${r.sink}: before the first push`];
  for (const l of r.lines) out.push(`${mark[l.status]}  ${printable(l.message, 600)}`);
  return out.join('\n') + '\n';
}

function describe(p: InitPlan): string {
  const c = chalk;
  const out: string[] = [];
  for (const i of p.inputs) {
    const as = i.readAs.map((r) => `${r.as} (${r.events})`).join(', ');
    out.push(`${printable(i.source)}: ${i.records} records looked at, read as ${as || 'nothing'}`);
  }
  out.push('');
  out.push(p.preset ? `recognized: ${p.preset.title} (preset ${p.preset.name})` : 'fields found by their names:');
  const width = Math.max(...p.fields.map((f) => f.field.length));
  for (const f of p.fields) {
    if (f.from === null) {
      out.push(c.dim(`  ${f.field.padEnd(width)}   (not found)`));
      continue;
    }
    const ex = f.examples.map((e) => JSON.stringify(printable(e, 60))).join(', ');
    out.push(`  ${f.field.padEnd(width)} ← ${printable(f.from, 100)}   e.g. ${ex}`);
  }
  out.push(`  key: ${printable(p.key, 120)}`);
  out.push(
    p.phones.country
      ? `  phones: national numbers read as ${p.phones.country} (from ${printable(p.phones.from ?? '', 80)})`
      : '  phones: no default country (set --default-country, e.g. BR, to read national numbers)',
  );
  out.push('', `${p.exists ? 'replaces' : 'writes'} ${p.path}:`, JSON.stringify(p.config, null, 2), '');
  return out.join('\n') + '\n';
}
