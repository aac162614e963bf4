// The credentials file of OAuth 2 CRMs (RD Station now; Salesforce and Zoho next): one JSON object with a section per
// CRM, mode 0600, in the user's config directory ($XDG_CONFIG_HOME/leadledger/credentials.json, else
// ~/.config/leadledger/credentials.json) or where --credentials says. Never in the ledger, argv or logs.
//
// A refresh token that the CRM rotates must survive a crash: the file is replaced whole, by writing a temporary file
// beside it, fsyncing it and renaming it over the old one (rename is atomic on one filesystem), then fsyncing the
// directory, so a reader sees the old file or the new one, never half of one.
//
// Two runs that refresh at once (cron overlapping a hand run) must not lock each other out: a refresh happens under
// a lock file (created with O_EXCL) holding its owner's pid, host and time. A lock whose owner is gone (same host,
// no such process) or that is older than the stale age is taken over, so a run killed while it held the lock blocks
// nobody for long. The oauth2 client also re-reads the file after a refused refresh, for the token another run
// rotated without the lock (another host sharing the file).
import { randomBytes } from 'node:crypto';
import { mkdir, open, readFile, rename, rm, stat, unlink } from 'node:fs/promises';
import { homedir, hostname } from 'node:os';
import { dirname, join } from 'node:path';
import { userConfigDir } from '../../config-dir.js';
import { UsageError } from '../../errors.js';
import { realSleep, type Sleep } from './rate-limiter.js';

/** What the file keeps for one CRM (snake_case, as OAuth names them). Unknown keys are kept as they are. */
export interface StoredCredentials {
  client_id?: string;
  client_secret?: string;
  refresh_token?: string;
  access_token?: string;
  /** When access_token expires, ISO 8601. */
  expires_at?: string;
  /** When access_token was obtained, ISO 8601 (the refresh margin is a share of its lifetime). */
  obtained_at?: string;
  [key: string]: unknown;
}

export interface CredentialsFileOptions {
  /** A lock older than this is taken over (default 30 s: a refresh is one HTTP call). */
  lockStaleMs?: number;
  /** How long to wait for another run's lock before taking it over anyway (default 60 s). */
  lockWaitMs?: number;
  /** Between two looks at a held lock (default 50 ms). */
  lockPollMs?: number;
  sleep?: Sleep;
  now?: () => number;
}

/** The credentials file's default path: $XDG_CONFIG_HOME/leadledger/credentials.json, else ~/.config/leadledger/. */
export function defaultCredentialsPath(
  env: Record<string, string | undefined> = process.env,
  home: string = homedir(),
): string {
  return join(userConfigDir(env, home), 'credentials.json');
}

/** One credentials file: read a CRM's section, replace it atomically, and serialize refreshes across processes. */
export class CredentialsFile {
  readonly path: string;
  private readonly lockPath: string;
  private readonly staleMs: number;
  private readonly waitMs: number;
  private readonly pollMs: number;
  private readonly sleep: Sleep;
  private readonly now: () => number;

  constructor(path: string, opts: CredentialsFileOptions = {}) {
    this.path = path;
    this.lockPath = `${path}.lock`;
    this.staleMs = opts.lockStaleMs ?? 30_000;
    this.waitMs = opts.lockWaitMs ?? 60_000;
    this.pollMs = opts.lockPollMs ?? 50;
    this.sleep = opts.sleep ?? realSleep;
    this.now = opts.now ?? Date.now;
  }

