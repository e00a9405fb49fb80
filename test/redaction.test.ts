import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { isSecretFieldName, redactedJson, redactJson, redactText } from '../src/redaction.js';
import { registerSecret } from '../src/secret-scrubber.js';

/**
 * Issue 61: the one redaction step. By value, every secret this process registered (the
 * scrubber's); by shape, a credential it never registered, as a server echoes it: what protects
 * the reader of a stored record in another process.
 */

describe('redactText', () => {
  it('removes a registered secret', () => {
    const secret = `registered-${randomBytes(6).toString('hex')}`;
    registerSecret(secret, { permanent: true });
    expect(redactText(`the issuer said ${secret} is wrong`)).toBe('the issuer said [redacted] is wrong');
  });

  it.each([
    ['Authorization: Bearer abcDEF123.xyz', 'Authorization: Bearer [redacted]'],
    ['Authorization: Basic dXNlcjpwYXNz', 'Authorization: Basic [redacted]'],
    ['<pre>Authorization: Bearer at&amp;&lt;5b63&gt;+/=</pre>', '<pre>Authorization: Bearer [redacted]</pre>'],
    ['{"authorization":"Bearer tok&\\u003cabc"}', '{"authorization":"Bearer [redacted]"}'],
    ['Authorization: Bearer [redacted]\\u0026\\u003cab12', 'Authorization: Bearer [redacted]'],
    ['sent Bearer eyJhbGciOi.J9x1 to it', 'sent Bearer [redacted] to it'],
    ['client_id=a&client_secret=s3cr3t-value&grant_type=x', 'client_id=a&client_secret=[redacted]&grant_type=x'],
    ['x\\u0026client_secret=abc123\\u0026y=1', 'x\\u0026client_secret=[redacted]\\u0026y=1'],
    ['&amp;client_secret=abc123&amp;', '&amp;client_secret=[redacted]&amp;'],
    ['redirect to http://h/cb?client_secret=XYZ123 now', 'redirect to http://h/cb?client_secret=[redacted] now'],
    ['{"client_secret":"abc123","a":1}', '{"client_secret":"[redacted]","a":1}'],
    ['{\\"password\\":\\"pw1234\\"}', '{\\"password\\":\\"[redacted]\\"}'],
    ['{&quot;client_secret&quot;:&quot;cs&amp;&lt;abc&gt;&quot;}', '{&quot;client_secret&quot;:&quot;[redacted]&quot;}'],
    ['{\\u0022password\\u0022:\\u0022pw\\u0026x\\u0022}', '{\\u0022password\\u0022:\\u0022[redacted]\\u0022}'],
    ['X-Api-Key: key-12345', 'X-Api-Key: [redacted]'],
    ['postgresql://loader:hunter2@db/analytics', 'postgresql://[redacted]@db/analytics'],
  ])('a credential never registered, by its shape: %s', (text, redacted) => {
    expect(redactText(text)).toBe(redacted);
  });

  it.each([
    'Bearer authentication required',
    'Basic realm="tilehouse"',
    'page_token=abc123',
    'authorization: token expired',
    '"url":"http://host","b":"mailto:x@y"',
    'job daily: 1200 rows, 3 pages (token fetches: 2)',
  ])('leaves ordinary words alone: %s', (text) => {
    expect(redactText(text)).toBe(text);
  });
});

describe('redactJson', () => {
  it('redacts every string and key, masks a field whose name says secret, keeps numbers and the shape', () => {
    const value = {
      job: 'daily',
      error: { code: 'auth_invalid_client', message: 'refused: client_secret=abc123' },
      source: { clientSecret: 'anything at all', password: 'x1', tokenFetches: 3 },
      targets: [{ target: 'postgresql://u:p4ss@db/x', rows: 2 }],
      at: new Date(0),
      none: null,
    };
    expect(redactJson(value)).toEqual({
      job: 'daily',
      error: { code: 'auth_invalid_client', message: 'refused: client_secret=[redacted]' },
      source: { clientSecret: '[redacted]', password: '[redacted]', tokenFetches: 3 },
      targets: [{ target: 'postgresql://[redacted]@db/x', rows: 2 }],
      at: '1970-01-01T00:00:00.000Z',
      none: null,
    });
  });

  it('redactedJson: the text of the redacted value', () => {
    expect(JSON.parse(redactedJson({ apiKey: 'k-1', note: 'Bearer abc.def.123' }, 2))).toEqual({ apiKey: '[redacted]', note: 'Bearer [redacted]' });
  });

  it.each([
    ['clientSecret', true],
    ['client_secret', true],
    ['password', true],
    ['apiKey', true],
    ['authorization', true],
    ['token', true],
    ['access_token', true],
    ['tokenFetches', false],
    ['tokenUrl', false],
    ['message', false],
  ])('isSecretFieldName(%s) is %s', (name, secret) => {
    expect(isSecretFieldName(name)).toBe(secret);
  });
});
