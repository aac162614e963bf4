// A sink of one lead a request with a claim block (RD Station's): the block is claimed in one ledger call before any
// of its requests leaves, each lead is still its own request, outcomes are settled in grouped calls, and a stop in
// the middle of a block releases the claimed leads it never sent. Fakes (fakes.ts) stand for the ledger and the sink.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Decision } from '../../src/decide/types.js';
import { Deliverer } from '../../src/deliver/deliver.js';
import type { ClaimInput, Settlement } from '../../src/ledger/types.js';
import { FakeLedger, FakeSink } from './fakes.js';

const decision = (key: string): Decision => ({
  kind: 'new',
  reason: 'x',
  source: 's',
  line: 1,
  key,
  event: { kind: 'event', source: 's', line: 1, key, keyKind: 'id', payloadHash: 'h', lead: { email: `${key}@x.io` } },
});

/** A fake ledger that counts its claim and settle calls, and checks each send was claimed before it left. */
function counted(ledger: FakeLedger): { claims: number; settles: number } {
  const calls = { claims: 0, settles: 0 };
  const claimNew = ledger.claimNew.bind(ledger);
  const settle = ledger.settle.bind(ledger);
  ledger.claimNew = (items: ClaimInput[], runId: number, sink: string) => {
    calls.claims++;
    return claimNew(items, runId, sink);
  };
  ledger.settle = (s: Settlement[]) => {
    calls.settles++;
    settle(s);
  };
  return calls;
}

describe('claim blocks (one lead a request)', () => {
  it('claims a block in one call, sends one lead a request, settles in fewer calls than requests', async () => {
    const ledger = new FakeLedger();
    const calls = counted(ledger);
    const sink = new FakeSink({ maxBatch: 1 }, (item) => {
      assert.equal(ledger.status(item.key), 'pending', 'claimed before its request left');
      return { kind: 'created', crmId: `c-${item.key}` };
    });
    sink.capabilities.claimBlock = 16;
    const d = new Deliverer({
      ledger: ledger.store,
      sink,
      runId: 2,
      namespace: 'leadledger',
      concurrency: 4,
      existing: 'skip',
      stop: new AbortController().signal,
      hardStop: new AbortController().signal,
    });
    for (let i = 0; i < 40; i++) await d.enqueue(decision(`k${i}`));
    await d.finish();
    assert.equal(sink.sent.length, 40, 'one request a lead');
    assert.ok(sink.sent.every((b) => b.length === 1));
    assert.equal(calls.claims, 3, '16 + 16 + 8');
    assert.ok(calls.settles < 40, `settle calls: ${calls.settles}`);
    assert.equal(d.counts.sent, 40);
    assert.equal(ledger.rowsInStatus('sent').length, 40);
  });

  it('a stop in the middle of a block releases the claimed leads it never sent, and leaves none pending', async () => {
    const ledger = new FakeLedger();
    const stop = new AbortController();
    let n = 0;
    const sink = new FakeSink({ maxBatch: 1 }, () => {
      if (++n === 3) stop.abort();
      return { kind: 'created', crmId: 'c' };
    });
    sink.capabilities.claimBlock = 16;
    const d = new Deliverer({
      ledger: ledger.store,
      sink,
      runId: 2,
      namespace: 'leadledger',
      concurrency: 1,
      existing: 'skip',
      stop: stop.signal,
      hardStop: new AbortController().signal,
    });
    for (let i = 0; i < 16; i++) await d.enqueue(decision(`k${i}`));
    await d.finish();
    assert.equal(sink.sent.length, 3);
    assert.equal(d.counts.sent, 3);
    assert.equal(d.counts.released, 13);
    assert.equal(ledger.rowsInStatus('pending').length, 0, 'nothing left pending');
    assert.equal(ledger.rows.size, 3, 'the unsent claims were undone');
  });
});
