// Bench scenarios 17-19 (issue 37): the live webhook receiver. `leadledger serve` on the SQLite ledger (17) and on
// the PostgreSQL ledger (18), and the handler teams write without it (19: bench/peers/plain-handler.mjs, node:http,
// a better-sqlite3 processed_events table, check → create in the CRM → mark), side by side, all delivering to the
// HubSpot API of one CRM emulator (`leadledger sandbox`, its own process, 0 ms latency, no effective rate limit).
// Opt-in: they run when --only names them; 17 and 18 are judged against 19, so either runs 19 too.
//
// A run of a receiver: the emulator reset, the receiver started on a fresh ledger (file, or the PostgreSQL schema
// dropped), then two loads from bench/lib/serve-load.mjs (a process of its own; its header says what each mode
// measures): a closed loop at --serve-concurrency connections (the acknowledged requests/s), and an open loop at
// --serve-rate requests/s offered (the latencies, from each request's due time: no coordinated omission). Each load
// is --serve-events distinct events, each its own person, with retries as a sender makes them: about 10% sent twice
// at once on two connections, 10% sent again later. Then the receiver's deliveries are let drain (serve's inbox,
// read from GET /metrics leadledger_serve_inbox_depth, polled until 0, at most --serve-drain seconds; the peer
// delivers before it answers), the receiver is stopped with SIGTERM, and the emulator is counted:
// - persons per email, against the events acknowledged (any 2xx to any of its requests);
// - doubles: a second create of one event. HubSpot's contacts are unique by email, so the emulator refuses a
//   second create of the same person with 409 rather than keep a second person: those 409s are the doubles (in a
//   CRM or an object without that key, each would be a second record), added to any person held twice;
// - missing: an event acknowledged whose person the CRM does not hold.
// leadledger's check: 0 doubles, 0 missing, a clean exit. The peer's doubles are counted, not judged.
// Beside them, the floor: bench/lib/null-receiver.mjs answers 200 at once (no ledger, no CRM): what the load generator
// and the machine give by themselves, the most any receiver can show here and the latency the machine adds.
import { spawn } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { measure, median, parseJsonDoc, track } from './measure.mjs';
import { startSandbox } from './emulator.mjs';
import { startPgCluster } from './postgres.mjs';
import { loadAvg } from './pg-scenarios.mjs';

const fmtInt = (n) => (n == null ? '—' : Number(n).toLocaleString('en-US'));
const ms = (x) => (x == null ? '—' : `${x.toFixed(1)} ms`);
const DB = 'bench';
const ENDPOINT = 'bench';

/** Whether this build has `leadledger serve` (it landed after the other scenarios). */
export function haveServe(root) {
  return existsSync(path.join(root, 'dist', 'commands', 'serve.js'));
}

/** Starts a receiver whose first stdout line is "…listening on <url>"; keeps draining its output. */
async function startReceiver(name, cmd, args, { cwd, env }) {
  const child = track(spawn(cmd, args, { cwd, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] }));
  let out = '';
  let err = '';
  let url = null;
  child.stderr.on('data', (d) => {
    err = (err + d).slice(-4000);
  });
  const listening = new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`${name} did not say where it listens within 30 s: ${err}`)),
      30_000,
    );
    child.stdout.on('data', (d) => {
      out = (out + d).slice(-4000);
      if (url) return;
      const nl = out.indexOf('\n');
      if (nl < 0) return;
      clearTimeout(timer);
      const m = /listening on (http:\/\/\S+)/.exec(out.slice(0, nl));
      if (m) resolve((url = m[1].replace(/\/$/, '')));
      else reject(new Error(`${name}'s first line is not "listening on <url>": ${out.slice(0, nl)}`));
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`${name} exited (${code ?? signal}) before listening: ${err}`));
    });
  });
  await listening;
  return {
    url,
    stderrTail: () => err.trim(),
    /** SIGTERM, as a service manager stops it; resolves { code, signal, stopS } (SIGKILL after 60 s). */
    async stop() {
      if (child.exitCode !== null) return { code: child.exitCode, signal: null, stopS: 0 };
      const t = performance.now();
      const exited = new Promise((r) => child.once('exit', (code, signal) => r({ code, signal })));
      child.kill('SIGTERM');
      const killer = setTimeout(() => child.kill('SIGKILL'), 60_000);
      const r = await exited;
      clearTimeout(killer);
      return { ...r, stopS: (performance.now() - t) / 1000 };
    },
  };
}