  /** The whole file as an object; {} when it does not exist. UsageError when it is not a JSON object. */
  async readAll(): Promise<Record<string, StoredCredentials>> {
    let text: string;
    try {
      text = await readFile(this.path, 'utf8');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return {};
      throw new UsageError(
        `cannot read the credentials file ${this.path} (${(e as NodeJS.ErrnoException).code ?? 'unreadable'})`,
      );
    }
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      // The content is secrets: never quote it.
      throw new UsageError(`the credentials file ${this.path} is not JSON: write it again with leadledger auth <crm>`);
    }
    if (typeof body !== 'object' || body === null || Array.isArray(body))
      throw new UsageError(`the credentials file ${this.path} is not a JSON object`);
    return body as Record<string, StoredCredentials>;
  }

  /** One CRM's section, or undefined. */
  async read(section: string): Promise<StoredCredentials | undefined> {
    const all = await this.readAll();
    const s = all[section];
    return typeof s === 'object' && s !== null ? s : undefined;
  }

  /** Whether the file can be read by others than its owner (mode bits 077): worth a warning. */
  async readableByOthers(): Promise<boolean> {
    try {
      return ((await stat(this.path)).mode & 0o077) !== 0;
    } catch {
      return false;
    }
  }

  /**
   * Replace one CRM's section (the others kept) atomically: temp file (0600) + fsync + rename + directory fsync.
   * Call it under withLock() when another run may write too.
   */
  async write(section: string, creds: StoredCredentials): Promise<void> {
    const all = await this.readAll();
    all[section] = creds;
    const dir = dirname(this.path);
    await mkdir(dir, { recursive: true, mode: 0o700 });
    const tmp = `${this.path}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
    const fh = await open(tmp, 'wx', 0o600);
    try {
      await fh.writeFile(`${JSON.stringify(all, null, 2)}\n`, 'utf8');
      await fh.sync();
    } catch (e) {
      await fh.close();
      await rm(tmp, { force: true });
      throw e;
    }
    await fh.close();
    try {
      await rename(tmp, this.path);
    } catch (e) {
      await rm(tmp, { force: true });
      throw e;
    }
    await syncDir(dir);
  }

  /**
   * Run fn while holding the file's lock. Waits for another holder, taking over a lock whose owner process is gone
   * (same host) or that is older than the stale age, or once the wait ran out: a dead run never locks others out.
   */
  async withLock<T>(fn: () => Promise<T>): Promise<T> {
    const token = await this.acquire();
    try {
      return await fn();
    } finally {
      await this.release(token);
    }
  }

  private async acquire(): Promise<string> {
    await mkdir(dirname(this.path), { recursive: true, mode: 0o700 });
    const token = randomBytes(8).toString('hex');
    const body = JSON.stringify({ pid: process.pid, host: hostname(), at: this.now(), token });
    const started = this.now();
    for (;;) {
      try {
        const fh = await open(this.lockPath, 'wx', 0o600);
        try {
          await fh.writeFile(body, 'utf8');
        } finally {
          await fh.close();
        }
        return token;
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      }
      if ((await this.lockIsStale()) || this.now() - started >= this.waitMs) {
        // Taken over: removing it lets exactly one of the waiters create it anew (O_EXCL decides).
        await unlink(this.lockPath).catch(() => undefined);
        continue;
      }
      await this.sleep(this.pollMs);
    }
  }

  private async lockIsStale(): Promise<boolean> {
    let held: { pid?: unknown; host?: unknown; at?: unknown };
    try {
      held = JSON.parse(await readFile(this.lockPath, 'utf8')) as typeof held;
    } catch (e) {
      // Gone meanwhile: not stale, simply try again. Unreadable or half-written: judge by its age.
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return false;
      try {
        return this.now() - (await stat(this.lockPath)).mtimeMs > this.staleMs;
      } catch {
        return false;
      }
    }
    if (typeof held.at === 'number' && this.now() - held.at > this.staleMs) return true;
    if (held.host === hostname() && typeof held.pid === 'number' && held.pid !== process.pid) {
      try {
        process.kill(held.pid, 0);
      } catch (e) {
        return (e as NodeJS.ErrnoException).code === 'ESRCH';
      }
    }
    return false;
  }

  private async release(token: string): Promise<void> {
    try {
      const held = JSON.parse(await readFile(this.lockPath, 'utf8')) as { token?: unknown };
      // Taken over by another run after ours went stale: theirs now, not ours to remove.
      if (held.token === token) await unlink(this.lockPath);
    } catch {
      // Already gone.
    }
  }
}

// A rename is durable once the directory entry is: fsync the directory (not possible on every platform).
async function syncDir(dir: string): Promise<void> {
  let fh;
  try {
    fh = await open(dir, 'r');
    await fh.sync();
  } catch {
    // Windows and some filesystems cannot open or fsync a directory; the rename itself is still atomic.
  } finally {
    await fh?.close();
  }
}
