// Lines of logs as servers and loggers write them: the body a handler logged at the end of a message, an access
// log's fields and its escaping, and what tells a text log from a CSV export.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { sniffFormat } from '../../src/sources/detect-format.js';
import { bodyInText, messageText, pythonLiteral } from '../../src/sources/log-text.js';
import { accessLogFields, logfmtFields, looksLikeTextLog, unescapeField } from '../../src/sources/read-text-log.js';
import { parseLine } from '../../src/sources/read-jsonl.js';
import { readAll, records, scratch } from './helpers.js';

describe('the body at the end of a message', () => {
  it('finds JSON after the words of a message, and says how it was written', () => {
    const lambda =
      '2025-03-18T23:01:10.123Z\t6f1c2b3a\tINFO\tlead received {"email":"rita@example.com","phone":"+55 41 99999-7001"}\n';
    assert.deepEqual(bodyInText(lambda), {
      body: { email: 'rita@example.com', phone: '+55 41 99999-7001' },
      how: 'JSON',
    });
    // Monolog writes its context, then its extra ([]); a bracketed time before the words is no body.
    assert.deepEqual(bodyInText('[2025-03-18 20:01:10] production.INFO: lead {"email":"a@example.com"} []'), {
      body: { email: 'a@example.com' },
      how: 'JSON',
    });
    assert.deepEqual(bodyInText('webhook {\\"email\\":\\"b@example.com\\"}')?.body, { email: 'b@example.com' });
    assert.deepEqual(bodyInText("INFO lead received {'email': 'c@example.com', 'opt_in': True, 'tags': None}"), {
      body: { email: 'c@example.com', opt_in: true, tags: null },
      how: 'Python dict',
    });
    assert.deepEqual(bodyInText('POST /hooks email=d%40example.com&name=Ana+Lima'), {
      body: { email: 'd@example.com', name: 'Ana Lima' },
      how: 'form',
    });
    // A list of events is a body; a list of no object, or an empty object, is not.
    assert.deepEqual(bodyInText('batch [{"email":"e@example.com"}]')?.body, [{ email: 'e@example.com' }]);
    assert.equal(bodyInText('tags [1, 2] and {}'), undefined);
  });

  it('finds none in a line of words, a setting, or a path with a query', () => {
    for (const line of [
      'START RequestId: 6f1c2b3a-4d5e-4f60-8a9b-0c1d2e3f4a5b Version: $LATEST',
      'Started lead-intake.service - Lead intake webhook receiver.',
      'Listening on port 8080',
      'retry=3',
      'GET /leads?utm_source=x&utm_medium=y',
      'config {retries: 3}',
      '',
    ])
      assert.equal(bodyInText(line), undefined, line);
  });

  it("reads the journal's list of bytes as text, colours taken out", () => {
    const bytes = [...Buffer.from('\u001b[32mINFO\u001b[0m lead {"email":"f@example.com"}')];
    const text = messageText(bytes);
    assert.equal(text, '\u001b[32mINFO\u001b[0m lead {"email":"f@example.com"}');
    assert.deepEqual(bodyInText(text!)?.body, { email: 'f@example.com' });
    // Bytes that are not UTF-8 are read as Windows-1252; a list of anything else is no text.
    assert.equal(messageText([0x4a, 0x6f, 0x73, 0xe9]), 'José');
    assert.equal(messageText([1, 'a']), undefined);
    assert.equal(messageText([256]), undefined);
  });

  it('reads Python literals as JSON would give them, and nothing that is not one', () => {
    assert.deepEqual(pythonLiteral("{'a': [1, 2.5, (3, 'x')], \"b\": 'it\\'s', 'c': {}}"), {
      a: [1, 2.5, [3, 'x']],
      b: "it's",
      c: {},
    });
    assert.equal(pythonLiteral("{'a': object()}"), undefined);
    assert.equal(pythonLiteral("{'a': 1} tail"), undefined);
  });
});

