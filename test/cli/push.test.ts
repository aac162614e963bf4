// push against a real HTTP server on 127.0.0.1 that behaves like HubSpot and a webhook receiver, with faults.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { jsonReport, runCli, ROOT, type CliResult } from '../helpers/cli.js';
import { emulator } from '../helpers/emulator.js';
import { tmpDir } from '../helpers/tmp.js';
import { expectedPeople, generateEvents } from '../helpers/events.js';

const CANARY = 'pat-na1-CANARY-7f3e9a1c-d00d-4bad-b0a7-1eadledger000';
const fx = (f: string) => join(ROOT, 'fixtures', f);
const env = { HUBSPOT_TOKEN: CANARY };
/**
 * How a push of webhook-events.jsonl that sent all it could ends, the first time and every time after: 6, for its
 * conflicting retry (evt_01JA0009 on line 16, with another phone), never sent, for a person to look at.
 */
const SENT_ALL_BUT_CONFLICT = 6;

function ledgerRows(path: string): Array<{ key: string; status: string; natural_key: string; crm_id: string | null }> {
  const db = new Database(path, { readonly: true });
  try {
    return db.prepare('SELECT key, status, natural_key, crm_id FROM events').all() as Array<{
      key: string;
      status: string;
      natural_key: string;
      crm_id: string | null;
    }>;
  } finally {
    db.close();
  }
}

test('hubspot: a push delivers every new lead once; a rerun sends nothing; the ledger agrees with the CRM', async () => {
  const emu = await emulator({ token: CANARY });
  const dir = tmpDir();
  const ledger = join(dir, 'l.db');
  const args = [
    'push',
    fx('webhook-events.jsonl'),
    '--sink',
    'hubspot',
    '--hubspot-url',
    emu.url,
    '--ledger',
    ledger,
    '--json',
    '--report',
    join(dir, 'r.csv'),
  ];
  const first = await runCli(args, { env });
  assert.equal(first.code, SENT_ALL_BUT_CONFLICT, first.stderr);
  assert.equal(jsonReport(first).delivery.sent, 15);
  assert.equal(emu.contacts().length, 15);
  const second = await runCli(args, { env });
  assert.equal(second.code, SENT_ALL_BUT_CONFLICT, second.stderr);
  assert.equal(jsonReport(second).delivery.sent, 0);
  assert.equal(jsonReport(second).counts.duplicate, 15);
  assert.equal(emu.contacts().length, 15);
  const sent = ledgerRows(ledger).filter((r) => r.status === 'sent');
  assert.deepEqual(new Set(sent.map((r) => r.crm_id)), new Set(emu.contacts().map((c) => c.id)));
  const report = readFileSync(join(dir, 'r.csv'), 'utf8');
  assert.match(
    report,
    /evt_01JA0001,ana\.souza@example\.com\.br,new,not in the ledger,duplicate|evt_01JA0001,ana.souza@example.com.br,duplicate/,
  );
});

test('hubspot with faults (5xx, resets, 429 bursts, commit-then-drop, hangs): reruns as cron would end with every lead exactly once', async () => {
  const emu = await emulator({
    token: CANARY,
    rateLimit: '40/1s',
    seed: 11,
    // One of each connection fault first, then random ones: each kind happens however few requests the sink needs.
    faults: {
      script: ['hang', 'commit-then-drop', 'reset'],
      error5xxRate: 0.15,
      resetRate: 0.05,
      commitThenDropRate: 0.1,
      hangRate: 0.03,
      burst429: 3,
      latencyMs: 5,
    },
  });
  const dir = tmpDir();
  const events = generateEvents(dir, 1500, 3);
  const want = await expectedPeople(events, dir);
  const ledger = join(dir, 'l.db');
  const codes: number[] = [];
  const timings: string[] = [];
  after(() => console.log(timings.join('\n')));
  for (let run = 0; run < 8; run++) {
    const r = await runCli(
      [
        'push',
        events,
        '--sink',
        'hubspot',
        '--hubspot-url',
        emu.url,
        '--ledger',
        ledger,
        '--json',
        '--max-retries',
        '2',
        '--timeout',
        '1',
        '--backoff',
        '50',
        '--quiet',
      ],
      { env },
    );
    assert.ok(r.code === 0 || r.code === 1, `exit ${r.code}: ${r.stderr}`);
    codes.push(r.code!);
    timings.push(
      JSON.stringify({
        ...jsonReport(r).delivery,
        ms: jsonReport(r).durationMs,
        http: jsonReport(r).http,
      }),
    );
    if (r.code === 0) break;
  }
  assert.equal(codes.at(-1), 0, `still failing after ${codes.length} runs`);
  const emails = emu.contacts().map((c) => String(c.properties.email));
  assert.equal(emails.length, new Set(emails).size, 'no contact twice');
  assert.deepEqual(new Set(emails), want, 'every unique lead of the input, none lost');
  const rows = ledgerRows(ledger);
  assert.ok(
    rows.every((r) => r.status === 'sent'),
    'every claimed event settled as sent',
  );
  const byEmail = new Map(emu.contacts().map((c) => [String(c.properties.email), c.id]));
  for (const r of rows) assert.equal(r.crm_id, byEmail.get(r.natural_key), `crm id of ${r.key}`);
  const st = emu.stats();
  assert.ok(
    st.sent5xx > 0 && st.commitThenDrops > 0 && st.resets > 0 && st.sent429 > 0 && st.hangs > 0,
    `faults were injected: ${JSON.stringify(st)}`,
  );
});

