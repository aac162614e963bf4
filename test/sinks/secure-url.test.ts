import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { UsageError } from '../../src/errors.js';
import { checkSinkUrl, redactUrl, urlSecrets } from '../../src/sinks/transport/secure-url.js';

describe('sink URLs', () => {
  it('redactUrl masks userinfo, the query string and the fragment, and keeps the rest as given', () => {
    assert.equal(redactUrl('https://api.hubapi.com'), 'https://api.hubapi.com');
    assert.equal(redactUrl('https://crm.example.com/hooks/leads/'), 'https://crm.example.com/hooks/leads/');
    assert.equal(redactUrl('http://127.0.0.1:8765/?hapikey=SECRET123'), 'http://127.0.0.1:8765/?redacted');
    assert.equal(redactUrl(new URL('https://h/x?a=1&b=2#tok')), 'https://h/x?redacted#redacted');
    assert.equal(redactUrl('https://u:p@h/x'), 'https://redacted@h/x');
    // Not a URL: still no query string or userinfo in the message that quotes it.
    assert.equal(redactUrl('ht!tp://u:pw@h/x?hapikey=SECRET123'), 'ht!tp://redacted@h/x?redacted');
  });

  it('urlSecrets lists every query value as written and as decoded; a bare parameter is a value too', () => {
    assert.deepEqual(urlSecrets(new URL('https://h/?hapikey=SECRET123&portal=a%2Bb%20c&LONEKEY')).sort(), [
      'LONEKEY',
      'SECRET123',
      'a%2Bb%20c',
      'a+b c',
    ]);
    assert.deepEqual(urlSecrets(new URL('https://api.hubapi.com')), []);
  });

  it('checkSinkUrl refuses userinfo and does not quote a query string of an invalid URL', () => {
    assert.throws(
      () => checkSinkUrl('https://user:PASSWORD987@h/', 'HubSpot'),
      (e: unknown) => e instanceof UsageError && !e.message.includes('PASSWORD987'),
    );
    assert.throws(
      () => checkSinkUrl('http://[bad/?hapikey=SECRET123', 'HubSpot'),
      (e: unknown) => e instanceof UsageError && !e.message.includes('SECRET123') && /not a valid URL/.test(e.message),
    );
  });
});
