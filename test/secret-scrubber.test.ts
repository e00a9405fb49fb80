import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { transportOf } from '../src/lineage/transport-of.js';
import { collapsedExcerpt, excerpt, REDACTED, registerCredentialHeader, registerSecret, registrySize, scrubSecrets } from '../src/secret-scrubber.js';

// The registry is process-wide and vitest gives each test file a fresh module: every test uses
// values of its own so the order of tests does not matter.

describe('scrubSecrets', () => {
  it('replaces every occurrence of a registered value', () => {
    registerSecret('alpha-secret-1');
    expect(scrubSecrets('a alpha-secret-1 b alpha-secret-1')).toBe(`a ${REDACTED} b ${REDACTED}`);
  });

  it('leaves text without a registered value as it is', () => {
    registerSecret('beta-secret-2');
    expect(scrubSecrets('nothing to see: beta-secret')).toBe('nothing to see: beta-secret');
  });

  it('ignores values shorter than 6 characters, which would mangle ordinary output', () => {
    registerSecret('abc12');
    registerSecret('');
    registerSecret(undefined);
    expect(scrubSecrets('abc12 is not redacted')).toBe('abc12 is not redacted');
    registerSecret('abc123');
    expect(scrubSecrets('abc123 is')).toBe(`${REDACTED} is`);
  });

  it('catches the JSON-escaped, doubly JSON-escaped, URL- and form-encoded forms', () => {
    const secret = 'gamma "quoted" \\ sec/ret&=+';
    registerSecret(secret);
    const once = JSON.stringify(secret).slice(1, -1);
    // A response body quoted inside a JSON log line: the secret escaped in the body, then again.
    const twice = JSON.stringify(once).slice(1, -1);
    const form = new URLSearchParams({ client_secret: secret }).toString();
    expect(once).not.toBe(secret);
    expect(scrubSecrets(`{"msg":"${once}"}`)).toBe(`{"msg":"${REDACTED}"}`);
    expect(scrubSecrets(`{"msg":"body: {\\"e\\":\\"${twice}\\"}"}`)).toBe(`{"msg":"body: {\\"e\\":\\"${REDACTED}\\"}"}`);
    expect(scrubSecrets(`x=${encodeURIComponent(secret)}`)).toBe(`x=${REDACTED}`);
    expect(scrubSecrets(form)).toBe(`client_secret=${REDACTED}`);
    expect(scrubSecrets(`raw: ${secret}.`)).toBe(`raw: ${REDACTED}.`);
  });

  it('treats regular-expression characters in a value literally', () => {
    registerSecret('d.l+a*(x)');
    expect(scrubSecrets('dXlaaa(x) d.l+a*(x)')).toBe(`dXlaaa(x) ${REDACTED}`);
  });

  it('redacts a longer value whole when it contains a shorter one', () => {
    registerSecret('client-4242');
    registerSecret('token.client-4242.sig');
    expect(scrubSecrets('Bearer token.client-4242.sig for client-4242')).toBe(`Bearer ${REDACTED} for ${REDACTED}`);
  });
});

// ---------------------------------------------------------------------------------------------
// Issue 61: every form a server or a serializer produces, for the process's life.

/** A distinctive secret with characters every encoder writes differently. */
const NASTY = `N4sty+/=&<>"' é✓ ${'\u2028'}tail~~~?`;

const upper = (text: string) => text.replace(/%[0-9a-f]{2}/gi, (escape) => escape.toUpperCase());
const lower = (text: string) => text.replace(/%[0-9a-f]{2}/gi, (escape) => escape.toLowerCase());
const allEscaped = (text: string, hex: (code: string) => string) =>
  [...text]
    .flatMap((char) => (char.length === 2 ? [char.charCodeAt(0), char.charCodeAt(1)] : [char.charCodeAt(0)]))
    .map((code) => `\\u${hex(code.toString(16).padStart(4, '0'))}`)
    .join('');
