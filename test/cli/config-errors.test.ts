// A config with a mistake anywhere is refused before anything is read or sent: exit 2, each mistake named by its path.
// The built CLI, as users run it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runCli } from '../helpers/cli.js';
import { emulator } from '../helpers/emulator.js';
import { tmpDir } from '../helpers/tmp.js';

test('a misspelt key of a sink section is exit 2 naming its path and the key meant; nothing is claimed or sent', async () => {
  const emu = await emulator();
  const dir = tmpDir();
  const input = join(dir, 'in.jsonl');
  writeFileSync(input, JSON.stringify({ id: 'e1', email: 'ana@example.com' }) + '\n');
  const config = join(dir, 'leadledger.config.json');
  writeFileSync(config, JSON.stringify({ sinks: { webhook: { honorsIdempotencyKey: true } } }));
  const ledger = join(dir, 'l.db');
  const r = await runCli([
    'push',
    input,
    '--sink',
    'webhook',
    '--url',
    `${emu.url}/webhook`,
    '--config',
    config,
    '--ledger',
    ledger,
  ]);
  assert.equal(r.code, 2, r.stderr);
  assert.ok(
    r.stderr.includes('sinks.webhook.honorsIdempotencyKey: unknown key (did you mean honoursIdempotencyKey?)'),
    r.stderr,
  );
  assert.equal(emu.webhookReceived().requests, 0);
  assert.ok(!existsSync(ledger), 'no ledger written');
});

test('every part of the config is checked, each mistake on a line of its own; replay refuses it too', async () => {
  const dir = tmpDir();
  const config = join(dir, 'c.json');
  writeFileSync(
    config,
    JSON.stringify({
      fields: { email: 'data.email', custom: { plan: 'data.plan' }, firstname: 'data.first' },
      key: { feilds: ['email'] },
      phones: { invalid: 'omit', invalidd: 'x' },
      retention: { sentPayload: 'drop' },
      sinks: {
        hubspot: { sourceproperty: 'lead_source' },
        jsonl: { path: 'x' },
        postgres: { column: { plan: 'plan_code' } },
        webhook: { template: { who: '{{lead.emial}}', plan: '{{lead.custom.pln}}' }, conflictMeans: 'dup' },
      },
      namepsace: 'acme',
    }),
  );
  const want = [
    'fields.firstname: unknown key (did you mean firstName?)',
    'key.feilds: unknown key (did you mean fields?)',
    'key: takes one of path, paths or fields',
    'phones.invalidd: unknown key (did you mean invalid?)',
    'retention.sentPayload: unknown key (did you mean sentPayloads?)',
    'sinks.hubspot.sourceproperty: unknown key (did you mean sourceProperty?)',
    'sinks.jsonl.path: unknown key',
    'sinks.postgres.column: unknown key (did you mean columns?)',
    'sinks.webhook.conflictMeans: Invalid option: expected one of "failure"|"duplicate"',
    'namepsace: unknown key (did you mean namespace?)',
  ];
  const input = join(dir, 'in.jsonl');
  writeFileSync(input, JSON.stringify({ id: 'e1', email: 'ana@example.com' }) + '\n');
  const push = await runCli(['push', input, '--dry-run', '--config', config]);
  assert.equal(push.code, 2, push.stderr);
  for (const line of want) assert.ok(push.stderr.includes(`  ${line}\n`), `${line}\nin\n${push.stderr}`);
  const replay = await runCli(['replay', '--from', input, '--dry-run', '--config', config]);
  assert.equal(replay.code, 2, replay.stderr);
  assert.ok(replay.stderr.includes('sinks.jsonl.path: unknown key'), replay.stderr);

  // A template's placeholders are checked once the rest is right (a misspelt one would send nothing in its place).
  writeFileSync(
    config,
    JSON.stringify({
      fields: { custom: { plan: 'data.plan' } },
      sinks: { webhook: { template: { who: '{{lead.emial}}', plan: ['{{lead.custom.pln}}'], ok: '{{lead.plan}}' } } },
    }),
  );
  const t = await runCli(['push', input, '--dry-run', '--config', config]);
  assert.equal(t.code, 2, t.stderr);
  assert.ok(
    t.stderr.includes(
      '  sinks.webhook.template.who: unknown placeholder {{lead.emial}} (did you mean {{lead.email}}?)',
    ),
    t.stderr,
  );
  assert.ok(
    t.stderr.includes(
      '  sinks.webhook.template.plan.0: unknown placeholder {{lead.custom.pln}} (did you mean {{lead.custom.plan}}?)',
    ),
    t.stderr,
  );
  assert.ok(!t.stderr.includes('lead.plan}} ('), 'a custom field by its own name is known');
});