/** One load from serve-load.mjs, in a process of its own; resolves its JSON document. */
async function load(ctx, url, args) {
  const script = path.join(ctx.benchDir, 'lib', 'serve-load.mjs');
  const m = await measure(process.execPath, [script, '--url', url, ...args], { tmpDir: ctx.data.work, cwd: ctx.root });
  const doc = parseJsonDoc(m.stdout);
  if (m.code !== 0 || !doc)
    throw new Error(`serve-load ${args.join(' ')}: exit ${m.code}: ${m.stderrTail.slice(-500)}`);
  return doc;
}

/** A gauge of GET /metrics (Prometheus text), summed over its labels; null when absent or unreachable. */
async function gauge(url, name) {
  try {
    const text = await (await fetch(`${url}/metrics`)).text();
    let sum = null;
    for (const m of text.matchAll(new RegExp(`^${name}(?:\\{[^}]*\\})?\\s+(\\S+)\\s*$`, 'gm')))
      sum = (sum ?? 0) + Number(m[1]);
    return sum;
  } catch {
    return null;
  }
}

/** Waits until serve's inbox is empty (and nothing in doubt); resolves { drainS, depth }. */
async function drain(url, timeoutS) {
  const t = performance.now();
  let depth;
  for (;;) {
    depth = await gauge(url, 'leadledger_serve_inbox_depth');
    const inDoubt = await gauge(url, 'leadledger_serve_in_doubt');
    if (depth === 0 && !inDoubt) break;
    if (depth === null) break; // no metric: counted as it is
    if (performance.now() - t > timeoutS * 1000) break;
    await delay(100);
  }
  return { drainS: (performance.now() - t) / 1000, depth };
}

/** The emulator's persons against the events acknowledged. */
async function countCrm(sandbox, ackedIds) {
  const contacts = await (await fetch(`${sandbox.url}/__admin/contacts`)).json();
  const stats = await sandbox.stats();
  const perEmail = new Map();
  for (const c of contacts) {
    const e = String(c.properties?.email ?? '').toLowerCase();
    perEmail.set(e, (perEmail.get(e) ?? 0) + 1);
  }
  const acked = new Set(ackedIds);
  let missing = 0;
  for (const id of acked) if (!perEmail.has(`${id}@bench.example`)) missing++;
  let unacked = 0,
    heldTwice = 0;
  for (const [e, n] of perEmail) {
    if (!acked.has(e.replace(/@bench\.example$/, ''))) unacked++;
    heldTwice += n - 1;
  }
  const refused409 = stats.byStatus?.['409'] ?? 0;
  return {
    persons: contacts.length,
    acked: acked.size,
    missing,
    unacked,
    heldTwice,
    refused409,
    doubles: heldTwice + refused409,
    crmRequests: stats.requests,
  };
}

/** One run of one receiver: start, closed-loop load, open-loop load, drain, SIGTERM, count. */
async function oneRun(ctx, s, tool, r) {
  await s.sandbox.reset();
  const o = ctx.opts;
  const env = { HUBSPOT_TOKEN: 'bench-token', ...(tool.env ?? {}) };
  tool.before?.();
  const loadAtStart = loadAvg();
  const rcv = await startReceiver(tool.name, process.execPath, tool.args(), { cwd: ctx.root, env });
  const hook = `${rcv.url}/hooks/${ENDPOINT}`;
  let closed, open, drained, stopped;
  try {
    // The prefixes keep each load's events (and people) apart within a run.
    const common = ['--events', String(o.serveEvents), '--concurrency', String(o.serveConcurrency)];
    closed = await load(ctx, hook, [...common, '--prefix', `r${r}c`, '--seed', String(1 + r)]);
    open = await load(ctx, hook, [
      ...common,
      '--rate',
      String(o.serveRate),
      '--prefix',
      `r${r}o`,
      '--seed',
      String(101 + r),
    ]);
    drained = tool.serve ? await drain(rcv.url, o.serveDrainS) : { drainS: 0, depth: 0 };
  } finally {
    stopped = await rcv.stop();
  }
  const crm = tool.floor ? null : await countCrm(s.sandbox, [...closed.ackedIds, ...open.ackedIds]);
  const cleanExit = stopped.code === 0;
  const ok = tool.serve ? crm.doubles === 0 && crm.missing === 0 && cleanExit && drained.depth === 0 : null;
  const res = { closed, open, drained, stopped, crm, ok, load: loadAtStart, stderr: rcv.stderrTail() };
  delete closed.ackedIds;
  delete open.ackedIds;
  return res;
}

