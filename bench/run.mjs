#!/usr/bin/env node
// leadledger benchmark harness (issue 5). `npm run bench` builds, then runs this.
// Scenarios, peers, flags and outputs: bench/README.md. Progress goes to stderr, the result table to stdout.
import { existsSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Data } from './lib/data.mjs';
import { killChildren, which } from './lib/measure.mjs';
import { scenario1, scenario2, scenario3, scenario4, scenario5, scenario6, scenario13 } from './lib/scenarios.mjs';
import { pgScenarios, scenario10, stopPg } from './lib/pg-scenarios.mjs';
import { pipedriveScenario, salesforceScenario, zohoScenario } from './lib/crm-scenarios.mjs';
import { serveScenarios } from './lib/serve-scenarios.mjs';
import { machineInfo, textTable, summaryLines, markdown } from './lib/report.mjs';

const benchDir = path.dirname(fileURLToPath(import.meta.url));
const root = path.dirname(benchDir);
const cli = path.join(root, 'bin', 'leadledger.js');

const HELP = `usage: npm run bench -- [options]      (or: node bench/run.mjs [options] after npm run build)

  --only 1,2,5         run only these scenarios (1 JSONL audit, 2 CSV audit, 3 push, 4 peak RSS 10M, 5 start-up,
                       6 push into a CRM that holds every person; opt-in, never run by default: 7 push 1M into
                       PostgreSQL with the SQLite ledger, 8 the same with the PostgreSQL ledger, 9 their bulk peer
                       psql \\copy + INSERT ... ON CONFLICT (7 and 8 run it too), 10 push 1M to the JSONL sink, 11 the
                       same 1M events without their ids: content keys, 12 the push of 10 with the PostgreSQL ledger,
                       13 push 20,000 conversions to the RD Station emulator at its scaled-up limit, 14 push 20,000
                       new people to the Pipedrive emulator at its scaled-up limits, 15 the same into a Pipedrive
                       account that holds every person, 16 scenario 13 into an RD account that holds every person,
                       17 the webhook receiver \`leadledger serve\` on the SQLite ledger, 18 the same on the PostgreSQL
                       ledger, 19 their peer, a plain node:http + better-sqlite3 handler (17 and 18 run it too),
                       20 push 20,000 new leads to the Zoho CRM emulator at its ceiling, 21 the same into a Zoho
                       account that holds every person, 22 push 20,000 new leads to the Salesforce emulator at its
                       ceiling, 23 the same into a Salesforce org that holds every person)
  --runs N             runs per tool in scenarios 1, 2, the tight-limit push and the 1M side of 4 (default 5)
  --events N           events in scenarios 1 and 2; the ledger holds 40% of that many ids (default 1000000)
  --skip-10m           skip the 10,000,000-event peak-RSS run of scenario 4 (it takes minutes)
  --big-events N       events in scenario 4's big run (default 10000000)
  --big-runs N         runs of scenario 4's big run (default 1)
  --push-events N      events pushed in scenario 3 (default 100000; about 100 s at the ceiling)
  --push-runs N        runs of scenario 3's main push (default 1)
  --push-concurrency N pass --concurrency N to the main push (default: leadledger's default)
  --populated-events N events of scenario 6, pushed into a sandbox holding all their people (default 50000)
  --tight-events N     events of the tight-limit push (default 2000)
  --shared-rps N       the second tight-limit push shares the quota with a client sending N req/s (default 4;
                       0 skips that variant)
  --startup-runs N     timed runs per command in scenario 5 (default 20)
  --pg-events N        events pushed in scenarios 7-12 (default 1000000)
  --pg-runs N          runs of each tool in scenarios 7-12 (default 1)
  --serve-events N     distinct events in each load of scenarios 17-19 (default 10000; ~20% more requests: retries)
  --serve-concurrency N  connections (requests in flight) of the loads of 17-19 (default 64)
  --serve-rate N       requests/s offered by the open-loop load of 17-19, the latency figure (default 2000)
  --serve-runs N       runs of each receiver in 17-19 (default 1)
  --serve-drain N      seconds serve's inbox may take to drain after the loads before it is counted (default 180)
  --seed S             generator seed (default 42)
  --data-dir DIR       where generated data is cached (default bench/.data)
  --no-write           don't write bench/results.json and bench/results.md
  -h, --help           this help`;