describe('an access log line', () => {
  const nginx =
    '198.51.100.7 - - [18/Mar/2025:20:03:44 -0300] "POST /api/leads HTTP/1.1" 201 27 "-" "axios/1.6.7" "{\\x22name\\x22:\\x22Lu\\xC3\\xADs\\x22}"';

  it('is read as the fields nginx names, its body unescaped as nginx escapes it', () => {
    assert.deepEqual(accessLogFields(nginx), {
      remote_addr: '198.51.100.7',
      time_local: '18/Mar/2025:20:03:44 -0300',
      request: 'POST /api/leads HTTP/1.1',
      method: 'POST',
      path: '/api/leads',
      status: '201',
      http_referer: '-',
      http_user_agent: 'axios/1.6.7',
      request_body: '{"name":"Luís"}',
    });
  });

  it('has no body where its last field is "-" or the user agent (the combined format alone)', () => {
    const get = accessLogFields(
      '10.0.3.17 - - [18/Mar/2025:20:00:01 -0300] "GET /healthz HTTP/1.1" 200 2 "-" "kube-probe/1.29" "-"',
    );
    assert.equal(get?.method, 'GET');
    assert.equal(get?.request_body, undefined);
    const combined = accessLogFields(
      '127.0.0.1 - frank [10/Oct/2000:13:55:36 -0700] "POST /form HTTP/1.0" 200 2326 "http://www.example.com/start.html?a=1&b=2" "Mozilla/4.08 [en] (Win98; I ;Nav)"',
    );
    assert.equal(combined?.request_body, undefined);
    assert.equal(combined?.http_referer, 'http://www.example.com/start.html?a=1&b=2');
  });

  it("takes Apache's escapes, and a form posted as it came", () => {
    assert.equal(unescapeField('a \\"quoted\\" \\\\ \\x41\\tb'), 'a "quoted" \\ A\tb');
    assert.equal(unescapeField('Jos\\xE9'), 'José', 'bytes that are not UTF-8 are read as Windows-1252');
    const apache = accessLogFields(
      '192.0.2.1 - - [18/Mar/2025:20:12:18 +0000] "POST /lead HTTP/1.1" 302 - "nome=Z%C3%A9&email=ze%40example.com"',
    );
    assert.equal(apache?.request_body, 'nome=Z%C3%A9&email=ze%40example.com');
  });

  it('is none without a [time], a quoted request line and its status', () => {
    assert.equal(accessLogFields('2025-03-18 INFO "POST /x HTTP/1.1" done'), undefined);
    assert.equal(accessLogFields('event_id,email,name'), undefined);
  });
});

describe("a JSON line a web server escaped its own way (nginx's log_format without escape=json)", () => {
  it('reads \\xHH as the bytes they are, UTF-8 past ASCII, and leaves every other escape alone', () => {
    const line = String.raw`{"status":"201","request_body":"{\x22name\x22:\x22Tom\xC3\xA1s\x22}"}`;
    const v = parseLine(line) as { request_body: string };
    assert.deepEqual(JSON.parse(v.request_body), { name: 'Tomás' });
    // An escaped backslash before `x22` is a backslash: what follows it is text.
    assert.deepEqual(parseLine(String.raw`{"path":"C:\\x22dir","b":"\x22"}`), { path: 'C:\\x22dir', b: '"' });
    // Bytes that are no UTF-8 are read as Windows-1252, as a line of the file would be.
    assert.deepEqual(parseLine(String.raw`{"b":"Jos\xE9"}`), { b: 'José' });
    // A line broken otherwise throws its own error.
    assert.throws(() => parseLine(String.raw`{"b":"\x22",}`), /JSON/);
  });
});