test('webhook: Idempotency-Key and HMAC signature; in-doubt events re-sent with the same key', async () => {
  const secret = 'whsec-CANARY-webhook-secret';
  const emu = await emulator({
    webhook: { secret, honourIdempotencyKey: true },
    faults: { commitThenDropRate: 0.2, latencyMs: 2 },
    seed: 5,
  });
  const dir = tmpDir();
  const config = join(dir, 'leadledger.config.json');
  writeFileSync(config, JSON.stringify({ sinks: { webhook: { honoursIdempotencyKey: true } } }));
  const ledger = join(dir, 'l.db');
  const events = generateEvents(dir, 200, 9);
  const want = await expectedPeople(events, dir);
  let last: CliResult | undefined;
  for (let run = 0; run < 6; run++) {
    last = await runCli(
      [
        'push',
        events,
        '--sink',
        'webhook',
        '--url',
        `${emu.url}/webhook`,
        '--config',
        config,
        '--ledger',
        ledger,
        '--json',
        '--quiet',
        '--max-retries',
        '1',
        '--timeout',
        '1',
        '--backoff',
        '20',
      ],
      { env: { LEADLEDGER_WEBHOOK_SECRET: secret } },
    );
    if (last.code === 0) break;
  }
  assert.equal(last!.code, 0, last!.stderr);
  const got = emu.webhookReceived();
  const emails = got.deliveries.map((d) => (d.body as { lead: { email: string } }).lead.email);
  assert.equal(emails.length, new Set(emails).size, 'the receiver stored no lead twice');
  assert.deepEqual(new Set(emails), want);
  assert.ok(got.requests > got.deliveries.length, 'some requests were repeats answered from the idempotency store');
  assert.ok(!last!.stdout.includes(secret) && !last!.stderr.includes(secret));
});

test('jsonl sink: one line per new lead; a rerun appends nothing', async () => {
  const dir = tmpDir();
  const out = join(dir, 'out.jsonl');
  const args = [
    'push',
    fx('webhook-events.jsonl'),
    '--sink',
    'jsonl',
    '--output',
    out,
    '--ledger',
    join(dir, 'l.db'),
    '--quiet',
  ];
  assert.equal((await runCli(args)).code, SENT_ALL_BUT_CONFLICT);
  assert.equal(readFileSync(out, 'utf8').trim().split('\n').length, 15);
  // The ledger keeps each event's time as the input gave it (a regression: it was recorded empty).
  const db = new Database(join(dir, 'l.db'), { readonly: true });
  try {
    const row = db.prepare("SELECT event_time FROM events WHERE key = 'evt_01JA0001'").get() as {
      event_time: string | null;
    };
    assert.equal(row.event_time, '2026-10-01T12:00:00.000Z');
  } finally {
    db.close();
  }
  assert.equal((await runCli(args)).code, SENT_ALL_BUT_CONFLICT);
  assert.equal(readFileSync(out, 'utf8').trim().split('\n').length, 15);
});

test('--existing update: a known lead is upserted by email instead of skipped', async () => {
  const emu = await emulator({ token: CANARY });
  const dir = tmpDir();
  const r = await runCli(
    [
      'push',
      fx('webhook-events.jsonl'),
      '--sink',
      'hubspot',
      '--hubspot-url',
      emu.url,
      '--ledger',
      join(dir, 'l.db'),
      '--json',
      '--existing',
      'update',
    ],
    { env },
  );
  assert.equal(r.code, SENT_ALL_BUT_CONFLICT, r.stderr);
  assert.equal(jsonReport(r).delivery.sent, 15);
  assert.equal(jsonReport(r).delivery.updated, 2);
  assert.equal(emu.contacts().length, 15);
  const ana = emu.contacts().find((c) => c.properties.email === 'ana.souza@example.com.br')!;
  assert.equal(ana.properties.phone, '+5511987650199', 'the lead.updated event changed the phone');
});

