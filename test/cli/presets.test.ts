// `leadledger presets`: what a user reads before trusting recognition, drawn from the definitions themselves.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runCli } from '../helpers/cli.js';
import { LOGS, SOURCES } from '../../src/presets/catalog.js';

interface Listing {
  sources: Array<{ name: string; title: string; fields: Record<string, string[]>; key: string[]; docs: string[] }>;
  logs: Array<{ name: string; bodies: string[] }>;
}

test('presets lists every source and log the catalog holds, with its fields, key and docs', async () => {
  const r = await runCli(['presets', '--json']);
  assert.equal(r.code, 0, r.stderr);
  const l = JSON.parse(r.stdout) as Listing;
  assert.deepEqual(
    l.sources.map((s) => s.name),
    SOURCES.map((s) => s.name),
  );
  assert.deepEqual(
    l.logs.map((x) => x.name),
    LOGS.map((x) => x.name),
  );
  for (const s of l.sources) {
    assert.ok(s.docs.length > 0, `${s.name}: docs`);
    assert.ok(s.fields.email ?? s.fields.phone, `${s.name}: maps an email or a phone`);
  }
  // A source keyed by its id column (no key of its own) names the column, not "content".
  assert.deepEqual(l.sources.find((s) => s.name === 'pipedrive-people-export')?.key, ['Person - ID or Pessoa - ID']);
  const text = await runCli(['presets']);
  assert.equal(text.code, 0, text.stderr);
  for (const s of SOURCES) assert.match(text.stdout, new RegExp(`^${s.name}  `, 'm'), s.name);
});

test("presets <name> shows one source: its signature, each field's paths, key and filters; an unknown name lists them", async () => {
  const r = await runCli(['presets', 'typeform']);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /^typeform {2}Typeform webhook \(JSON\)$/m);
  assert.match(r.stdout, /recognized by: event_id, form_response\.answers present/);
  assert.match(r.stdout, /email\s+← form_response\.answers\[type=email\]\.email, then form_response\.hidden\.email/);
  assert.match(r.stdout, /key: event_id/);
  assert.match(r.stdout, /filtered when event_type is "form_response_partial": a partial response/);
  assert.doesNotMatch(r.stdout, /rdstation/);
  const bad = await runCli(['presets', 'typefrom']);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /'typefrom' is no source leadledger knows; one of: typeform, /);
});
