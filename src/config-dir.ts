// The user's config directory of leadledger, one rule for every file kept there (the credentials file, the config).
import { homedir } from 'node:os';
import { join } from 'node:path';

/** $XDG_CONFIG_HOME/leadledger, else ~/.config/leadledger (a relative XDG_CONFIG_HOME is ignored, as the spec says). */
export function userConfigDir(env: Record<string, string | undefined> = process.env, home: string = homedir()): string {
  const xdg = env.XDG_CONFIG_HOME?.trim();
  const base = xdg && xdg.startsWith('/') ? xdg : join(home, '.config');
  return join(base, 'leadledger');
}
