// doctor's look at the jsonl sink's --output, without creating it: a file it may append to, or a folder it may create
// one in; never through a symlink (the sink refuses one).
import { constants } from 'node:fs';
import { access, lstat } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import type { SinkCheck } from '../types.js';

/** Whether a push could append to the output: ok, or a fail saying why (the sink's own refusals). */
export async function checkOutput(output: string | undefined): Promise<SinkCheck> {
  if (!output)
    return { status: 'fail', message: "the jsonl sink needs --output (a file path, or '-' for stdout)", exitCode: 2 };
  if (output === '-') return { status: 'ok', message: 'JSONL on stdout' };
  const path = resolve(output);
  const st = await lstat(path).catch((e: NodeJS.ErrnoException) => (e.code === 'ENOENT' ? undefined : e));
  if (st instanceof Error) return { status: 'fail', message: `JSONL file ${output}: ${st.message}` };
  if (st?.isSymbolicLink())
    return { status: 'fail', message: `JSONL file ${output} is a symlink: the sink never writes through one` };
  if (st?.isDirectory()) return { status: 'fail', message: `JSONL file ${output} is a directory` };
  const target = st ? path : dirname(path);
  try {
    await access(target, constants.W_OK);
  } catch (e) {
    return {
      status: 'fail',
      message: st
        ? `JSONL file ${output} cannot be written: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`
        : `JSONL file ${output} cannot be created in ${target}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`,
      hint: st ? 'check its owner and mode' : 'create the folder, or check its owner and mode',
    };
  }
  return {
    status: 'ok',
    message: st
      ? `JSONL file ${output}: writable (appended to)`
      : `JSONL file ${output}: its folder is writable (created by the first push)`,
  };
}
