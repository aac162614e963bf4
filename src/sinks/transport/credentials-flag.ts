// The --credentials flag every OAuth 2 sink takes (RD Station, Zoho): one object, since a flag several sinks share
// is defined once (registry.ts refuses two definitions of one flag). Light: --help loads it.
import type { SinkFlag } from '../definition.js';

/** --credentials <file>: the OAuth credentials file `leadledger auth <crm>` writes and runs refresh. */
export const CREDENTIALS_FLAG: SinkFlag = {
  flags: '--credentials <file>',
  description:
    "OAuth credentials file that `leadledger auth` writes and runs refresh (default: leadledger/credentials.json in the user's config directory)",
};
