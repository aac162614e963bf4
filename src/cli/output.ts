// Colour and progress, decided once: colour on a TTY without NO_COLOR / TERM=dumb, or wherever FORCE_COLOR asks
// for it, never with --no-color; a spinner only on a TTY stderr outside CI (FORCE_COLOR does not make one); a plain
// progress line every few seconds otherwise (cron logs); nothing with --quiet.
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

/**
 * The colour level (0: none): --no-color wins; then FORCE_COLOR (0/false: none; 1, 2, 3: that level; anything else:
 * basic colour), as chalk and Node read it, so that `FORCE_COLOR=1 leadledger ... | less -R` has colour; then NO_COLOR,
 * TERM=dumb and whether stderr is a terminal.
 */
export function colourLevel(flags: Record<string, unknown>, env: NodeJS.ProcessEnv, tty: boolean): 0 | 1 | 2 | 3 {
  if (flags.color === false) return 0;
  const force = env.FORCE_COLOR;
  if (force !== undefined) {
    if (force === '0' || force.toLowerCase() === 'false') return 0;
    return force === '2' ? 2 : force === '3' ? 3 : 1;
  }
  if (('NO_COLOR' in env && env.NO_COLOR !== '') || env.TERM === 'dumb') return 0;
  return tty ? 1 : 0;
}

/** Decides colour and progress style from flags, environment and the TTY; `clock` is for tests. */
export async function createOutput(
  flags: Record<string, unknown>,
  env = process.env,
  clock: () => number = Date.now,
): Promise<Output> {
  const tty = !!process.stderr.isTTY;
  const chalk = new Chalk({ level: colourLevel(flags, env, tty) });
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
  const meter = new SendMeter();
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
      const t = clock();
      const text = progressText(p, t, meter.rate(p, t));
      if (spinner) {
        spinner.text = text;
        spinner.start();
        return;
      }
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
 * The rate sends settle at lately: over the last `windowMs` (30 s) of progress samples. A CRM's rate limit lets a
 * first burst through and then holds the pace (HubSpot: 100 requests per 10 s), so the rate since the first send
 * overstates the pace for a long while; the recent one does not. Its clock is the caller's (tests pass their own).
 */
export class SendMeter {
  private readonly samples: Array<{ t: number; settled: number }> = [];
  constructor(private readonly windowMs = 30_000) {}

  /** The recent send rate (per second), once the samples span a few seconds; undefined before. */
  rate(p: Progress, now: number): number | undefined {
    if (p.sendingSince === undefined) return undefined;
    this.samples.push({ t: now, settled: p.settled });
    while (this.samples.length > 2 && now - this.samples[1]!.t >= this.windowMs) this.samples.shift();
    const first = this.samples[0]!;
    const span = (now - first.t) / 1000;
    return span >= 5 ? (p.settled - first.settled) / span : undefined;
  }
}

/**
 * One line of progress: the share of the input read (files: bytes of the total across inputs; stdin has no total,
 * so no share and no ETA), records read and their rate, sends settled of those queued and their rate, and an ETA
 * from the slowest stage: reading the rest at the read rate, or sending what the whole input will bring at the send
 * rate (the CRM's limit, usually: once sending has begun, reading waits on it). The send rate is the slower of the
 * rate since the first send and `recentSendRate` (SendMeter), so that a first burst does not promise an early end.
 */
export function progressText(p: Progress, now = Date.now(), recentSendRate?: number): string {
  const secs = Math.max(0.001, (now - p.startedAt) / 1000);
  const parts = [`read ${p.read}`, `${Math.round(p.read / secs)} read/s`];
  const total = p.bytesTotal;
  const share = total !== undefined && total > 0 ? Math.min(1, (p.bytesRead ?? 0) / total) : undefined;
  if (share !== undefined) parts.unshift(`${Math.floor(share * 100)}% of ${formatBytes(total!)}`);
  const sendRate = sendRateOf(p, now, recentSendRate);
  if (p.toSend) parts.push(`sent ${p.settled}/${p.toSend}`);
  if (sendRate !== undefined) parts.push(`${formatRate(sendRate)} sent/s`);
  const eta = share === undefined ? undefined : estimateSeconds(p, share, secs, sendRate);
  if (eta !== undefined) parts.push(`ETA ${formatDuration(eta)}`);
  return parts.join(' · ');
}

// Sends settled per second: since the first was queued, or the recent rate where that is slower.
function sendRateOf(p: Progress, now: number, recent: number | undefined): number | undefined {
  if (!p.toSend) return undefined;
  const sendSecs = (now - (p.sendingSince ?? p.startedAt)) / 1000;
  if (sendSecs <= 0) return undefined;
  const overall = p.settled / sendSecs;
  return recent !== undefined ? Math.min(overall, recent) : overall;
}

// 312, 4.5, 0.25: a rate with the digits that matter.
function formatRate(r: number): string {
  return r >= 10 ? String(Math.round(r)) : r >= 1 ? r.toFixed(1) : r.toFixed(2);
}

// Seconds left: the longer of reading the rest at the rate read so far, and sending what the whole input will bring
// (the sends queued so far, scaled to the whole input) at the send rate. None while no send has settled, or none
// settles (a stalled CRM has no end to promise).
function estimateSeconds(p: Progress, share: number, secs: number, sendRate: number | undefined): number | undefined {
  if (share <= 0) return undefined;
  const reading = share < 1 ? (secs * (1 - share)) / share : 0;
  if (!p.toSend) return share < 1 ? reading : undefined;
  if (p.settled === 0 || !sendRate) return undefined;
  const expected = p.toSend / share;
  const sending = Math.max(0, expected - p.settled) / sendRate;
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
