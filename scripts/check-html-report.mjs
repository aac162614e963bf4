#!/usr/bin/env node
// The HTML audit page (--report audit.html) in a real headless browser: Debian's chromium (CHROMIUM names another).
// Not part of `npm test` (a user's machine may have no chromium); .ci/run installs chromium and runs this after it.
//
// It pushes a bundled fixture with --report to a temporary .html and --json, then:
// - opens the page with --dump-dom (the DOM after the page's script ran) and checks that the counts it shows, by
//   decision and by source, are the run's JSON counts, and that the table lists the records;
// - opens it with #q=... in the URL (the page's script pre-fills its search box from it) and checks that the table is
//   filtered: by decision, by an email;
// - pushes 20,000 generated records and checks that the table shows one page of them, not all;
// - takes a screenshot and checks that it is a PNG of the window's size, and not blank.
// Needs a build (npm run build): it runs bin/leadledger.js as users do.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { inflateSync } from 'node:zlib';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const BIN = path.join(ROOT, 'bin', 'leadledger.js');
const CHROMIUM = process.env.CHROMIUM || 'chromium';
const WIDTH = 1280;
const HEIGHT = 2000;
const dir = mkdtempSync(path.join(tmpdir(), 'leadledger-html-check-'));
process.on('exit', () => rmSync(dir, { recursive: true, force: true }));

let failures = 0;
function check(ok, what) {
  console.log(`${ok ? 'ok' : 'FAILED'}  ${what}`);
  if (!ok) failures++;
}

function leadledger(args) {
  const r = spawnSync(process.execPath, [BIN, ...args], { cwd: dir, encoding: 'utf8', maxBuffer: 64 << 20 });
  if (r.status === 2 || r.status === null) throw new Error(`leadledger ${args.join(' ')}: ${r.stderr}`);
  return { code: r.status, run: JSON.parse(r.stdout) };
}

/** Chromium headless with `args` on the page at `url`; its stdout. */
function chromium(args, url) {
  const r = spawnSync(
    CHROMIUM,
    [
      '--headless',
      '--disable-gpu',
      '--no-sandbox',
      '--no-first-run',
      `--user-data-dir=${path.join(dir, 'profile')}`,
      `--window-size=${WIDTH},${HEIGHT}`,
      ...args,
      url,
    ],
    { encoding: 'utf8', maxBuffer: 256 << 20, timeout: 120_000 },
  );
  if (r.error?.code === 'ENOENT')
    throw new Error(
      `${CHROMIUM} not found: install it (Debian: apt-get install chromium) or name it in CHROMIUM; this check never skips`,
    );
  if (r.status !== 0) throw new Error(`${CHROMIUM} ${args.join(' ')} exited ${r.status}: ${r.stderr}`);
  return r.stdout;
}

const dom = (page, hash = '') => chromium(['--dump-dom'], pathToFileURL(page).href + hash);

/** The "By decision" counts of a DOM: decision (and read) → count. */
function domCounts(html) {
  const table = /<section class="card" id="counts">[\s\S]*?<\/section>/.exec(html)?.[0] ?? '';
  return Object.fromEntries(
    [...table.matchAll(/<tr data-decision="(\w+)"><td>.*?<\/td><td class="n" data-count="(\d+)">/g)].map((m) => [
      m[1],
      Number(m[2]),
    ]),
  );
}

/** The "By source" rows of a DOM: source (as the markup has it) → its read count. */
function domSources(html) {
  return Object.fromEntries(
    [...html.matchAll(/<tr data-source="([^"]*)"><td>[^<]*<\/td><td class="n" data-count="(\d+)">/g)].map((m) => [
      m[1],
      Number(m[2]),
    ]),
  );
}

