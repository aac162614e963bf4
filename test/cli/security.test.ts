// What a hostile or unlucky input must not do to the person running leadledger or to the CRM: drive their terminal
// with control sequences from the data, or flood it (and the CRM) with values of megabytes.
import { test, after } from 'node:test';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { openLedger } from '../../src/ledger/ledger.js';
import { jsonReport, runCli } from '../helpers/cli.js';
import { tmpDir } from '../helpers/tmp.js';

// ESC (a colour, a cursor move, an OSC that retitles the window), BEL, NUL, a C1 CSI and a bidi override.
const HOSTILE = ['\u001b[2J', '\u001b]0;owned\u0007', '\u0000', '\u009b31m', '\u202e'];
// eslint-disable-next-line no-control-regex -- what must never reach the terminal
const RAW_CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e]/;

test('terminal control sequences in keys, emails and file names are shown escaped by the summary, ledger list and ledger show', async () => {
  const dir = tmpDir();
  // A command line cannot hold NUL: the key that `ledger show` is given has every other sequence.
  const key = `evt${HOSTILE.filter((h) => h !== '\u0000').join('')}`;
  const lines = [
    JSON.stringify({ event_id: key, email: 'ana@example.com' }),
    JSON.stringify({ event_id: key, email: 'bia@example.com' }), // a conflict: its reason names the key
    JSON.stringify({ event_id: 'e2', email: `x${HOSTILE.join('')}@example.com` }), // invalid: the reason quotes it
  ];
  const input = join(dir, `in${HOSTILE[0]}.jsonl`);
  writeFileSync(input, lines.join('\n') + '\n');
  const ledger = join(dir, 'l.db');
  const dry = await runCli(['push', input, '--dry-run', '--ledger', ledger]);
  assert.equal(dry.code, 6, dry.stderr); // the conflict
  assert.doesNotMatch(dry.stdout + dry.stderr, RAW_CONTROL, 'summary');
  assert.match(dry.stdout, /\\x1b\[2J/);
  const pushed = await runCli([
    'push',
    input,
    '--sink',
    'jsonl',
    '--output',
    join(dir, 'out.jsonl'),
    '--ledger',
    ledger,
  ]);
  assert.equal(pushed.code, 6, pushed.stderr);
  assert.doesNotMatch(pushed.stdout + pushed.stderr, RAW_CONTROL, 'push summary');
  for (const args of [
    ['ledger', 'list'],
    ['ledger', 'show', key],
    ['ledger', 'stats'],
    ['ledger', 'runs'],
    ['ledger', 'show', `nope${HOSTILE[1]}`],
  ]) {
    const r = await runCli([...args, '--ledger', ledger]);
    assert.ok(r.code === 0 || args[2]?.startsWith('nope'), `${args.join(' ')}: ${r.stderr}`);
    assert.doesNotMatch(r.stdout, RAW_CONTROL, `${args[1]} stdout`);
    assert.doesNotMatch(r.stderr, RAW_CONTROL, `${args[1]} stderr`);
  }
  // Machine output stays exact: JSON escapes what it must, and the key round-trips.
  const json = await runCli(['ledger', 'list', '--json', '--ledger', ledger]);
  assert.ok((JSON.parse(json.stdout) as { events: Array<{ key: string }> }).events.some((e) => e.key === key));
});

test('an email of 10,000 characters is refused (RFC 5321), and one of a million does not flood the terminal', async () => {
  const dir = tmpDir();
  const lines = [
    JSON.stringify({ event_id: 'e1', email: 'a'.repeat(10_000) + '@example.com' }),
    JSON.stringify({ event_id: 'e2', email: 'b'.repeat(1_000_000) + '@example.com' }),
    JSON.stringify({ event_id: 'e3', email: `${'c'.repeat(65)}@example.com` }),
    JSON.stringify({ event_id: 'e4', email: 'ok@example.com' }),
  ];
  const input = join(dir, 'in.jsonl');
  writeFileSync(input, lines.join('\n') + '\n');
  const r = await runCli(['push', input, '--dry-run', '--json', '--ledger', join(dir, 'l.db')]);
  assert.equal(r.code, 0, r.stderr);
  const doc = jsonReport(r);
  assert.deepEqual([doc.counts.new, doc.counts.invalid], [1, 3]);
  assert.ok(r.stdout.length < 20_000, `--json is ${r.stdout.length} bytes`);
  const human = await runCli(['push', input, '--dry-run', '--ledger', join(dir, 'l.db')]);
  assert.ok(human.stdout.length < 5_000, `the summary is ${human.stdout.length} bytes`);
  assert.match(human.stdout, /longer than 254 characters \(RFC 5321\)/);
  assert.match(human.stdout, /more than 64 characters before the @ \(RFC 5321\)/);
});

test('a key with control characters read back from a ledger written by an earlier build is escaped too', () => {
  const dir = tmpDir();
  const path = join(dir, 'l.db');
  const l = openLedger(path)!;
  const run = l.startRun('push', {}, { exclusive: true });
  l.claimNew(
    [
      {
        key: `k${HOSTILE[2]}${HOSTILE[1]}`,
        keyKind: 'id',
        payloadHash: 'h',
        downstreamKey: 'd',
        leadJson: '{"email":"a@example.com"}',
        source: 's',
        line: 1,
      },
    ],
    run,
    'JSONL file x',
  );
  l.finishRun(run, 'done', {});
  l.close();
  return runCli(['ledger', 'list', '--ledger', path]).then((r) => {
    assert.equal(r.code, 0, r.stderr);
    assert.doesNotMatch(r.stdout, RAW_CONTROL);
    assert.match(r.stdout, /k\\x00\\x1b\]0;owned\\x07/);
  });
});