function logRun(ctx, tool, x) {
  const c = x.closed,
    o = x.open,
    k = x.crm;
  const tail = `SIGTERM → exit ${x.stopped.code ?? x.stopped.signal} in ${x.stopped.stopS.toFixed(1)} s (load ${x.load})`;
  ctx.log(
    `  [${tool.sc}]   closed loop: ${fmtInt(c.ok)} acknowledged of ${fmtInt(c.requests)} requests in ${c.wallS.toFixed(1)} s = ${fmtInt(Math.round(c.ackPerS))} req/s (p50 ${ms(c.p50)}, p99 ${ms(c.p99)}), non-2xx ${fmtInt(c.non2xx)} ${JSON.stringify(c.byStatus)}, errors ${c.errors}`,
  );
  ctx.log(
    `  [${tool.sc}]   open loop at ${fmtInt(o.rate)}/s: ${fmtInt(Math.round(o.ackPerS))} ack/s, p50 ${ms(o.p50)}, p99 ${ms(o.p99)}, max ${ms(o.max)} (from the send: p50 ${ms(o.sentP50)}, p99 ${ms(o.sentP99)}), non-2xx ${fmtInt(o.non2xx)}, errors ${o.errors}`,
  );
  if (!k) return ctx.log(`  [${tool.sc}]   ${tail}`);
  ctx.log(
    `  [${tool.sc}]   CRM: ${fmtInt(k.persons)} persons for ${fmtInt(k.acked)} events acknowledged; doubles ${fmtInt(k.doubles)} (409 ${fmtInt(k.refused409)}, held twice ${fmtInt(k.heldTwice)}), missing ${fmtInt(k.missing)}, persons of unacknowledged events ${fmtInt(k.unacked)}; ${fmtInt(k.crmRequests)} CRM requests; drained in ${x.drained.drainS.toFixed(1)} s (inbox ${x.drained.depth ?? '?'}); ${tail}${x.ok === false ? ' — CHECK FAILED' : ''}`,
  );
  if (x.ok === false)
    ctx.mismatch(
      `scenario ${tool.sc}, ${tool.name}: doubles ${k.doubles}, missing ${k.missing}, inbox ${x.drained.depth}, exit ${x.stopped.code ?? x.stopped.signal} ${x.stderr.slice(-300)}`,
    );
}

/** The emulator alone: HubSpot single creates from the same load generator, closed loop (its capacity here). */
async function emulatorCapacity(ctx, sandbox) {
  await sandbox.reset();
  const n = Math.min(5000, ctx.opts.serveEvents);
  const doc = await load(ctx, `${sandbox.url}/crm/v3/objects/contacts`, [
    '--events',
    String(n),
    '--concurrency',
    String(ctx.opts.serveConcurrency),
    '--shape',
    'hubspot',
    '--twin-rate',
    '0',
    '--repeat-rate',
    '0',
    '--prefix',
    'cap',
  ]);
  await sandbox.reset();
  ctx.log(
    `  emulator alone: ${fmtInt(doc.ok)} HubSpot single creates at ${ctx.opts.serveConcurrency} connections, ${fmtInt(Math.round(doc.ackPerS))}/s (p50 ${ms(doc.p50)}, p99 ${ms(doc.p99)})`,
  );
  return doc.ackPerS;
}

