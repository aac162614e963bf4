// Chaos for the receiver: a sender that retries (the same event again after a timeout, a 5xx or a dropped
// connection, to either instance), repeats what was acknowledged and sends conflicting repeats, while receivers are
// SIGKILLed and restarted at random points and the CRM emulator answers 5xx and 429 and drops answers after storing.
// At the end every event ever answered 2xx has its person in the CRM, created exactly once: none missing, none twice.
// The CRM is Pipedrive's emulator: Pipedrive keeps no email unique and has no idempotency key, so a person sent twice
// is two persons there (HubSpot's one contact per email would hide a second send behind a 409).
// The kill points are chosen by counts of acknowledged events (a seeded draw), never by time.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, test } from 'node:test';
import Database from 'better-sqlite3';
import { seededRandom, type FaultKind } from '../../src/sandbox/faults.js';
import { startPipedriveEmulator, type PipedriveEmulator } from '../../src/sandbox/pipedrive-api.js';
import { runs } from '../helpers/deep.js';
import { pgDatabase } from '../helpers/postgres.js';
import { startServe, waitFor, type ServeProcess } from '../helpers/serve.js';
import { tmpDir } from '../helpers/tmp.js';

interface Chaos {
  /** Starts receiver i (again); resolves once it listens. */
  start(i: number): Promise<ServeProcess>;
  instances: number;
  /** Events still to deliver (queued, pending, in doubt, failed retryable) in the ledger. */
  undelivered(): Promise<number>;
}

async function chaos(emu: PipedriveEmulator, c: Chaos, seed: number, events: number, kills: number): Promise<void> {
  const random = seededRandom(seed);
  const procs: Array<ServeProcess | undefined> = [];
  for (let i = 0; i < c.instances; i++) procs[i] = await c.start(i);
  const people = Array.from({ length: events }, (_, i) => ({
    event_id: `chaos-${seed}-${i}`,
    type: 'lead.created',
    email: `person${i}@example.com`,
    name: `Person ${i}`,
  }));
  const acked = new Set<string>();
  let answered = 0;
  // One send until a 2xx: a timeout, a refused connection (the receiver is down) or a 503 is retried, to any
  // instance that is up.
  const deliver = async (body: Record<string, unknown>): Promise<void> => {
    for (let attempt = 0; ; attempt++) {
      const up = procs.filter((p): p is ServeProcess => !!p);
      const p = up[Math.floor(random() * up.length)];
      if (p) {
        try {
          const res = await fetch(`${p.url}/hooks/app`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify(body),
            signal: AbortSignal.timeout(5000),
          });
          await res.text();
          if (res.status === 200) {
            acked.add(String(body.event_id));
            answered++;
            return;
          }
        } catch {
          // The receiver was killed under the request, or it timed out: the sender tries again.
        }
      }
      if (attempt > 2000) throw new Error(`event ${String(body.event_id)} never acknowledged`);
      await new Promise((r) => setTimeout(r, 20));
    }
  };
  const queue = [...people];
  const sender = async () => {
    for (let ev = queue.shift(); ev; ev = queue.shift()) {
      await deliver(ev);
      const roll = random();
      // The answer was lost on the sender's side: it sends the same event again (maybe to the other instance).
      if (roll < 0.2) await deliver(ev);
      // A conflicting repeat: the same key with another name (recorded, never sent).
      else if (roll < 0.25) await deliver({ ...ev, name: `${ev.name} Changed` });
    }
  };
  // The killer: after a random number of acknowledged requests, SIGKILL a receiver and start it again.
  const killer = async () => {
    for (let k = 0; k < kills; k++) {
      const at = answered + 10 + Math.floor(random() * (events / (kills + 1)));
      await waitFor('acknowledged requests before a kill', () => answered >= at || queue.length === 0, 120_000);
      if (queue.length === 0 && answered >= events) break;
      const i = Math.floor(random() * c.instances);
      const p = procs[i]!;
      procs[i] = undefined;
      p.child.kill('SIGKILL');
      await p.exited;
      procs[i] = await c.start(i);
    }
  };
  await Promise.all([killer(), ...Array.from({ length: 6 }, sender)]);
  assert.equal(acked.size, events);
  await waitFor('every acknowledged event delivered', async () => (await c.undelivered()) === 0, 120_000);
  for (const p of procs) assert.equal(await p!.stop(), 0, p!.stderr());
  const per = new Map<string, number>();
  for (const p of emu.persons())
    for (const e of p.emails) per.set(e.value.toLowerCase(), (per.get(e.value.toLowerCase()) ?? 0) + 1);
  const missing = people.filter((p) => !per.has(p.email)).map((p) => p.email);
  const twice = [...per].filter(([, n]) => n !== 1).map(([e, n]) => `${e} ×${n}`);
  assert.deepEqual(missing, [], 'an acknowledged event whose person never reached the CRM');
  assert.deepEqual(twice, [], 'a person created more than once');
  assert.equal(emu.persons().length, events, 'no one else');
  const s = emu.stats();
  // The faults happened: the test saw what it is about.
  assert.ok(s.sent5xx > 0 && s.sent429 > 0 && s.commitThenDrops > 0 && s.resets > 0, JSON.stringify(s));
}

