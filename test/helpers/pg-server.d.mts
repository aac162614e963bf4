// Types of pg-server.mjs (plain JavaScript, shared with the bench).
import type { ChildProcess } from 'node:child_process';

export const PG_ADMIN: 'leadledger_admin';
export function findPgBin(env?: NodeJS.ProcessEnv): string | undefined;

export interface PgServer {
  host: string;
  port: number;
  user: string;
  password: string;
  /** The directory of its Unix socket (trust authentication). */
  socketDir: string;
  version: string;
  /** Stops the server and removes its directory (also done when the process exits). */
  stop(): void;
}

export function startPgServer(o: {
  bin: string;
  /** The temporary directory's name prefix. */
  prefix: string;
  /** Settings beyond address, port and socket, as name=value. */
  settings: string[];
  /** Who needs the postgres user, for the error when there is none ("the PostgreSQL tests"). */
  who: string;
  onServer?: (server: ChildProcess) => void;
}): Promise<PgServer>;
