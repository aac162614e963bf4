// The deliver stage's in-doubt recovery, by what the sink can do: look a person up (lookup, lookupMany), find what it
// holds by downstream key (findWritten), drop a repeated key (honoursIdempotencyKey), or none of these. A fake
// ledger and a fake sink (fakes.ts) stand for the real ones: what is tested is the policy, and each capability is a
// method the sink has or lacks, as deliver/ reads it.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { RESEND_IN_DOUBT } from '../../src/decide/decide.js';
import { Deliverer } from '../../src/deliver/deliver.js';
import { inDoubtResolution } from '../../src/deliver/resolve-command.js';
import { CredentialsError } from '../../src/errors.js';
import type { ConfiguredSink } from '../../src/sinks/definition.js';
import { FakeLedger, FakeSink, inDoubtRow } from './fakes.js';

const ann = { email: 'ann@x.com', name: 'Ann' };
const bob = { email: 'bob@x.com', name: 'Bob' };
const cid = { email: 'cid@x.com', name: 'Cid' };

function deliverer(ledger: FakeLedger, sink: FakeSink): Deliverer {
  return new Deliverer({
    ledger: ledger.store,
    sink,
    runId: 2,
    namespace: 'leadledger',
    concurrency: 2,
    existing: 'skip',
    stop: new AbortController().signal,
    hardStop: new AbortController().signal,
  });
}

const chosen: ConfiguredSink = {
  name: 'fake',
  shown: () => ({}),
  replayArgs: () => ['--fake-url', 'https://crm.example'],
  open: () => Promise.reject(new Error('not opened in these tests')),
};