/** Scenarios 17, 18 and 19 (which: a Set of their numbers), interleaved over --serve-runs rounds. */
export async function serveScenarios(ctx, which) {
  const o = ctx.opts;
  const withServe = haveServe(ctx.root);
  const sel = new Set(which);
  if (sel.has('17') || sel.has('18')) sel.add('19');
  const sandbox = await startSandbox(ctx.cli, { latencyMs: 0, rateLimit: '1000000/1s' });
  const s = { sandbox, pg: null };
  const tools = [];
  const work = ctx.data.work;
  const sqliteFile = (name) => path.join(work, name);
  const removeDb = (f) => {
    for (const x of [f, `${f}-wal`, `${f}-shm`]) rmSync(x, { force: true });
  };
  const serveArgs = (ledger) => [
    ctx.cli,
    'serve',
    '--sink',
    'hubspot',
    '--hubspot-url',
    sandbox.url,
    '--ledger',
    ledger,
    '--port',
    '0',
    '--host',
    '127.0.0.1',
    '--endpoint',
    ENDPOINT,
  ];
  const skipped = [];
  try {
    const capacity = await emulatorCapacity(ctx, sandbox);
    if (sel.has('17')) {
      if (!withServe) skipped.push({ sc: '17', name: 'serve, SQLite ledger' });
      else {
        const f = sqliteFile('serve-ledger.db');
        tools.push({
          sc: '17',
          name: 'serve, SQLite ledger',
          command: `leadledger serve --sink hubspot --hubspot-url <emulator> --ledger <file> --port 0 --host 127.0.0.1 --endpoint ${ENDPOINT}`,
          serve: true,
          before: () => removeDb(f),
          args: () => serveArgs(f),
          runs: [],
        });
      }
    }
    if (sel.has('18')) {
      if (!withServe) skipped.push({ sc: '18', name: 'serve, PostgreSQL' });
      else {
        const cluster = await startPgCluster({ log: ctx.log });
        cluster.psql('postgres', `CREATE DATABASE ${DB}`);
        s.pg = cluster;
        tools.push({
          sc: '18',
          name: 'serve, PostgreSQL',
          command: `leadledger serve --sink hubspot --hubspot-url <emulator> --ledger postgres://…/${DB} (PGPASSWORD) --port 0 --host 127.0.0.1 --endpoint ${ENDPOINT}`,
          serve: true,
          env: cluster.env,
          before: () => {
            cluster.psql(DB, 'DROP SCHEMA IF EXISTS leadledger CASCADE');
            cluster.psql(DB, 'CHECKPOINT');
          },
          args: () => serveArgs(cluster.url(DB)),
          runs: [],
        });
      }
    }
    const peerDb = sqliteFile('plain-handler.db');
    tools.push({
      sc: '19',
      name: 'plain handler',
      command:
        'bench/peers/plain-handler.mjs: node:http, better-sqlite3 processed_events; SELECT id → HubSpot single create → INSERT id',
      serve: false,
      before: () => removeDb(peerDb),
      args: () => [
        path.join(ctx.benchDir, 'peers', 'plain-handler.mjs'),
        '--db',
        peerDb,
        '--crm-url',
        sandbox.url,
        '--port',
        '0',
      ],
      runs: [],
    });
    tools.push({
      sc: '19',
      name: 'null receiver (floor)',
      command: 'bench/lib/null-receiver.mjs: answers 200 at once; no ledger, no CRM',
      floor: true,
      args: () => [path.join(ctx.benchDir, 'lib', 'null-receiver.mjs'), '--port', '0'],
      runs: [],
    });
    for (let r = 0; r < o.serveRuns; r++)
      for (let k = 0; k < tools.length; k++) {
        const t = tools[(k + r) % tools.length];
        ctx.log(`  [${t.sc}] run ${r + 1}/${o.serveRuns}: ${t.name} …`);
        const x = await oneRun(ctx, s, t, r);
        t.runs.push(x);
        logRun(ctx, t, x);
      }
    removeDb(sqliteFile('serve-ledger.db'));
    removeDb(peerDb);
    return serveRows(ctx, tools, skipped, capacity);
  } finally {
    await sandbox.stop();
    s.pg?.stop();
  }
}

