// push --sink pipedrive, spawned, against the Pipedrive emulator through Prism proxies of Pipedrive's OpenAPI
// documents: every request and answer must follow them. Each person exactly once in the emulator, whatever the run.
import { after, before, beforeEach, afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startPipedriveEmulator, type PipedriveEmulator } from '../../src/sandbox/pipedrive-api.js';
import { startContractProxy, type ContractProxy } from '../sinks/pipedrive-contract.js';
import { jsonReport, runCli } from '../helpers/cli.js';
import { expectedPeople, generateEvents } from '../helpers/events.js';
import { tmpDir } from '../helpers/tmp.js';

const CANARY = 'pd-CANARY-3c9b1e7a-0f42-4d6b-9e1d-1eadledger0pd';
const env = { PIPEDRIVE_TOKEN: CANARY };
const DAY_MS = 86_400_000;

describe('push --sink pipedrive (spawned), through the OpenAPI contract proxies', () => {
  let emu: PipedriveEmulator;
  let proxy: ContractProxy;
  // The emulator's clock: real time, moved a day on when a test needs the daily budget reset.
  let dayOffset = 0;

  before(async () => {
    emu = await startPipedriveEmulator({ token: CANARY, now: () => Date.now() + dayOffset, dailyBudget: 1000 });
    proxy = await startContractProxy(emu.url);
  });
  after(async () => {
    await proxy?.close();
    await emu?.close();
  });
  beforeEach(() => {
    emu.reset();
    proxy.clear();
    emu.setBudgetLeft(1_000_000);
  });
  afterEach(() => {
    assert.deepEqual(proxy.violations(), [], 'Prism found requests or answers that break the OpenAPI documents');
  });

  /** Each email the emulator holds, and how many persons hold it. */
  const holders = (): Map<string, number> => {
    const m = new Map<string, number>();
    for (const p of emu.persons())
      for (const e of p.emails) m.set(e.value.toLowerCase(), (m.get(e.value.toLowerCase()) ?? 0) + 1);
    return m;
  };
  const assertOnce = (people: Set<string>): void => {
    const h = holders();
    assert.equal(emu.persons().length, people.size);
    for (const email of people) assert.equal(h.get(email), 1, `${email} held ${h.get(email) ?? 0} times`);
  };
  const noToken = (...texts: string[]): void => {
    for (const t of texts) assert.ok(!t.includes(CANARY), 'the token appeared in output');
  };

  it('creates every new person once; a rerun sends nothing; the token is nowhere', async () => {
    const dir = tmpDir();
    const file = generateEvents(dir, 60, 7);
    const people = await expectedPeople(file, dir);
    const ledger = join(dir, 'l.db');
    const report = join(dir, 'r.jsonl');
    const args = ['push', file, '--sink', 'pipedrive', '--pipedrive-url', proxy.url, '--ledger', ledger, '--json'];
    const first = await runCli([...args, '--report', report], { env });
    assert.ok([0, 6].includes(first.code ?? -1), first.stderr);
    assert.equal(jsonReport(first).delivery.sent, people.size);
    assertOnce(people);
    const second = await runCli(args, { env });
    assert.ok([0, 6].includes(second.code ?? -1), second.stderr);
    assert.equal(jsonReport(second).delivery.sent, 0);
    assertOnce(people);
    noToken(first.stdout, first.stderr, second.stdout, second.stderr, readFileSync(report, 'utf8'));
    noToken(readFileSync(ledger).toString('latin1'));
  });

  it('an account already holding every person creates nobody: all settle as already there', async () => {
    const dir = tmpDir();
    const file = generateEvents(dir, 40, 3);
    const people = await expectedPeople(file, dir);
    emu.seed([...people].map((email) => ({ name: email, email })));
    const r = await runCli(
      ['push', file, '--sink', 'pipedrive', '--pipedrive-url', proxy.url, '--ledger', join(dir, 'l.db'), '--json'],
      { env },
    );
    assert.ok([0, 6].includes(r.code ?? -1), r.stderr);
    assert.equal(jsonReport(r).delivery.sent, 0);
    assert.equal(jsonReport(r).delivery.exists, people.size);
    assertOnce(people);
  });

  it('--existing update patches the person the account holds', async () => {
    const dir = tmpDir();
    const file = join(dir, 'one.jsonl');
    writeFileSync(file, '{"event_id":"u1","email":"ana@example.com","name":"Ana Souza"}\n');
    emu.seed([{ name: 'Old Name', email: 'ana@example.com' }]);
    const r = await runCli(
      [
        'push',
        file,
        '--sink',
        'pipedrive',
        '--pipedrive-url',
        proxy.url,
        '--ledger',
        join(dir, 'l.db'),
        '--existing',
        'update',
        '--json',
      ],
      { env },
    );
    assert.equal(r.code, 0, r.stderr);
    assert.equal(jsonReport(r).delivery.updated, 1);
    assert.equal(emu.persons().length, 1);
    assert.equal(emu.persons()[0]?.name, 'Ana Souza');
  });

  it('5xx and 429 are retried: each person once', async () => {
    const dir = tmpDir();
    const file = generateEvents(dir, 30, 5);
    const people = await expectedPeople(file, dir);
    emu.failNext('addPerson', '503', { times: 2 });
    emu.failNext('searchPersons', '429', { skip: 3, times: 2 });
    const r = await runCli(
      ['push', file, '--sink', 'pipedrive', '--pipedrive-url', proxy.url, '--ledger', join(dir, 'l.db'), '--json'],
      { env },
    );
    assert.ok([0, 6].includes(r.code ?? -1), r.stderr);
    assert.ok(emu.stats().sent5xx >= 2 && emu.stats().sent429 >= 2, JSON.stringify(emu.stats()));
    assertOnce(people);
  });

  it('a daily budget that would run out ends the run 7, saying so; the next day a run sends the rest, each once', async () => {
    const dir = tmpDir();
    const file = generateEvents(dir, 40, 11);
    const people = await expectedPeople(file, dir);
    // Today, what is left of the company's 1000 tokens covers a part of the people (25 tokens a new person); the
    // next day's whole budget covers the rest.
    emu.setBudgetLeft(400);
    const args = ['push', file, '--sink', 'pipedrive', '--pipedrive-url', proxy.url, '--ledger', join(dir, 'l.db')];
    const first = await runCli(args, { env });
    assert.equal(first.code, 7, first.stderr);
    assert.match(first.stderr, /Pipedrive's daily API budget is nearly spent/);
    assert.match(first.stderr, /the leads not sent go out with the next run/);
    const made = emu.persons().length;
    assert.ok(made > 0 && made < people.size, `made ${made} of ${people.size}`);
    assert.equal(emu.stats().budgetRefused, 0, 'the run stopped before Pipedrive refused anything');
    dayOffset += DAY_MS;
    const second = await runCli(args, { env });
    assert.ok([0, 6].includes(second.code ?? -1), second.stderr);
    assertOnce(people);
    noToken(first.stderr, second.stderr);
  });
});
