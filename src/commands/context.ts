import type { HttpEvent } from '../sinks/transport/http.js';

// What a command gets from its caller instead of reaching for process globals.

/** Progress of a run, for the spinner or the periodic progress line. */
export interface Progress {
  phase: 'reading' | 'recovering' | 'sending' | 'done';
  read: number;
  toSend: number;
  settled: number;
  startedAt: number;
  /** Bytes read of the inputs (as on disk), and their total when every input is a file (not stdin, not a FIFO). */
  bytesRead?: number;
  bytesTotal?: number;
  /** When the first send was queued: the send rate is measured from then. */
  sendingSince?: number;
}

/** The environment a command runs in. */
export interface CommandContext {
  env: NodeJS.ProcessEnv;
  cwd: string;
  stdin?: NodeJS.ReadableStream;
  /** Aborted on Ctrl-C / SIGTERM / SIGHUP: stop taking new work. */
  stop: AbortSignal;
  /** Aborted when the grace period after a stop runs out. */
  hardStop: AbortSignal;
  /** Called every few hundred milliseconds while a run works. */
  onProgress?: (p: Progress) => void;
  /** Warnings a person should read (stderr); never secrets. */
  warn: (message: string) => void;
  /** HTTP events of the sink (retries, rate-limit waits), for --verbose. */
  onHttpEvent?: (e: HttpEvent) => void;
}