test('hubspot: a 409 that is not the duplicate answer fails its lead with the CRM message; never counted as in the CRM', async () => {
  const emu = await emulator({ token: CANARY, uniqueProperties: ['member_id'] });
  const seeded = await fetch(`${emu.url}/crm/v3/objects/contacts`, {
    method: 'POST',
    headers: { authorization: `Bearer ${CANARY}`, 'content-type': 'application/json' },
    body: JSON.stringify({ properties: { email: 'owner@example.com', member_id: 'M-1' }, associations: [] }),
  });
  assert.equal(seeded.status, 201);
  const dir = tmpDir();
  const input = join(dir, 'members.jsonl');
  const lead = (i: number, member: string) =>
    JSON.stringify({ event_id: `evt_m${i}`, email: `m${i}@example.com`, name: `Member ${i}`, member_id: member });
  writeFileSync(input, [lead(1, 'M-2'), lead(2, 'M-1'), lead(3, 'M-3')].join('\n') + '\n');
  const config = join(dir, 'leadledger.config.json');
  writeFileSync(config, JSON.stringify({ fields: { custom: { member_id: 'member_id' } } }));
  const ledger = join(dir, 'l.db');
  const r = await runCli(
    ['push', input, '--sink', 'hubspot', '--hubspot-url', emu.url, '--config', config, '--ledger', ledger, '--json'],
    { env },
  );
  assert.equal(r.code, 1, r.stderr);
  const reason = 'CONFLICT: Property member_id must have a unique value: "M-1" is already used by another contact';
  assert.equal(jsonReport(r).delivery.sent, 2);
  assert.equal(jsonReport(r).delivery.exists, 0);
  assert.equal(jsonReport(r).delivery.failed, 1);
  assert.deepEqual(jsonReport(r).failures, { [reason]: 1 });
  assert.ok(r.stderr.includes(`failed ×1: ${reason}`), r.stderr);
  const db = new Database(ledger, { readonly: true });
  try {
    const row = db.prepare("SELECT status, failure, crm_id, last_error FROM events WHERE key = 'evt_m2'").get();
    assert.deepEqual(row, { status: 'failed', failure: 'permanent', crm_id: null, last_error: reason });
  } finally {
    db.close();
  }
  assert.deepEqual(
    emu
      .contacts()
      .map((c) => c.properties.email)
      .sort(),
    ['m1@example.com', 'm3@example.com', 'owner@example.com'],
  );
});

test('rejected credentials: exit 4, the token never printed, events left retryable', async () => {
  const emu = await emulator({ token: 'the-right-token' });
  const dir = tmpDir();
  const ledger = join(dir, 'l.db');
  const r = await runCli(
    ['push', fx('webhook-events.jsonl'), '--sink', 'hubspot', '--hubspot-url', emu.url, '--ledger', ledger],
    { env },
  );
  assert.equal(r.code, 4, r.stderr);
  assert.match(r.stderr, /credentials|401|authenticat/i);
  assert.ok(!r.stderr.includes(CANARY) && !r.stdout.includes(CANARY));
  assert.ok(ledgerRows(ledger).every((x) => x.status === 'failed'));
  assert.equal(emu.contacts().length, 0);
});

test('a canary token never appears in stdout, stderr, the report or the ledger file', async () => {
  const emu = await emulator({ token: CANARY, faults: { error5xxRate: 0.3 }, seed: 2 });
  const dir = tmpDir();
  const ledger = join(dir, 'l.db');
  const report = join(dir, 'r.jsonl');
  const r = await runCli(
    [
      'push',
      fx('webhook-events.jsonl'),
      fx('crm-export-pt.csv'),
      '--default-country',
      'BR',
      '--sink',
      'hubspot',
      '--hubspot-url',
      emu.url,
      '--ledger',
      ledger,
      '--json',
      '--verbose',
      '--report',
      report,
      '--max-retries',
      '0',
    ],
    { env },
  );
  assert.ok(r.code === 0 || r.code === 1, r.stderr);
  for (const text of [r.stdout, r.stderr, readFileSync(report, 'utf8')]) assert.ok(!text.includes(CANARY));
  for (const f of [ledger, ledger + '-wal'])
    if (existsSync(f)) assert.ok(!readFileSync(f).includes(Buffer.from(CANARY)), f);
});

/** Every value of every row of every table of a SQLite file, as text. */
function everyCell(path: string): string[] {
  const db = new Database(path, { readonly: true });
  try {
    const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as Array<{ name: string }>;
    return tables.flatMap(({ name }) =>
      (db.prepare(`SELECT * FROM "${name}"`).all() as Array<Record<string, unknown>>).flatMap((row) =>
        Object.values(row).map((v) => (Buffer.isBuffer(v) ? v.toString('latin1') : String(v))),
      ),
    );
  } finally {
    db.close();
  }
}