/** What Go's encoding/json writes inside a string: JSON, plus <, >, & and U+2028/2029 as \u escapes. */
const goJson = (text: string) =>
  JSON.stringify(text)
    .slice(1, -1)
    .replaceAll('<', '\\u003c')
    .replaceAll('>', '\\u003e')
    .replaceAll('&', '\\u0026')
    .replaceAll('\u2028', '\\u2028')
    .replaceAll('\u2029', '\\u2029');
/** Python's json.dumps (ensure_ascii): every non-ASCII character as \uXXXX. */
const asciiJson = (text: string) =>
  JSON.stringify(text)
    .slice(1, -1)
    .replace(/[^\x20-\x7e]/g, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`);
const jsonOnce = (text: string) => JSON.stringify(text).slice(1, -1);

function formsOfNasty(secret: string): Record<string, string> {
  const utf8 = Buffer.from(secret, 'utf8');
  const userinfo = new URL('http://h');
  userinfo.password = secret;
  return {
    raw: secret,
    'URL-encoded, upper-case hex': upper(encodeURIComponent(secret)),
    'URL-encoded, lower-case hex': lower(encodeURIComponent(secret)),
    'form-encoded (space as +)': new URLSearchParams({ v: secret }).toString().slice(2),
    'form-encoded, lower-case hex': lower(new URLSearchParams({ v: secret }).toString().slice(2)),
    'userinfo-encoded': userinfo.password,
    'JSON-escaped once': jsonOnce(secret),
    'JSON-escaped twice': jsonOnce(jsonOnce(secret)),
    "Go's encoding/json": goJson(secret),
    "Go's encoding/json, quoted again in JSON": jsonOnce(goJson(secret)),
    'ASCII-only JSON (Python)': asciiJson(secret),
    'every character \\u-escaped, lower-case hex': allEscaped(secret, (hex) => hex.toLowerCase()),
    'every character \\u-escaped, upper-case hex': allEscaped(secret, (hex) => hex.toUpperCase()),
    'HTML-escaped with &quot; and &#39;': secret
      .replaceAll('&', '&amp;')
      .replaceAll('<', '&lt;')
      .replaceAll('>', '&gt;')
      .replaceAll('"', '&quot;')
      .replaceAll("'", '&#39;'),
    'HTML-escaped with &#34; and &#x27;': secret
      .replaceAll('&', '&amp;')
      .replaceAll('<', '&lt;')
      .replaceAll('>', '&gt;')
      .replaceAll('"', '&#34;')
      .replaceAll("'", '&#x27;'),
    'base64, padded': utf8.toString('base64'),
    'base64, unpadded': utf8.toString('base64').replace(/=+$/, ''),
    'base64url, padded': utf8.toString('base64url').padEnd(Math.ceil(utf8.length / 3) * 4, '='),
    'base64url, unpadded': utf8.toString('base64url'),
  };
}

describe('scrubSecrets: every form of a registered value', () => {
  registerSecret(NASTY);
  const forms = formsOfNasty(NASTY);

  it('has forms that differ from the raw value and from each other (the test would prove nothing otherwise)', () => {
    for (const [name, form] of Object.entries(forms)) if (name !== 'raw') expect(form, name).not.toBe(NASTY);
    expect(new Set(Object.values(forms)).size).toBeGreaterThanOrEqual(Object.keys(forms).length - 2);
  });

  it.each(Object.entries(forms))('redacts the %s form', (_name, form) => {
    expect(scrubSecrets(`before ${form} after`)).toBe(`before ${REDACTED} after`);
    // And inside JSON a log line would write: the form escaped once more, when it has to be.
    expect(scrubSecrets(JSON.stringify({ msg: `x ${form} y` }))).not.toContain(form.slice(0, 8));
  });

  it('redacts a URL password in userinfo and a password= query value', () => {
    const url = new URL('postgresql://loader@db/analytics');
    url.password = NASTY;
    url.searchParams.set('password', NASTY);
    const scrubbed = scrubSecrets(`connect to ${url.toString()} failed`);
    expect(scrubbed).toBe(`connect to postgresql://loader:${REDACTED}@db/analytics?password=${REDACTED} failed`);
  });

  it.each([
    ['id', 0],
    ['idx', 1],
    ['i', 2],
  ])('redacts the secret inside HTTP Basic base64(%s:secret), whatever its byte alignment', (clientId) => {
    const secret = 'Basic-secret/with+signs=ü';
    registerSecret(secret);
    const basic = Buffer.from(`${clientId}:${secret}`).toString('base64');
    const scrubbed = scrubSecrets(`echo: Authorization: Basic ${basic}\n`);
    expect(scrubbed).toMatch(new RegExp(`^echo: Authorization: Basic [A-Za-z0-9+/]*\\[redacted\\]\\n$`));
    // What is left of the stream encodes the client id and the colon at most: no bit of the secret.
    const left = scrubbed.slice('echo: Authorization: Basic '.length, scrubbed.indexOf(REDACTED));
    expect(`${clientId}:`.startsWith(Buffer.from(left.slice(0, left.length - (left.length % 4)), 'base64').toString('latin1'))).toBe(true);
    expect(left.length).toBeLessThanOrEqual(Math.ceil(((clientId.length + 1) * 8) / 6));
  });

  it('redacts a base64url core inside a longer stream (a JWT-like payload quoting the secret)', () => {
    const secret = 'payload-secret?>>~~';
    registerSecret(secret);
    const stream = Buffer.from(`{"sub":"x","s":"${secret}","n":1}`).toString('base64url');
    const scrubbed = scrubSecrets(`token ${stream}.sig`);
    expect(scrubbed).toContain(REDACTED);
    const decoded = scrubbed
      .slice(6)
      .split(/\[redacted\]/)
      .map((part) => Buffer.from(part, 'base64url').toString('latin1'))
      .join('');
    expect(decoded).not.toContain(secret.slice(0, 4));
  });

  it('redacts a secret of URL-safe characters in the form encoding, which escapes its tilde', () => {
    registerSecret('tilde~secret-01');
    expect(scrubSecrets(new URLSearchParams({ client_secret: 'tilde~secret-01' }).toString())).toBe(`client_secret=${REDACTED}`);
  });

  it('redacts a secret holding whitespace when a server collapsed it to one line', () => {
    const secret = 'multi  line\n\tsecret value';
    registerSecret(secret);
    expect(scrubSecrets('said: multi line secret value.')).toBe(`said: ${REDACTED}.`);
  });
});

