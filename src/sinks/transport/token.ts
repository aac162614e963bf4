// Secrets by reference: a token comes from an environment variable or a file, never from a flag value.
import { readFile, stat } from 'node:fs/promises';
import { UsageError } from '../../errors.js';
import type { RegisteredSink, SinkFlag } from '../definition.js';

/**
 * --token-file, one flag for every sink that reads a token by reference: its help names the variable each of them
 * reads when the flag is not given (their definitions' tokenEnv).
 */
export const TOKEN_FILE_FLAG: SinkFlag = {
  flags: '--token-file <file>',
  description: (takers: readonly RegisteredSink[]) =>
    `file holding the CRM token (else ${orList(takers.flatMap((t) => (t.tokenEnv ? [t.tokenEnv] : [])))}); tokens are never flag values`,
};

// "A", "A or B", "A, B or C".
function orList(names: readonly string[]): string {
  return names.length < 2 ? (names[0] ?? '') : `${names.slice(0, -1).join(', ')} or ${names.at(-1)!}`;
}

/** Read a token from a file (trimmed) when a path is given, else from env[envName]; UsageError saying how to set it. */
export async function readToken(opts: {
  env: Record<string, string | undefined>;
  envName: string;
  tokenFile?: string;
  what: string;
  /** Told when the token file may be read by others than its owner. */
  warn?: (message: string) => void;
}): Promise<string> {
  if (opts.tokenFile !== undefined) {
    let text: string;
    try {
      text = await readFile(opts.tokenFile, 'utf8');
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? 'unreadable';
      const why = code === 'ENOENT' ? 'no such file' : code === 'EACCES' ? 'permission denied' : code;
      throw new UsageError(`cannot read the ${opts.what} token file ${opts.tokenFile} (${why})`);
    }
    await warnIfShared(opts.tokenFile, opts.warn);
    const token = text.trim();
    if (!token) throw new UsageError(`the ${opts.what} token file ${opts.tokenFile} is empty`);
    return headerSafe(token, `the ${opts.what} token file ${opts.tokenFile}`);
  }
  const token = opts.env[opts.envName]?.trim();
  if (!token) {
    throw new UsageError(
      `${opts.what} needs a token: set ${opts.envName} in the environment, or put it in a file and pass --token-file PATH`,
    );
  }
  return headerSafe(token, opts.envName);
}

/**
 * A token file its group or others may read is a secret shared with every user of the machine: said, as psql says
 * of a ~/.pgpass readable so (the run goes on; the file is the user's to fix). No warning where modes mean nothing.
 */
async function warnIfShared(file: string, warn: ((message: string) => void) | undefined): Promise<void> {
  if (!warn || process.platform === 'win32') return;
  const mode = await stat(file).then(
    (s) => s.mode,
    () => undefined,
  );
  if (mode === undefined || (mode & 0o077) === 0) return;
  warn(
    `token file ${file} may be read by its group or others (mode ${(mode & 0o777).toString(8).padStart(4, '0')}); it should be readable by you only: chmod 600 ${file}`,
  );
}

// What an HTTP header value cannot hold (Node refuses the request): a line break, any other control character.
const NOT_IN_HEADER = /[^\t\x20-\x7e\x80-\xff]/;

/**
 * The token, refused up front when it cannot go in a header: otherwise every batch's request fails as it is built,
 * after its leads were claimed. The token itself is never quoted; where the bad character is, is.
 */
function headerSafe(token: string, from: string): string {
  const at = token.search(NOT_IN_HEADER);
  if (at < 0) return token;
  const what = token[at] === '\n' || token[at] === '\r' ? 'a line break' : 'a control character';
  throw new UsageError(
    `${from} holds ${what} at character ${at + 1} of the token: a token is one line of printable characters`,
  );
}
