// Wiring of `doctor`: flags → DoctorOptions, and its report as lines on stdout (or JSON with --json).
import { doctor, type DoctorLine, type DoctorReport } from '../commands/doctor.js';
import { UsageError } from '../errors.js';
import { printable } from '../report/printable.js';
import { SINK_NAMES, sinkFlagValues } from '../sinks/registry.js';
import { machineJson } from './machine-json.js';
import { createOutput } from './output.js';

/** Runs `doctor` from parsed flags; prints a line per check; returns the exit code. */
export async function runDoctor(flags: Record<string, unknown>, fromEnv: Record<string, string> = {}): Promise<number> {
  const str = (k: string) => (typeof flags[k] === 'string' ? flags[k] : undefined);
  const sink = str('sink') || undefined;
  if (sink !== undefined && !(SINK_NAMES as readonly string[]).includes(sink))
    throw new UsageError(`--sink takes ${SINK_NAMES.join(', ')}, not '${sink}'`);
  const existing = str('existing') ?? 'skip';
  if (existing !== 'skip' && existing !== 'update')
    throw new UsageError(`--existing takes skip or update, not '${existing}'`);
  const given = sinkFlagValues(flags, fromEnv);
  const out = await createOutput(flags);
  const report = await doctor(
    {
      config: str('config'),
      ledger: str('ledger'),
      sink,
      ...(fromEnv.sink ? { sinkFrom: fromEnv.sink } : {}),
      sinkFlags: given.flags,
      sinkFlagsFromEnv: given.fromEnv,
      allowInsecure: !!flags.allowInsecure,
      existing,
      timeoutMs: flags.timeout as number | undefined,
    },
    {
      env: process.env,
      cwd: process.cwd(),
      stop: new AbortController().signal,
      hardStop: new AbortController().signal,
      warn: (m) => out.warn(m),
    },
  );
  if (flags.json) process.stdout.write(machineJson({ ...report }));
  else process.stdout.write(formatDoctor(report, out.chalk));
  return report.exitCode;
}

/** The report as a person reads it: a line per check (ok, warn, fail), its hint under it, and the verdict. */
export function formatDoctor(
  r: DoctorReport,
  c: { green(s: string): string; yellow(s: string): string; red(s: string): string; dim(s: string): string },
): string {
  const mark = (l: DoctorLine) =>
    l.status === 'ok' ? c.green('ok  ') : l.status === 'warn' ? c.yellow('warn') : c.red('fail');
  const lines: string[] = [];
  for (const l of r.checks) {
    lines.push(`${mark(l)}  ${l.check.padEnd(11)}  ${printable(l.message, 600)}`);
    if (l.hint) lines.push(c.dim(`      ${''.padEnd(11)}  → ${printable(l.hint, 600)}`));
  }
  const failed = r.checks.filter((l) => l.status === 'fail').length;
  const warned = r.checks.filter((l) => l.status === 'warn').length;
  lines.push('');
  lines.push(
    failed
      ? c.red(`${failed} check${failed === 1 ? '' : 's'} failed: a push would not get through (exit ${r.exitCode})`)
      : `all checks passed${warned ? `, ${warned} warning${warned === 1 ? '' : 's'} to read` : ''}`,
  );
  return lines.join('\n') + '\n';
}