function serveRows(ctx, tools, skipped, capacity) {
  const o = ctx.opts;
  const shape = `${fmtInt(o.serveEvents)} events a load (~10% sent twice at once, ~10% again later), HubSpot emulator (0 ms)`;
  const titles = {
    ack: `Webhook receiver, closed loop at ${o.serveConcurrency} connections: acknowledged requests/s; ${shape}`,
    p99: `Webhook receiver, open loop at ${fmtInt(o.serveRate)} requests/s offered: p99 of the 2xx from each request's due time`,
    crm: 'Webhook receiver: doubles in the CRM (second creates of one event) after both loads, deliveries drained',
  };
  const peer = tools.find((t) => t.sc === '19' && !t.floor);
  const med = (t, f) => median(t.runs.map(f));
  const peerAck = peer ? med(peer, (x) => x.closed.ackPerS) : null;
  const peerP99 = peer ? med(peer, (x) => x.open.p99) : null;
  const rows = [];
  const add = (row) => rows.push({ correct: null, ratio: null, target: null, pass: null, ...row });
  for (const t of tools) {
    const sqlite = t.sc === '17';
    const allOk = t.serve ? t.runs.length > 0 && t.runs.every((x) => x.ok) : null;
    const ack = med(t, (x) => x.closed.ackPerS);
    const p99 = med(t, (x) => x.open.p99);
    const common = { tool: t.name, command: t.command, load: t.runs.map((x) => x.load) };
    add({
      ...common,
      scenario: t.sc,
      title: titles.ack,
      metric: 'acknowledged requests/s',
      unit: 'req/s',
      runs: t.runs.map((x) => Math.round(x.closed.ackPerS)),
      median: ack,
      correct: allOk,
      note: t.runs
        .map(
          (x) =>
            `${fmtInt(x.closed.ok)} of ${fmtInt(x.closed.requests)} requests acknowledged in ${x.closed.wallS.toFixed(1)} s, p50 ${ms(x.closed.p50)} p99 ${ms(x.closed.p99)} at saturation, non-2xx ${JSON.stringify(x.closed.byStatus)}, errors ${x.closed.errors}` +
            (t.serve || t.floor ? '' : `; the emulator alone took ${fmtInt(Math.round(capacity))} single creates/s`),
        )
        .join(' | ')
        .concat(t.serve && peerAck && ack ? `; ${(ack / peerAck).toFixed(2)}× the peer's rate` : ''),
      ...(t.serve
        ? {
            target: sqlite ? '≥ 2,000 req/s and ≥ the peer' : '≥ the peer',
            pass: ack == null || peerAck == null ? null : ack >= (sqlite ? Math.max(2000, peerAck) : peerAck) && allOk,
          }
        : {}),
    });
    add({
      ...common,
      scenario: t.sc,
      title: titles.p99,
      metric: 'p99 latency of the 2xx (open loop)',
      unit: 'ms',
      runs: t.runs.map((x) => x.open.p99),
      median: p99,
      correct: allOk,
      ratio: t.serve && p99 != null && peerP99 ? p99 / peerP99 : null,
      note: t.runs
        .map(
          (x) =>
            `${fmtInt(Math.round(x.open.ackPerS))} ack/s, p50 ${ms(x.open.p50)} p90 ${ms(x.open.p90)} max ${ms(x.open.max)} (from the send: p50 ${ms(x.open.sentP50)} p99 ${ms(x.open.sentP99)}), non-2xx ${JSON.stringify(x.open.byStatus)}`,
        )
        .join(' | '),
      ...(t.serve
        ? {
            target: sqlite ? '< 50 ms and ≤ the peer' : '≤ the peer',
            pass: p99 == null || peerP99 == null ? null : (sqlite ? p99 < 50 : true) && p99 <= peerP99 && allOk,
          }
        : {}),
    });
    if (t.floor) continue;
    add({
      ...common,
      scenario: t.sc,
      title: titles.crm,
      metric: 'doubles',
      unit: 'doubles',
      runs: t.runs.map((x) => x.crm.doubles),
      median: med(t, (x) => x.crm.doubles),
      correct: allOk,
      note: t.runs
        .map(
          (x) =>
            `${fmtInt(x.crm.persons)} persons for ${fmtInt(x.crm.acked)} events acknowledged, doubles ${fmtInt(x.crm.doubles)} (refused 409 ${fmtInt(x.crm.refused409)}, held twice ${fmtInt(x.crm.heldTwice)}), missing ${fmtInt(x.crm.missing)}, persons of unacknowledged events ${fmtInt(x.crm.unacked)}, ${fmtInt(x.crm.crmRequests)} CRM requests${t.serve ? `, drained ${x.drained.drainS.toFixed(1)} s after the loads` : ''}, SIGTERM → exit ${x.stopped.code ?? x.stopped.signal}`,
        )
        .join(' | '),
      ...(t.serve ? { target: '0 doubles, 0 missing', pass: allOk } : {}),
    });
  }
  for (const k of skipped)
    add({
      scenario: k.sc,
      title: titles.ack,
      tool: k.name,
      metric: 'acknowledged requests/s',
      unit: 'req/s',
      runs: [],
      median: null,
      skipped: 'skipped: this build has no `leadledger serve` (dist/commands/serve.js)',
    });
  // Side by side: each figure's rows together (17, 18, then the peer).
  const order = [titles.ack, titles.p99, titles.crm];
  return rows.sort((a, b) => order.indexOf(a.title) - order.indexOf(b.title) || a.scenario.localeCompare(b.scenario));
}
