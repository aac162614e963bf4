import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { createConfirm } from '../../../src/cli/confirm.js';
import { UsageError } from '../../../src/errors.js';

function tty(answer?: string) {
  const input = Object.assign(new PassThrough(), { isTTY: true });
  const output = new PassThrough();
  let asked = '';
  output.on('data', (b: Buffer) => (asked += b.toString()));
  if (answer !== undefined) setImmediate(() => input.write(answer + '\n'));
  return { io: { input, output }, asked: () => asked, input };
}

test('on a terminal the question is asked with [y/N]; only y or yes is yes', async () => {
  for (const [answer, expected] of [
    ['y', true],
    ['YES', true],
    ['', false],
    ['n', false],
    ['sure', false],
  ] as const) {
    const t = tty(answer);
    assert.equal(
      await createConfirm({ command: 'ledger forget' }, t.io)('Forget 3 events?'),
      expected,
      `answer '${answer}'`,
    );
    assert.equal(t.asked(), 'Forget 3 events? [y/N] ');
  }
});

test('end of input at the prompt is a no', async () => {
  const t = tty();
  setImmediate(() => t.input.end());
  assert.equal(await createConfirm({ command: 'ledger forget' }, t.io)('Forget 1 event?'), false);
});

test('--yes answers without asking; without a terminal and without --yes it is a usage error naming --yes', async () => {
  const t = tty();
  assert.equal(await createConfirm({ yes: true, command: 'ledger prune' }, t.io)('Delete?'), true);
  assert.equal(t.asked(), '');
  const pipe = { input: new PassThrough(), output: new PassThrough() };
  await assert.rejects(
    createConfirm({ command: 'ledger prune' }, pipe)('Delete 2 sent events?'),
    (e: Error) =>
      e instanceof UsageError &&
      e.exitCode === 2 &&
      /Delete 2 sent events\?/.test(e.message) &&
      /--yes/.test(e.message) &&
      /--dry-run/.test(e.message),
  );
});
