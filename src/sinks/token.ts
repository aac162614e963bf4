// Secrets by reference: a token comes from an environment variable or a file, never from a flag value.
import { readFile } from 'node:fs/promises';
import { UsageError } from '../errors.js';

/** Read a token from a file (trimmed) when a path is given, else from env[envName]; UsageError saying how to set it. */
export async function readToken(opts: {
  env: Record<string, string | undefined>;
  envName: string;
  tokenFile?: string;
  what: string;
}): Promise<string> {
  if (opts.tokenFile !== undefined) {
    let text: string;
    try {
      text = await readFile(opts.tokenFile, 'utf8');
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? 'unreadable';
      throw new UsageError(`cannot read the ${opts.what} token file ${opts.tokenFile} (${code})`);
    }
    const token = text.trim();
    if (!token) throw new UsageError(`the ${opts.what} token file ${opts.tokenFile} is empty`);
    return token;
  }
  const token = opts.env[opts.envName]?.trim();
  if (!token) {
    throw new UsageError(
      `${opts.what} needs a token: set ${opts.envName} in the environment, or put it in a file and pass --token-file PATH`,
    );
  }
  return token;
}