// A receiver that echoes what it was sent into its error answers: the request line (with the URL's query) and the
// Authorization header. Whatever a sink logs of an answer must still hold no key.
async function echoingReceiver(status: number): Promise<{ url: string; requests: string[]; close: () => void }> {
  const requests: string[] = [];
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      requests.push(req.url ?? '');
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ message: `rejected ${req.method} ${req.url} (auth: ${req.headers.authorization})` }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, requests, close: () => server.close() };
}

/** Every value of every cell of every table of a ledger, as text. */
function ledgerText(path: string): string {
  const db = new Database(path, { readonly: true });
  try {
    return (db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as Array<{ name: string }>)
      .map((t) => JSON.stringify(db.prepare(`SELECT * FROM "${t.name}"`).all()))
      .join('\n');
  } finally {
    db.close();
  }
}

test('keys in sink URLs (?token=, ?api_key=, ?hapikey=, ?access_token=, a fragment) and tokens echoed back by the CRM reach no output, report or ledger', async () => {
  const rx = await echoingReceiver(400);
  after(() => rx.close());
  const dir = tmpDir();
  const input = join(dir, 'in.jsonl');
  writeFileSync(input, '{"event_id":"e1","email":"ana@example.com"}\n{"event_id":"e2","email":"bia@example.com"}\n');
  const TOKEN = 'pat-na1-ECHOED-0000-token';
  const cases: Array<{ args: string[]; secrets: string[] }> = [
    {
      args: ['--sink', 'webhook', '--url', `${rx.url}/hooks/in?token=W1secret&api_key=W2%2Bsecret#W3secret`],
      secrets: ['W1secret', 'W2%2Bsecret', 'W2+secret', 'W3secret'],
    },
    { args: ['--sink', 'hubspot', '--hubspot-url', `${rx.url}/?hapikey=H1secret`], secrets: ['H1secret', TOKEN] },
    {
      args: ['--sink', 'hubspot', '--hubspot-url', `${rx.url}/?access_token=H2secret&x=1`],
      secrets: ['H2secret', TOKEN],
    },
  ];
  for (const [i, c] of cases.entries()) {
    const ledger = join(dir, `l${i}.db`);
    const report = join(dir, `r${i}.csv`);
    const r = await runCli(['push', input, ...c.args, '--ledger', ledger, '--report', report, '--json', '--verbose'], {
      env: { HUBSPOT_TOKEN: TOKEN },
    });
    assert.equal(r.code, 1, `${c.args.join(' ')}: a 400 fails the leads: ${r.stderr}`);
    const failures = jsonReport(r).failures;
    assert.ok(Object.keys(failures).length > 0, 'the failure is reported');
    const seen = {
      stdout: r.stdout,
      stderr: r.stderr,
      report: readFileSync(report, 'utf8'),
      ledger: ledgerText(ledger),
    };
    for (const s of c.secrets)
      for (const [where, text] of Object.entries(seen)) assert.ok(!text.includes(s), `${s} in ${where}: ${text}`);
  }
  assert.ok(
    rx.requests.some((u) => u.includes('token=W1secret')),
    'the webhook got its URL as given: only what is shown is masked',
  );

  // URLs refused before any send: the refusal names the flag, not the key.
  for (const url of [`http://user:U1secret@127.0.0.1:9/hook`, `htp//host/hook?token=U2secret`]) {
    const r = await runCli(['push', input, '--sink', 'webhook', '--url', url, '--ledger', join(dir, 'u.db')]);
    assert.equal(r.code, 2, r.stderr);
    assert.doesNotMatch(r.stderr + r.stdout, /U[12]secret/);
  }
});