function parseArgs(argv) {
  const o = {
    only: new Set(['1', '2', '3', '4', '5', '6']),
    runs: 5,
    events: 1_000_000,
    skip10m: false,
    bigEvents: 10_000_000,
    bigRuns: 1,
    pushEvents: 100_000,
    pushRuns: 1,
    pushConcurrency: null,
    populatedEvents: 50_000,
    tightEvents: 2000,
    noiseRps: 4,
    startupRuns: 20,
    pgEvents: 1_000_000,
    pgRuns: 1,
    serveEvents: 10_000,
    serveConcurrency: 64,
    serveRate: 2000,
    serveRuns: 1,
    serveDrainS: 180,
    seed: 42,
    dataDir: path.join(benchDir, '.data'),
    write: true,
    argv: ['npm run bench --', ...argv].join(' ').replace(/ --$/, ''),
  };
  const num = (name, v, min = 1) => {
    const n = Number(String(v ?? '').replace(/_/g, ''));
    if (!Number.isInteger(n) || n < min) {
      console.error(`${name} needs an integer ≥ ${min}, got "${v}"`);
      process.exit(2);
    }
    return n;
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const [flag, inline] = a.includes('=') ? [a.slice(0, a.indexOf('=')), a.slice(a.indexOf('=') + 1)] : [a, undefined];
    const val = () => inline ?? argv[++i];
    switch (flag) {
      case '--only': {
        const s = String(val() ?? '')
          .split(',')
          .map((x) => x.trim())
          .filter(Boolean);
        if (!s.length || s.some((x) => !/^([1-9]|1[0-9]|2[0-3])$/.test(x))) {
          console.error('--only takes scenario numbers 1-23, e.g. --only 1,2,5');
          process.exit(2);
        }
        o.only = new Set(s);
        break;
      }
      case '--runs':
        o.runs = num(flag, val());
        break;
      case '--events':
        o.events = num(flag, val(), 10);
        break;
      case '--skip-10m':
        o.skip10m = true;
        break;
      case '--big-events':
        o.bigEvents = num(flag, val(), 10);
        break;
      case '--big-runs':
        o.bigRuns = num(flag, val());
        break;
      case '--push-events':
        o.pushEvents = num(flag, val(), 10);
        break;
      case '--push-runs':
        o.pushRuns = num(flag, val());
        break;
      case '--push-concurrency':
        o.pushConcurrency = num(flag, val());
        break;
      case '--populated-events':
        o.populatedEvents = num(flag, val(), 10);
        break;
      case '--tight-events':
        o.tightEvents = num(flag, val(), 10);
        break;
      case '--shared-rps': {
        const n = num(flag, val(), 0);
        o.noiseRps = n === 0 ? null : n;
        break;
      }
      case '--startup-runs':
        o.startupRuns = num(flag, val());
        break;
      case '--pg-events':
        o.pgEvents = num(flag, val(), 10);
        break;
      case '--pg-runs':
        o.pgRuns = num(flag, val());
        break;
      case '--serve-events':
        o.serveEvents = num(flag, val(), 10);
        break;
      case '--serve-concurrency':
        o.serveConcurrency = num(flag, val(), 2);
        break;
      case '--serve-rate':
        o.serveRate = num(flag, val());
        break;
      case '--serve-runs':
        o.serveRuns = num(flag, val());
        break;
      case '--serve-drain':
        o.serveDrainS = num(flag, val());
        break;
      case '--seed':
        o.seed = num(flag, val(), 0);
        break;
      case '--data-dir':
        o.dataDir = path.resolve(val());
        break;
      case '--no-write':
        o.write = false;
        break;
      case '-h':
      case '--help':
        console.log(HELP);
        process.exit(0);
        break;
      default:
        console.error(`unknown option ${a}\n\n${HELP}`);
        process.exit(2);
    }
  }
  if (o.bigEvents < o.events) {
    console.error('--big-events must be at least --events (the big file must contain the ledger ids)');
    process.exit(2);
  }
  return o;
}