/** The rows the table shows, as the decision of each and its text. */
function shownRows(html) {
  const body = /<tbody id="ll-tbody">([\s\S]*?)<\/tbody>/.exec(html)?.[1] ?? '';
  return [...body.matchAll(/<tr data-decision="(\w+)">([\s\S]*?)<\/tr>/g)].map((m) => ({
    decision: m[1],
    text: m[2].replace(/<[^>]*>/g, ' '),
  }));
}

const matchCount = (html) => Number(/id="ll-matches"[^>]*data-count="(\d+)"/.exec(html)?.[1] ?? NaN);
const escapeHtml = (s) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** Width, height, and whether the PNG has content: several colours, and a share of pixels that are not the page's. */
function pngContent(file) {
  const png = readFileSync(file);
  if (png.subarray(0, 8).toString('hex') !== '89504e470d0a1a0a') return { png: false };
  let off = 8;
  let width = 0;
  let height = 0;
  let colourType = 0;
  let depth = 0;
  const idat = [];
  while (off < png.length) {
    const len = png.readUInt32BE(off);
    const type = png.toString('latin1', off + 4, off + 8);
    const data = png.subarray(off + 8, off + 8 + len);
    if (type === 'IHDR') {
      width = data.readUInt32BE(0);
      height = data.readUInt32BE(4);
      depth = data[8];
      colourType = data[9];
    } else if (type === 'IDAT') idat.push(data);
    off += 12 + len;
  }
  const channels = { 0: 1, 2: 3, 4: 2, 6: 4 }[colourType];
  if (depth !== 8 || !channels) return { png: true, width, height, blank: undefined };
  // Undo the PNG row filters (none, sub, up, average, Paeth) to get the pixels.
  const raw = inflateSync(Buffer.concat(idat));
  const stride = width * channels;
  const px = Buffer.alloc(stride * height);
  for (let y = 0; y < height; y++) {
    const filter = raw[y * (stride + 1)];
    const src = raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1));
    const row = y * stride;
    for (let x = 0; x < stride; x++) {
      const a = x >= channels ? px[row + x - channels] : 0;
      const b = y > 0 ? px[row - stride + x] : 0;
      const c = x >= channels && y > 0 ? px[row - stride + x - channels] : 0;
      let p = 0;
      if (filter === 1) p = a;
      else if (filter === 2) p = b;
      else if (filter === 3) p = (a + b) >> 1;
      else if (filter === 4) {
        const pa = Math.abs(b - c);
        const pb = Math.abs(a - c);
        const pc = Math.abs(a + b - 2 * c);
        p = pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
      }
      px[row + x] = (src[x] + p) & 0xff;
    }
  }
  const counts = new Map();
  for (let i = 0; i < px.length; i += channels) {
    const k = px.readUIntBE(i, Math.min(3, channels));
    counts.set(k, (counts.get(k) ?? 0) + 1);
  }
  const background = Math.max(...counts.values());
  const pixels = width * height;
  return { png: true, width, height, colours: counts.size, inked: (pixels - background) / pixels };
}

// 1. A push of the bundled fixtures (a conflict, known leads, invalid and unreadable records among them).
const page = path.join(dir, 'audit.html');
const { run } = leadledger([
  'push',
  path.join(ROOT, 'fixtures', 'webhook-events.jsonl'),
  path.join(ROOT, 'fixtures', 'broken-events.jsonl'),
  '--sink',
  'jsonl',
  '--output',
  path.join(dir, 'out.jsonl'),
  '--ledger',
  path.join(dir, 'l.db'),
  '--report',
  page,
  '--json',
]);
const all = dom(page);
check(/<body[^>]*data-ready="1"/.test(all), "the page's script ran");
const counts = domCounts(all);
const keys = Object.keys(run.counts);
check(
  keys.length === Object.keys(counts).length && keys.every((k) => counts[k] === run.counts[k]),
  `the DOM's counts by decision are the run's: ${JSON.stringify(counts)}`,
);
const sources = domSources(all);
for (const [source, c] of Object.entries(run.perSource))
  check(sources[escapeHtml(source)] === c.read, `the DOM's count of ${source} is the run's: ${c.read}`);
