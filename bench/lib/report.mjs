// Output: a plain-text table for the terminal, bench/results.json and bench/results.md.
import os from 'node:os';
import { readFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';

const sh = (cmd, args) => {
  const r = spawnSync(cmd, args, { encoding: 'utf8' });
  return r.status === 0 ? r.stdout.trim() : null;
};

export function machineInfo(root, cli) {
  let cpu = null;
  try {
    cpu = /model name\s*:\s*(.+)/.exec(readFileSync('/proc/cpuinfo', 'utf8'))?.[1]?.trim() ?? null;
  } catch {
    /* not Linux */
  }
  const nproc = Number(sh('nproc', [])) || os.availableParallelism?.() || os.cpus().length;
  const firstLine = (s) => (s ? s.split('\n')[0] : null);
  const gitHead = sh('git', ['-C', root, 'rev-parse', '--short', 'HEAD']);
  const dirty = sh('git', ['-C', root, 'status', '--porcelain', '--untracked-files=no']);
  return {
    date: new Date().toISOString(),
    nproc,
    cpu: cpu ?? os.cpus()[0]?.model ?? null,
    ramGiB: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
    os: `${os.type()} ${os.release()} ${os.arch()}`,
    node: process.version,
    leadledger: firstLine(sh(process.execPath, [cli, '--version'])),
    commit: gitHead ? `${gitHead}${dirty ? ' (with uncommitted changes)' : ''}` : null,
    sqlite3: firstLine(sh('sqlite3', ['--version']))?.split(' ')[0] ?? null,
    jq: firstLine(sh('jq', ['--version'])),
    miller: firstLine(sh('mlr', ['--version'])),
    hyperfine: firstLine(sh('hyperfine', ['--version'])),
  };
}

export function fmtValue(v, unit) {
  if (v == null || !Number.isFinite(v)) return '—';
  if (unit === 's') return `${v.toFixed(2)} s`;
  if (unit === 'ms') return `${v.toFixed(1)} ms`;
  if (unit === 'MB') return `${v.toFixed(0)} MB`;
  if (unit === '%') return `${v.toFixed(1)} %`;
  return `${Math.round(v)}${unit ? ` ${unit}` : ''}`;
}
const fmtRuns = (row) => {
  const v = row.runs ?? [];
  if (v.length > 8) {
    const ok = v.filter((x) => x != null);
    return `${v.length} runs, ${Math.min(...ok).toFixed(0)}–${Math.max(...ok).toFixed(0)}`;
  }
  return fmtRunList(row);
};
const fmtRunList = (row) =>
  row.runs?.length
    ? row.runs
        .map((v) =>
          v == null
            ? 'ERR'
            : row.unit === 's'
              ? v.toFixed(2)
              : row.unit === 'ms'
                ? v.toFixed(0)
                : row.unit === '%'
                  ? v.toFixed(1)
                  : row.unit === 'MB'
                    ? v.toFixed(0)
                    : String(v),
        )
        .join(' ')
    : '';
const fmtRatio = (r) => (r == null ? '' : `${r.toFixed(2)}×`);
const verdict = (row) => (row.pass === true ? 'PASS' : row.pass === false ? 'MISS' : row.target ? 'n/a' : '');
const check = (row) => (row.skipped ? '' : row.correct === false ? 'MISMATCH' : row.correct === true ? 'ok' : '');

function extra(row) {
  const bits = [];
  if (row.peakRssMbMedian != null) bits.push(`peak RSS ${row.peakRssMbMedian.toFixed(0)} MB`);
  if (row.counts?.length && row.counts.every((c) => c === row.counts[0]))
    bits.push(`count ${Number(row.counts[0]).toLocaleString('en-US')}`);
  if (row.medianLeadsPerS != null && row.settled)
    bits.push(
      `${row.medianLeadsPerS.toFixed(0)} settled/s of ${row.ceilingLeadsPerS} ceiling; ${row.settled.join('/')} settled (created ${row.created.join('/')}) in ${row.wallS.map((s) => s.toFixed(1)).join('/')} s; requests ${row.requests.join('/')}; 429s ${row.rateLimited.join('/')}`,
    );
  else if (row.medianLeadsPerS != null)
    bits.push(
      `${row.medianLeadsPerS.toFixed(0)} leads/s of ${row.ceilingLeadsPerS} ceiling; ${row.delivered.join('/')} delivered in ${row.wallS.map((s) => s.toFixed(1)).join('/')} s (burst-aware least time ${row.idealS.map((s) => s.toFixed(0)).join('/')} s); requests ${row.requests.join('/')}; 429s ${row.rateLimited.join('/')}`,
    );
  if (row.emulator429)
    bits.push(
      `sent ${row.sent.join('/')} of new ${row.expectedNew.join('/')}, failed ${row.failed.join('/')}, inDoubt ${row.inDoubt.join('/')}, retries ${row.retries.join('/')}, emulator 429s ${row.emulator429.join('/')}${row.noise ? ` (the other client: ${row.noise.map((x) => `${x?.requests ?? '?'} requests, ${x?.rateLimited ?? '?'} refused`).join('/')})` : ''}`,
    );
  if (row.unit === 'MB' && row.wallS != null)
    bits.push(
      `time ${[]
        .concat(row.wallS)
        .map((s) => (s == null ? '?' : `${s.toFixed(1)} s`))
        .join('/')}`,
    );
  if (row.rowsInTable)
    bits.push(
      `rows in table ${row.rowsInTable.map((x) => Number(x).toLocaleString('en-US')).join('/')} of ${Number(row.expected).toLocaleString('en-US')} people`,
    );
  if (row.ledgerRows)
    bits.push(
      `ledger ${row.ledgerRows.map((x) => (x == null ? '?' : x.toLocaleString('en-US'))).join('/')} events sent`,
    );
  if (row.eventsPerS != null) bits.push(`${Math.round(row.eventsPerS).toLocaleString('en-US')} events/s`);
  if (row.bytesPerEvent != null)
    bits.push(
      `ledger ${(row.ledgerBytes / 1e6).toFixed(1)} MB after the push (${row.scenario === '12' ? 'its tables, indexes and TOAST' : `db ${(row.ledgerDbBytes / 1e6).toFixed(1)} + wal ${(row.ledgerWalBytes / 1e6).toFixed(1)}`}) = ${row.bytesPerEvent.toFixed(0)} bytes per event it holds`,
    );
  if (row.load) bits.push(`load average at start ${row.load.join(' / ')}`);
  if (row.growth != null) bits.push(`${row.growth.toFixed(2)}× the smaller run's peak RSS`);
  if (row.skipped) bits.push(row.skipped);
  if (row.errors?.length) bits.push(`errors: ${row.errors.join('; ')}`);
  if (row.note) bits.push(row.note);
  return bits.join('; ');
}

function pad(s, n) {
  s = String(s);
  return s.length >= n ? s : s + ' '.repeat(n - s.length);
}
function padL(s, n) {
  s = String(s);
  return s.length >= n ? s : ' '.repeat(n - s.length) + s;
}

export function textTable(rows) {
  const out = [];
  let scen = null,
    title = null;
  for (const row of rows) {
    if (row.scenario !== scen || row.title !== title) {
      scen = row.scenario;
      title = row.title;
      out.push('', `${row.scenario}. ${row.title}`);
      out.push(
        `   ${pad('tool', 22)} ${padL('median', 11)}  ${pad('runs', 24)} ${padL('ll/peer', 8)}  ${pad('check', 8)} ${pad('target', 20)} result`,
      );
    }
    out.push(
      `   ${pad(row.tool, 22)} ${padL(fmtValue(row.median, row.unit), 11)}  ${pad(fmtRuns(row), 24)} ${padL(fmtRatio(row.ratio), 8)}  ${pad(check(row), 8)} ${pad(row.target ?? '', 20)} ${verdict(row)}`,
    );
    const x = extra(row);
    if (x) out.push(`   ${' '.repeat(22)}   └ ${x}`);
  }
  return out.join('\n');
}

export function summaryLines(rows) {
  return rows
    .filter((r) => r.target)
    .map(
      (r) =>
        `  ${pad(verdict(r), 5)} ${r.scenario}. ${r.tool}: ${fmtValue(r.median, r.unit)}${r.ratio != null ? ` = ${fmtRatio(r.ratio)} the peer's time` : r.target.includes('sqlite3') ? ` = ${fmtRatio(ratioOf(rows, r))} the sqlite3 CLI's time` : ''}, target ${r.target}`,
    );
}
function ratioOf(rows, r) {
  const peer = rows.find((x) => x.scenario === r.scenario && x.title === r.title && x.tool === 'sqlite3 CLI');
  return peer?.ratio ?? null;
}

const mdEsc = (s) => String(s).replace(/\|/g, '\\|');

export function markdown(rows, machine, opts, mismatches) {
  const lines = [];
  lines.push(`### Benchmark (\`npm run bench\`)`, '');
  lines.push(
    `Machine: ${machine.nproc} CPUs (${machine.cpu ?? 'unknown CPU'}), ${machine.ramGiB} GiB RAM, ${machine.os}; Node ${machine.node}; ` +
      `leadledger ${machine.leadledger ?? '?'}${machine.commit ? ` at ${machine.commit}` : ''}; sqlite3 ${machine.sqlite3 ?? '—'}, ${machine.jq ?? 'jq —'}, ${machine.miller ?? 'mlr —'}${machine.hyperfine ? `, ${machine.hyperfine}` : ''}. ` +
      `Run ${machine.date.slice(0, 16).replace('T', ' ')} UTC with \`${opts.argv}\` (medians of ${opts.runs} run${opts.runs === 1 ? '' : 's'}; push: ${opts.pushRuns}).`,
    '',
  );
  lines.push('| # | scenario | tool | median | runs | leadledger / peer | count | target | result |');
  lines.push('|---|---|---|---:|---|---:|---|---|---|');
  let prev = null;
  for (const row of rows) {
    const first = prev === null || prev.scenario !== row.scenario || prev.title !== row.title;
    prev = row;
    lines.push(
      `| ${first ? row.scenario : ''} | ${first ? mdEsc(row.title) : ''} | ${mdEsc(row.tool)} | ${fmtValue(row.median, row.unit)} | ${fmtRuns(row)} | ${fmtRatio(row.ratio)} | ${check(row) || (row.skipped ? mdEsc(row.skipped) : '')} | ${mdEsc(row.target ?? '')} | ${verdict(row)} |`,
    );
  }
  const notes = rows.map((r) => [r, extra(r)]).filter(([, x]) => x);
  if (notes.length) {
    lines.push('', 'Details:', '');
    for (const [r, x] of notes) lines.push(`- ${r.scenario}, ${mdEsc(r.tool)}: ${x}`);
  }
  if (mismatches.length) {
    lines.push('', '**MISMATCH** — a tool counted differently from the expected number of new unique event ids:', '');
    for (const m of mismatches) lines.push(`- ${m}`);
  }
  lines.push('');
  return lines.join('\n');
}