describe('registerSecret: values are kept for the process’s life', () => {
  it('still masks the first secret and the lineage API key after 5,000 more tokens', async () => {
    registerSecret('first-client-secret-Ω', { permanent: true });
    // The lineage transport registers its API key as it is built (it was a "recent" value once).
    await transportOf(
      {
        type: 'http',
        url: 'http://127.0.0.1:9',
        endpoint: 'api/v1/lineage',
        timeout: 1,
        compression: 'none',
        auth: { type: 'api_key', apiKey: 'lineage-api-key-5000' },
      } as never,
      {
        writeConsole: () => undefined,
        env: {},
      },
    );
    registerSecret('first-access-token-0000');
    for (let i = 1; i <= 5000; i++) registerSecret(`eyJhbGciOiJSUzI1NiJ9.access-${String(i).padStart(5, '0')}.sig${i * 7919}`);
    const text = `x first-client-secret-Ω y lineage-api-key-5000 z first-access-token-0000 ${Buffer.from('lineage-api-key-5000').toString('base64')} eyJhbGciOiJSUzI1NiJ9.access-00001.sig7919`;
    expect(scrubSecrets(text)).toBe(`x ${REDACTED} y ${REDACTED} z ${REDACTED} ${REDACTED} ${REDACTED}`);
    expect(registrySize().values).toBeGreaterThanOrEqual(5003);
  });

  it('registers the credential of a header value, not only the header value', () => {
    registerCredentialHeader('Bearer otlp-token-ABCDEF');
    registerCredentialHeader(`Basic ${Buffer.from('otlp-user:otlp-password-123').toString('base64')}`);
    expect(scrubSecrets('echo: otlp-token-ABCDEF and otlp-password-123')).toBe(`echo: ${REDACTED} and ${REDACTED}`);
  });
});

