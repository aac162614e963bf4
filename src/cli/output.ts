// Colour and progress, decided once: colour only on a TTY without NO_COLOR / TERM=dumb / --no-color; a spinner
// only on a TTY stderr outside CI; a plain progress line every few seconds otherwise (cron logs); nothing with --quiet.
import { Chalk, type ChalkInstance } from 'chalk';
import type { Progress } from '../commands/context.js';
import { printableLines } from '../report/printable.js';
import type { HttpEvent } from '../sinks/http.js';

/** How a command talks to the person running it. */
export interface Output {
  chalk: ChalkInstance;
  quiet: boolean;
  verbose: boolean;
  /** A line on stderr (suppressed by --quiet). */
  info: (message: string) => void;
  warn: (message: string) => void;
  progress(p: Progress): void;
  stopProgress(): void;
}

/** Decides colour and progress style from flags, environment and the TTY. */
export async function createOutput(flags: Record<string, unknown>, env = process.env): Promise<Output> {
  const tty = !!process.stderr.isTTY;
  const colour = tty && flags.color !== false && !('NO_COLOR' in env && env.NO_COLOR !== '') && env.TERM !== 'dumb';
  const chalk = new Chalk({ level: colour ? 1 : 0 });
  const quiet = !!flags.quiet;
  const verbose = !!flags.verbose;
  // A terminal that reports no width (some pseudo-terminals) makes ora compute infinite lines to clear.
  const spinnerWanted = tty && (process.stderr.columns ?? 0) > 0 && !quiet && !env.CI;
  let spinner: { text: string; stop(): void; start(): unknown } | undefined;
  if (spinnerWanted) {
    const { default: ora } = await import('ora');
    spinner = ora({ stream: process.stderr, isEnabled: true, discardStdin: false });
  }
  let lastLine = 0;
  return {
    chalk,
    quiet,
    verbose,
    info: (m) => {
      if (!quiet) process.stderr.write(m + '\n');
    },
    warn: (m) => {
      // Warnings quote the data (file names, reasons): control characters in it are shown escaped.
      if (!quiet) process.stderr.write(chalk.yellow(`warning: ${printableLines(m)}`) + '\n');
    },
    progress(p) {
      if (quiet) return;
      const text = progressText(p);
      if (spinner) {
        spinner.text = text;
        spinner.start();
        return;
      }
      const t = Date.now();
      if (t - p.startedAt < 3000 || t - lastLine < 5000) return;
      lastLine = t;
      process.stderr.write(`[${new Date(t).toISOString()}] ${text}\n`);
    },
    stopProgress() {
      spinner?.stop();
    },
  };
}

/** One line of progress: counts, rate and (while sending) an ETA. */
export function progressText(p: Progress): string {
  const secs = Math.max(0.001, (Date.now() - p.startedAt) / 1000);
  const parts = [`read ${p.read}`, `${Math.round(p.read / secs)}/s`];
  if (p.toSend) {
    parts.push(`sent ${p.settled}/${p.toSend}`);
    const rate = p.settled / secs;
    if (rate > 0 && p.toSend > p.settled) parts.push(`ETA ${Math.ceil((p.toSend - p.settled) / rate)} s`);
  }
  return parts.join(' · ');
}

/** One --verbose line for an HTTP event worth a person's attention (retries, network errors, rate-limit waits). */
export function describeHttpEvent(e: HttpEvent): string {
  switch (e.type) {
    case 'retry':
      return `http: retry ${e.attempt} of ${e.method} ${e.url} in ${Math.round(e.delayMs)} ms (${e.reason})`;
    case 'network-error':
      return `http: ${e.method} ${e.url} failed: ${e.code}${e.inDoubt ? ' after the request was sent' : ''}`;
    case 'rate-limit-wait':
      return `http: waited ${Math.round(e.waitedMs)} ms for the rate limit`;
    case 'response':
      return `http: ${e.method} ${e.url} → ${e.status} in ${Math.round(e.durationMs)} ms`;
    case 'request':
      return `http: ${e.method} ${e.url} (attempt ${e.attempt})`;
  }
}
