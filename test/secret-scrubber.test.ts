import { describe, expect, it } from 'vitest';
import { REDACTED, registerSecret, scrubSecrets } from '../src/secret-scrubber.js';

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

  it('keeps permanent values while the most recent 256 run-time values rotate', () => {
    registerSecret('permanent-secret-9', { permanent: true });
    for (let i = 0; i < 300; i++) registerSecret(`rotating-token-${String(i).padStart(3, '0')}`);
    expect(scrubSecrets('permanent-secret-9')).toBe(REDACTED);
    expect(scrubSecrets('rotating-token-299 rotating-token-044')).toBe(`${REDACTED} ${REDACTED}`);
    // The oldest tokens were evicted (they expired long before 256 newer ones were issued).
    expect(scrubSecrets('rotating-token-000 rotating-token-043')).toBe('rotating-token-000 rotating-token-043');
  });
});