// Drawn at these rates, and the first requests' faults in this order (a run with few, large batches meets them all).
const FAULTS = {
  // Each answer a little late: sends are on the wire when a kill lands.
  latencyMs: 10,
  error5xxRate: 0.15,
  commitThenDropRate: 0.1,
  resetRate: 0.03,
  retryAfter: '0',
  script: ['429', '503', 'commit-then-drop', '429', 'reset', 'commit-then-drop', '503'] as FaultKind[],
};

const emus: PipedriveEmulator[] = [];
after(async () => {
  for (const e of emus) await e.close();
});

/** Pipedrive's emulator with its windows opened wide: the faults are what the test is about, not its pacing. */
async function pipedrive(seed: number): Promise<PipedriveEmulator> {
  const emu = await startPipedriveEmulator({
    token: 'chaos-token',
    burst: 100_000,
    searchBurst: 100_000,
    dailyBudget: 100_000_000,
    faults: FAULTS,
    seed,
    // Pipedrive's search follows its writes: a person created just now is not found yet. The receiver looks an event
    // in doubt up only once its doubt is older than that (LEADLEDGER_SERVE_IN_DOUBT_MS below; 60 s by default).
    searchLagMs: 400,
  });
  emus.push(emu);
  return emu;
}

test('chaos on one receiver and a SQLite ledger: killed and restarted, every acknowledged event delivered once', async () => {
  const dir = tmpDir();
  const emu = await pipedrive(7);
  const ledger = join(dir, 'ledger.db');
  const args = [
    '--sink',
    'pipedrive',
    '--pipedrive-url',
    emu.url,
    '--ledger',
    ledger,
    '--port',
    '0',
    '--endpoint',
    'app',
  ];
  await chaos(
    emu,
    {
      instances: 1,
      start: () =>
        startServe([...args, '--max-retries', '2', '--backoff', '20'], {
          env: { PIPEDRIVE_TOKEN: 'chaos-token', LEADLEDGER_SERVE_IN_DOUBT_MS: '1500' },
          cwd: dir,
        }),
      undelivered: () => {
        const db = new Database(ledger, { readonly: true });
        try {
          return Promise.resolve(
            (
              db
                .prepare(
                  `SELECT count(*) AS n FROM events WHERE status IN ('queued', 'pending', 'in_doubt') OR (status = 'failed' AND failure = 'retryable')`,
                )
                .get() as { n: number }
            ).n,
          );
        } finally {
          db.close();
        }
      },
    },
    11,
    runs(400, 150),
    3,
  );
});

test('chaos on two receivers sharing a PostgreSQL ledger: retries reach either, one is killed at random points', async () => {
  const db = await pgDatabase();
  const dir = tmpDir();
  const emu = await pipedrive(9);
  const env = {
    PIPEDRIVE_TOKEN: 'chaos-token',
    PGPASSWORD: db.cluster.password,
    LEADLEDGER_LEASE_MS: '3000',
    LEADLEDGER_SERVE_IN_DOUBT_MS: '1500',
  };
  const args = [
    '--sink',
    'pipedrive',
    '--pipedrive-url',
    emu.url,
    '--ledger',
    db.url,
    '--port',
    '0',
    '--endpoint',
    'app',
  ];
  await chaos(
    emu,
    {
      instances: 2,
      start: () => startServe([...args, '--max-retries', '2', '--backoff', '20'], { env, cwd: dir }),
      undelivered: async () =>
        Number(
          (
            await db.query<{ n: string }>(
              `SELECT count(*) AS n FROM leadledger.events WHERE status IN ('queued', 'pending', 'in_doubt') OR (status = 'failed' AND failure = 'retryable')`,
            )
          ).rows[0]!.n,
        ),
    },
    12,
    runs(400, 150),
    3,
  );
});
