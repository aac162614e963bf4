// onAbort: the waits of a run share one 'abort' listener on its stop signal, removed when the last wait ends.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { getEventListeners } from 'node:events';
import { onAbort } from '../../src/sinks/transport/on-abort.js';
import { pause } from '../../src/sinks/transport/retry.js';
import { realSleep } from '../../src/sinks/transport/rate-limiter.js';

test('many watchers of one signal: one listener, gone when the last stops watching', () => {
  const c = new AbortController();
  const stops = Array.from({ length: 40 }, () => onAbort(c.signal, () => assert.fail('not aborted')));
  assert.equal(getEventListeners(c.signal, 'abort').length, 1);
  for (const s of stops) s();
  assert.equal(getEventListeners(c.signal, 'abort').length, 0);
  // A new watch after the last one ended listens again.
  const again = onAbort(c.signal, () => undefined);
  assert.equal(getEventListeners(c.signal, 'abort').length, 1);
  again();
});

test('an abort calls every watcher still watching, once; an aborted signal calls at once', () => {
  const c = new AbortController();
  const called: number[] = [];
  const stops = [0, 1, 2].map((i) => onAbort(c.signal, () => called.push(i)));
  stops[1]!();
  c.abort();
  c.abort();
  assert.deepEqual(called, [0, 2]);
  onAbort(c.signal, () => called.push(9));
  assert.deepEqual(called, [0, 2, 9]);
});

test('40 concurrent rate-limiter sleeps and backoffs on one stop signal add one listener, and wake on the stop', async () => {
  const c = new AbortController();
  const sleeps = Array.from({ length: 20 }, () =>
    realSleep(60_000, c.signal).then(
      () => 'slept',
      () => 'woken',
    ),
  );
  const pauses = Array.from({ length: 20 }, () => pause(60_000, c.signal).then(() => 'woken'));
  assert.equal(getEventListeners(c.signal, 'abort').length, 1);
  c.abort();
  assert.deepEqual(new Set(await Promise.all([...sleeps, ...pauses])), new Set(['woken']));
  // Short waits that end by themselves leave no listener behind.
  const d = new AbortController();
  await Promise.all([realSleep(1, d.signal), pause(1, d.signal)]);
  assert.equal(getEventListeners(d.signal, 'abort').length, 0);
});
