// JSONL sink: one line per lead, {"key": <downstream key>, "occurred_at": <event time, when known>, "lead": {snake_case
// lead}}, appended to a file created with mode 0600 (leads are PII), or written to stdout for '-'. Each batch is
// fsynced before send() returns, so once deliver/ settles the ledger the lines are on disk. Only a regular file is
// fsynced: a character device (/dev/null, a common way to try a push) or a FIFO has no disk to flush, and fsync
// fails on it (EINVAL).
//
// deliver/ keeps several batches in flight, but one file takes one batch at a time: each batch's bytes are written
// whole, then fsynced, before the next batch starts. Concurrent appends of large buffers are split by Node into
// 512 KiB writes that interleave, splicing lines of one batch into another's.
//
// The file is never reached through a symbolic link: --output naming a link would append leads (PII) to whatever
// the link points at. A link is refused when the sink is built, before anything is claimed (the file itself is
// created only by the first batch, so a run that stops before sending, a refused ledger, say, leaves nothing), and
// every open is O_NOFOLLOW, creating the file 0600 in that same call.
//
// A file whose last line was cut (a run killed mid-write, a full disk) does not end in a newline. Appended to as it
// is, the first new line would be glued to the cut one, and that lead, recorded as sent, would be unreadable: the
// first batch written to such a file starts with a newline, so the cut line stays a line of its own (its events are
// in doubt in the ledger, and are re-sent whole) and every new one is whole.
//
// Each line carries its event's downstream key, so the file itself tells which events of a killed run got there:
// findWritten() reads it back, and in-doubt recovery (deliver.ts) settles those found and re-sends only the others.
// Only whole lines count: read back as the JSON written (the last one may lack its newline: the next write adds it).
// A line found settles its event. A line not found proves nothing: the file may have been rotated, truncated or
// replaced since the send, so those events stay in doubt until the user accepts a re-send (--resend), which looks
// first too. Only a regular file can be read back: stdout, a device or a FIFO cannot.
import { constants } from 'node:fs';
import { access, lstat, open, stat, type FileHandle } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import type { Writable } from 'node:stream';
import { UsageError } from '../../errors.js';
import type { FieldNotHeld, SendItem, Sink, SinkCapabilities, SinkOutcome } from '../types.js';
import { shadowedCustomFields, snakeLead } from '../lead-body.js';

export interface JsonlSinkOptions {
  /** File path, or '-' for stdout. */
  output: string;
  /** Stream used for '-' (default process.stdout); injectable for tests. */
  stdout?: Writable;
}

/** Append, create if absent, and refuse a symlink as the last path component (O_NOFOLLOW is absent on Windows). */
const APPEND_NO_FOLLOW = constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | (constants.O_NOFOLLOW ?? 0);

/** One JSONL line (without the newline) for one lead: its key first (findWritten reads it), the event's time. */
export function jsonlLine(item: SendItem): string {
  return item.occurredAt === undefined
    ? JSON.stringify({ key: item.downstreamKey, lead: snakeLead(item.lead) })
    : JSON.stringify({ key: item.downstreamKey, occurred_at: item.occurredAt, lead: snakeLead(item.lead) });
}

/**
 * Leads per write. Each batch is one claim and one settle in the ledger and one fsync of the file: at 500, a push of
 * a million events to a file spent more time committing than writing (bench scenario 10: 20.9 s at 500, 19.1 s at
 * 2,000, 18.5 s at 5,000). 2,000 keeps what a kill can leave in doubt to a few batches of a few hundred kilobytes.
 */
export const JSONL_MAX_BATCH = 2000;

/** A file or stdout destination, mostly for audits and piping into other tools. */
export class JsonlSink implements Sink {
  readonly name = 'jsonl';
  readonly capabilities: SinkCapabilities;
  private readonly path: string | undefined;
  private file: OpenFile | undefined;
  private opening: Promise<OpenFile> | undefined;
  /** The last write queued: the next one starts only once it has ended (written and synced, or failed). */
  private tail: Promise<void> = Promise.resolve();
  /** The stream behind '-', once an 'error' listener is on it. */
  private stream: Writable | undefined;