describe('scrubSecrets: ordinary output is untouched', () => {
  it('changes no column name, number, date or run id after thousands of registrations', () => {
    for (let i = 0; i < 3000; i++) registerSecret(randomBytes(24).toString('base64url'));
    for (const secret of ['hunter2-pass', 'p@ss w0rd/=+', 'Ünïcødé-sëcret']) registerSecret(secret);
    const ordinary = [
      'INFO  incidents_by_type: page 3 of 17 read rows=50 columns=Type,Incidents,Opened_At,Closed_At runId=20261207T210501Z-4f2a9c',
      '{"level":30,"time":1765141501000,"msg":"job incidents_by_type succeeded","rows":12345,"bytes":987654,"target":"gs://bucket/incidents/2026-12-07.csv"}',
      '2026-12-07 21:05:01 UTC OK 12,345 rows in 8.9 s (source 7.1 s, reading 0.4 s, prepare csv 0.1 s, publish csv 0.0 s)',
      'abcdefgh ABCDEFGH 0123456789 password secret token Authorization Bearer Basic',
    ].join('\n');
    expect(scrubSecrets(ordinary)).toBe(ordinary);
    expect(excerpt(ordinary, 10_000)).toBe(ordinary);
  });

  it('never registers a base64 core shorter than 8 characters (ordinary words would match)', () => {
    const secret = 'ab12cd'; // 6 bytes: its cores at alignments 1 and 2 are 7 characters
    registerSecret(secret);
    const cores = [1, 2].map((align) => {
      const encoded = Buffer.concat([Buffer.alloc(align), Buffer.from(secret)]).toString('base64');
      return encoded.slice(Math.ceil((8 * align) / 6), Math.floor((8 * (align + 6)) / 6));
    });
    expect(cores.map((core) => core.length)).toEqual([7, 7]);
    const text = `words ${cores.join(' ')} stay`;
    expect(scrubSecrets(text)).toBe(text);
  });
});

describe('excerpt', () => {
  const secret = 'Excerpt-Secret-4711-xyz';
  registerSecret(secret);

  it.each([160, 200, 300])('never leaves the first characters of a secret that a cut at %i would split', (max) => {
    const text = `${'e'.repeat(max - 5)}${secret} and more text after it`;
    const shown = excerpt(text, max);
    expect(shown).toBe(`${'e'.repeat(max - 5)}…`);
    expect(shown).not.toContain(secret.slice(0, 3));
  });

  it('cuts after [redacted] when it fits, and says the text was cut', () => {
    expect(excerpt(`ab ${secret} ${'z'.repeat(50)}`, 20)).toBe(`ab ${REDACTED} zzzzzz…`);
  });

  it('scrubs a secret holding spaces and newlines before collapsing whitespace', () => {
    const spread = 'spread  over\nlines\tsecret';
    registerSecret(spread);
    expect(collapsedExcerpt(`error:\n  ${spread}\n  end`, 200)).toBe(`error: ${REDACTED} end`);
  });

  it('redacts the secret’s first characters at the end of a text already cut elsewhere', () => {
    expect(excerpt(`{"error":"bad client ${secret.slice(0, 9)}`, 200)).toBe(`{"error":"bad client ${REDACTED}`);
    expect(excerpt(`{"error":"bad client ${encodeURIComponent(`${NASTY}`).slice(0, 12)}`, 200)).toBe(`{"error":"bad client ${REDACTED}`);
  });

  it('redacts the secret’s last characters at the start of a text cut from the front', () => {
    expect(excerpt(`${secret.slice(-10)} was refused`, 200)).toBe(`${REDACTED} was refused`);
  });

  it('leaves a fragment shorter than 6 characters (it names no secret) and ordinary endings alone', () => {
    expect(excerpt('the client Excer', 200)).toBe('the client Excer');
    expect(excerpt('the client said no', 200)).toBe('the client said no');
  });

  it('scrubs a huge body only as far as the excerpt reaches, and still cuts at a secret', () => {
    const text = `${'h'.repeat(100)}${secret}${'x'.repeat(5_000_000)}`;
    expect(excerpt(text, 160)).toBe(`${'h'.repeat(100)}${REDACTED}${'x'.repeat(50)}…`);
  });
});
