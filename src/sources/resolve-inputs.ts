// Turns the input arguments into a checked list of things to read, before a single record is read:
// a typo in the third file name must fail the run up front, not after the first two files were sent.

import { constants } from 'node:fs';
import { access, stat } from 'node:fs/promises';
import { InputError } from '../errors.js';
import { expandGlob, hasGlobChars } from './expand-glob.js';

/** One input to read: a file path, or stdin. */
export interface ResolvedInput {
  /** Name shown in records and messages ('stdin' for '-'). */
  source: string;
  /** File path, or null for stdin. */
  path: string | null;
}

/** Checks every input exists and is readable, expands globs, and returns the inputs in order; throws InputError otherwise. */
export async function resolveInputs(inputs: string[]): Promise<ResolvedInput[]> {
  if (inputs.length === 0) throw new InputError('no input given (pass a file, a glob, or - for stdin)');
  const out: ResolvedInput[] = [];
  let sawStdin = false;
  for (const arg of inputs) {
    if (arg === '-') {
      // stdin can be consumed once; a second '-' would silently read nothing.
      if (sawStdin) throw new InputError("stdin ('-') given more than once");
      sawStdin = true;
      out.push({ source: 'stdin', path: null });
      continue;
    }
    const literal = await statOrNull(arg);
    if (literal === null && hasGlobChars(arg)) {
      const matches = await expandGlob(arg);
      if (matches.length === 0) throw new InputError(`no files match '${arg}'`);
      for (const m of matches) {
        await checkReadable(m);
        out.push({ source: m, path: m });
      }
      continue;
    }
    await checkReadable(arg);
    out.push({ source: arg, path: arg });
  }
  return out;
}

async function statOrNull(p: string) {
  try {
    return await stat(p);
  } catch {
    return null;
  }
}

async function checkReadable(p: string): Promise<void> {
  let st;
  try {
    st = await stat(p);
  } catch (err) {
    throw new InputError(`cannot read input '${p}': ${describeFsError(err)}`);
  }
  if (st.isDirectory())
    throw new InputError(`cannot read input '${p}': it is a directory (use a glob such as '${p}/*.csv')`);
  try {
    await access(p, constants.R_OK);
  } catch (err) {
    throw new InputError(`cannot read input '${p}': ${describeFsError(err)}`);
  }
}

function describeFsError(err: unknown): string {
  const code = (err as NodeJS.ErrnoException).code;
  if (code === 'ENOENT') return 'no such file';
  if (code === 'EACCES' || code === 'EPERM') return 'permission denied';
  return (err as Error).message;
}
