// The HTML audit page without a browser: its structure, its escaping of untrusted text, its counts, and that it is
// written as the run goes (scripts/check-html-report.mjs opens it in a real browser).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import type { Decision } from '../../src/decide/types.js';
import { HTML_CSP, HTML_SCRIPT } from '../../src/report/html-assets.js';
import { escapeHtml, HtmlReport, reasonGroup, scriptJson } from '../../src/report/html-report.js';
import type { ReportRow } from '../../src/report/report-file.js';
import { emptyCounts, type RunReport } from '../../src/report/run-report.js';

const EVIL = `<script>alert("x")</script><img src=x onerror=alert(1)>&amp;'"\u2028<!--`;

function row(over: Partial<ReportRow> = {}): ReportRow {
  return {
    source: 'in.jsonl',
    line: 1,
    item: '',
    key: 'k1',
    email: 'ana@example.com',
    decision: 'new',
    reason: 'not in the ledger',
    result: '',
    crm_id: '',
    warnings: '',
    ...over,
  };
}

/** The page written from rows; `chunks` are the pieces as written. */
function page(rows: Array<[ReportRow, Decision?]>, run?: RunReport): { html: string; chunks: string[] } {
  const chunks: string[] = [];
  const h = new HtmlReport((t) => chunks.push(t));
  h.begin();
  for (const [r, d] of rows) h.add(r, d);
  h.finish(run);
  return { html: chunks.join(''), chunks };
}

/** The JSON blocks of records of a page, parsed. */
function recordBlocks(html: string): unknown[][] {
  return [...html.matchAll(/<script type="application\/json" class="ll-rows">([\s\S]*?)<\/script>/g)].flatMap(
    (m) => JSON.parse(m[1]!) as unknown[][],
  );
}

test('untrusted text stays text: no tag, script or comment of the input reaches the markup, and every value reads back', () => {
  const conflict: Decision = {
    kind: 'conflict',
    source: EVIL,
    line: 3,
    key: EVIL,
    reason: EVIL,
    fields: ['name', 'custom.note'],
    held: { email: 'a@b.c', name: EVIL, custom: { note: '</script>' } },
    event: {
      kind: 'event',
      source: EVIL,
      line: 3,
      key: EVIL,
      keyKind: 'id',
      payloadHash: 'h',
      lead: { email: 'a@b.c', name: `${EVIL}2`, custom: { note: '<b>' } },
      occurredAt: '2026-01-01T00:00:00Z',
    },
  };
  const evilRow = row({
    line: 3,
    source: EVIL,
    key: EVIL,
    email: EVIL,
    decision: 'conflict',
    reason: EVIL,
    result: EVIL,
    crm_id: EVIL,
    warnings: EVIL,
  });
  const { html } = page([[evilRow, conflict]], {
    ...run(),
    inputs: [EVIL],
    sink: EVIL,
    perSource: { [EVIL]: { ...emptyCounts(), read: 1, conflict: 1 } },
    failures: { [EVIL]: 1 },
  });
  // Only the page's own scripts: the records' block, the meta block and the script.
  assert.equal(html.match(/<script/gi)?.length, 3, html);
  assert.equal(html.match(/<\/script/gi)?.length, 3);
  assert.ok(!html.includes('<img'), 'no element from the input');
  assert.ok(!html.includes('<!--'), 'no comment opened by the input');
  assert.ok(!html.includes('<b>'));
  assert.ok(html.includes(escapeHtml(EVIL)), 'shown as text in the summary');
  // The conflict's field diff: both values, escaped.
  assert.ok(
    html.includes(`<td>name</td><td class="old">${escapeHtml(EVIL)}</td><td class="new">${escapeHtml(EVIL)}2</td>`),
  );
  assert.ok(
    html.includes(`<td>custom.note</td><td class="old">&#60;/script&#62;</td><td class="new">&#60;b&#62;</td>`),
  );
  const [r] = recordBlocks(html);
  assert.deepEqual(r!.slice(1, 10), [3, '', EVIL, EVIL, 3, EVIL, EVIL, EVIL, EVIL], 'the records read back whole');
});

