// Run one command as a child process and measure it: wall time (hrtime around spawn → close) and peak RSS.
// Peak RSS comes from GNU time (`/usr/bin/time -f %M`, the largest resident set of the process tree it waited for)
// when available, else from polling /proc/<pid>/status VmHWM of the direct child.
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync, rmSync, mkdirSync } from 'node:fs';
import path from 'node:path';

const children = new Set();
/** Kill every child the harness started (on exit or Ctrl-C); each by its own pid. */
export function killChildren(signal = 'SIGTERM') {
  for (const c of children) {
    try {
      c.kill(signal);
    } catch {
      /* already gone */
    }
  }
}
export function track(child) {
  children.add(child);
  child.once('exit', () => children.delete(child));
  return child;
}

let gnuTime;
export function haveGnuTime(tmpDir) {
  if (gnuTime !== undefined) return gnuTime;
  const out = path.join(tmpDir, 'gnu-time-probe.txt');
  const r = spawnSync('/usr/bin/time', ['-f', '%M', '-o', out, 'true'], { stdio: 'ignore' });
  gnuTime =
    r.status === 0 &&
    (() => {
      try {
        return /^\d+\s*$/m.test(readFileSync(out, 'utf8'));
      } catch {
        return false;
      }
    })();
  rmSync(out, { force: true });
  return gnuTime;
}

export function which(cmd) {
  const r = spawnSync('sh', ['-c', `command -v ${cmd}`], { encoding: 'utf8' });
  return r.status === 0 ? r.stdout.trim() : null;
}

let seq = 0;
const MAX_STDOUT = 16 << 20;

/**
 * Run cmd with args; resolve {wallMs, rssKb, code, stdout, stderrTail}.
 * opts: env (merged over process.env), cwd, tmpDir (for the GNU time output file).
 */
export function measure(cmd, args, opts = {}) {
  const tmpDir = opts.tmpDir;
  mkdirSync(tmpDir, { recursive: true });
  const useTime = haveGnuTime(tmpDir);
  const timeFile = path.join(tmpDir, `time-${process.pid}-${seq++}.txt`);
  const [c, a] = useTime ? ['/usr/bin/time', ['-f', '%M', '-o', timeFile, cmd, ...args]] : [cmd, args];
  return new Promise((resolve) => {
    const t0 = process.hrtime.bigint();
    const child = track(
      spawn(c, a, { cwd: opts.cwd, env: { ...process.env, ...(opts.env ?? {}) }, stdio: ['ignore', 'pipe', 'pipe'] }),
    );
    const out = [];
    let outLen = 0;
    let err = '';
    child.stdout.on('data', (d) => {
      if (outLen < MAX_STDOUT) {
        out.push(d);
        outLen += d.length;
      }
    });
    child.stderr.on('data', (d) => {
      err = (err + d.toString('utf8')).slice(-4000);
    });
    let hwmKb = 0;
    let poll;
    if (!useTime) {
      poll = setInterval(() => {
        try {
          const m = /VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'));
          if (m) hwmKb = Math.max(hwmKb, Number(m[1]));
        } catch {
          /* exited */
        }
      }, 20);
    }
    child.on('error', (e) => {
      err += `\n${e.message}`;
    });
    child.on('close', (code, signal) => {
      const wallMs = Number(process.hrtime.bigint() - t0) / 1e6;
      if (poll) clearInterval(poll);
      let rssKb = hwmKb || null;
      if (useTime) {
        try {
          // GNU time writes "Command exited with non-zero status N" before the format line on failure.
          const lines = readFileSync(timeFile, 'utf8').trim().split('\n');
          rssKb = Number(lines[lines.length - 1]) || null;
        } catch {
          /* no file: spawn failed */
        }
        rmSync(timeFile, { force: true });
      }
      resolve({
        wallMs,
        rssKb,
        code: code ?? (signal ? 128 : 1),
        signal,
        stdout: Buffer.concat(out).toString('utf8'),
        stderrTail: err.trim(),
      });
    });
  });
}

export function median(xs) {
  const v = xs.filter((x) => typeof x === 'number' && Number.isFinite(x)).sort((a, b) => a - b);
  if (v.length === 0) return null;
  const m = v.length >> 1;
  return v.length % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

/** The last integer printed on stdout (peers print just the count). */
export function lastInt(stdout) {
  const m = /(\d+)\s*$/.exec(stdout);
  return m ? Number(m[1]) : null;
}

/** Parse the leadledger --json document (the whole stdout). */
export function parseJsonDoc(stdout) {
  try {
    return JSON.parse(stdout);
  } catch {
    return null;
  }
}
