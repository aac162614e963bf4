#!/usr/bin/env node
// The load generator of bench scenarios 17-19: webhook deliveries to a receiver (leadledger serve, or the plain
// handler peer), as a sender that retries does them. Run as its own process by the harness (so the harness's event
// loop is not in the measurement), or by hand:
//
//   node bench/lib/serve-load.mjs --url http://127.0.0.1:8080/hooks/bench --events 20000 [--concurrency 64]
//        [--rate 2000] [--duration 30] [--twin-rate 0.1] [--repeat-rate 0.1] [--prefix e] [--seed 1]
//        [--shape hubspot]   (HubSpot single creates of the same people instead of events: the emulator's capacity)
//
// It prints one JSON document on stdout (the figures below and the ids of the events acknowledged).
//
// The events: `--events` distinct lead.created events of the generic source, each its own person
// ({"event_id":"<prefix><i>","type":"lead.created","email":"<prefix><i>@bench.example","name":"Lead <i>"}), so that
// a correct receiver leaves exactly one person per event acknowledged. Retries, as a sender makes them:
// - a twin (`--twin-rate` of the events): the same event sent twice at once, on two connections, as a sender that
//   timed out and retried while the first delivery was still being handled;
// - a repeat (`--repeat-rate`): the same event again later (100-1,100 positions on in the schedule), after it was
//   answered, as a sender whose acknowledgement was lost.
// The schedule is deterministic (seeded); a repeat of an event not yet answered is still just sent again.
//
// Connections: one keep-alive agent, at most `--concurrency` requests in flight (a twin takes two slots at once).
//
// Two modes, and what each measures:
// - closed loop (no --rate): every slot sends its next request as soon as its last was answered: the most
//   acknowledged requests/s the receiver gives at that concurrency. Its latencies are service times at saturation
//   (by Little's law about concurrency ÷ throughput), and suffer coordinated omission: a stall delays the requests
//   that would have been sent during it, which are then not measured as late.
// - open loop (--rate R): request k is due at start + k/R whatever happened before (a twin's two requests are due
//   together); if no slot is free when it is due it waits for one, and its latency is measured from its due time,
//   not from when it left (as wrk2 does), so a stall of the receiver counts in every request it delayed. These are
//   the latencies to judge a p99 target by, at that offered rate. The time from the actual send is reported too (`sent*`).
// Counted: 2xx (acknowledged: their latencies, acknowledged requests/s = 2xx ÷ the time from the first send to the
// last answer), non-2xx by status, transport errors; and per event whether any of its requests was acknowledged.
import http from 'node:http';
import { fileURLToPath } from 'node:url';

/** A small seeded PRNG (mulberry32): the same schedule for every receiver. */
function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The event of index i under a prefix: its id, email and JSON body. */
export function benchEvent(prefix, i) {
  const id = `${prefix}${i}`;
  const email = `${id}@bench.example`;
  return { id, email, body: JSON.stringify({ event_id: id, type: 'lead.created', email, name: `Lead ${id}` }) };
}

/** The same person as HubSpot's single contact create takes it: what the emulator-capacity probe sends. */
function hubspotBody(prefix, i) {
  const id = `${prefix}${i}`;
  return JSON.stringify({
    properties: { email: `${id}@bench.example`, firstname: 'Lead', lastname: id },
    associations: [],
  });
}

/** The email of an event id made by benchEvent. */
export const emailOf = (id) => `${id}@bench.example`;

/** The deterministic send schedule: [{ i, twin, repeat }] in send order. */
export function makeSchedule({ events, twinRate = 0.1, repeatRate = 0.1, seed = 1 }) {
  const r = rng(seed);
  const items = [];
  for (let i = 0; i < events; i++) {
    items.push({ key: i, i, twin: r() < twinRate, repeat: false });
    if (r() < repeatRate) items.push({ key: i + 100 + r() * 1000, i, twin: false, repeat: true });
  }
  items.sort((a, b) => a.key - b.key);
  return items.map(({ i, twin, repeat }) => ({ i, twin, repeat }));
}