  constructor(private readonly opts: JsonlSinkOptions) {
    this.path = opts.output === '-' ? undefined : resolve(opts.output);
    this.capabilities = { maxBatch: JSONL_MAX_BATCH, honoursIdempotencyKey: false };
    // A file can be read back, until open() finds that the output is something else (a device, a FIFO); stdout never.
    if (this.path !== undefined) this.findWritten = (keys, signal) => this.readBack(keys, signal);
  }

  /** The downstream keys the output holds (readBack): present only while the output is a file that can be read. */
  findWritten?: (keys: string[], signal?: AbortSignal) => Promise<Set<string>>;

  /** The lead's custom fields that a standard field of the same name shadows in its line. */
  fieldsNotHeld(item: SendItem): readonly FieldNotHeld[] {
    return shadowedCustomFields(item.lead, 'the JSONL line');
  }

  /** "JSONL file out.jsonl" or "JSONL on stdout". */
  describe(): string {
    return this.path === undefined ? 'JSONL on stdout' : `JSONL file ${this.opts.output}`;
  }

  /**
   * Checks the output before any lead is claimed, so that what can be told up front (a symlink, a directory, a
   * directory that is not there or that leadledger may not write in) is a usage error rather than leads claimed
   * for a file that cannot take them. The file itself is not created here (see the head of this file); a problem
   * that comes up later anyway (the directory removed meanwhile) fails the batch that meets it, as not written.
   */
  async open(): Promise<void> {
    if (this.opts.output === '-') return;
    const out = this.opts.output;
    if (/[/\\]$/.test(out)) throw new UsageError(`--output ${out} names a directory; give the path of a file in it`);
    const st = await lstat(out).catch(() => undefined);
    if (st?.isSymbolicLink()) throw linkRefused(out);
    if (st?.isDirectory()) throw new UsageError(`--output ${out} is a directory; give the path of a file in it`);
    if (st) {
      // A device or a FIFO cannot be read back (a file not there yet will be one).
      if (!st.isFile()) delete this.findWritten;
      await access(out, constants.W_OK).catch((err: NodeJS.ErrnoException) => {
        throw new UsageError(`--output ${out} cannot be written: ${err.code ?? err.message}`);
      });
      // A file is also read: its last byte before the first append (a cut line?), and its lines by findWritten.
      if (st.isFile())
        await access(out, constants.R_OK).catch((err: NodeJS.ErrnoException) => {
          throw new UsageError(
            `--output ${out} cannot be read (leadledger reads back what it wrote there): ${err.code ?? err.message}`,
          );
        });
      return;
    }
    const dir = dirname(this.path!);
    const d = await stat(dir).catch((err: NodeJS.ErrnoException) => err);
    const wrong = !(d instanceof Error)
      ? d.isDirectory()
        ? undefined
        : 'is not a directory'
      : d.code === 'ENOENT'
        ? 'does not exist'
        : `cannot be read (${d.code ?? d.message})`;
    if (wrong) throw new UsageError(`--output ${out}: its directory ${dir} ${wrong}`);
    await access(dir, constants.W_OK | constants.X_OK).catch((err: NodeJS.ErrnoException) => {
      throw new UsageError(`--output ${out} cannot be created in ${dir}: ${err.code ?? err.message}`);
    });
  }

  /** Append one line per item and flush them to disk before returning; batches are written one after another. */
  async send(items: SendItem[]): Promise<SinkOutcome[]> {
    const text = items.map((i) => `${jsonlLine(i)}\n`).join('');
    const turn = this.tail.then(() => this.write(text));
    // A failed write settles its own batch below; the batches queued behind it still get their turn.
    this.tail = turn.catch(() => undefined);
    try {
      await turn;
    } catch (err) {
      const reason = `cannot write ${this.describe()}: ${(err as Error).message}`;
      // The file could not be opened: not one byte of the batch reached it, so its leads failed and a rerun
      // writes them. A write that failed after the open may have left some lines: those leads are in doubt.
      if (err instanceof NotOpened) return items.map(() => ({ kind: 'failed', permanent: false, reason }));
      return items.map(() => ({ kind: 'unknown', reason }));
    }
    return items.map(() => ({ kind: 'created' }));
  }