const opts = parseArgs(process.argv.slice(2));
const log = (s) => process.stderr.write(`${s}\n`);
if (!existsSync(path.join(root, 'dist', 'cli', 'main.js'))) {
  console.error('dist/ is missing: run `npm run bench` (it builds first) or `npm run build`.');
  process.exit(2);
}

const mismatches = [];
const ctx = {
  opts,
  root,
  cli,
  benchDir,
  log,
  data: new Data({ dir: opts.dataDir, generator: path.join(benchDir, 'gen-events.mjs'), seed: opts.seed, log }),
  mismatch(msg) {
    mismatches.push(msg);
    log(`  !!! MISMATCH: ${msg}`);
  },
};

let interrupted = false;
for (const sig of ['SIGINT', 'SIGTERM']) {
  process.on(sig, () => {
    if (interrupted) process.exit(130);
    interrupted = true;
    log(`\n${sig}: stopping the processes the bench started …`);
    killChildren('SIGINT');
    setTimeout(() => process.exit(130), 1500).unref();
  });
}
process.on('exit', () => killChildren('SIGKILL'));

const missingTools = ['sqlite3', 'jq', 'mlr'].filter((c) => !which(c));
if (missingTools.length)
  log(
    `note: ${missingTools.join(', ')} not installed; their peer rows are skipped (Debian/Ubuntu: apt-get install -y sqlite3 jq miller)`,
  );
if (!which('hyperfine'))
  log('note: hyperfine not installed; scenario 5 times with spawn + hrtime (apt-get install -y hyperfine)');

const machine = machineInfo(root, cli);
log(
  `leadledger bench: ${machine.nproc} CPUs (${machine.cpu}), ${machine.ramGiB} GiB, Node ${machine.node}; scenarios ${[...opts.only].sort((a, b) => a - b).join(',')}, ${opts.runs} run(s) each`,
);

