// A small glob for input arguments: Node 20 has no fs.glob, and shells on Windows or in cron (quoted
// arguments) often hand us the pattern itself. Supports `*`, `?`, `[abc]`, `[a-z]`, `[!a]` within one path
// segment and `**` for any number of directories. Like a shell, wildcards do not match a leading dot.

import type { Dirent } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import path from 'node:path';

const GLOB_CHARS = /[*?[]/;

/** True when the argument contains glob characters (`*`, `?`, `[`). */
export function hasGlobChars(arg: string): boolean {
  return GLOB_CHARS.test(arg);
}

/** Expands a glob pattern to the sorted list of regular files it matches (empty when none match). */
export async function expandGlob(pattern: string): Promise<string[]> {
  const normalized = pattern.replace(/\\/g, '/');
  const absolute = normalized.startsWith('/');
  const segments = normalized.split('/').filter((s, i) => s !== '' || i === 0);
  // The literal prefix (segments without wildcards) is where the walk starts.
  let base = absolute ? '/' : '.';
  let shown = absolute ? '/' : '';
  let i = absolute ? 1 : 0;
  while (i < segments.length - 1 && !hasGlobChars(segments[i] ?? '')) {
    base = path.join(base, segments[i] ?? '');
    shown = shown + segments[i] + '/';
    i++;
  }
  const rest = segments.slice(i);
  const matches: string[] = [];
  await walk(base, shown, rest, matches);
  return [...new Set(matches)].sort();
}

async function walk(dir: string, shown: string, rest: string[], out: string[]): Promise<void> {
  const [segment, ...tail] = rest;
  if (segment === undefined) return;
  let entries: Dirent[];
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch {
    return; // an unreadable or missing directory simply matches nothing
  }
  entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  if (segment === '**') {
    // `**` matches zero directories (try the tail here) or one more level (recurse with `**` again).
    await walk(dir, shown, tail, out);
    for (const e of entries) {
      if (e.isDirectory() && !e.name.startsWith('.')) {
        await walk(path.join(dir, e.name), `${shown}${e.name}/`, rest, out);
      }
    }
    return;
  }
  const re = segmentToRegExp(segment);
  for (const e of entries) {
    if (!re.test(e.name)) continue;
    if (e.name.startsWith('.') && !segment.startsWith('.')) continue;
    const full = path.join(dir, e.name);
    if (tail.length === 0) {
      if (e.isFile() || (e.isSymbolicLink() && (await isFile(full)))) out.push(`${shown}${e.name}`);
    } else if (e.isDirectory() || e.isSymbolicLink()) {
      await walk(full, `${shown}${e.name}/`, tail, out);
    }
  }
}

async function isFile(p: string): Promise<boolean> {
  try {
    return (await stat(p)).isFile();
  } catch {
    return false;
  }
}

/** Translates one path segment of a glob into an anchored regular expression. */
export function segmentToRegExp(segment: string): RegExp {
  let re = '';
  for (let i = 0; i < segment.length; i++) {
    const c = segment[i] as string;
    if (c === '*') re += '[^/]*';
    else if (c === '?') re += '[^/]';
    else if (c === '[') {
      const close = segment.indexOf(']', i + 2);
      if (close === -1) {
        re += '\\[';
        continue;
      }
      let body = segment.slice(i + 1, close);
      const negate = body.startsWith('!') || body.startsWith('^');
      if (negate) body = body.slice(1);
      re += `[${negate ? '^' : ''}${body.replace(/[\\\]^]/g, '\\$&')}]`;
      i = close;
    } else re += c.replace(/[.+^${}()|\\\]]/g, '\\$&');
  }
  return new RegExp(`^${re}$`);
}
