#!/usr/bin/env node
// Where a dry-run audit spends its time: runs scenario 1's audit (or 2's, --format csv) once under
// `node --cpu-prof`, then prints, for each thread (the deciding thread and every map worker), the share of its
// samples by module and the functions that cost most. `npm run bench:profile` builds first, then runs this.
// It is how README.md § Performance says what bounds the audit: rerun it to check that, or after a change.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Data } from './lib/data.mjs';

const benchDir = path.dirname(fileURLToPath(import.meta.url));
const root = path.dirname(benchDir);
const cli = path.join(root, 'bin', 'leadledger.js');

const HELP = `usage: npm run bench:profile -- [--events N] [--format jsonl|csv] [--push-jsonl] [--seed S] [--top K] [--keep]

  --events N     events in the audited file; the ledger holds 40% of that many ids (default 1000000)
  --format F     jsonl (scenario 1, default) or csv (scenario 2)
  --push-jsonl   profile scenario 10 instead: a real push of the JSONL events to the JSONL sink (--output a temp
                 file) with a fresh SQLite ledger; lists the top 15 functions (--top) across all threads too
  --seed S       generator seed (default 42)
  --top K        functions listed per thread (default 8)
  --keep         keep the .cpuprofile files (open them in Chrome DevTools) and print where they are`;

const o = { events: 1_000_000, format: 'jsonl', seed: 42, top: null, keep: false, push: false };
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; i++) {
  const a = argv[i];
  const next = () => argv[++i];
  if (a === '--events') o.events = Number(next());
  else if (a === '--format') o.format = next();
  else if (a === '--seed') o.seed = Number(next());
  else if (a === '--top') o.top = Number(next());
  else if (a === '--keep') o.keep = true;
  else if (a === '--push-jsonl') o.push = true;
  else {
    console.error(a === '-h' || a === '--help' ? HELP : `unknown option ${a}\n\n${HELP}`);
    process.exit(a === '-h' || a === '--help' ? 0 : 2);
  }
}
o.top ??= o.push ? 15 : 8;
if (o.push) o.format = 'jsonl';
if (!Number.isInteger(o.events) || o.events < 10 || !['jsonl', 'csv'].includes(o.format)) {
  console.error(HELP);
  process.exit(2);
}

const log = (s) => console.error(s);
const data = new Data({
  dir: path.join(benchDir, '.data'),
  generator: path.join(benchDir, 'gen-events.mjs'),
  seed: o.seed,
  log,
});
const k = Math.floor(o.events * 0.4);
const file = await data.events(o.events, o.format);
const profDir = mkdtempSync(path.join(tmpdir(), 'leadledger-profile-'));
let pushArgs;
if (o.push) {
  // Scenario 10: a fresh ledger, the sink's output in the temp directory (removed with it).
  const ledger = path.join(profDir, 'ledger.db');
  pushArgs = [file, '--sink', 'jsonl', '--output', path.join(profDir, 'out.jsonl'), '--ledger', ledger];
  log(`profiling: leadledger push ${path.basename(file)} --sink jsonl, fresh SQLite ledger …`);
} else {
  const ids = await data.ledgerIds(o.events, k);
  const db = await data.ledgerDb(ids.file, k, cli);
  const ledger = data.ledgerCopy(db);
  pushArgs = [file, '--dry-run', '--ledger', ledger];
  log(`profiling: leadledger push ${path.basename(file)} --dry-run (ledger of ${k.toLocaleString('en-US')} ids) …`);
}
await data.warm(file);
const t0 = Date.now();
const run = spawnSync(
  process.execPath,
  ['--cpu-prof', `--cpu-prof-dir=${profDir}`, cli, 'push', ...pushArgs, '--json', '--quiet'],
  { encoding: 'utf8', maxBuffer: 1 << 26 },
);
const wall = (Date.now() - t0) / 1000;
if (run.status !== 0) {
  console.error(`leadledger exited ${run.status}: ${run.stderr}`);
  process.exit(1);
}
const counts = JSON.parse(run.stdout).counts;

// One profile per thread: CPU.<date>.<time>.<pid>.<thread id>.<seq>.cpuprofile; thread 0 is the main thread.
const files = readdirSync(profDir)
  .filter((f) => f.endsWith('.cpuprofile'))
  .sort((a, b) => threadOf(a) - threadOf(b));
