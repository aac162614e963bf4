// Property: for any set of events and any order, with sends failing at random and reruns and replays after them, each
// person reaches the sink at most once under --existing skip, and every person whose event was read is delivered
// once the CRM answers again. Push and replay run in-process against the emulator's webhook receiver.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { push } from '../../src/commands/push.js';
import { replay } from '../../src/commands/replay.js';
import { emulator } from '../helpers/emulator.js';
import { runs } from '../helpers/deep.js';
import { tmpDir } from '../helpers/tmp.js';
import { testCtx } from './ledger/seed.js';
import type { FaultKind } from '../../src/sandbox/faults.js';

interface Step {
  /** Events of the input of this step, by index into the events (repeats are retried deliveries). */
  order: number[];
  /** Of this step's requests, those answered 503 (retryable, no retries: the event fails). */
  fail: boolean[];
  /** A push of the input, or a replay of the retryable failures (from the ledger, or re-read --from the input). */
  how: 'push' | 'replay' | 'replay-from';
}

const eventsArb = fc.array(fc.integer({ min: 0, max: 2 }), { minLength: 1, maxLength: 6 }); // each event's person
const stepArb = (n: number) =>
  fc.record({
    order: fc.array(fc.integer({ min: 0, max: n - 1 }), { minLength: 1, maxLength: 8 }),
    fail: fc.array(fc.boolean(), { minLength: 8, maxLength: 8 }),
    how: fc.constantFrom<Step['how']>('push', 'push', 'replay', 'replay-from'),
  });

test('each person reaches the sink at most once, whatever fails, in any order, through reruns and replays', async () => {
  const emu = await emulator();
  const scenario = eventsArb.chain((persons) =>
    fc.record({
      persons: fc.constant(persons),
      steps: fc.array(stepArb(persons.length), { minLength: 1, maxLength: 3 }),
    }),
  );
  await fc.assert(
    fc.asyncProperty(scenario, async ({ persons, steps }) => {
      emu.reset();
      const dir = tmpDir();
      const ledger = join(dir, 'l.db');
      const line = (i: number) =>
        JSON.stringify({
          event_id: `evt_${i}`,
          data: { email: `p${persons[i]}@example.com`, name: `P ${persons[i]}` },
        });
      const sink = { sink: 'webhook', sinkFlags: { url: `${emu.url}/webhook` }, maxRetries: 0, backoffMs: 1 };
      const ctx = testCtx(dir, {});
      const read = new Set<number>();
      for (const [s, step] of steps.entries()) {
        const input = join(dir, `in-${s}.jsonl`);
        writeFileSync(input, step.order.map(line).join('\n') + '\n');
        emu.setFaults({ script: step.fail.map((f): FaultKind | undefined => (f ? '503' : undefined)) as FaultKind[] });
        if (step.how === 'push') {
          step.order.forEach((i) => read.add(i));
          await push({ inputs: [input], dryRun: false, ledger, ...sink, concurrency: 1 }, ctx);
        } else if (existsSync(ledger))
          await replay(
            {
              dryRun: false,
              ledger,
              ...sink,
              concurrency: 1,
              ...(step.how === 'replay-from' ? { from: [input], permanent: true } : {}),
            },
            ctx,
          );
        assertOnce(emu.webhookReceived().deliveries);
      }
      // The CRM answers again: a rerun of every input read, then a replay, deliver every person read, still once each.
      emu.setFaults({});
      for (const s of steps.keys())
        if (steps[s]!.how === 'push')
          await push({ inputs: [join(dir, `in-${s}.jsonl`)], dryRun: false, ledger, ...sink }, ctx);
      if (existsSync(ledger)) await replay({ dryRun: false, ledger, ...sink }, ctx);
      const got = assertOnce(emu.webhookReceived().deliveries);
      assert.deepEqual(
        [...got].sort(),
        [...new Set([...read].map((i) => `p${persons[i]}@example.com`))].sort(),
        'every person read was delivered',
      );
    }),
    {
      numRuns: runs(15, 6), // 15 with LEADLEDGER_TEST_DEEP=1; either way the example below is the first
      seed: 3303,
      // The finding of issue 33: event 0 fails, event 1 of the same person gets through, then the rerun.
      examples: [
        [
          {
            persons: [0, 0],
            steps: [
              { order: [0], fail: [true, false, false, false, false, false, false, false], how: 'push' },
              { order: [1], fail: [false, false, false, false, false, false, false, false], how: 'push' },
            ],
          },
        ],
      ],
    },
  );
});

// The people the receiver got, asserting none twice.
function assertOnce(deliveries: Array<{ body: unknown; status?: number }>): Set<string> {
  const seen = new Set<string>();
  for (const d of deliveries) {
    const email = (d.body as { lead: { email: string } }).lead.email;
    assert.ok(!seen.has(email), `${email} reached the sink twice`);
    seen.add(email);
  }
  return seen;
}
