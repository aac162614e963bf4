// `leadledger doctor` as users run it: the built CLI against the sandbox's CRMs, a real PostgreSQL and real files.
// A line per check (ok, warn, fail) with a hint; exit 0 when nothing fails, else the code a push would end with.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runCli } from '../helpers/cli.js';
import { emulator } from '../helpers/emulator.js';
import { pgDatabase } from '../helpers/postgres.js';
import { tmpDir } from '../helpers/tmp.js';
import { startPipedriveEmulator } from '../../src/sandbox/pipedrive-api.js';
import { startRdStationEmulator } from '../../src/sandbox/rdstation-emulator.js';

const TOKEN = 'pat-doctor-canary-5f1e';

interface Line {
  check: string;
  status: 'ok' | 'warn' | 'fail';
  message: string;
  hint?: string;
}

// doctor --json: its checks, and the exit code; the token never in its output.
async function doctor(args: string[], opts: { env?: Record<string, string | undefined>; cwd?: string } = {}) {
  const r = await runCli(['doctor', ...args, '--json'], { cwd: opts.cwd ?? tmpDir(), env: opts.env ?? {} });
  assert.ok(!r.stdout.includes(TOKEN) && !r.stderr.includes(TOKEN), 'the token appeared in output');
  assert.ok(r.stdout.trim(), r.stderr);
  const report = JSON.parse(r.stdout) as { checks: Line[]; exitCode: number };
  assert.equal(report.exitCode, r.code);
  const of = (check: string) => report.checks.filter((c) => c.check === check);
  return { code: r.code, checks: report.checks, of, stderr: r.stderr };
}

test('hubspot: the token is accepted and contacts are readable (GET contacts?limit=1); a refused token is exit 4', async () => {
  const emu = await emulator({ token: TOKEN, logRequests: true });
  const ok = await doctor(['--sink', 'hubspot', '--hubspot-url', emu.url], { env: { HUBSPOT_TOKEN: TOKEN } });
  assert.equal(ok.code, 0, JSON.stringify(ok.checks));
  assert.equal(ok.of('credentials')[0]?.status, 'ok');
  assert.equal(ok.of('destination')[0]?.status, 'ok');
  assert.match(ok.of('destination')[0]!.message, /answered \(200\)/);
  assert.deepEqual(
    emu.requests().map((r) => `${r.method} ${r.path}${r.query}`),
    ['GET /crm/v3/objects/contacts?limit=1'],
    'one cheap authenticated GET',
  );
  assert.equal(emu.contacts().length, 0, 'nothing written');
  const refused = await doctor(['--sink', 'hubspot', '--hubspot-url', emu.url], {
    env: { HUBSPOT_TOKEN: 'pat-not-the-one' },
  });
  assert.equal(refused.code, 4);
  assert.equal(refused.of('destination')[0]?.status, 'fail');
  assert.match(refused.of('destination')[0]!.message, /refused the credentials \(401\)/);
  assert.ok(refused.of('destination')[0]!.hint);
  const none = await doctor(['--sink', 'hubspot', '--hubspot-url', emu.url], { env: { HUBSPOT_TOKEN: undefined } });
  assert.equal(none.code, 2);
  assert.match(none.of('credentials')[0]!.message, /HUBSPOT_TOKEN/);
});

test('a token file others can read is a warning naming chmod 600; one named that does not exist fails', async () => {
  const emu = await emulator({ token: TOKEN });
  const dir = tmpDir();
  const file = join(dir, 'token');
  writeFileSync(file, TOKEN + '\n');
  chmodSync(file, 0o644);
  const loose = await doctor(['--sink', 'hubspot', '--hubspot-url', emu.url, '--token-file', file], {
    env: { HUBSPOT_TOKEN: undefined },
  });
  assert.equal(loose.code, 0, JSON.stringify(loose.checks));
  const warned = loose.checks.find((c) => c.check === 'credentials' && c.status === 'warn');
  assert.ok(warned, JSON.stringify(loose.checks));
  assert.equal(warned.hint, `chmod 600 ${file}`);
  chmodSync(file, 0o600);
  const tight = await doctor(['--sink', 'hubspot', '--hubspot-url', emu.url, '--token-file', file], {
    env: { HUBSPOT_TOKEN: undefined },
  });
  assert.ok(
    tight.of('credentials').every((c) => c.status === 'ok'),
    JSON.stringify(tight.checks),
  );
  const gone = await doctor(['--sink', 'hubspot', '--hubspot-url', emu.url, '--token-file', join(dir, 'nope')], {
    env: { HUBSPOT_TOKEN: undefined },
  });
  assert.equal(gone.code, 2);
});

