// The client's --rate pacing (transport/rate-limiter.ts), on a clock the test moves.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { RateLimiter } from '../../src/sinks/transport/rate-limiter.js';

describe('RateLimiter --rate', () => {
  it('keeps the pace when every wake-up comes late (timers overshoot on a loaded machine)', async () => {
    let t = 0;
    // Each sleep ends 1 ms after it was asked to: a timer under load.
    const limiter = new RateLimiter({ rate: 200, now: () => t, sleep: async (ms) => void (t += ms + 1) });
    const stamps: number[] = [];
    for (let i = 0; i < 400; i++) {
      await limiter.acquire();
      stamps.push(t);
    }
    // 400 requests at 200/s: 2 s of slots. Counting each next slot from the late wake-up made it 2.4 s (−17%).
    assert.ok(stamps.at(-1)! <= 2000 + 5, `400 requests took ${stamps.at(-1)} ms`);
    // And never faster than the rate over any second.
    for (let i = 0; i + 201 < stamps.length; i++)
      assert.ok(stamps[i + 201]! - stamps[i]! >= 1000, `more than 201 requests within a second from ${stamps[i]}`);
  });
});
