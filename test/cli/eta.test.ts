// The progress line's ETA from the slowest stage, the CRM's pace once sending has begun, and the send rate shown.
// No wall clock: every time is given.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Progress } from '../../src/commands/context.js';
import { progressText, SendMeter } from '../../src/cli/output.js';

test('after a first burst the CRM lets through, the ETA follows its pace, not the burst', () => {
  // 30,000 to send, all read and queued. HubSpot-style: 10,000 settle in the first second, then 100 a second.
  const meter = new SendMeter();
  const base: Progress = {
    phase: 'sending',
    read: 30_000,
    toSend: 30_000,
    settled: 0,
    startedAt: 0,
    sendingSince: 0,
    bytesRead: 3e6,
    bytesTotal: 3e6,
  };
  let line = '';
  for (let t = 1; t <= 60; t++) {
    const p = { ...base, settled: 10_000 + 100 * (t - 1) };
    line = progressText(p, t * 1000, meter.rate(p, t * 1000));
  }
  // 15,900 settled after 60 s; 14,100 to go at 100 a second: 141 s (the rate since the start, 265/s, said 53 s).
  assert.equal(line, '100% of 3.0 MB · read 30000 · 500 read/s · sent 15900/30000 · 100 sent/s · ETA 2 min 21 s');
});

test('reading ahead of a slow CRM: the ETA is the sends the whole input brings at the send rate', () => {
  // A quarter of the input read in 2 s (reading alone would end in 6 s more); 400 queued, 100 settled in 2 s: the
  // whole input brings 1,600 sends, 1,500 to go at 50 a second.
  const p: Progress = {
    phase: 'sending',
    read: 1000,
    toSend: 400,
    settled: 100,
    startedAt: 0,
    sendingSince: 0,
    bytesRead: 250_000,
    bytesTotal: 1_000_000,
  };
  assert.equal(progressText(p, 2000), '25% of 1.0 MB · read 1000 · 500 read/s · sent 100/400 · 50 sent/s · ETA 30 s');
  // A CRM that settled nothing lately has no end to promise: the rate shows it, the ETA is left out.
  const meter = new SendMeter();
  meter.rate(p, 2000);
  assert.equal(
    progressText(p, 12_000, meter.rate(p, 12_000)),
    '25% of 1.0 MB · read 1000 · 83 read/s · sent 100/400 · 0.00 sent/s',
  );
});

test('a dry-run has reading only; stdin has no share and no ETA', () => {
  const dry: Progress = {
    phase: 'reading',
    read: 1000,
    toSend: 0,
    settled: 0,
    startedAt: 0,
    bytesRead: 1e8,
    bytesTotal: 4e8,
  };
  assert.equal(progressText(dry, 10_000), '25% of 400.0 MB · read 1000 · 100 read/s · ETA 30 s');
  const stdin: Progress = { phase: 'sending', read: 1000, toSend: 400, settled: 100, startedAt: 0, sendingSince: 0 };
  assert.equal(progressText(stdin, 2000), 'read 1000 · 500 read/s · sent 100/400 · 50 sent/s');
});