test('pipedrive: GET /v1/users/me with the token; a refused one is exit 4', async () => {
  const emu = await startPipedriveEmulator({ token: TOKEN, logRequests: true });
  try {
    const ok = await doctor(['--sink', 'pipedrive', '--pipedrive-url', emu.url], { env: { PIPEDRIVE_TOKEN: TOKEN } });
    assert.equal(ok.code, 0, JSON.stringify(ok.checks));
    assert.equal(ok.of('destination')[0]?.status, 'ok');
    assert.equal(emu.persons().length, 0);
    const refused = await doctor(['--sink', 'pipedrive', '--pipedrive-url', emu.url], {
      env: { PIPEDRIVE_TOKEN: 'wrong' },
    });
    assert.equal(refused.code, 4, JSON.stringify(refused.checks));
  } finally {
    await emu.close();
  }
});

test('rdstation: GET /marketing/account_info through the OAuth session (the refresh token checked too)', async () => {
  const emu = await startRdStationEmulator({ clientId: 'cid', clientSecret: 'csecret', refreshTokens: [TOKEN] });
  try {
    const dir = tmpDir();
    const env = { RDSTATION_CLIENT_ID: 'cid', RDSTATION_CLIENT_SECRET: 'csecret', RDSTATION_REFRESH_TOKEN: TOKEN };
    const args = ['--sink', 'rdstation', '--rdstation-url', emu.url, '--credentials', join(dir, 'credentials.json')];
    const ok = await doctor(args, { env, cwd: dir });
    assert.equal(ok.code, 0, JSON.stringify(ok.checks));
    assert.equal(ok.of('destination')[0]?.status, 'ok');
    // Elsewhere, with a refresh token RD Station does not know (the first run stored a good access token here).
    const other = tmpDir();
    const refused = await doctor(
      ['--sink', 'rdstation', '--rdstation-url', emu.url, '--credentials', join(other, 'credentials.json')],
      { env: { ...env, RDSTATION_REFRESH_TOKEN: 'revoked-refresh' }, cwd: other },
    );
    assert.equal(refused.code, 4, JSON.stringify(refused.checks));
  } finally {
    await emu.close();
  }
});

test('webhook: a HEAD the receiver answers (405: POST only) is ok; a receiver nobody listens on fails', async () => {
  const emu = await emulator();
  const ok = await doctor(['--sink', 'webhook', '--url', `${emu.url}/webhook`]);
  assert.equal(ok.code, 0, JSON.stringify(ok.checks));
  assert.match(ok.of('destination')[0]!.message, /answered \(405\)/);
  assert.equal(emu.webhookReceived().deliveries.length, 0, 'no lead sent');
  const url = `${emu.url}/webhook`;
  await emu.close();
  const down = await doctor(['--sink', 'webhook', '--url', url]);
  assert.equal(down.code, 1, JSON.stringify(down.checks));
  assert.match(down.of('destination')[0]!.message, /could not be reached/);
});

test('jsonl: a folder it may create the file in is ok and nothing is created; one it may not is a fail', async () => {
  const dir = tmpDir();
  const ok = await doctor(['--sink', 'jsonl', '--output', join(dir, 'out.jsonl')], { cwd: dir });
  assert.equal(ok.code, 0, JSON.stringify(ok.checks));
  const { existsSync } = await import('node:fs');
  assert.ok(!existsSync(join(dir, 'out.jsonl')), 'doctor creates nothing');
  const missing = await doctor(['--sink', 'jsonl', '--output', join(dir, 'no', 'such', 'out.jsonl')], { cwd: dir });
  assert.equal(missing.code, 1);
  assert.match(missing.of('destination')[0]!.message, /cannot be created/);
});

