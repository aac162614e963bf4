// Confirmation before a destructive ledger command. On a terminal the question is asked on stderr and answered on
// stdin; anywhere else (cron, CI, a pipe) nobody can answer, so only --yes lets the command act.
import { createInterface } from 'node:readline';
import { UsageError } from '../errors.js';

/** Streams the question is asked and answered on; tests pass their own. */
export interface ConfirmIO {
  input: NodeJS.ReadableStream & { isTTY?: boolean };
  output: NodeJS.WritableStream;
}

/**
 * Builds the confirm callback of a destructive command: `--yes` answers yes; without a TTY it throws a UsageError
 * (exit 2) naming --yes and --dry-run; on a TTY it asks "question [y/N]" and only y/yes is yes.
 */
export function createConfirm(
  o: { yes?: boolean; command: string },
  io: ConfirmIO = { input: process.stdin, output: process.stderr },
): (question: string) => Promise<boolean> {
  return async (question) => {
    if (o.yes) return true;
    if (!io.input.isTTY) {
      throw new UsageError(
        `${question}\n${o.command} changes the ledger and stdin is not a terminal, so nobody can confirm: pass --yes to go ahead, or --dry-run to see what would change`,
      );
    }
    return ask(`${question} [y/N] `, io);
  };
}

/** Reads one line after the prompt: the answer, or undefined on Ctrl-C or the end of input. */
export function askLine(prompt: string, io: ConfirmIO): Promise<string | undefined> {
  const rl = createInterface({ input: io.input, output: io.output });
  return new Promise((resolve) => {
    let answered = false;
    const done = (answer: string | undefined) => {
      if (answered) return;
      answered = true;
      rl.close();
      resolve(answer);
    };
    rl.on('SIGINT', () => {
      io.output.write('\n');
      done(undefined);
    });
    rl.on('close', () => done(undefined));
    rl.question(prompt, (answer) => done(answer.trim()));
  });
}

/** Reads one line after the prompt; Ctrl-C and end of input count as no. */
export function ask(prompt: string, io: ConfirmIO): Promise<boolean> {
  const rl = createInterface({ input: io.input, output: io.output });
  return new Promise((resolve) => {
    let answered = false;
    const done = (yes: boolean) => {
      if (answered) return;
      answered = true;
      rl.close();
      resolve(yes);
    };
    rl.on('SIGINT', () => {
      io.output.write('\n');
      done(false);
    });
    rl.on('close', () => done(false));
    rl.question(prompt, (answer) => done(/^y(es)?$/i.test(answer.trim())));
  });
}
