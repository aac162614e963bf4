// Bench data, cached in bench/.data: generated event files (JSONL and CSV), the sorted unique ids of a file, a
// deterministic choice of ledger ids, and the ledger database itself (rebuilt on every bench run with the current
// leadledger, so a schema change never meets a stale cached ledger).
//
// Every cached file is written to <name>.partial and renamed when complete, so an interrupted run never leaves a
// truncated file that a later run would trust. Nothing here holds a data file in memory: generators write straight
// to disk and the id extraction streams through cut | sort.
import { spawn } from 'node:child_process';
import {
  createReadStream,
  createWriteStream,
  existsSync,
  openSync,
  closeSync,
  renameSync,
  rmSync,
  readFileSync,
  writeFileSync,
  copyFileSync,
  mkdirSync,
} from 'node:fs';
import { createInterface } from 'node:readline';
import path from 'node:path';
import { track } from './measure.mjs';

export class Data {
  constructor({ dir, generator, seed, log }) {
    this.dir = dir;
    this.work = path.join(dir, 'work');
    this.generator = generator;
    this.seed = seed;
    this.log = log;
    mkdirSync(this.work, { recursive: true });
  }

  p(name) {
    return path.join(this.dir, name);
  }

  /** Run a child to completion; stdout to a file (fd) or ignored. Rejects on non-zero exit. */
  run(cmd, args, { stdoutFile, env } = {}) {
    return new Promise((resolve, reject) => {
      const fd = stdoutFile ? openSync(stdoutFile, 'w') : 'ignore';
      const child = track(spawn(cmd, args, { stdio: ['ignore', fd, 'pipe'], env: { ...process.env, ...(env ?? {}) } }));
      if (typeof fd === 'number') closeSync(fd);
      let err = '';
      child.stderr.on('data', (d) => {
        err = (err + d).slice(-4000);
      });
      child.on('error', reject);
      child.on('close', (code) =>
        code === 0 ? resolve() : reject(new Error(`${cmd} ${args.join(' ')} exited ${code}: ${err}`)),
      );
    });
  }

  async cached(name, produce) {
    const file = this.p(name);
    if (existsSync(file)) return file;
    const partial = `${file}.partial`;
    rmSync(partial, { force: true });
    const t0 = Date.now();
    this.log(`  generating ${name} …`);
    await produce(partial);
    renameSync(partial, file);
    this.log(`  generated ${name} in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    return file;
  }

  /** N events as JSONL (or CSV), gen-events with this seed: the same ids in both formats, and the first N of a
   *  bigger file are exactly the N-event file. */
  events(n, format = 'jsonl') {
    const args = [this.generator, String(n), '--seed', String(this.seed), ...(format === 'csv' ? ['--csv'] : [])];
    return this.cached(`events-${n}-s${this.seed}.${format}`, (out) =>
      this.run(process.execPath, args, { stdoutFile: out }),
    );
  }

  /** The C-sorted unique event ids of the n-event JSONL file, one a line; and their count (cached in a .json). */
  async uniqueIds(n) {
    const jsonl = await this.events(n, 'jsonl');
    // gen-events writes event_id as the first key of every line, so it is the 4th "-separated field.
    const file = await this.cached(`ids-${n}-s${this.seed}.sorted.txt`, (out) =>
      this.run('bash', ['-c', 'set -o pipefail; cut -d\'"\' -f4 "$1" | sort -u', 'bash', jsonl], {
        stdoutFile: out,
        env: { LC_ALL: 'C' },
      }),
    );
    const metaFile = this.p(`ids-${n}-s${this.seed}.json`);
    if (existsSync(metaFile)) return { file, count: JSON.parse(readFileSync(metaFile, 'utf8')).count };
    let count = 0;
    for await (const line of createInterface({ input: createReadStream(file) })) {
      if (!/^evt_/.test(line))
        throw new Error(`unexpected id "${line}" in ${file}: did the generator's format change?`);
      count++;
    }
    writeFileSync(metaFile, JSON.stringify({ count }) + '\n');
    return { file, count };
  }

  /** k of the unique ids of the n-event file, spread evenly over them (index floor(j·U/k)), still C-sorted. */
  async ledgerIds(n, k) {
    const uniq = await this.uniqueIds(n);
    if (k > uniq.count)
      throw new Error(`ledger of ${k} ids asked, but the ${n}-event file has only ${uniq.count} unique ids`);
    const file = await this.cached(`ledger-ids-${n}-${k}-s${this.seed}.sorted.txt`, async (out) => {
      const ws = createWriteStream(out);
      let i = 0,
        j = 0,
        next = 0;
      for await (const line of createInterface({ input: createReadStream(uniq.file) })) {
        if (j < k && i === next) {
          if (!ws.write(line + '\n')) await new Promise((r) => ws.once('drain', r));
          j++;
          next = Math.floor((j * uniq.count) / k);
        }
        i++;
      }
      await new Promise((r, e) => ws.end((err) => (err ? e(err) : r())));
    });
    return { file, count: k, uniqueInFile: uniq.count };
  }

  /** A ledger db holding those ids (as delivered), built with `leadledger ledger import --as keys`. */
  async ledgerDb(idsFile, k, cli) {
    const db = path.join(this.work, `ledger-base-${k}.db`);
    for (const f of [db, `${db}-wal`, `${db}-shm`]) rmSync(f, { force: true });
    const t0 = Date.now();
    const out = this.p('work/ledger-import.json');
    await this.run(
      process.execPath,
      [cli, 'ledger', 'import', idsFile, '--as', 'keys', '--ledger', db, '--json', '--quiet'],
      { stdoutFile: out },
    );
    const rep = JSON.parse(readFileSync(out, 'utf8'));
    if (rep.added !== k) throw new Error(`ledger import added ${rep.added} keys, expected ${k}`);
    this.log(`  ledger with ${k.toLocaleString('en-US')} ids built in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    return db;
  }

  /** A fresh copy of the base ledger for one measured leadledger run (a dry-run must not write, but be sure). */
  ledgerCopy(baseDb) {
    const copy = path.join(this.work, 'ledger-run.db');
    for (const f of [copy, `${copy}-wal`, `${copy}-shm`]) rmSync(f, { force: true });
    copyFileSync(baseDb, copy);
    if (existsSync(`${baseDb}-wal`)) copyFileSync(`${baseDb}-wal`, `${copy}-wal`);
    return copy;
  }

  /** Read a file once so every tool finds it in the page cache. */
  warm(file) {
    return this.run('cat', [file], { stdoutFile: '/dev/null' });
  }
}