test('postgres: connects, finds the table, and tells a role that may not INSERT into it', async () => {
  const db = await pgDatabase();
  await db.query('CREATE TABLE leads (id bigserial PRIMARY KEY, email text NOT NULL UNIQUE, name text)');
  const env = {
    PGPASSWORD: db.cluster.password,
    PGPASSFILE: undefined,
    LEADLEDGER_PG_URL: undefined,
    DATABASE_URL: undefined,
  };
  const ok = await doctor(['--sink', 'postgres', '--pg-url', db.url], { env });
  assert.equal(ok.code, 0, JSON.stringify(ok.checks));
  assert.match(ok.of('destination')[0]!.message, /may INSERT/);
  await db.query(`CREATE ROLE doctor_reader LOGIN PASSWORD 'reader-pw'`);
  await db.query(`GRANT SELECT ON leads TO doctor_reader`);
  const reader = db.url.replace(/\/\/[^@/]+@/, '//doctor_reader@');
  const refused = await doctor(['--sink', 'postgres', '--pg-url', reader], {
    env: { ...env, PGPASSWORD: 'reader-pw' },
  });
  // The sink's own refusal on opening, as a push meets it (a usage error: the table is not one it can write).
  assert.equal(refused.code, 2, JSON.stringify(refused.checks));
  assert.match(refused.of('destination')[0]!.message, /may not INSERT into public\.leads/);
  const noTable = await doctor(['--sink', 'postgres', '--pg-url', db.url, '--table', 'nowhere', '--create-table'], {
    env,
  });
  assert.notEqual(noTable.code, 0);
  const tables = await db.query(`SELECT count(*)::int AS n FROM pg_tables WHERE tablename = 'nowhere'`);
  assert.equal(tables.rows[0]!.n, 0, 'doctor creates no table');
});

test('the config and the ledger: where the config was found, an invalid one (exit 2), the ledger in-doubt and failed counts', async () => {
  const emu = await emulator({ token: TOKEN });
  const dir = tmpDir();
  writeFileSync(
    join(dir, 'leadledger.config.json'),
    JSON.stringify({ sink: 'hubspot', ledger: 'l.db', sinks: { hubspot: { url: emu.url } } }),
  );
  const fresh = await doctor([], { cwd: dir, env: { HUBSPOT_TOKEN: TOKEN } });
  assert.equal(fresh.code, 0, JSON.stringify(fresh.checks));
  assert.match(fresh.of('config')[0]!.message, /leadledger\.config\.json \(found in the working directory\): valid/);
  assert.equal(fresh.of('ledger')[0]?.status, 'warn', 'no ledger yet');
  assert.match(fresh.of('sink')[0]!.message, /hubspot \(from the config\)/);
  // A push that fails against a CRM that is down: the ledger then holds failed events.
  mkdirSync(join(dir, 'in'));
  writeFileSync(join(dir, 'in', 'e.jsonl'), '{"id":"e1","email":"ana@example.com"}\n');
  emu.setFaults({ outage: true });
  const push = await runCli(['push', 'in/e.jsonl', '--max-retries', '0'], { cwd: dir, env: { HUBSPOT_TOKEN: TOKEN } });
  assert.equal(push.code, 1, push.stderr);
  emu.setFaults({});
  const after = await doctor([], { cwd: dir, env: { HUBSPOT_TOKEN: TOKEN } });
  assert.equal(after.code, 0, JSON.stringify(after.checks));
  assert.match(after.of('ledger')[0]!.message, /schema v\d+; in doubt 0, failed 1/);
  assert.ok(after.of('ledger').some((l) => l.status === 'warn' && /leadledger replay/.test(l.hint ?? '')));
  writeFileSync(join(dir, 'leadledger.config.json'), JSON.stringify({ sink: 'hubspto' }));
  const bad = await doctor([], { cwd: dir, env: { HUBSPOT_TOKEN: TOKEN } });
  assert.equal(bad.code, 2);
  assert.equal(bad.of('config')[0]?.status, 'fail');
  // The human report: a line per check, ok / warn / fail, on stdout.
  const text = await runCli(['doctor'], { cwd: dir, env: { HUBSPOT_TOKEN: TOKEN } });
  assert.equal(text.code, 2);
  assert.match(text.stdout, /^fail {2}config {7}/m);
  assert.match(text.stdout, /check failed: a push would not get through \(exit 2\)/);
});
