// `init` asks what it cannot infer: the country of national phone numbers, when most of the samples' numbers are
// written without a country code. On a terminal it asks (the prompt is injected here: a pseudo-terminal is not
// needed to check what is done with the answer); off one it keeps what it assumed, and says so.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { planInit } from '../../src/commands/init.js';
import { askCountry } from '../../src/cli/run-init.js';
import { runCli } from '../helpers/cli.js';
import { tmpDir } from '../helpers/tmp.js';
import { testCtx } from '../commands/ledger/seed.js';

// Four people, three of them with a national number (no +55).
function sample(dir: string): string {
  const f = join(dir, 'leads.csv');
  writeFileSync(
    f,
    [
      'id,email,phone',
      '1,ana@example.com,(11) 98765-0101',
      '2,bo@example.com,(21) 99876-0202',
      '3,cy@example.com,11 3456-7890',
      '4,di@example.com,+55 11 97654-3210',
    ].join('\n') + '\n',
  );
  return f;
}

test("asked on a terminal, the country answered is the config's; asked nothing when --default-country says it", async () => {
  const dir = tmpDir();
  const f = sample(dir);
  const asked: unknown[] = [];
  const plan = await planInit(
    {
      samples: [f],
      askCountry: async (q) => {
        asked.push(q);
        return 'BR';
      },
    },
    testCtx(dir, { LANG: 'en_US.UTF-8' }),
  );
  assert.deepEqual(asked, [{ national: 3, total: 4, assumed: 'US' }]);
  assert.equal(plan.config.defaultCountry, 'BR');
  assert.deepEqual(plan.phones, { country: 'BR', from: 'the answer at the terminal' });

  // An empty answer keeps the one assumed.
  const kept = await planInit(
    { samples: [f], askCountry: async () => undefined },
    testCtx(dir, { LANG: 'en_US.UTF-8' }),
  );
  assert.equal(kept.config.defaultCountry, 'US');

  const given = await planInit(
    {
      samples: [f],
      defaultCountry: 'PT',
      askCountry: async () => assert.fail('a country given is not asked'),
    },
    testCtx(dir, {}),
  );
  assert.equal(given.config.defaultCountry, 'PT');
});

test('the terminal prompt asks again until the answer is a country code', async () => {
  const input = new PassThrough();
  const output = new PassThrough();
  let shown = '';
  output.on('data', (d: Buffer) => (shown += d.toString()));
  const answer = askCountry({ national: 3, total: 4, assumed: 'US' }, { input, output });
  input.write('Brazil\n');
  await new Promise((r) => setImmediate(r));
  input.write('br\n');
  assert.equal(await answer, 'BR');
  assert.match(shown, /3 of 4 phone numbers have no country code\. Which country are they from .*\[US\]\? /);
  assert.match(shown, /'Brazil' is not a country code known for phone numbers/);
});

test('off a terminal init keeps what it assumed and says so', async () => {
  const dir = tmpDir();
  const f = sample(dir);
  const assumed = await runCli(['init', f, '-n'], { cwd: dir, env: { LANG: 'pt_BR.UTF-8' } });
  assert.equal(assumed.code, 0, assumed.stderr);
  assert.match(
    assumed.stderr,
    /^warning: most phone numbers of the samples \(3 of 4\) have no country code: assumed BR \(from LANG=pt_BR\.UTF-8\); pass --default-country to choose another$/m,
  );
  const none = await runCli(['init', f, '-n'], { cwd: dir });
  assert.match(
    none.stderr,
    /\(3 of 4\) have no country code, and no country was found .*pass --default-country, e\.g\. BR/,
  );
  const given = await runCli(['init', f, '-n', '--default-country', 'BR'], { cwd: dir });
  assert.doesNotMatch(given.stderr, /no country code/);
});
