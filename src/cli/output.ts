// Colour and progress, decided once: colour only on a TTY without NO_COLOR / TERM=dumb / --no-color; a spinner
// only on a TTY stderr outside CI; a plain progress line every few seconds otherwise (cron logs); nothing with --quiet.
import { Chalk, type ChalkInstance } from 'chalk';
import type { Progress } from '../commands/context.js';
import { printableLines } from '../report/printable.js';
import type { HttpEvent } from '../sinks/transport/http.js';

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

/**
 * One line of progress: the share of the input read (files: bytes of the total across inputs; stdin has no total,
 * so no share and no ETA), records read and their rate, sends settled of those queued, and an ETA from what remains
 * and the rates achieved: reading's, and sending's (the CRM's limit, usually) over the sends the rest of the input
 * will bring at the rate seen so far.
 */
export function progressText(p: Progress, now = Date.now()): string {
  const secs = Math.max(0.001, (now - p.startedAt) / 1000);
  const parts = [`read ${p.read}`, `${Math.round(p.read / secs)}/s`];
  const total = p.bytesTotal;
  const share = total !== undefined && total > 0 ? Math.min(1, (p.bytesRead ?? 0) / total) : undefined;
  if (share !== undefined) parts.unshift(`${Math.floor(share * 100)}% of ${formatBytes(total!)}`);
  if (p.toSend) parts.push(`sent ${p.settled}/${p.toSend}`);
  const eta = share === undefined ? undefined : estimateSeconds(p, share, secs, now);
  if (eta !== undefined) parts.push(`ETA ${formatDuration(eta)}`);
  return parts.join(' · ');
}

// Seconds left: the longer of reading the rest at the rate read so far, and sending what the whole input will bring
// (the sends queued so far, scaled to the whole input) at the rate sends settle.
function estimateSeconds(p: Progress, share: number, secs: number, now: number): number | undefined {
  if (share <= 0) return undefined;
  const reading = share < 1 ? (secs * (1 - share)) / share : 0;
  if (!p.toSend) return share < 1 ? reading : undefined;
  const sendSecs = (now - (p.sendingSince ?? p.startedAt)) / 1000;
  if (p.settled === 0 || sendSecs <= 0) return undefined;
  const expected = p.toSend / share;
  const sending = Math.max(0, expected - p.settled) / (p.settled / sendSecs);
  const left = Math.max(reading, sending);
  return left > 0 ? left : undefined;
}

/** 12.3 MB, 850 KB, 120 B. */
export function formatBytes(n: number): string {
  if (n >= 1e9) return `${(n / 1e9).toFixed(1)} GB`;
  if (n >= 1e6) return `${(n / 1e6).toFixed(1)} MB`;
  if (n >= 1e3) return `${Math.round(n / 1e3)} KB`;
  return `${n} B`;
}

/** 45 s, 3 min 20 s, 1 h 5 min. */
export function formatDuration(secs: number): string {
  const s = Math.ceil(secs);
  if (s < 120) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
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