function percentile(sorted, p) {
  if (!sorted.length) return null;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

/**
 * Sends the schedule to url; resolves the figures. opts: url, events, prefix, concurrency, rate (null: closed
 * loop), durationS (stop sending after it; null: send the whole schedule), twinRate, repeatRate, seed.
 */
export async function runLoad(opts) {
  const { url, events, prefix = 'e', concurrency = 64, rate = null, durationS = null, shape = 'event' } = opts;
  const schedule = makeSchedule({ events, twinRate: opts.twinRate, repeatRate: opts.repeatRate, seed: opts.seed });
  const target = new URL(url);
  const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency, maxFreeSockets: concurrency });
  const n = schedule.reduce((s, x) => s + (x.twin ? 2 : 1), 0);
  const lat = new Float64Array(n); // ms, from the due time (open loop) or the send (closed loop), 2xx only
  const sentLat = new Float64Array(n); // ms, from the send, 2xx only
  let nOk = 0;
  const byStatus = {};
  const bodyStatus = {};
  let errors = 0;
  const errorSamples = [];
  const acked = new Uint8Array(events);
  const accepted = new Uint16Array(events);
  let inflight = 0,
    k = 0,
    offered = 0,
    sent = 0,
    lastDone = 0;
  const t0 = performance.now();
  const deadline = durationS ? t0 + durationS * 1000 : Infinity;
  let finish;
  const done = new Promise((r) => (finish = r));
  let timer = null;

  const send = (item, due) => {
    const body = shape === 'hubspot' ? hubspotBody(prefix, item.i) : benchEvent(prefix, item.i).body;
    const auth = shape === 'hubspot' ? { authorization: 'Bearer bench-token' } : {};
    inflight++;
    sent++;
    const start = performance.now();
    const req = http.request(
      {
        host: target.hostname,
        port: target.port,
        path: target.pathname,
        method: 'POST',
        agent,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), ...auth },
      },
      (res) => {
        const chunks = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () => {
          const end = performance.now();
          const s = res.statusCode;
          byStatus[s] = (byStatus[s] ?? 0) + 1;
          if (s >= 200 && s < 300) {
            lat[nOk] = end - (due ?? start);
            sentLat[nOk] = end - start;
            nOk++;
            acked[item.i] = 1;
            let word = '?';
            try {
              word = JSON.parse(Buffer.concat(chunks).toString('utf8')).status ?? '?';
            } catch {
              /* not JSON */
            }
            bodyStatus[word] = (bodyStatus[word] ?? 0) + 1;
            if (word === 'accepted' || word === 'ok') accepted[item.i]++;
          }
          complete(end);
        });
        res.on('error', () => {
          errors++;
          complete(performance.now());
        });
      },
    );
    req.on('error', (e) => {
      errors++;
      if (errorSamples.length < 5) errorSamples.push(e.message);
      complete(performance.now());
    });
    req.end(body);
  };
  const complete = (t) => {
    inflight--;
    lastDone = t;
    pump();
  };
  const pump = () => {
    if (timer) {
      clearTimeout(timer);
      timer = null;
    }
    for (;;) {
      const now = performance.now();
      if (k >= schedule.length || now > deadline) {
        if (inflight === 0) finish();
        return;
      }
      const item = schedule[k];
      const need = item.twin ? 2 : 1;
      if (inflight + need > concurrency) return; // a completion pumps again
      // Due times count requests, not events: a twin's two requests are due together, and the next after them.
      const due = rate ? t0 + (offered * 1000) / rate : null;
      if (due !== null && due > now) {
        timer = setTimeout(pump, Math.max(0, due - now));
        return;
      }
      k++;
      offered += need;
      send(item, due);
      if (item.twin) send(item, due);
    }
  };
  pump();
  await done;
  agent.destroy();
  const wallS = ((lastDone || performance.now()) - t0) / 1000;
  const ms = (a) => Array.from(a.subarray(0, nOk)).sort((x, y) => x - y);
  const l = ms(lat),
    sl = ms(sentLat);
  const ackedIds = [];
  let twinsBothAccepted = 0;
  let scheduledEvents = 0;
  const twinOf = new Uint8Array(events);
  for (let j = 0; j < k; j++) {
    if (schedule[j].twin) twinOf[schedule[j].i] = 1;
  }
  const sentEvents = new Uint8Array(events);
  for (let j = 0; j < k; j++) sentEvents[schedule[j].i] = 1;
  for (let i = 0; i < events; i++) {
    if (sentEvents[i]) scheduledEvents++;
    if (acked[i]) ackedIds.push(`${prefix}${i}`);
    if (twinOf[i] && accepted[i] >= 2) twinsBothAccepted++;
  }
  const twins = schedule.slice(0, k).filter((x) => x.twin).length;
  const repeats = schedule.slice(0, k).filter((x) => x.repeat).length;
  return {
    mode: rate ? 'open' : 'closed',
    url,
    concurrency,
    rate,
    requests: sent,
    eventsSent: scheduledEvents,
    twins,
    repeats,
    ok: nOk,
    byStatus,
    bodyStatus,
    non2xx: Object.entries(byStatus)
      .filter(([s]) => s < 200 || s >= 300)
      .reduce((a, [, c]) => a + c, 0),
    errors,
    errorSamples,
    wallS,
    ackPerS: wallS > 0 ? nOk / wallS : null,
    offeredPerS: rate ?? null,
    p50: percentile(l, 50),
    p90: percentile(l, 90),
    p99: percentile(l, 99),
    max: l.length ? l[l.length - 1] : null,
    sentP50: percentile(sl, 50),
    sentP99: percentile(sl, 99),
    // Events whose every delivery was answered "accepted"/"ok" more than once: each is a receiver that took an
    // event twice (the plain handler, when both twins passed its check).
    twinsBothAccepted,
    ackedEvents: ackedIds.length,
    ackedIds,
  };
}

function parseCli(argv) {
  const o = { concurrency: 64, rate: null, durationS: null, twinRate: 0.1, repeatRate: 0.1, prefix: 'e', seed: 1 };
  const num = (v, name) => {
    const x = Number(v);
    if (!Number.isFinite(x) || x < 0) throw new Error(`${name} needs a number ≥ 0, got ${v}`);
    return x;
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i],
      v = () => argv[++i];
    if (a === '--url') o.url = v();
    else if (a === '--events') o.events = num(v(), a);
    else if (a === '--concurrency') o.concurrency = num(v(), a);
    else if (a === '--rate') o.rate = num(v(), a) || null;
    else if (a === '--duration') o.durationS = num(v(), a) || null;
    else if (a === '--twin-rate') o.twinRate = num(v(), a);
    else if (a === '--repeat-rate') o.repeatRate = num(v(), a);
    else if (a === '--prefix') o.prefix = v();
    else if (a === '--seed') o.seed = num(v(), a);
    else if (a === '--shape') o.shape = v();
    else throw new Error(`unknown option ${a}`);
  }
  if (!o.url || !o.events) throw new Error('usage: serve-load.mjs --url <receiver URL> --events N [options]');
  return o;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  try {
    const r = await runLoad(parseCli(process.argv.slice(2)));
    process.stdout.write(JSON.stringify(r) + '\n');
  } catch (e) {
    console.error(e.message);
    process.exit(2);
  }
}
