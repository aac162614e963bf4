// Odd phones as exports have them: a lead with a valid email is kept whatever its phone, the phone left out (or
// sent as written, by config) with a warning; the default country comes from the flag, the config, then the
// locale, and the summary says which.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { jsonReport, runCli } from '../helpers/cli.js';
import { tmpDir } from '../helpers/tmp.js';

const CSV = [
  'event_id,email,phone,name',
  'e1,ana.souza@exemplo.com.br,(11) 98765-4321,Ana Souza',
  'e2,jane.miller@example.com,"5,5119E+12",Jane Miller',
  'e3,joao.silva@exemplo.com.br,12,João Silva',
  "e4,,'+55 11 98765-4322,Maria Sem Email",
  'e5,,123,Pedro Sem Email',
  '',
].join('\n');

async function push(dir: string, extra: string[], env: Record<string, string | undefined> = {}) {
  const input = join(dir, 'leads.csv');
  writeFileSync(input, CSV);
  const out = join(dir, `out-${Math.random().toString(36).slice(2)}.jsonl`);
  const r = await runCli(
    [
      'push',
      input,
      '--sink',
      'jsonl',
      '--output',
      out,
      '--ledger',
      join(dir, `l-${Math.random()}.db`),
      '--json',
      ...extra,
    ],
    { env, cwd: dir },
  );
  assert.equal(r.code, 0, r.stderr);
  const leads = readFileSync(out, 'utf8')
    .trim()
    .split('\n')
    .map((l) => (JSON.parse(l) as { lead: Record<string, string> }).lead);
  return { report: jsonReport(r), leads, stderr: r.stderr };
}

test('a phone that cannot be read leaves the lead kept, its phone left out, with a warning; without an email it is invalid', async () => {
  const dir = tmpDir();
  const { report, leads, stderr } = await push(dir, ['--default-country', 'BR']);
  assert.equal(report.counts.new, 4);
  assert.equal(report.counts.invalid, 1);
  const byEmail = new Map(leads.map((l) => [l.email ?? l.name, l]));
  assert.equal(byEmail.get('ana.souza@exemplo.com.br')?.phone, '+5511987654321', 'a national number read in BR');
  assert.equal(byEmail.get('jane.miller@example.com')?.phone, undefined, "Excel's notation is never a number");
  assert.equal(byEmail.get('joao.silva@exemplo.com.br')?.phone, undefined);
  assert.equal(byEmail.get('Maria Sem Email')?.phone, '+5511987654322', "Excel's apostrophe is no part of the phone");
  assert.deepEqual(report.warnings.reasons, [
    {
      message: "phone: '…' is Excel's scientific notation: its digits are lost (re-export the column as text)",
      count: 1,
    },
    { message: "phone: '…' is not a valid phone number: left out", count: 1 },
  ]);
  assert.match(
    stderr,
    /invalid: .*leads\.csv:6 \[e5\] phone: '123' is not a valid phone number, and there is no email/,
  );
  assert.match(stderr, /e\.g\. .*leads\.csv:3 \[e2\] phone: '5,5119E\+12' is Excel's scientific notation/);
});

test('with phones.invalid "as-written" in the config the phone is sent as written, but never Excel\'s notation', async () => {
  const dir = tmpDir();
  writeFileSync(join(dir, 'leadledger.config.json'), JSON.stringify({ phones: { invalid: 'as-written' } }));
  const { report, leads } = await push(dir, ['--default-country', 'BR']);
  const byEmail = new Map(leads.map((l) => [l.email ?? l.name, l]));
  assert.equal(byEmail.get('joao.silva@exemplo.com.br')?.phone, '12');
  assert.equal(byEmail.get('jane.miller@example.com')?.phone, undefined);
  assert.deepEqual(
    report.warnings.reasons.find((w) => w.message === "phone: '…' is not a valid phone number: sent as written"),
    { message: "phone: '…' is not a valid phone number: sent as written", count: 1 },
  );
});

test('the default country: --default-country, then the config, then LC_ALL, LC_TELEPHONE, LANG; the report says which', async () => {
  const cases: Array<[string[], Record<string, string>, string | undefined, string | undefined, object?]> = [
    [['--default-country', 'br'], { LANG: 'en_US.UTF-8' }, 'BR', '--default-country'],
    [[], { LEADLEDGER_DEFAULT_COUNTRY: 'BR', LANG: 'en_US.UTF-8' }, 'BR', 'LEADLEDGER_DEFAULT_COUNTRY'],
    [[], { LANG: 'en_US.UTF-8' }, 'BR', "the config's defaultCountry", { defaultCountry: 'BR' }],
    [[], { LC_ALL: 'pt_BR.UTF-8', LANG: 'en_US.UTF-8' }, 'BR', 'LC_ALL=pt_BR.UTF-8'],
    [[], { LC_TELEPHONE: 'pt_BR.UTF-8', LANG: 'en_US.UTF-8' }, 'BR', 'LC_TELEPHONE=pt_BR.UTF-8'],
    [[], { LANG: 'pt_BR.UTF-8' }, 'BR', 'LANG=pt_BR.UTF-8'],
    [[], { LC_ALL: 'C', LANG: 'pt_BR.UTF-8' }, undefined, undefined],
  ];
  for (const [flags, env, country, from, config] of cases) {
    const dir = tmpDir();
    if (config) writeFileSync(join(dir, 'leadledger.config.json'), JSON.stringify(config));
    const { report, leads, stderr } = await push(dir, flags, env);
    const what = JSON.stringify({ flags, env });
    assert.equal(report.phones?.defaultCountry, country, what);
    assert.equal(report.phones?.from, from, what);
    assert.equal(report.phones?.nationalNumbers, 3, what);
    const ana = leads.find((l) => l.email === 'ana.souza@exemplo.com.br');
    assert.equal(ana?.phone, country ? '+5511987654321' : undefined, what);
    if (country)
      assert.match(
        stderr,
        new RegExp(`phones: national numbers read as BR \\(from ${from!.replace(/[.()]/g, '\\$&')}\\): 3 in this run`),
        what,
      );
    else
      assert.match(
        stderr,
        /phones: no default country to read national numbers in: 3 in this run could not be read/,
        what,
      );
  }
});

test('a --default-country that names no country is a usage error naming where it came from', async () => {
  const dir = tmpDir();
  writeFileSync(join(dir, 'x.csv'), CSV);
  const r = await runCli(['push', join(dir, 'x.csv'), '--dry-run', '--ledger', join(dir, 'l.db')], {
    env: { LEADLEDGER_DEFAULT_COUNTRY: 'XX' },
  });
  assert.equal(r.code, 2);
  assert.match(r.stderr, /LEADLEDGER_DEFAULT_COUNTRY 'XX' is not an ISO 3166 country code/);
});
