import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { after, beforeEach, describe, it } from 'node:test';
import { CredentialsError } from '../../src/errors.js';
import { authorize, rdstationOAuthProvider } from '../../src/sinks/rdstation/index.js';
import { CredentialsFile, defaultCredentialsPath } from '../../src/sinks/transport/credentials.js';
import { OAuth2Session } from '../../src/sinks/transport/oauth2.js';
import { item } from './helpers.js';
import { CLIENT_ID, CLIENT_SECRET, REFRESH, rdHarness, type Harness } from './rdstation-harness.js';

describe('OAuth 2 credentials (RD Station emulator)', () => {
  let h: Harness;
  beforeEach(async () => {
    await h?.close();
    h = await rdHarness({ accessTokenTtlSec: 3600 });
  });
  after(() => h.close());

  const session = (file: CredentialsFile = new CredentialsFile(h.credentials), refreshToken = REFRESH) =>
    new OAuth2Session({
      http: h.client(),
      provider: rdstationOAuthProvider(h.emu.url),
      clientId: CLIENT_ID,
      clientSecret: CLIENT_SECRET,
      refreshToken,
      store: file,
      now: h.clock.now,
    });

  it('the credentials file: XDG_CONFIG_HOME, else ~/.config', () => {
    assert.equal(defaultCredentialsPath({ XDG_CONFIG_HOME: '/x' }, '/home/u'), '/x/leadledger/credentials.json');
    assert.equal(defaultCredentialsPath({}, '/home/u'), '/home/u/.config/leadledger/credentials.json');
    assert.equal(
      defaultCredentialsPath({ XDG_CONFIG_HOME: 'rel' }, '/home/u'),
      '/home/u/.config/leadledger/credentials.json',
    );
  });

  it('caches the access token and refreshes it a margin before it expires, not at every call', async () => {
    const s = session();
    const first = await s.token();
    assert.equal(await s.token(), first);
    h.clock.advance(50 * 60_000);
    assert.equal(await s.token(), first, 'ten minutes left: still good');
    h.clock.advance(6 * 60_000);
    assert.notEqual(await s.token(), first, 'within five minutes of expiry: renewed');
    assert.equal(h.emu.stats().refreshes, 2);
  });

  it('writes the file atomically: 0600, no temporary file left, other CRMs’ sections kept', async () => {
    await writeFile(h.credentials, JSON.stringify({ zoho: { refresh_token: 'z' } }), { mode: 0o644 });
    await session().token();
    const file = JSON.parse(await readFile(h.credentials, 'utf8'));
    assert.equal(file.zoho.refresh_token, 'z');
    assert.ok(file.rdstation.access_token);
    assert.equal((await stat(h.credentials)).mode & 0o777, 0o600);
    assert.deepEqual(await readdir(h.dir), ['credentials.json']);
  });

  it('a lock left by a run that died is taken over', async () => {
    const dead = spawnSync(process.execPath, ['-e', '']).pid;
    await writeFile(`${h.credentials}.lock`, JSON.stringify({ pid: dead, host: hostname(), at: Date.now() }));
    assert.equal(await new CredentialsFile(h.credentials).withLock(async () => 'ran'), 'ran');
  });

  it('two processes refreshing at once both get a token, and the rotated refresh token stays usable', async () => {
    await writeFile(h.credentials, JSON.stringify({ rdstation: { client_id: CLIENT_ID, refresh_token: REFRESH } }), {
      mode: 0o600,
    });
    const run = () =>
      new Promise<{ code: number | null; out: string; err: string }>((resolve) => {
        const child = spawn(process.execPath, ['--import', 'tsx', join(import.meta.dirname, 'oauth2-child.ts')], {
          env: {
            ...process.env,
            RD_URL: h.emu.url,
            RD_CLIENT_ID: CLIENT_ID,
            RD_CLIENT_SECRET: CLIENT_SECRET,
            RD_CREDENTIALS: h.credentials,
          },
        });
        let out = '';
        let err = '';
        child.stdout.on('data', (b: Buffer) => (out += b.toString()));
        child.stderr.on('data', (b: Buffer) => (err += b.toString()));
        child.on('close', (code) => resolve({ code, out, err }));
      });
    const [a, b] = await Promise.all([run(), run()]);
    assert.equal(a.code, 0, a.err);
    assert.equal(b.code, 0, b.err);
    assert.equal(h.emu.stats().refusedGrants, 0, 'neither used a refresh token the other had rotated away');
    // Whoever came second used the first one's access token or refreshed with its rotated token: the file works on.
    h.emu.api.expireAccessTokens();
    assert.ok(await session(new CredentialsFile(h.credentials), 'stale-env-token').token());
  });

  it('two runs refreshing at once on one file: the second waits for the lock and takes the first one’s token', async () => {
    // Two CredentialsFile objects on one path, as two processes have: only the lock file orders them.
    const [a, b] = await Promise.all([
      session(new CredentialsFile(h.credentials, { lockPollMs: 1 })).token(),
      session(new CredentialsFile(h.credentials, { lockPollMs: 1 })).token(),
    ]);
    assert.equal(a, b, 'one access token for both');
    assert.equal(h.emu.stats().refreshes, 1);
    assert.equal(h.emu.stats().refusedGrants, 0);
  });

  it('a refresh refused because another host rotated the token meanwhile: the file is read again, no exit 4', async () => {
    // Host B reads the file, then host A (past any lock: another machine) refreshes and rotates before B does.
    class AnotherHost extends CredentialsFile {
      reads = 0;
      beforeRefresh: (() => Promise<void>) | undefined;
      override async read(section: string) {
        const got = await super.read(section);
        if (this.reads++ === 1) await this.beforeRefresh?.();
        return got;
      }
      override withLock<T>(fn: () => Promise<T>): Promise<T> {
        return fn();
      }
    }
    const fileB = new AnotherHost(h.credentials);
    fileB.beforeRefresh = async () => void (await session().token());
    const token = await session(fileB).token();
    assert.ok(token);
    assert.equal(h.emu.stats().refusedGrants, 1, 'B was refused once, then took what A wrote');
  });

  it('a revoked grant is a CredentialsError naming leadledger auth rdstation', async () => {
    h.emu.api.revokeGrant();
    await assert.rejects(
      session().token(),
      (e: unknown) =>
        e instanceof CredentialsError &&
        e.exitCode === 4 &&
        e.message.includes('`leadledger auth rdstation`') &&
        !e.message.includes(REFRESH) &&
        !e.message.includes(CLIENT_SECRET),
    );
  });

  it('a 401 "expired_token" is answered by one refresh and one retry', async () => {
    const s = session();
    await s.token();
    h.emu.api.expireAccessTokens();
    const result = await s.request((token) => ({
      method: 'GET',
      url: `${h.emu.url}/platform/contacts/email:nobody%40example.com`,
      headers: { authorization: `Bearer ${token}` },
    }));
    assert.equal(result.kind === 'response' && result.response.status, 404);
    assert.equal(s.refreshes, 2);
  });

  it('leadledger auth rdstation: the code flow through a 127.0.0.1 redirect writes a file the sink runs from', async () => {
    const done = await authorize({
      clientId: CLIENT_ID,
      clientSecret: CLIENT_SECRET,
      baseUrl: h.emu.url,
      credentialsPath: h.credentials,
      // The user's browser: RD's consent page redirects to our listener with the code.
      onUrl: (url) => void fetch(url).then((r) => r.text()),
    });
    assert.equal(done.path, h.credentials);
    const file = JSON.parse(await readFile(h.credentials, 'utf8'));
    assert.equal(file.rdstation.client_id, CLIENT_ID);
    assert.equal(file.rdstation.client_secret, CLIENT_SECRET);
    assert.ok(file.rdstation.refresh_token);
    assert.equal((await stat(h.credentials)).mode & 0o777, 0o600);
    const sink = await h.sink({ env: {} });
    assert.equal((await sink.send([item(1, { email: 'o@example.com' })]))[0]?.kind, 'created');
  });

  it('leadledger auth rdstation with a refresh token checks it by a refresh and stores the rotated one', async () => {
    await authorize({
      clientId: CLIENT_ID,
      clientSecret: CLIENT_SECRET,
      refreshToken: REFRESH,
      baseUrl: h.emu.url,
      credentialsPath: h.credentials,
    });
    const file = JSON.parse(await readFile(h.credentials, 'utf8'));
    assert.notEqual(file.rdstation.refresh_token, REFRESH);
    await assert.rejects(
      authorize({
        clientId: CLIENT_ID,
        clientSecret: CLIENT_SECRET,
        refreshToken: REFRESH,
        baseUrl: h.emu.url,
        credentialsPath: h.credentials,
      }),
      (e: unknown) => e instanceof CredentialsError && !e.message.includes(REFRESH),
    );
  });
});