check(matchCount(all) === run.counts.read, `the table holds every record read: ${matchCount(all)}`);
check(shownRows(all).length === Math.min(100, run.counts.read), 'the table shows the first page of them');
check(!/class="ll-rows"/.test(all), 'the JSON blocks left the page once read (each record is held once)');
check(/<svg [^>]*data-events="\d+"/.test(all), 'the timeline is drawn');

// 2. The search box, pre-filled from the URL: by decision, by an email.
for (const kind of ['conflict', 'invalid', 'known_lead']) {
  const d = dom(page, `#q=decision:${kind}`);
  const rows = shownRows(d);
  check(
    matchCount(d) === run.counts[kind] && rows.length === run.counts[kind] && rows.every((r) => r.decision === kind),
    `#q=decision:${kind} shows the ${run.counts[kind]} ${kind} records and only them`,
  );
}
const email = 'ana.souza@example.com.br';
const records = readFileSync(page, 'utf8')
  .match(/<script type="application\/json" class="ll-rows">[\s\S]*?<\/script>/g)
  .flatMap((b) => JSON.parse(b.replace(/^<script[^>]*>/, '').replace(/<\/script>$/, '')));
const withEmail = records.filter((r) => r[4].includes(email)).length;
const byEmail = dom(page, `#q=${encodeURIComponent(email)}`);
check(
  withEmail > 1 && matchCount(byEmail) === withEmail && shownRows(byEmail).every((r) => r.text.includes(email)),
  `#q=${email} shows the ${withEmail} records of that email and only them`,
);
const none = dom(page, '#q=no-such-thing-anywhere');
check(matchCount(none) === 0 && shownRows(none).length === 0, 'a search that matches nothing shows no row');

// 3. Many records: the table shows a page of them, not all.
const many = path.join(dir, 'many.jsonl');
const lines = [];
for (let i = 0; i < 20_000; i++)
  lines.push(
    JSON.stringify({
      event_id: `m${i}`,
      created_at: new Date(Date.UTC(2026, 9, 1) + i * 60_000).toISOString(),
      email: `p${i}@example.com`,
    }),
  );
writeFileSync(many, lines.join('\n') + '\n');
const manyPage = path.join(dir, 'many.html');
const big = leadledger(['push', many, '--dry-run', '--ledger', path.join(dir, 'm.db'), '--report', manyPage, '--json']);
const bigAll = dom(manyPage);
const bigDom = dom(manyPage, '#q=p1999');
check(
  matchCount(bigAll) === big.run.counts.read && big.run.counts.read === 20_000,
  'a page of 20,000 records holds them all',
);
check(
  matchCount(bigDom) === 11 && shownRows(bigDom).length === 11,
  '#q=p1999 finds p1999@ and p19990@ ... p19999@ among 20,000',
);
check(/page 1 of 200/.test(bigAll) && shownRows(bigAll).length === 100, 'shown 100 at a time');

// 4. A screenshot: a PNG of the window's size with something drawn on it.
const shot = path.join(dir, 'audit.png');
chromium([`--screenshot=${shot}`], pathToFileURL(page).href);
const png = pngContent(shot);
check(png.png && png.width === WIDTH && png.height === HEIGHT, `the screenshot is a ${WIDTH}x${HEIGHT} PNG`);
check(
  png.colours > 16 && png.inked > 0.02,
  `the screenshot is not blank (${png.colours} colours, ${((png.inked ?? 0) * 100).toFixed(1)}% not background)`,
);
if (process.env.LEADLEDGER_KEEP_SCREENSHOT) writeFileSync(process.env.LEADLEDGER_KEEP_SCREENSHOT, readFileSync(shot));

if (failures) {
  console.error(`${failures} check(s) of the HTML report failed`);
  process.exit(1);
}
console.log('the HTML report checks out in a headless browser');