  /**
   * The downstream keys among `keys` that the file holds on whole lines, read once the writes queued before have
   * ended. A file not there yet holds none; one that is not a regular file (a FIFO, a device) cannot be read back.
   */
  private async readBack(keys: string[], signal?: AbortSignal): Promise<Set<string>> {
    await this.tail;
    const found = new Set<string>();
    const wanted = new Set(keys);
    let r: FileHandle;
    try {
      // Non-blocking: opening a FIFO to read would otherwise wait for a writer. A regular file ignores the flag.
      r = await open(this.path!, constants.O_RDONLY | constants.O_NONBLOCK | (constants.O_NOFOLLOW ?? 0));
    } catch (err) {
      // Not there: it holds none of them (which, as for any line not found, settles nothing).
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return found;
      throw new Error(`cannot read ${this.describe()} back: ${(err as Error).message}`, { cause: err });
    }
    try {
      if (!(await r.stat()).isFile()) throw new Error(`cannot read ${this.describe()} back: not a regular file`);
      let rest = '';
      let skipping = false;
      for await (const chunk of r.createReadStream({ encoding: 'utf8', highWaterMark: 1 << 20, autoClose: false })) {
        signal?.throwIfAborted();
        let text = rest + (chunk as string);
        if (skipping) {
          // Inside a line longer than any lead's: it is nobody's, up to its end.
          const nl = text.indexOf('\n');
          if (nl < 0) continue;
          skipping = false;
          text = text.slice(nl + 1);
        }
        let from = 0;
        for (let nl = text.indexOf('\n'); nl >= 0; nl = text.indexOf('\n', from)) {
          const key = wholeLineKey(text, from, nl, wanted);
          if (key !== undefined) found.add(key);
          from = nl + 1;
        }
        // What follows the last newline is not a whole line yet: the next chunk completes it.
        rest = text.slice(from);
        if (rest.length > MAX_LINE) {
          rest = '';
          skipping = true;
        }
      }
      // The last line may lack only its newline (cut between the two): whole, it counts; a strict prefix of a line
      // never parses.
      const key = skipping ? undefined : wholeLineKey(rest, 0, rest.length, wanted);
      if (key !== undefined) found.add(key);
    } finally {
      await r.close();
    }
    return found;
  }

  /** Close the file once the writes queued before have ended. */
  async close(): Promise<void> {
    await this.tail;
    const file = this.file;
    this.file = undefined;
    this.opening = undefined;
    await file?.handle.close();
  }

  /** One batch: every byte written, then synced, while no other batch of this sink writes. */
  private async write(text: string): Promise<void> {
    if (this.opts.output === '-') return writeStream(this.stdoutStream(), text);
    const file = await this.handle();
    const { handle, regular } = file;
    const bytes = Buffer.from(file.cutLine ? `\n${text}` : text, 'utf8');
    // write() may take fewer bytes than asked: loop until the whole batch is in the file.
    try {
      for (let done = 0; done < bytes.length;)
        done += (await handle.write(bytes, done, bytes.length - done)).bytesWritten;
    } catch (err) {
      // Part of the batch may be in the file, its last line cut: the next batch starts on a line of its own (at
      // worst after an empty line, when nothing was written).
      file.cutLine = true;
      throw err;
    }
    if (regular) await handle.sync();
    file.cutLine = false;
  }