describe('a text log told from its first lines', () => {
  const head = (s: string) => Buffer.from(s);

  it('an access log, syslog and lines that start with their time are read as a log', () => {
    for (const text of [
      '10.0.3.17 - - [18/Mar/2025:20:00:01 -0300] "GET /healthz HTTP/1.1" 200 2 "-" "kube-probe/1.29" "-"\n',
      'Mar 18 20:01:10 web-1 lead-intake[4121]: INFO lead received {"email":"a@example.com"}\n',
      '<134>1 2025-03-18T23:01:10.123Z web-1 lead-intake 4121 - - lead {"email":"a@example.com"}\n',
      "2025-03-18 20:01:10,123 INFO lead_intake: lead received {'email': 'a@example.com'}\n",
      '[2025-03-18 20:01:10] production.INFO: lead received {"email":"a@example.com"} []\n',
      '2024-10-03T08:01:00.310000+00:00 app[web.1]: lead received {"email":"a@example.com"}\n',
    ])
      assert.equal(sniffFormat(head(text), true), 'log', text);
  });

  it('a CSV export is not, whatever its first cell, nor JSON', () => {
    assert.equal(sniffFormat(head('created_at,email\n2025-03-18 20:01:10,a@example.com\n'), true), 'csv');
    assert.equal(
      sniffFormat(head('2025-03-18 20:01:10,a@example.com,Ana\n2025-03-18 20:01:11,b@example.com,Bia\n'), true),
      'csv',
    );
    assert.equal(sniffFormat(head('[{"email":"a@example.com"}]'), true), 'json');
    assert.equal(sniffFormat(head('{"email":"a@example.com"}\n'), true), 'jsonl');
    // A first line alone does not make a log: most of the first lines must be lines of one.
    assert.equal(
      looksLikeTextLog('2025-03-18 20:01:10 start\nname;email\nAna;a@example.com\nBia;b@example.com\n', true),
      false,
    );
  });

  it('reads each line as a record: JSON as JSON, an access line as its fields, any other as its message', async () => {
    const s = scratch();
    const file = s.write(
      'app.log',
      [
        '2025-03-18T23:00:00Z server up',
        '{"level":"info","msg":"lead","body":{"email":"a@example.com"}}',
        '',
        '192.0.2.1 - - [18/Mar/2025:20:12:18 +0000] "POST /lead HTTP/1.1" 201 - "email=b%40example.com&name=Bia"',
        '2025-03-18T23:00:01Z lead {"email":"c@example.com"}',
      ].join('\r\n'),
    );
    const { items } = await readAll([file]);
    assert.deepEqual(
      records(items).map((r) => [
        r.line,
        Object.keys(r.fields).includes('request') ? 'access' : Object.keys(r.fields).join(','),
      ]),
      [
        [1, 'message'],
        [2, 'level,msg,body'],
        [4, 'access'],
        [5, 'message'],
      ],
    );
  });

  it('reads a logfmt line as its pairs, and tells logfmt, syslog from a drain, and a leveled line for a log', async () => {
    assert.deepEqual(
      logfmtFields(
        'time=2025-03-18T23:01:10Z level=INFO msg="lead received" email=ana@example.com name="Ana \\"A\\" Lima"',
      ),
      {
        time: '2025-03-18T23:01:10Z',
        level: 'INFO',
        msg: 'lead received',
        email: 'ana@example.com',
        name: 'Ana "A" Lima',
      },
    );
    assert.equal(logfmtFields('not logfmt at all'), undefined);
    for (const text of [
      'at=info method=POST path="/leads" host=app.example.com status=201 bytes=27\n',
      '83 <40>1 2012-11-30T06:45:29+00:00 host app web.3 - State changed from starting to up\n',
      "INFO:root:lead received {'email': 'a@example.com'}\n",
      'info: lead received {"email":"a@example.com"}\n',
    ])
      assert.equal(sniffFormat(head(text), true), 'log', text);
    const s = scratch();
    const file = s.write('app.log', 'time=2025-03-18T23:01:10Z level=INFO msg="lead" email=ana@example.com\n');
    assert.deepEqual(records((await readAll([file])).items)[0]?.fields, {
      time: '2025-03-18T23:01:10Z',
      level: 'INFO',
      msg: 'lead',
      email: 'ana@example.com',
    });
  });
});
