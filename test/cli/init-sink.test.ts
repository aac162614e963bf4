// `leadledger init --sink salesforce` as a user runs it before the first push: how to create the key field, and
// (credentials at hand) whether Lead has it, checked by describe against the Salesforce emulator.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { existsSync } from 'node:fs';
import { startSalesforceEmulator } from '../../src/sandbox/salesforce-api.js';
import { runCli } from '../helpers/cli.js';
import { tmpDir } from '../helpers/tmp.js';

const TOKEN = 'init-sink-access-token';

async function initSalesforce(
  emu: { url: string } | undefined,
  extra: string[] = [],
  env: Record<string, string | undefined> = {},
) {
  const dir = tmpDir();
  const r = await runCli(['init', '--sink', 'salesforce', ...(emu ? ['--salesforce-url', emu.url] : []), ...extra], {
    cwd: dir,
    env: {
      XDG_CONFIG_HOME: join(dir, 'config-home'),
      SALESFORCE_ACCESS_TOKEN: emu ? TOKEN : undefined,
      SALESFORCE_CLIENT_ID: undefined,
      SALESFORCE_CLIENT_SECRET: undefined,
      SALESFORCE_REFRESH_TOKEN: undefined,
      ...env,
    },
  });
  return { ...r, dir };
}

test('init --sink salesforce: the field there, External ID and Unique, is said so; nothing is written', async () => {
  const emu = await startSalesforceEmulator({ accessTokens: [TOKEN] });
  try {
    const r = await initSalesforce(emu);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /Object Manager → Lead → Fields & Relationships → New/);
    assert.match(r.stdout, /ok +Lead\.Leadledger_Key__c is there, External ID and Unique/);
    assert.equal(existsSync(join(r.dir, 'leadledger.config.json')), false);
    assert.ok(emu.stats().requests > 0, 'Lead was described');
    assert.equal(emu.leads().length, 0);
  } finally {
    await emu.close();
  }
});

test('init --sink salesforce: Lead without the field gets the how-to and a fail (exit 1)', async () => {
  const emu = await startSalesforceEmulator({ accessTokens: [TOKEN], externalIdFields: [] });
  try {
    const r = await initSalesforce(emu);
    assert.equal(r.code, 1, r.stdout + r.stderr);
    assert.match(
      r.stdout,
      /Text, length 64, Field Name Leadledger_Key \(API name Leadledger_Key__c\), with External ID and Unique/,
    );
    assert.match(r.stdout, /fail {2}Lead has no field Leadledger_Key__c/);
  } finally {
    await emu.close();
  }
});

test('init --sink salesforce --salesforce-external-id names the field the how-to and the check are about', async () => {
  const emu = await startSalesforceEmulator({ accessTokens: [TOKEN], externalIdFields: ['Acme_Key__c'] });
  try {
    const ok = await initSalesforce(emu, ['--salesforce-external-id', 'Acme_Key__c', '--json']);
    assert.equal(ok.code, 0, ok.stderr);
    const doc = JSON.parse(ok.stdout) as { sinkSetup: { lines: Array<{ status: string; message: string }> } };
    assert.deepEqual(
      doc.sinkSetup.lines.map((l) => l.status),
      ['todo', 'ok'],
    );
    assert.match(doc.sinkSetup.lines[0]!.message, /API name Acme_Key__c/);
  } finally {
    await emu.close();
  }
});

test('init --sink salesforce without credentials: the how-to, and how to check later (exit 0)', async () => {
  const r = await initSalesforce(undefined);
  assert.equal(r.code, 0, r.stdout + r.stderr);
  assert.match(r.stdout, /Leadledger_Key__c/);
  assert.match(r.stdout, /warn {2}not checked: Salesforce needs credentials.*leadledger doctor --sink salesforce/);
});

test('init with neither samples nor --sink is a usage error', async () => {
  const r = await runCli(['init'], { cwd: tmpDir() });
  assert.equal(r.code, 2);
  assert.match(r.stderr, /--sink <name>/);
});

test('LEADLEDGER_SINK alone does not make init call the CRM: only --sink does', async () => {
  const r = await runCli(['init'], { cwd: tmpDir(), env: { LEADLEDGER_SINK: 'salesforce' } });
  assert.equal(r.code, 2);
  assert.match(r.stderr, /--sink <name>/);
});
