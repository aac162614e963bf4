// Turns the input arguments into a checked list of things to read, before a single record is read. Made for cron as
// much as for a terminal: a glob that matches nothing is "nothing to do" (a note; an error only with
// --require-input), and a file that cannot be read among several is named as not read while the others are read
// (the run then ends 3). Only when nothing at all can be read does the run stop here.

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
  /** Why it cannot be read ("no such file"): it is not opened, and the run names it as not read. */
  unreadable?: string;
}

/** The inputs to read, in order, and the patterns that matched no file. */
export interface ResolvedInputs {
  inputs: ResolvedInput[];
  /** Globs that matched no file: nothing to do for them (an error only with requireInput). */
  noMatch: string[];
}

/**
 * Expands globs and checks each input; returns them in order, those that cannot be read marked so. Throws InputError
 * when there is no input, stdin is given twice, a glob matches nothing under `requireInput`, or no input of those
 * given can be read at all.
 */
export async function resolveInputs(inputs: string[], o: { requireInput?: boolean } = {}): Promise<ResolvedInputs> {
  if (inputs.length === 0) throw new InputError('no input given (pass a file, a glob, or - for stdin)');
  const out: ResolvedInput[] = [];
  const noMatch: string[] = [];
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
      if (matches.length === 0) {
        if (o.requireInput) throw new InputError(`no files match '${arg}' (--require-input)`);
        noMatch.push(arg);
      }
      for (const m of matches) out.push(await checked(m));
      continue;
    }
    out.push(await checked(arg));
  }
  // Nothing to read but what cannot be read: the run stops before it starts, naming the first.
  const first = out[0];
  if (first?.unreadable !== undefined && out.every((i) => i.unreadable !== undefined))
    throw new InputError(`cannot read input '${first.source}': ${first.unreadable}`);
  return { inputs: out, noMatch };
}

async function checked(p: string): Promise<ResolvedInput> {
  const why = await whyUnreadable(p);
  return why === undefined ? { source: p, path: p } : { source: p, path: p, unreadable: why };
}

async function statOrNull(p: string) {
  try {
    return await stat(p);
  } catch {
    return null;
  }
}

// Why a path cannot be read as an input; undefined when it can.
async function whyUnreadable(p: string): Promise<string | undefined> {
  let st;
  try {
    st = await stat(p);
  } catch (err) {
    return describeFsError(err);
  }
  if (st.isDirectory()) return `it is a directory (use a glob such as '${p}/*.csv')`;
  try {
    await access(p, constants.R_OK);
  } catch (err) {
    return describeFsError(err);
  }
  return undefined;
}

function describeFsError(err: unknown): string {
  const code = (err as NodeJS.ErrnoException).code;
  if (code === 'ENOENT') return 'no such file';
  if (code === 'EACCES' || code === 'EPERM') return 'permission denied';
  return (err as Error).message;
}
