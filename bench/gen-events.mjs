#!/usr/bin/env node
// Vendored copy of ../shared/tools/gen-events.mjs (the team generator), so `npm run bench` works from a plain
// checkout. Keep the code below identical to the original: the cached data in bench/.data depends on it.
// Deterministic generator of lead-created webhook events with realistic duplicates.
// usage: gen-events.mjs N [--csv] [--seed S] [--dup 0.15] [--same-email 0.05] [--bad 0]
const args = process.argv.slice(2);
const n = Number(args[0] ?? 1000);
const opt = (k, d) => { const i = args.indexOf(k); return i >= 0 ? args[i + 1] : d; };
const csv = args.includes('--csv');
let seed = Number(opt('--seed', 42)) >>> 0;
const dupRate = Number(opt('--dup', 0.15));
const sameEmailRate = Number(opt('--same-email', 0.05));
const badRate = Number(opt('--bad', 0));
const rnd = () => { seed = (seed * 1664525 + 1013904223) >>> 0; return seed / 4294967296; };
const first = ['Maria', 'João', 'Ana', 'Pedro', 'Lucas', 'Júlia', 'Carla', 'Rafael', 'Beatriz', 'Tiago', 'Fernanda', 'Bruno'];
const last = ['Silva', 'Santos', 'Oliveira', 'Souza', 'Lima', 'Pereira', 'Costa', 'Almeida', 'Ribeiro', 'Gomes'];
const sources = ['landing-page', 'facebook-ads', 'google-ads', 'webinar', 'indicacao'];
const out = [];
let buf = '';
const flush = (force) => { if (force || buf.length > 1 << 20) { process.stdout.write(buf); buf = ''; } };
if (csv) buf += 'event_id,type,created_at,email,name,phone,source\n';
const recent = [];
let emitted = 0, k = 0;
const base = Date.UTC(2026, 9, 1);
while (emitted < n) {
  let ev;
  const r = rnd();
  if (recent.length && r < dupRate) {
    ev = recent[Math.floor(rnd() * recent.length)]; // network retry: same event again
  } else {
    k++;
    let email, name;
    if (recent.length && rnd() < sameEmailRate) {
      const o = recent[Math.floor(rnd() * recent.length)];
      email = o.email.toUpperCase(); name = o.name; // same person submits again, new event id
    } else {
      const f = first[Math.floor(rnd() * first.length)], l = last[Math.floor(rnd() * last.length)];
      name = `${f} ${l}`;
      email = `${f}.${l}.${k}@example.com`.normalize('NFD').replace(/[\u0300-\u036f]/g, '').toLowerCase();
    }
    ev = { id: `evt_${k.toString(36).padStart(8, '0')}`, ts: new Date(base + k * 1000).toISOString(), email, name,
      phone: `+55 11 9${String(10000000 + Math.floor(rnd() * 89999999))}`, source: sources[Math.floor(rnd() * sources.length)] };
    recent.push(ev); if (recent.length > 1000) recent.shift();
  }
  if (badRate && rnd() < badRate) { buf += csv ? '"broken,quote\n' : '{"event_id": "evt_bad", "data": {\n'; emitted++; flush(); continue; }
  if (csv) buf += `${ev.id},lead.created,${ev.ts},${ev.email},${ev.name},${ev.phone},${ev.source}\n`;
  else buf += JSON.stringify({ event_id: ev.id, type: 'lead.created', created_at: ev.ts, data: { email: ev.email, name: ev.name, phone: ev.phone, source: ev.source } }) + '\n';
  emitted++; flush();
}
flush(true);