  /**
   * The stream for '-', with a listener for its 'error' event. A failed write (a full disk: ENOSPC; a closed pipe,
   * `| head`: EPIPE) reaches write()'s callback and then the 'error' event; with nobody listening, that event is
   * thrown and ends the process with its batches claimed but never settled (pending). The callback settles the
   * batch in doubt; the event has nothing left to tell, and the stream, destroyed, fails every later write alike.
   */
  private stdoutStream(): Writable {
    if (!this.stream) {
      this.stream = this.opts.stdout ?? process.stdout;
      this.stream.on('error', () => undefined);
    }
    return this.stream;
  }

  private handle(): Promise<OpenFile> {
    if (this.file) return Promise.resolve(this.file);
    this.opening ??= openNoFollow(this.opts.output).then(
      (f) => {
        this.file = f;
        return f;
      },
      (err: unknown) => {
        // The next batch tries the open again (the directory may be back).
        this.opening = undefined;
        throw new NotOpened((err as Error).message, { cause: err });
      },
    );
    return this.opening;
  }
}

const KEY_PREFIX = '{"key":"';

/** A line longer than this (characters) is no lead's line: findWritten skips it rather than hold it. */
const MAX_LINE = 16 << 20;

/**
 * The downstream key of the line text[from, nl) when it is one of `wanted` and the line is whole: the JSON that
 * jsonlLine() writes, with its lead. Only the lines of wanted keys are parsed.
 */
function wholeLineKey(text: string, from: number, nl: number, wanted: Set<string>): string | undefined {
  if (!text.startsWith(KEY_PREFIX, from)) return undefined;
  const end = text.indexOf('"', from + KEY_PREFIX.length);
  if (end < 0 || end > nl) return undefined;
  const key = text.slice(from + KEY_PREFIX.length, end);
  if (!wanted.has(key)) return undefined;
  try {
    const line = JSON.parse(text.slice(from, nl)) as { key?: unknown; lead?: unknown };
    return line.key === key && typeof line.lead === 'object' && line.lead !== null ? key : undefined;
  } catch {
    return undefined;
  }
}

/** The open output, and whether it is a regular file (the only kind that is fsynced). */
interface OpenFile {
  handle: FileHandle;
  regular: boolean;
  /** A regular file that ends in a line without its newline: the next write starts with one. */
  cutLine: boolean;
}

/** Open for appending (created 0600) without following a symlink; a link, dangling or not, is a UsageError. */
async function openNoFollow(path: string): Promise<OpenFile> {
  let handle: FileHandle;
  try {
    handle = await open(path, APPEND_NO_FOLLOW, 0o600);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    // ELOOP (Linux, macOS) or EMLINK (FreeBSD) also come from looping directories: only a link itself is named so.
    if ((code === 'ELOOP' || code === 'EMLINK') && (await isSymlink(path))) throw linkRefused(path);
    throw err;
  }
  try {
    const st = await handle.stat();
    const regular = st.isFile();
    return { handle, regular, cutLine: regular && st.size > 0 && !(await endsWithNewline(path, st.size)) };
  } catch (err) {
    await handle.close();
    throw err;
  }
}

/** Whether the file's last byte (of `size`) is a newline; read through a handle of its own (the output's only appends). */
async function endsWithNewline(path: string, size: number): Promise<boolean> {
  const r = await open(path, constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0));
  try {
    const last = Buffer.alloc(1);
    await r.read(last, 0, 1, size - 1);
    return last[0] === 0x0a;
  } finally {
    await r.close();
  }
}

/** The output file could not be opened: nothing of the batch was written. */
class NotOpened extends Error {}

function linkRefused(path: string): UsageError {
  return new UsageError(
    `--output ${path} is a symbolic link; leadledger does not write through links (give the file's own path)`,
  );
}

async function isSymlink(path: string): Promise<boolean> {
  try {
    return (await lstat(path)).isSymbolicLink();
  } catch {
    return false;
  }
}

function writeStream(stream: Writable, text: string): Promise<void> {
  return new Promise((resolve, reject) => {
    stream.write(text, (err) => (err ? reject(err) : resolve()));
  });
}