const rows = [];
const t0 = Date.now();
let rows1 = null;
let failure = null;
try {
  if (opts.only.has('1')) {
    log('\n== 1. dry-run audit, JSONL');
    rows1 = await scenario1(ctx);
    rows.push(...rows1);
  }
  if (opts.only.has('2')) {
    log('\n== 2. dry-run audit, CSV');
    rows.push(...(await scenario2(ctx)));
  }
  if (opts.only.has('3')) {
    log('\n== 3. push to the emulator');
    rows.push(...(await scenario3(ctx)));
  }
  if (opts.only.has('4')) {
    log('\n== 4. peak RSS');
    rows.push(...(await scenario4(ctx, rows1)));
  }
  if (opts.only.has('5')) {
    log('\n== 5. start-up');
    rows.push(...(await scenario5(ctx)));
  }
  if (opts.only.has('6')) {
    log('\n== 6. push into a CRM that holds every person');
    rows.push(...(await scenario6(ctx)));
  }
  const pgWhich = new Set(['7', '8', '9'].filter((x) => opts.only.has(x)));
  if (pgWhich.size) {
    log(
      `\n== ${[...pgWhich].join(', ')}. push into PostgreSQL (the peer, 9, always runs: it is 7's and 8's yardstick)`,
    );
    rows.push(...(await pgScenarios(ctx, pgWhich)));
    stopPg(ctx);
  }
  if (opts.only.has('10')) {
    log('\n== 10. push to the JSONL sink');
    rows.push(...(await scenario10(ctx)));
  }
  if (opts.only.has('11')) {
    log('\n== 11. push to the JSONL sink, events without ids');
    rows.push(...(await scenario10(ctx, { ids: false })));
  }
  if (opts.only.has('12')) {
    log('\n== 12. push to the JSONL sink, PostgreSQL ledger');
    rows.push(...(await scenario10(ctx, { ledgerKind: 'postgres' })));
  }
  if (opts.only.has('13')) {
    log('\n== 13. push to the RD Station emulator');
    rows.push(...(await scenario13(ctx)));
  }
  if (opts.only.has('14')) {
    log('\n== 14. push to the Pipedrive emulator');
    rows.push(...(await pipedriveScenario(ctx, { populated: false })));
  }
  if (opts.only.has('15')) {
    log('\n== 15. push to a Pipedrive account that holds every person');
    rows.push(...(await pipedriveScenario(ctx, { populated: true })));
  }
  if (opts.only.has('16')) {
    log('\n== 16. push to an RD Station account that holds every person');
    rows.push(...(await scenario13(ctx, { populated: true })));
  }
  const serveWhich = new Set(['17', '18', '19'].filter((x) => opts.only.has(x)));
  if (serveWhich.size) {
    log(
      `\n== ${[...serveWhich].join(', ')}. the webhook receiver (the peer, 19, always runs: it is 17's and 18's yardstick)`,
    );
    rows.push(...(await serveScenarios(ctx, serveWhich)));
  }
  if (opts.only.has('20')) {
    log('\n== 20. push to the Zoho CRM emulator');
    rows.push(...(await zohoScenario(ctx, { populated: false })));
  }
  if (opts.only.has('21')) {
    log('\n== 21. push to a Zoho CRM account that holds every person');
    rows.push(...(await zohoScenario(ctx, { populated: true })));
  }
  if (opts.only.has('22')) {
    log('\n== 22. push to the Salesforce emulator');
    rows.push(...(await salesforceScenario(ctx, { populated: false })));
  }
  if (opts.only.has('23')) {
    log('\n== 23. push to a Salesforce org that holds every person');
    rows.push(...(await salesforceScenario(ctx, { populated: true })));
  }
} catch (e) {
  failure = e;
  log(`\nbench aborted: ${e?.stack ?? e}`);
}
if (interrupted) process.exit(130);

const table = textTable(rows);
console.log(`\nleadledger bench — ${machine.date}`);
console.log(
  `machine: ${machine.nproc} CPUs (${machine.cpu}), ${machine.ramGiB} GiB RAM, Node ${machine.node}, leadledger ${machine.leadledger}${machine.commit ? ` at ${machine.commit}` : ''}`,
);
console.log(
  `peers: sqlite3 ${machine.sqlite3 ?? '—'}, ${machine.jq ?? 'jq —'}, ${machine.miller ?? 'mlr —'}; ll/peer = leadledger median ÷ peer median (below 1 = leadledger faster)`,
);
console.log(table);
console.log('\ntargets (issues 5, 15, 37):');
for (const l of summaryLines(rows)) console.log(l);
if (mismatches.length) {
  console.log('\n!!!!!!!! MISMATCH !!!!!!!! a tool counted a different number of new unique event ids than expected:');
  for (const m of mismatches) console.log(`  MISMATCH ${m}`);
} else if (rows.length)
  console.log('\ncounts: every tool agreed with the expected number of new unique event ids in every run.');
console.log(`\ntotal bench time ${((Date.now() - t0) / 1000).toFixed(0)} s`);

if (opts.write && rows.length) {
  const json = { machine, options: { ...opts, only: [...opts.only].sort((a, b) => a - b) }, mismatches, results: rows };
  writeFileSync(path.join(benchDir, 'results.json'), JSON.stringify(json, null, 2) + '\n');
  writeFileSync(path.join(benchDir, 'results.md'), markdown(rows, machine, opts, mismatches));
  console.log('wrote bench/results.json and bench/results.md');
}
process.exitCode = failure ? 2 : mismatches.length ? 1 : 0;
