// A separate run refreshing RD Station's access token from a shared credentials file (oauth2.test.ts spawns two at
// once). Prints the access token it ends up with; exits 1 with the error's message when it gets none.
import { HttpClient } from '../../src/sinks/transport/http.js';
import { rdstationOAuthProvider } from '../../src/sinks/rdstation/options.js';
import { CredentialsFile } from '../../src/sinks/transport/credentials.js';
import { OAuth2Session } from '../../src/sinks/transport/oauth2.js';

const env = process.env;
const http = new HttpClient({ timeoutMs: 10_000 });
const session = new OAuth2Session({
  http,
  provider: rdstationOAuthProvider(env.RD_URL ?? ''),
  clientId: env.RD_CLIENT_ID ?? '',
  clientSecret: env.RD_CLIENT_SECRET ?? '',
  store: new CredentialsFile(env.RD_CREDENTIALS ?? '', { lockPollMs: 5 }),
});
try {
  process.stdout.write(`${await session.token()}\n`);
} catch (e) {
  process.stderr.write(`${(e as Error).message}\n`);
  process.exitCode = 1;
} finally {
  http.close();
}