test('the page loads nothing: a CSP of its own script and style only, and no URL but the SVG namespace', () => {
  const { html } = page([[row()]], run());
  const csp = /<meta http-equiv="Content-Security-Policy" content="([^"]*)">/.exec(html)?.[1];
  assert.ok(csp, 'a Content-Security-Policy');
  assert.equal(csp.replace(/&#39;/g, "'"), HTML_CSP);
  assert.match(HTML_CSP, /default-src 'none'/);
  // The script in the page is the one the policy allows (a hash): an edit that broke it would leave a dead table.
  const script = /<script>([\s\S]*?)<\/script>/.exec(html)![1]!;
  assert.equal(script, HTML_SCRIPT);
  assert.ok(HTML_CSP.includes(`'sha256-${createHash('sha256').update(script).digest('base64')}'`));
  const urls = html.match(/(?:https?:)?\/\/[a-z0-9.-]+/gi) ?? [];
  for (const u of urls) assert.equal(u, 'http://www.w3.org', 'no fetch: only the SVG namespace is named');
  assert.doesNotMatch(html, /\s(?:src|href)="(?!#)/, 'no src or href but in-page links');
});

test('the counts in the markup are the run’s, by decision and by source, and the records table lists every row', () => {
  const kinds = ['new', 'new', 'duplicate', 'invalid', 'conflict', 'new'] as const;
  const rows = kinds.map((k, i): [ReportRow] => [row({ decision: k, line: i + 1, source: i < 4 ? 'a.csv' : 'b.csv' })]);
  const r = run();
  r.counts = { ...emptyCounts(), read: 6, new: 3, duplicate: 1, invalid: 1, conflict: 1 };
  r.perSource = {
    'a.csv': { ...emptyCounts(), read: 4, new: 2, duplicate: 1, invalid: 1 },
    'b.csv': { ...emptyCounts(), read: 2, new: 1, conflict: 1 },
  };
  const { html } = page(rows, r);
  const counts = Object.fromEntries(
    [...html.matchAll(/<tr data-decision="(\w+)"><td>.*?<\/td><td class="n" data-count="(\d+)">/g)].map((m) => [
      m[1],
      Number(m[2]),
    ]),
  );
  assert.deepEqual(counts, { ...r.counts });
  assert.match(html, /<tr data-source="b.csv"><td>b.csv<\/td><td class="n" data-count="2">2<\/td>/);
  assert.match(
    html,
    /<td class="n" data-decision="conflict" data-count="1">1<\/td><td class="n" data-decision="known_lead"/,
  );
  assert.equal(recordBlocks(html).length, 6);
  assert.match(html, /<section class="card" id="conflicts" data-count="1">/);
});

test('the timeline is an inline SVG of the events over their event time, stacked by decision', () => {
  const at = (kind: Decision['kind'], t: string): [ReportRow, Decision] => [
    row({ decision: kind }),
    {
      kind,
      source: 'a',
      line: 1,
      reason: '',
      event: { kind: 'event', source: 'a', line: 1, key: 'k', keyKind: 'id', payloadHash: '', lead: {}, occurredAt: t },
    },
  ];
  const { html } = page(
    [
      at('new', '2026-01-01T00:00:00Z'),
      at('new', '2026-01-01T00:00:00Z'),
      at('duplicate', '2026-01-02T00:00:00Z'),
      at('new', '2026-01-03T00:00:00Z'),
      [row({ decision: 'invalid' })],
    ],
    run(),
  );
  const svg = /<svg[^>]*data-events="(\d+)"[\s\S]*?<\/svg>/.exec(html);
  assert.ok(svg, 'an SVG');
  assert.equal(svg[1], '4', 'the events with a time');
  assert.match(svg[0], /<title>2026-01-01T00:00:00.000Z – [^<]*: 2 events \(new 2\)<\/title>/);
  assert.match(svg[0], /: 1 events \(duplicate 1\)<\/title>/);
  assert.match(html, /1 records have no event time/);
});

test('reasons are grouped by what they say, not by the record they name, with records listed under each', () => {
  assert.equal(reasonGroup('same event as a.jsonl line 3'), reasonGroup('same event as b.jsonl line 9'));
  assert.equal(reasonGroup('same key as a.jsonl line 2 with different phone'), 'same key as … with different phone');
  assert.equal(reasonGroup("email: 'x@' is not a valid email address"), "email: '…' is not a valid email address");
  assert.equal(reasonGroup('already delivered (run 12)'), 'already delivered (run …)');
  const rows = [1, 2, 3].map((i): [ReportRow] => [
    row({ decision: 'duplicate_in_input', line: i + 1, key: `k${i}`, reason: `same event as a.jsonl line ${i}` }),
  ]);
  const { html } = page(rows, run());
  const group = /<details data-decision="duplicate_in_input" data-count="3">[\s\S]*?<\/details>/.exec(html)?.[0];
  assert.ok(group, html);
  assert.match(group, /same event as …/);
  assert.equal(group.match(/<li>/g)?.length, 3);
  assert.match(group, /<a href="#q=group:0">/);
});

test('written as the run goes: the records leave in blocks before the run ends, none holding the whole page', () => {
  const chunks: string[] = [];
  const h = new HtmlReport((t) => chunks.push(t));
  h.begin();
  for (let i = 0; i < 2500; i++) h.add(row({ line: i + 1, key: `k${i}` }));
  assert.equal(chunks.filter((c) => c.includes('class="ll-rows"')).length, 2, 'two full blocks out before finish');
  h.finish(run());
  assert.equal(recordBlocks(chunks.join('')).length, 2500);
  const longest = Math.max(...chunks.map((c) => c.length));
  assert.ok(longest < 200_000, `no piece holds many blocks: ${longest}`);
});

test('scriptJson cannot close its block or open a comment, and reads back as JSON', () => {
  const v = ['</script><!--', '\u2028\u2029', '&lt;'];
  const s = scriptJson(v);
  assert.doesNotMatch(s, /[<>&\u2028\u2029]/);
  assert.deepEqual(JSON.parse(s), v);
});

function run(): RunReport {
  return {
    command: 'push',
    dryRun: true,
    ledger: 'l.db',
    inputs: ['in.jsonl'],
    options: {},
    counts: { ...emptyCounts(), read: 1, new: 1 },
    perSource: { 'in.jsonl': { ...emptyCounts(), read: 1, new: 1 } },
    examples: {},
    readAs: [],
    unread: [],
    warnings: { records: 0, byReason: {}, examples: [] },
    startedAt: '2026-12-04T00:00:00.000Z',
    durationMs: 1,
    exitCode: 0,
  };
}