test("a key in --hubspot-url's query string reaches HubSpot on the right paths, and no output or ledger cell", async () => {
  const SECRET = 'SECRET123';
  // The first request is reset after it was sent: its leads end in doubt, and the next run looks them up by email.
  const emu = await emulator({ token: CANARY, logRequests: true, faults: { script: ['reset'] } });
  const dir = tmpDir();
  const ledger = join(dir, 'l.db');
  const report = join(dir, 'r.jsonl');
  const args = [
    'push',
    fx('webhook-events.jsonl'),
    '--sink',
    'hubspot',
    '--hubspot-url',
    `${emu.url}/?hapikey=${SECRET}`,
    '--ledger',
    ledger,
    '--json',
    '--verbose',
    '--report',
    report,
    '--max-retries',
    '0',
  ];
  const first = await runCli(args, { env });
  assert.equal(first.code, 1, first.stderr);
  assert.equal(jsonReport(first).delivery.inDoubt, 15);
  const second = await runCli(args, { env });
  assert.equal(second.code, SENT_ALL_BUT_CONFLICT, second.stderr);
  assert.equal(jsonReport(second).delivery.sent, 15, 'the in-doubt leads were looked up, not found, and sent');
  assert.equal(emu.contacts().length, 15);

  for (const r of [first, second]) {
    assert.ok(!r.stdout.includes(SECRET), `--json: ${r.stdout}`);
    assert.ok(!r.stderr.includes(SECRET), `stderr: ${r.stderr}`);
    assert.match(r.stderr, /HubSpot at http:\/\/127\.0\.0\.1:\d+\/\?redacted/);
  }
  assert.ok(!readFileSync(report, 'utf8').includes(SECRET));
  const cells = everyCell(ledger);
  assert.ok(cells.length > 0);
  for (const cell of cells) assert.ok(!cell.includes(SECRET), `ledger cell: ${cell}`);
  for (const f of [ledger, ledger + '-wal'])
    if (existsSync(f)) assert.ok(!readFileSync(f).includes(Buffer.from(SECRET)), f);

  const requests = emu.requests();
  const paths = new Set(requests.map((q) => `${q.method} ${q.path.replace(/\/[^/]+%40[^/]+$/, '/{email}')}`));
  // In-doubt leads are looked up a batch at a time: a batch read by email (idProperty in the body), no GET each.
  assert.deepEqual(
    paths,
    new Set(['POST /crm/v3/objects/contacts/batch/create', 'POST /crm/v3/objects/contacts/batch/read']),
  );
  for (const q of requests)
    assert.equal(new URLSearchParams(q.query).get('hapikey'), SECRET, `the key was kept: ${q.path}${q.query}`);
});

test('a --hubspot-url with user and password is still refused, and the password is not printed', async () => {
  const dir = tmpDir();
  const r = await runCli(
    [
      'push',
      fx('webhook-events.jsonl'),
      '--sink',
      'hubspot',
      '--hubspot-url',
      'http://user:PASSWORD987@127.0.0.1:9/',
      '--ledger',
      join(dir, 'l.db'),
    ],
    { env },
  );
  assert.equal(r.code, 2, r.stderr);
  assert.match(r.stderr, /must not carry credentials/);
  assert.ok(!r.stderr.includes('PASSWORD987') && !r.stdout.includes('PASSWORD987'));
});

test('tokens are not flag values: --token-file works, an unknown --token flag is refused', async () => {
  const emu = await emulator({ token: CANARY });
  const dir = tmpDir();
  const tf = join(dir, 'token');
  writeFileSync(tf, CANARY + '\n', { mode: 0o600 });
  const ok = await runCli(
    [
      'push',
      fx('leads.tsv'),
      '--sink',
      'hubspot',
      '--hubspot-url',
      emu.url,
      '--token-file',
      tf,
      '--ledger',
      join(dir, 'l.db'),
      '--default-country',
      'BR',
    ],
    { env: { HUBSPOT_TOKEN: undefined } },
  );
  assert.equal(ok.code, 0, ok.stderr);
  const bad = await runCli(
    ['push', fx('leads.tsv'), '--sink', 'hubspot', '--token', CANARY, '--ledger', join(dir, 'l.db')],
    { env: { HUBSPOT_TOKEN: undefined } },
  );
  assert.equal(bad.code, 2);
  const none = await runCli(
    ['push', fx('leads.tsv'), '--sink', 'hubspot', '--hubspot-url', emu.url, '--ledger', join(dir, 'l2.db')],
    { env: { HUBSPOT_TOKEN: undefined } },
  );
  assert.equal(none.code, 2);
  assert.match(none.stderr, /HUBSPOT_TOKEN/);
});

test('a plain http:// URL to a non-loopback host is refused unless --allow-insecure', async () => {
  const dir = tmpDir();
  const r = await runCli([
    'push',
    fx('leads.tsv'),
    '--sink',
    'webhook',
    '--url',
    'http://example.com/hook',
    '--ledger',
    join(dir, 'l.db'),
  ]);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /insecure|https/i);
});
