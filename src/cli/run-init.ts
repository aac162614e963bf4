// Wiring of `init`: what it found, printed (or --json), then the config written once confirmed.
import chalk from 'chalk';
import { planInit, writeInitConfig, type InitPlan } from '../commands/init.js';
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
      {
        env: process.env,
        cwd: process.cwd(),
        stdin: process.stdin,
        stop: signals.stop,
        hardStop: signals.hardStop,
        warn: (m) => process.stderr.write(`warning: ${m}\n`),
      },
    );
    if (flags.json) process.stdout.write(machineJson({ ...plan }));
    else process.stdout.write(describe(plan));
    if (flags.dryRun) return 0;
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
    return 0;
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
