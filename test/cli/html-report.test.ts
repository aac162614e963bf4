// --report audit.html as a user meets it: push and replay write one page whose counts are the run's, with the
// input's text kept text and no secret in it (scripts/check-html-report.mjs opens such a page in a real browser).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { jsonReport, runCli, type JsonReport } from '../helpers/cli.js';
import { tmpDir } from '../helpers/tmp.js';

const line = (o: Record<string, unknown>) => JSON.stringify(o) + '\n';

/** The decision counts the page shows (its "By decision" table), by decision, with `read`. */
function pageCounts(html: string): Record<string, number> {
  const table = /<section class="card" id="counts">[\s\S]*?<\/section>/.exec(html)?.[0] ?? '';
  return Object.fromEntries(
    [...table.matchAll(/<tr data-decision="(\w+)"><td>.*?<\/td><td class="n" data-count="(\d+)">/g)].map((m) => [
      m[1]!,
      Number(m[2]),
    ]),
  );
}

/** The records of the page's JSON blocks. */
function pageRecords(html: string): unknown[][] {
  return [...html.matchAll(/<script type="application\/json" class="ll-rows">([\s\S]*?)<\/script>/g)].flatMap(
    (m) => JSON.parse(m[1]!) as unknown[][],
  );
}

function assertCountsAreTheRun(html: string, run: JsonReport): void {
  assert.deepEqual(pageCounts(html), { ...run.counts });
  for (const [source, c] of Object.entries(run.perSource)) {
    const esc = source.replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`);
    assert.ok(html.includes(`<tr data-source="${esc}"><td>${esc}</td><td class="n" data-count="${c.read}">`), source);
  }
  assert.equal(pageRecords(html).length, run.counts.read, 'a record in the table for every record read');
}

test('push --report audit.html: the run’s counts, the conflict’s field diff, and an input’s <script> kept text', async () => {
  const dir = tmpDir();
  const input = join(dir, 'in<b>.jsonl');
  writeFileSync(
    input,
    line({ event_id: 'e1', created_at: '2026-10-01T12:00:00Z', email: 'ana@example.com', name: 'Ana' }) +
      line({
        event_id: 'e1',
        created_at: '2026-10-01T12:05:00Z',
        email: 'ana@example.com',
        name: '<img src=x onerror=alert(1)>',
      }) +
      line({
        event_id: "<script>alert('key')</script>",
        created_at: '2026-10-02T09:00:00Z',
        email: 'bia@example.com',
      }) +
      line({
        event_id: "<script>alert('key')</script>",
        created_at: '2026-10-02T09:00:00Z',
        email: 'bia@example.com',
      }) +
      line({ event_id: 'e4', email: '<script>alert(2)</script>@example.com', name: 'Eve' }),
  );
  const report = join(dir, 'audit.html');
  const r = await runCli([
    'push',
    input,
    '--sink',
    'jsonl',
    '--output',
    join(dir, 'out.jsonl'),
    '--ledger',
    join(dir, 'l.db'),
    '--report',
    report,
    '--json',
  ]);
  assert.equal(r.code, 6, r.stderr);
  const run = jsonReport(r);
  assert.equal(run.counts.conflict, 1);
  assert.equal(run.counts.invalid, 1);
  const html = readFileSync(report, 'utf8');
  assert.equal(statSync(report).mode & 0o777, 0o600, 'the page holds emails: 0600 as the other reports');
  assert.ok(html.startsWith('<!doctype html>') && html.trimEnd().endsWith('</html>'));
  assertCountsAreTheRun(html, run);

  // Nothing of the input is markup: three scripts, the page's own (the records, the meta block, the script).
  assert.equal(html.match(/<script/gi)?.length, 3);
  assert.ok(!html.includes('<img'));
  assert.ok(!html.includes('<b>'));
  assert.ok(html.includes('&#60;img src=x onerror=alert(1)&#62;'), 'the name shown as text in the diff');
  const diff = /<table class="diff">[\s\S]*?<\/table>/.exec(html)?.[0] ?? '';
  assert.match(
    diff,
    /<td>name<\/td><td class="old">Ana<\/td><td class="new">&#60;img src=x onerror=alert\(1\)&#62;<\/td>/,
  );
  const keys = pageRecords(html).map((rec) => rec[3]);
  assert.ok(keys.includes("<script>alert('key')</script>"), 'the key reads back whole in the table');
  assert.match(html, /<svg [^>]*data-events="4"/, 'the four events with a time on the timeline');
});

test('no secret of the sink reaches the page: a key in the URL, a token the CRM echoes back', async () => {
  const TOKEN = 'W1secret';
  // A receiver that refuses every lead, echoing the URL it was called with (the key in it) in its error.
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(400, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: `bad lead at ${req.url}` }));
    });
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  after(() => server.close());
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook?token=${TOKEN}`;
  const dir = tmpDir();
  const input = join(dir, 'in.jsonl');
  writeFileSync(
    input,
    line({ event_id: 'e1', email: 'ana@example.com' }) + line({ event_id: 'e2', email: 'bia@example.com' }),
  );
  const ledger = join(dir, 'l.db');
  const push = await runCli([
    'push',
    input,
    '--sink',
    'webhook',
    '--url',
    url,
    '--ledger',
    ledger,
    '--report',
    join(dir, 'p.html'),
    '--json',
  ]);
  assert.equal(push.code, 1, push.stderr);
  const page = readFileSync(join(dir, 'p.html'), 'utf8');
  assert.ok(Object.keys(jsonReport(push).failures).length > 0, 'the failure is in the run');
  assert.match(page, /<section class="card" id="delivery">[\s\S]*<h2>Failures<\/h2>/, 'and on the page');
  assert.ok(!page.includes(TOKEN), 'no key in the page');
  assertCountsAreTheRun(page, jsonReport(push));

  // replay writes the same page of its own run.
  const replay = await runCli([
    'replay',
    '--permanent',
    '--sink',
    'webhook',
    '--url',
    url,
    '--ledger',
    ledger,
    '--report',
    join(dir, 'r.html'),
    '--json',
  ]);
  assert.equal(replay.code, 1, replay.stderr);
  const again = readFileSync(join(dir, 'r.html'), 'utf8');
  assert.match(again, /<h2>leadledger replay<\/h2>/);
  assert.ok(!again.includes(TOKEN));
  assertCountsAreTheRun(again, jsonReport(replay));
});

test('--report with another extension names the formats, .html among them', async () => {
  const dir = tmpDir();
  const input = join(dir, 'in.jsonl');
  writeFileSync(input, line({ event_id: 'e1', email: 'ana@example.com' }));
  const r = await runCli(['push', input, '--dry-run', '--ledger', join(dir, 'l.db'), '--report', join(dir, 'r.txt')]);
  assert.equal(r.code, 2, r.stderr);
  assert.match(r.stderr, /use a \.csv, \.jsonl or \.html file name/);
});