console.log(
  `${o.format.toUpperCase()} ${o.push ? 'push to the JSONL sink' : 'dry-run'} of ${o.events.toLocaleString('en-US')} events: ${wall.toFixed(2)} s wall (profiling slows it a little); read ${counts.read.toLocaleString('en-US')}, new ${counts.new.toLocaleString('en-US')}`,
);
console.log(
  'Shares are of each thread\'s samples over the whole run; "idle" is time the thread waited (for input, for the other threads, or for a core).\n',
);
const all = { mod: new Map(), fn: new Map(), total: 0 };
for (const f of files) {
  const t = threadOf(f);
  const p = JSON.parse(readFileSync(path.join(profDir, f), 'utf8'));
  const { byModule, byFunction, total } = summarize(p);
  all.total += total;
  for (const [m, v] of byModule) all.mod.set(m, (all.mod.get(m) ?? 0) + v);
  for (const [fn, v] of byFunction) all.fn.set(fn, (all.fn.get(fn) ?? 0) + v);
  const pct = (v) => `${((100 * v) / total).toFixed(0).padStart(3)}%`;
  console.log(
    `${t === 0 ? `main thread${o.push ? '' : ' (reads, decides, reports)'}` : o.push ? `worker thread ${t}` : `map worker ${t} (parses, maps, looks up)`}: ${(total / 1e6).toFixed(2)} s sampled`,
  );
  console.log(
    '  by module:   ' +
      byModule
        .slice(0, 9)
        .map(([m, v]) => `${m} ${pct(v).trim()}`)
        .join(', '),
  );
  for (const [fn, v] of byFunction.slice(0, o.top)) console.log(`  ${pct(v)}  ${fn}`);
  console.log('');
}
{
  const sorted = (m) => [...m].sort((a, b) => b[1] - a[1]);
  const pct = (v) => `${((100 * v) / all.total).toFixed(1).padStart(5)}%`;
  console.log(
    `all ${files.length} thread${files.length === 1 ? '' : 's'} together: ${(all.total / 1e6).toFixed(2)} s sampled (idle included), self time`,
  );
  console.log(
    '  by module:   ' +
      sorted(all.mod)
        .slice(0, 9)
        .map(([m, v]) => `${m} ${pct(v).trim()}`)
        .join(', '),
  );
  // Idle is a thread waiting, not a function: said once, then the top functions without it.
  const idle = all.fn.get('(idle) idle') ?? 0;
  console.log(`  idle ${pct(idle).trim()} (${(idle / 1e6).toFixed(2)} s); the top ${o.top} functions besides:`);
  for (const [fn, v] of sorted(all.fn)
    .filter(([f]) => f !== '(idle) idle')
    .slice(0, o.top))
    console.log(`  ${pct(v)}  ${(v / 1e6).toFixed(2).padStart(6)} s  ${fn}`);
  console.log('');
}
if (o.keep) console.log(`profiles kept in ${profDir}`);
else rmSync(profDir, { recursive: true, force: true });

function threadOf(name) {
  const parts = name.split('.');
  return Number(parts[parts.length - 3]);
}

// Self time per module (dist/<dir>/<file>, a package, node internals, or V8's own entries) and per function.
function summarize(p) {
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const mod = new Map();
  const fn = new Map();
  let total = 0;
  p.samples.forEach((id, i) => {
    const dt = p.timeDeltas[i] ?? 0;
    total += dt;
    const { functionName, url, lineNumber } = byId.get(id).callFrame;
    const m = moduleOf(url, functionName);
    mod.set(m, (mod.get(m) ?? 0) + dt);
    const name = `${functionName || '(anonymous)'} ${m}${url ? `:${lineNumber + 1}` : ''}`;
    fn.set(name, (fn.get(name) ?? 0) + dt);
  });
  const sorted = (m) => [...m].sort((a, b) => b[1] - a[1]);
  return { byModule: sorted(mod), byFunction: sorted(fn), total };
}

function moduleOf(url, functionName) {
  if (!url) return /^\(.*\)$/.test(functionName) ? functionName.slice(1, -1) : 'native';
  if (url.startsWith('node:')) return 'node';
  const nm = url.lastIndexOf('/node_modules/');
  if (nm >= 0) return url.slice(nm + 14).split('/')[0];
  const dist = url.lastIndexOf('/dist/');
  return dist >= 0 ? url.slice(dist + 6).replace(/\.js$/, '') : path.basename(url);
}
