// Bench scenarios 7-10 (issue 15): pushes of a million events into the PostgreSQL sink, with the SQLite ledger (7)
// and with the PostgreSQL ledger (8), next to a bulk peer without a ledger (9: psql \copy into a staging table, then
// one INSERT ... SELECT ... ON CONFLICT (email) DO NOTHING); and a push of a million events to the JSONL sink with
// the SQLite ledger (10), with the ledger's bytes per event. Opt-in: they run only when --only names them.
//
// Every run starts from nothing (not timed): the table dropped and created again, the ledger (file or schema) gone,
// a CHECKPOINT so that one run's dirty pages are not written during the next. The expected figure is known from the
// data: the distinct people (lower-cased emails) of the input. Checked after every run: the table holds exactly that
// many rows (a rerun-free push of new events creates one row per person), the ledger holds one settled event per
// person (known leads, a person's later events under new ids, are decided but not recorded), the push reports no
// failure and nothing in doubt; for 10, the JSONL file has one line per person.
import { existsSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { measure, median, parseJsonDoc } from './measure.mjs';
import { startPgCluster } from './postgres.mjs';

const fmtInt = (n) => (n == null ? '—' : Number(n).toLocaleString('en-US'));
const DB = 'bench';
// What `--create-table` creates (src/sinks/postgres/table.ts createTableSql): the table both leadledger and the peer fill.
const CREATE_TABLE = `CREATE TABLE leads (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  email text NOT NULL UNIQUE,
  name text, first_name text, last_name text, phone text, company text, source text,
  created_at timestamptz NOT NULL DEFAULT now()
)`;

/** The load average now (1, 5, 15 min), for the figures: the machine is shared. */
export function loadAvg() {
  try {
    return readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
  } catch {
    return null;
  }
}

/** The distinct people (lower-cased emails) of the n-event file: cached in bench/.data. */
function peopleCount(ctx, n, jsonl) {
  const meta = ctx.data.p(`people-${n}-s${ctx.opts.seed}.json`);
  if (existsSync(meta)) return JSON.parse(readFileSync(meta, 'utf8')).count;
  const r = spawnSync(
    'bash',
    ['-c', `set -o pipefail; grep -o '"email":"[^"]*"' "$1" | tr 'A-Z' 'a-z' | sort -u | wc -l`, 'bash', jsonl],
    { encoding: 'utf8', env: { ...process.env, LC_ALL: 'C' } },
  );
  if (r.status !== 0) throw new Error(`counting the people of ${jsonl}: ${r.stderr}`);
  const count = Number(r.stdout.trim());
  writeFileSync(meta, JSON.stringify({ count }) + '\n');
  return count;
}

async function pgSetup(ctx) {
  if (ctx.pg) return ctx.pg;
  const n = ctx.opts.pgEvents;
  const jsonl = await ctx.data.events(n, 'jsonl');
  const csv = await ctx.data.events(n, 'csv');
  const people = peopleCount(ctx, n, jsonl);
  ctx.log(`setup: ${fmtInt(n)} events, ${fmtInt(people)} distinct people (emails) expected in the table`);
  const cluster = await startPgCluster({ log: ctx.log });
  cluster.psql('postgres', `CREATE DATABASE ${DB}`);
  ctx.pg = { n, jsonl, csv, people, cluster, peer: null };
  return ctx.pg;
}

export function stopPg(ctx) {
  ctx.pg?.cluster.stop();
  // A later scenario that needs PostgreSQL (12) starts a cluster of its own.
  ctx.pg = null;
}

function freshTable(c) {
  c.psql(DB, `DROP TABLE IF EXISTS leads; DROP SCHEMA IF EXISTS leadledger CASCADE; ${CREATE_TABLE}`);
  c.psql(DB, 'CHECKPOINT');
}

const sqliteLedger = (ctx) => path.join(ctx.data.work, 'pg-push-ledger.db');
function removeSqlite(file) {
  for (const f of [file, `${file}-wal`, `${file}-shm`]) rmSync(f, { force: true });
}
function sqliteCount(file) {
  const r = spawnSync('sqlite3', [file, "SELECT count(*) FROM events WHERE status = 'sent'"], { encoding: 'utf8' });
  return r.status === 0 ? Number(r.stdout.trim()) : null;
}

/** One timed push into the table; the facts the checks need. */
async function llPgPush(ctx, s, ledger) {
  const c = s.cluster;
  freshTable(c);
  const sqlite = ledger === 'sqlite';
  const ledgerArg = sqlite ? sqliteLedger(ctx) : c.url(DB);
  if (sqlite) removeSqlite(ledgerArg);
  const args = [ctx.cli, 'push', s.jsonl, '--sink', 'postgres', '--pg-url', c.url(DB), '--existing', 'skip'];
  args.push('--ledger', ledgerArg, '--json', '--quiet');
  const load = loadAvg();
  const m = await measure(process.execPath, args, { tmpDir: ctx.data.work, cwd: ctx.root, env: c.env });
  const doc = parseJsonDoc(m.stdout);
  const rowsInTable = Number(c.psql(DB, 'SELECT count(*) FROM leads'));
  const ledgerRows = sqlite
    ? sqliteCount(ledgerArg)
    : Number(c.psql(DB, "SELECT count(*) FROM leadledger.events WHERE status = 'sent'"));
  const d = doc?.delivery ?? {};
  const ok =
    m.code === 0 &&
    d.sent === s.people &&
    (d.failed ?? 0) === 0 &&
    (d.inDoubt ?? 0) === 0 &&
    rowsInTable === s.people &&
    ledgerRows === s.people;
  return { m, load, doc, rowsInTable, ledgerRows, sent: d.sent ?? null, ok };
}

/** The peer: one psql session, \copy of the CSV into a staging table, one INSERT ... SELECT ... ON CONFLICT. */
async function peerPush(ctx, s) {
  const c = s.cluster;
  freshTable(c);
  const script = path.join(ctx.data.work, 'pg-peer.sql');
  writeFileSync(
    script,
    [
      'CREATE TEMP TABLE staging (event_id text, type text, created_at text, email text, name text, phone text, source text);',
      `\\copy staging FROM '${s.csv.replace(/'/g, "''")}' WITH (FORMAT csv, HEADER true)`,
      'INSERT INTO leads (email, name, phone, source, created_at)',
      '  SELECT lower(email), name, phone, source, created_at::timestamptz FROM staging',
      '  ON CONFLICT (email) DO NOTHING;',
      '',
    ].join('\n'),
  );
  const load = loadAvg();
  const m = await measure('psql', ['-X', '-v', 'ON_ERROR_STOP=1', '-d', DB, '-f', script], {
    tmpDir: ctx.data.work,
    cwd: ctx.root,
    env: c.env,
  });
  const inserted = Number(/INSERT 0 (\d+)/.exec(m.stdout)?.[1] ?? NaN);
  const rowsInTable = Number(c.psql(DB, 'SELECT count(*) FROM leads'));
  return { m, load, inserted, rowsInTable, ok: m.code === 0 && inserted === s.people && rowsInTable === s.people };
}

function pgRow(ctx, s, scenario, tool, command, runs, extra = {}) {
  const times = runs.map((r) => (r.m.code === 0 ? r.m.wallMs / 1000 : null));
  return {
    scenario,
    title: `Push ${fmtInt(s.n)} events (${fmtInt(s.people)} people) into a PostgreSQL table with a unique email index, --existing skip`,
    tool,
    command,
    metric: 'wall time',
    unit: 's',
    runs: times,
    median: median(times),
    peakRssMb: runs.map((r) => (r.m.rssKb ? r.m.rssKb / 1024 : null)),
    peakRssMbMedian: median(runs.map((r) => (r.m.rssKb ? r.m.rssKb / 1024 : null))),
    load: runs.map((r) => r.load),
    rowsInTable: runs.map((r) => r.rowsInTable),
    expected: s.people,
    correct: runs.length > 0 && runs.every((r) => r.ok),
    ratio: null,
    target: null,
    pass: null,
    ...extra,
  };
}

function logRun(ctx, sc, name, r) {
  ctx.log(
    `  [${sc}]   ${name}: ${(r.m.wallMs / 1000).toFixed(2)} s (load ${r.load}), rows in table ${fmtInt(r.rowsInTable)}${r.ledgerRows != null ? `, ledger ${fmtInt(r.ledgerRows)} sent` : ''}${r.ok ? '' : ` — CHECK FAILED (exit ${r.m.code}${r.m.code ? `: ${r.m.stderrTail.slice(-300)}` : ''})`}`,
  );
  if (!r.ok)
    ctx.mismatch(
      `scenario ${sc}, ${name}: rows in table ${fmtInt(r.rowsInTable)}, ledger ${fmtInt(r.ledgerRows)}, sent ${fmtInt(r.sent ?? r.inserted)}, expected ${fmtInt(ctx.pg.people)} each; exit ${r.m.code} ${r.m.stderrTail.slice(-300)}`,
    );
}

/**
 * Scenarios 7, 8 and 9 together: the tools selected run interleaved, `--pg-runs` rounds, the order rotating. 7 and
 * 8 are judged against 9's median, so selecting either runs 9 too.
 */
export async function pgScenarios(ctx, which) {
  const s = await pgSetup(ctx);
  await ctx.data.warm(s.jsonl);
  await ctx.data.warm(s.csv);
  const tools = [];
  if (which.has('7'))
    tools.push({ sc: '7', name: 'leadledger, SQLite ledger', run: () => llPgPush(ctx, s, 'sqlite'), runs: [] });
  if (which.has('8'))
    tools.push({ sc: '8', name: 'leadledger, PostgreSQL ledger', run: () => llPgPush(ctx, s, 'postgres'), runs: [] });
  tools.push({ sc: '9', name: 'psql \\copy + INSERT … ON CONFLICT', run: () => peerPush(ctx, s), runs: [] });
  for (let r = 0; r < ctx.opts.pgRuns; r++)
    for (let k = 0; k < tools.length; k++) {
      const t = tools[(k + r) % tools.length];
      ctx.log(`  [${t.sc}] run ${r + 1}/${ctx.opts.pgRuns}: ${t.name} …`);
      const res = await t.run();
      t.runs.push(res);
      logRun(ctx, t.sc, t.name, res);
    }
  removeSqlite(sqliteLedger(ctx));
  const peer = tools.find((t) => t.sc === '9');
  const peerRow = pgRow(
    ctx,
    s,
    '9',
    'psql \\copy + INSERT … ON CONFLICT',
    'psql -f: \\copy <csv> into a TEMP staging table; INSERT INTO leads SELECT lower(email), … ON CONFLICT (email) DO NOTHING (no ledger)',
    peer.runs,
  );
  const rows = [];
  for (const t of tools.filter((x) => x.sc !== '9')) {
    const factor = t.sc === '7' ? 1.0 : 2.0;
    const row = pgRow(
      ctx,
      s,
      t.sc,
      t.name,
      `leadledger push <jsonl> --sink postgres --pg-url postgres://…/${DB} --existing skip --ledger ${t.sc === '7' ? '<file>' : 'postgres://…'} (PGPASSWORD)`,
      t.runs,
      {
        ledgerRows: t.runs.map((r) => r.ledgerRows),
        target: `≤ ${factor.toFixed(1)}× the psql peer`,
      },
    );
    row.ratio = row.median != null && peerRow.median ? row.median / peerRow.median : null;
    row.pass = row.ratio == null ? null : row.ratio <= factor && row.correct;
    if (row.ratio == null && !row.correct) row.pass = false;
    rows.push(row);
  }
  rows.push(peerRow);
  return rows;
}

/**
 * The n-event file without its event ids: an app log or export that has none, so each event's key is its content key
 * (`c:` + the sha256 of its normalized lead). Retries are the same content, so the same key; the people are the same.
 */
async function withoutIds(ctx, n, jsonl) {
  return ctx.data.cached(`events-${n}-s${ctx.opts.seed}-noid.jsonl`, (partial) => {
    const r = spawnSync('bash', ['-c', `sed 's/"event_id":"[^"]*",//' "$1" > "$2"`, 'bash', jsonl, partial], {
      encoding: 'utf8',
    });
    if (r.status !== 0) throw new Error(`removing the ids of ${jsonl}: ${r.stderr}`);
  });
}

/** The PostgreSQL ledger's bytes on disk: its tables with their indexes and TOAST. */
function pgLedgerBytes(c) {
  return Number(
    c.psql(
      DB,
      "SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'leadledger' AND c.relkind = 'r'",
    ),
  );
}

/**
 * 10. Push to the JSONL sink with the SQLite ledger; then the ledger's bytes per event. 11: the same events without
 * their ids (content keys: random, where the generator's ids are sequential, which is what most real keys are not).
 * 12: the events of 10 with the PostgreSQL ledger, whose claims and settles are the ordinary ones (the JSONL sink
 * is not in the ledger's database): what a push from several hosts onto one ledger runs.
 */
export async function scenario10(ctx, { ids = true, ledgerKind = 'sqlite' } = {}) {
  const n = ctx.opts.pgEvents;
  const withIds = await ctx.data.events(n, 'jsonl');
  const people = peopleCount(ctx, n, withIds);
  const jsonl = ids ? withIds : await withoutIds(ctx, n, withIds);
  const onPg = ledgerKind === 'postgres';
  const sc = onPg ? '12' : ids ? '10' : '11';
  const c = onPg ? (await pgSetup(ctx)).cluster : null;
  await ctx.data.warm(jsonl);
  const out = path.join(ctx.data.work, 'jsonl-sink-out.jsonl');
  const ledger = onPg ? c.url(DB) : path.join(ctx.data.work, 'jsonl-push-ledger.db');
  const runs = [];
  for (let r = 0; r < ctx.opts.pgRuns; r++) {
    rmSync(out, { force: true });
    if (onPg) freshTable(c);
    else removeSqlite(ledger);
    const load = loadAvg();
    ctx.log(`  [${sc}] run ${r + 1}/${ctx.opts.pgRuns}: push ${fmtInt(n)} events to the JSONL sink …`);
    const m = await measure(
      process.execPath,
      [ctx.cli, 'push', jsonl, '--sink', 'jsonl', '--output', out, '--ledger', ledger, '--json', '--quiet'],
      { tmpDir: ctx.data.work, cwd: ctx.root, env: c?.env },
    );
    const doc = parseJsonDoc(m.stdout);
    const lines = existsSync(out)
      ? Number(spawnSync('wc', ['-l', out], { encoding: 'utf8' }).stdout.trim().split(/\s+/)[0])
      : null;
    const ledgerRows = onPg
      ? Number(c.psql(DB, "SELECT count(*) FROM leadledger.events WHERE status = 'sent'"))
      : sqliteCount(ledger);
    const size = (f) => (existsSync(f) ? statSync(f).size : 0);
    const bytes = onPg ? pgLedgerBytes(c) : size(ledger) + size(`${ledger}-wal`);
    const d = doc?.delivery ?? {};
    const ok =
      m.code === 0 &&
      d.sent === people &&
      (d.failed ?? 0) === 0 &&
      (d.inDoubt ?? 0) === 0 &&
      lines === people &&
      ledgerRows === people;
    const res = onPg
      ? { m, load, lines, ledgerRows, bytes, dbBytes: bytes, walBytes: 0, ok }
      : { m, load, lines, ledgerRows, bytes, dbBytes: size(ledger), walBytes: size(`${ledger}-wal`), ok };
    runs.push(res);
    ctx.log(
      `  [${sc}]   ${(m.wallMs / 1000).toFixed(2)} s (load ${load}), ${fmtInt(lines)} lines written, ledger ${fmtInt(ledgerRows)} sent, ${fmtInt(bytes)} bytes (${ledgerRows ? (bytes / ledgerRows).toFixed(0) : '?'} B/event)${ok ? '' : ` — CHECK FAILED (exit ${m.code}: ${m.stderrTail.slice(-300)})`}`,
    );
    if (!ok)
      ctx.mismatch(
        `scenario ${sc}, run ${r + 1}: sent ${fmtInt(d.sent)}, ${fmtInt(lines)} lines, ledger ${fmtInt(ledgerRows)}, expected ${fmtInt(people)} each; exit ${m.code} ${m.stderrTail.slice(-300)}`,
      );
  }
  // Half a gigabyte each at 1M events: not kept.
  rmSync(out, { force: true });
  if (onPg) stopPg(ctx);
  else removeSqlite(ledger);
  const times = runs.map((r) => (r.m.code === 0 ? r.m.wallMs / 1000 : null));
  const med = median(times);
  const last = runs[runs.length - 1];
  return [
    {
      scenario: sc,
      title: `Push ${fmtInt(n)} events (${fmtInt(people)} people) ${ids ? '' : 'without ids (content keys) '}to the JSONL sink, ${onPg ? 'PostgreSQL' : 'SQLite'} ledger`,
      tool: 'leadledger',
      command: `leadledger push <jsonl> --sink jsonl --output <file> --ledger ${onPg ? `postgres://…/${DB} (PGPASSWORD)` : '<file>'}`,
      metric: 'wall time',
      unit: 's',
      runs: times,
      median: med,
      peakRssMb: runs.map((r) => (r.m.rssKb ? r.m.rssKb / 1024 : null)),
      peakRssMbMedian: median(runs.map((r) => (r.m.rssKb ? r.m.rssKb / 1024 : null))),
      load: runs.map((r) => r.load),
      eventsPerS: med ? n / med : null,
      ledgerBytes: last?.bytes ?? null,
      ledgerDbBytes: last?.dbBytes ?? null,
      ledgerWalBytes: last?.walBytes ?? null,
      ledgerRows: runs.map((r) => r.ledgerRows),
      bytesPerEvent: last?.ledgerRows ? last.bytes / last.ledgerRows : null,
      expected: people,
      correct: runs.length > 0 && runs.every((r) => r.ok),
      ratio: null,
      // 11 and 12 have no target of their own: they show what random keys and the shared ledger cost.
      target: sc === '10' ? '≤ 10 s' : '',
      pass: sc !== '10' || med == null ? null : med <= 10 && runs.every((r) => r.ok),
    },
  ];
}