describe('in-doubt recovery by what the sink can do', () => {
  it('lookup: a person found is settled as sent (recovered) with the CRM id; one not found is re-sent with its own key', async () => {
    const ledger = new FakeLedger([inDoubtRow('a', ann), inDoubtRow('b', bob)]);
    const asked: string[] = [];
    const keys: Array<[string, string | undefined]> = [];
    const sink = new FakeSink({
      lookup: async (k, _signal, dk) => {
        asked.push(k);
        keys.push([k, dk]);
        return k === ann.email ? { found: true, crmId: 'crm-ann' } : { found: false };
      },
    });
    const d = deliverer(ledger, sink);
    assert.deepEqual(await d.recoverInDoubt(), { recovered: 1, resent: 1, left: 0 });
    assert.deepEqual(asked.sort(), [ann.email, bob.email]);
    assert.deepEqual(
      keys.sort(),
      [
        [ann.email, 'dk-a'],
        [bob.email, 'dk-b'],
      ].sort(),
      'each lookup carries the key its event was sent with',
    );
    assert.equal(ledger.status('a'), 'sent');
    assert.equal(ledger.rows.get('a')!.outcome, 'recovered');
    assert.equal(ledger.rows.get('a')!.crm_id, 'crm-ann');
    assert.deepEqual(
      sink.items.map((i) => [i.key, i.downstreamKey]),
      [['b', 'dk-b']],
      'only the one not found, with the key it was first sent with',
    );
    assert.equal(ledger.status('b'), 'sent');
    assert.equal(d.counts.recovered, 1);
    assert.equal(d.counts.sent, 1);
    assert.equal(d.counts.inDoubt, 0);
    const r = inDoubtResolution({ ledger: 'l.db' }, chosen, sink);
    assert.equal(r.command, 'leadledger replay --in-doubt --sink fake --fake-url https://crm.example --ledger l.db');
    assert.match(r.how, /looked up in the CRM first/);
  });

  it('lookupMany: people are looked up a batch at a time (maxBatch), never one request each', async () => {
    const rows = Array.from({ length: 5 }, (_, i) => inDoubtRow(`k${i}`, { email: `p${i}@x.com` }));
    const ledger = new FakeLedger(rows);
    const batches: string[][] = [];
    const sink = new FakeSink({
      maxBatch: 2,
      lookupMany: async (keys) => {
        batches.push(keys);
        return keys.map((k) => (k === 'p0@x.com' || k === 'p3@x.com' ? { found: true } : { found: false }));
      },
    });
    const d = deliverer(ledger, sink);
    assert.deepEqual(await d.recoverInDoubt(), { recovered: 2, resent: 3, left: 0 });
    assert.deepEqual(batches.map((b) => b.length).sort(), [1, 2, 2], 'five people in batches of at most two');
    assert.deepEqual(sink.items.map((i) => i.key).sort(), ['k1', 'k2', 'k4']);
    assert.equal(ledger.status('k0'), 'sent');
    assert.equal(ledger.status('k3'), 'sent');
  });

  it('lookupMany that fails: its people stay in doubt, with why; none is re-sent blind', async () => {
    const ledger = new FakeLedger([inDoubtRow('a', ann), inDoubtRow('b', bob)]);
    const sink = new FakeSink({
      lookupMany: async () => {
        throw new Error('connection lost');
      },
    });
    const d = deliverer(ledger, sink);
    assert.deepEqual(await d.recoverInDoubt(), { recovered: 0, resent: 0, left: 2 });
    assert.equal(sink.sent.length, 0);
    assert.deepEqual(d.inDoubtReasons, { 'lookup failed: connection lost': 2 });
    assert.equal(ledger.status('a'), 'in_doubt');
  });

  it('a lookup refused for credentials stops the run: nothing is re-sent, the events stay in doubt', async () => {
    const ledger = new FakeLedger([inDoubtRow('a', ann)]);
    const sink = new FakeSink({
      lookup: async () => {
        throw new CredentialsError('401');
      },
    });
    await assert.rejects(deliverer(ledger, sink).recoverInDoubt(), CredentialsError);
    assert.equal(sink.sent.length, 0);
    assert.equal(ledger.status('a'), 'in_doubt');
  });

  it('an event without a natural key cannot be looked up: re-sent only where the destination drops repeats', async () => {
    const lookup = async () => ({ found: false }) as const;
    const noKey = inDoubtRow('p', { phone: '' }, { natural_key: null });
    const plain = new FakeLedger([noKey]);
    const d = deliverer(plain, new FakeSink({ lookup }));
    assert.deepEqual(await d.recoverInDoubt(), { recovered: 0, resent: 0, left: 1 });
    const dropping = new FakeLedger([noKey]);
    const sink = new FakeSink({ lookup, honoursIdempotencyKey: true });
    assert.deepEqual(await deliverer(dropping, sink).recoverInDoubt(), { recovered: 0, resent: 1, left: 0 });
  });

  it('findWritten: what the destination holds by downstream key is settled; the rest stays in doubt (it may have been rotated)', async () => {
    const ledger = new FakeLedger([inDoubtRow('a', ann), inDoubtRow('b', bob)]);
    const sink = new FakeSink({ findWritten: async (dks) => new Set(dks.filter((k) => k === 'dk-a')) });
    const d = deliverer(ledger, sink);
    assert.deepEqual(await d.recoverInDoubt(), { recovered: 1, resent: 0, left: 1 });
    assert.equal(sink.sent.length, 0, 'nothing written again without --resend');
    assert.equal(ledger.status('a'), 'sent');
    assert.equal(ledger.status('b'), 'in_doubt');
    assert.match(Object.keys(d.inDoubtReasons)[0]!, /not in Fake CRM .*rotated.*replay --in-doubt --resend/);
    const r = inDoubtResolution({}, chosen, sink);
    assert.match(r.command, /^leadledger replay --in-doubt --resend --sink fake/);
    assert.match(r.nextPush, /settles those it finds there first, and writes none of the others/);
  });

  it('findWritten with --resend (blind): what is not found is written again, with its own key', async () => {
    const ledger = new FakeLedger([inDoubtRow('a', ann), inDoubtRow('b', bob)]);
    const sink = new FakeSink({ findWritten: async () => new Set(['dk-a']) });
    const d = deliverer(ledger, sink);
    assert.deepEqual(await d.recoverInDoubt({ blind: true }), { recovered: 1, resent: 1, left: 0 });
    assert.deepEqual(
      sink.items.map((i) => i.downstreamKey),
      ['dk-b'],
    );
  });

  it('a sink with lookup and findWritten looks people up, and does not read it back', async () => {
    const ledger = new FakeLedger([inDoubtRow('a', ann)]);
    let read = 0;
    const sink = new FakeSink({
      lookup: async () => ({ found: true }),
      findWritten: async () => {
        read++;
        return new Set();
      },
    });
    assert.deepEqual(await deliverer(ledger, sink).recoverInDoubt(), { recovered: 1, resent: 0, left: 0 });
    assert.equal(read, 0);
  });

  it('honoursIdempotencyKey without lookups: every event is re-sent with the key it was first sent with', async () => {
    const ledger = new FakeLedger([inDoubtRow('a', ann), inDoubtRow('b', bob), inDoubtRow('c', cid)]);
    const sink = new FakeSink({ honoursIdempotencyKey: true, maxBatch: 2 });
    const d = deliverer(ledger, sink);
    assert.deepEqual(await d.recoverInDoubt(), { recovered: 0, resent: 3, left: 0 });
    assert.deepEqual(sink.items.map((i) => i.downstreamKey).sort(), ['dk-a', 'dk-b', 'dk-c']);
    assert.ok(
      sink.sent.every((b) => b.length <= 2),
      'in the sink’s batches',
    );
    assert.deepEqual(
      [...ledger.rows.values()].map((r) => r.status),
      ['sent', 'sent', 'sent'],
    );
    const r = inDoubtResolution({}, chosen, sink);
    assert.doesNotMatch(r.command, /--resend/);
    assert.match(r.how, /re-sent with the same key/);
  });

  it('none of these: events stay in doubt, counted with the command that re-sends them; --resend re-sends them', async () => {
    const ledger = new FakeLedger([inDoubtRow('a', ann), inDoubtRow('b', bob)]);
    const sink = new FakeSink();
    const d = deliverer(ledger, sink);
    assert.deepEqual(await d.recoverInDoubt(), { recovered: 0, resent: 0, left: 2 });
    assert.equal(sink.sent.length, 0);
    assert.equal(d.counts.inDoubt, 2);
    assert.deepEqual(d.inDoubtReasons, {
      [`in doubt since an earlier run: fake can neither look it up nor drop a repeat; ${RESEND_IN_DOUBT} re-sends it`]: 2,
    });
    assert.equal(ledger.status('a'), 'in_doubt', 'not even claimed');
    const r = inDoubtResolution({}, chosen, sink);
    assert.match(r.command, /--resend/);
    assert.match(r.nextPush, /leaves them in doubt/);

    const blind = deliverer(ledger, sink);
    assert.deepEqual(await blind.recoverInDoubt({ blind: true }), { recovered: 0, resent: 2, left: 0 });
    assert.deepEqual(sink.items.map((i) => i.downstreamKey).sort(), ['dk-a', 'dk-b']);
  });

  it('an event whose lead is no longer stored stays in doubt, whatever the sink can do', async () => {
    const ledger = new FakeLedger([inDoubtRow('a', undefined, { natural_key: ann.email })]);
    const sink = new FakeSink({ lookup: async () => ({ found: false }), honoursIdempotencyKey: true });
    const d = deliverer(ledger, sink);
    assert.deepEqual(await d.recoverInDoubt(), { recovered: 0, resent: 0, left: 1 });
    assert.match(Object.keys(d.inDoubtReasons)[0]!, /no longer stored: replay --from/);
  });

  it('a re-send the CRM answers in doubt again stays in doubt, with the answer', async () => {
    const ledger = new FakeLedger([inDoubtRow('a', ann)]);
    const sink = new FakeSink({ honoursIdempotencyKey: true }, () => ({ kind: 'unknown', reason: 'timeout' }));
    const d = deliverer(ledger, sink);
    await d.recoverInDoubt();
    assert.equal(ledger.status('a'), 'in_doubt');
    assert.deepEqual(d.inDoubtReasons, { timeout: 1 });
  });
});
