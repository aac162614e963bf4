// The one retry and backoff policy of every sink (src/sinks/transport/retry.ts): HTTP requests and PostgreSQL batches
// wait alike, and retry as often.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { backoffDelay, DEFAULT_RETRY, retryPolicy, withRetries } from '../../src/sinks/transport/retry.js';

describe('retry policy', () => {
  it("doubles from --backoff up to 30 s, with 0.5-1x jitter; defaults are the flags' defaults", () => {
    const p = retryPolicy({ baseDelayMs: 100 });
    assert.deepEqual(DEFAULT_RETRY, { maxRetries: 5, baseDelayMs: 500, maxDelayMs: 30_000 });
    assert.equal(p.maxRetries, 5);
    assert.deepEqual(
      [1, 2, 3].map((r) => backoffDelay(p, r, () => 1)),
      [100, 200, 400],
    );
    assert.equal(
      backoffDelay(p, 2, () => 0),
      100,
    );
    assert.equal(
      backoffDelay(p, 40, () => 1),
      30_000,
    );
  });

  it('retries what passes with time, maxRetries times, and nothing else', async () => {
    const policy = retryPolicy({ maxRetries: 2, baseDelayMs: 0 });
    let calls = 0;
    await assert.rejects(
      withRetries(
        policy,
        () => true,
        async () => {
          calls++;
          throw new Error('lost connection');
        },
      ),
      /lost connection/,
    );
    assert.equal(calls, 3, 'the first attempt and two retries');
    calls = 0;
    await assert.rejects(
      withRetries(
        policy,
        () => false,
        async () => {
          calls++;
          throw new Error('refused');
        },
      ),
    );
    assert.equal(calls, 1);
    let n = 0;
    assert.equal(
      await withRetries(
        policy,
        () => true,
        async () => {
          if (++n < 2) throw new Error('once');
          return 'ok';
        },
      ),
      'ok',
    );
  });

  it('stops retrying once the run is stopped', async () => {
    const stop = new AbortController();
    let calls = 0;
    await assert.rejects(
      withRetries(
        retryPolicy({ maxRetries: 5, baseDelayMs: 0 }),
        () => true,
        async () => {
          calls++;
          stop.abort();
          throw new Error('lost');
        },
        stop.signal,
      ),
    );
    assert.equal(calls, 1);
  });
});
