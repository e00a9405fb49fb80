import { describe, expect, it } from 'vitest';
import { fetchToken } from '../../src/source/token-client.js';
import { fastPolicy, hostileServersEachTest, tokenRequest, type HostileAnswer, type HostileServer } from '../support/hostile-server.js';

const hostile = hostileServersEachTest();
const dispatcher = hostile.dispatcher;

async function issuer(token: (index: number) => HostileAnswer): Promise<HostileServer> {
  return hostile.start({ token: (_request, index) => token(index), page: () => ({ status: 500 }) });
}

const failureOf = (promise: Promise<unknown>) =>
  promise.then(
    () => {
      throw new Error('expected a failure');
    },
    (error: unknown) => error as Error & Record<string, unknown>,
  );

describe('fetchToken', () => {
  it('posts the client-credentials grant as JSON to {authUrl}/oauth/token', async () => {
    const source = await issuer(() => ({ json: { access_token: 'abc', token_type: 'Bearer' } }));
    expect(await fetchToken(tokenRequest(source, dispatcher))).toMatchObject({ accessToken: 'abc' });
    expect(source.requests).toHaveLength(1);
    expect(source.requests[0]).toMatchObject({
      method: 'POST',
      url: '/oauth/token',
      json: { client_id: 'hostile-id', client_secret: 'hostile-secret', audience: '127.0.0.1', grant_type: 'client_credentials' },
    });
    expect(source.requests[0]!.headers['content-type']).toBe('application/json; charset=utf-8');
  });

  it('accepts expires_in as a numeric string', async () => {
    const source = await issuer(() => ({ json: { access_token: 'abc', token_type: 'bearer', expires_in: '3600' } }));
    expect((await fetchToken(tokenRequest(source, dispatcher))).expiresIn).toBe(3600);
  });

  it.each([
    { expires_in: 'soon', says: 'expires_in: must be a positive number of seconds, got "soon"' },
    { expires_in: '-5', says: 'expires_in: must be a positive number of seconds, got "-5"' },
    { expires_in: 0, says: 'expires_in: must be a positive number of seconds, got 0' },
    { expires_in: null, says: 'expires_in: must be a positive number of seconds, got null' },
  ])('refuses expires_in $expires_in clearly, without retrying', async ({ expires_in, says }) => {
    const source = await issuer(() => ({ json: { access_token: 'abc', token_type: 'Bearer', expires_in } }));
    const error = await failureOf(fetchToken(tokenRequest(source, dispatcher)));
    expect(error).toMatchObject({ code: 'auth_response_invalid' });
    expect(error.message).toBe(`job hostile: token endpoint gave an unusable answer: HTTP 200 without a usable token: ${says}`);
    expect(source.requests).toHaveLength(1);
  });

  it("reports the issuer's clock from the Date header of its answer", async () => {
    const source = await issuer(() => ({ json: { access_token: 'abc', token_type: 'Bearer' }, headers: { date: 'Sat, 21 Nov 2026 10:00:07 GMT' } }));
    expect((await fetchToken(tokenRequest(source, dispatcher))).serverDate).toBe(Date.parse('2026-11-21T10:00:07Z'));
  });

  it('leaves serverDate unset when the Date header does not parse, and keeps the header as sent for the message', async () => {
    const source = await issuer(() => ({ json: { access_token: 'abc', token_type: 'Bearer' }, headers: { date: 'yesterday-ish' } }));
    const token = await fetchToken(tokenRequest(source, dispatcher));
    expect(token).toEqual({ accessToken: 'abc', unparsedDate: 'yesterday-ish' });
  });

  it('decodes a gzip token answer', async () => {
    const source = await issuer(() => ({ json: { access_token: 'zipped', token_type: 'Bearer' }, encoding: 'gzip' }));
    expect((await fetchToken(tokenRequest(source, dispatcher))).accessToken).toBe('zipped');
  });

  it.each([
    {
      what: 'an OAuth error object',
      answer: { status: 500, json: { error: 'server_error', error_description: 'issuer database down' } },
      says: 'server_error — issuer database down',
    },
    { what: 'an HTML page', answer: { status: 502, body: '<html>bad gateway</html>' }, says: '<html>bad gateway</html>' },
  ])('calls a 5xx on every attempt a server error (source_server_error), never a refusal, even with $what', async ({ answer, says }) => {
    const source = await issuer(() => answer);
    const error = await failureOf(fetchToken(tokenRequest(source, dispatcher)));
    expect(error).toMatchObject({ code: 'source_server_error', status: answer.status });
    expect(error.message).toBe(`job hostile: token request: the server failed with HTTP ${answer.status}: ${says}`);
    // Retried as far as the policy allows (fastPolicy: 3 attempts), unlike a refusal.
    expect(source.requests).toHaveLength(3);
  });

  it('retries a 503 and takes the token sent next', async () => {
    const source = await issuer((index) =>
      index === 0 ? { status: 503, body: '<html>busy</html>' } : { json: { access_token: 'second', token_type: 'Bearer' } },
    );
    expect((await fetchToken(tokenRequest(source, dispatcher))).accessToken).toBe('second');
    expect(source.requests).toHaveLength(2);
  });

  it('refuses refused credentials at once with the OAuth error as its code', async () => {
    const source = await issuer(() => ({ status: 401, json: { error: 'invalid_client', error_description: 'bad secret' } }));
    const error = await failureOf(fetchToken(tokenRequest(source, dispatcher)));
    expect(error).toMatchObject({ code: 'auth_invalid_client', status: 401 });
    expect(source.requests).toHaveLength(1);
  });

  it('fails at once on a Retry-After longer than the job waits, quoting it', async () => {
    const source = await issuer(() => ({
      status: 429,
      headers: { 'retry-after': '120' },
      json: { error: 'slow_down', error_description: 'too many token requests' },
    }));
    const error = await failureOf(fetchToken(tokenRequest(source, dispatcher, { retry: fastPolicy({ maxDelayMs: 30_000 }) })));
    expect(error).toMatchObject({ code: 'source_retry_after_too_long' });
    expect(error.message).toBe(
      'job hostile: token request: HTTP 429 with Retry-After: 120 (more than the 30 s this job waits): slow_down — too many token requests',
    );
    expect(source.requests).toHaveLength(1);
  });

  it('gives up on a token answer that trickles past the deadline', async () => {
    const source = await issuer(() => ({ json: { access_token: 'abc', token_type: 'Bearer' }, trickle: { bytes: 1, everyMs: 250 } }));
    const error = await failureOf(
      fetchToken(tokenRequest(source, dispatcher, { timeouts: { headersMs: 5000, bodyMs: 5000, totalMs: 500 }, retry: fastPolicy({ maxAttempts: 1 }) })),
    );
    expect(error).toMatchObject({ code: 'source_deadline_exceeded' });
    expect(error.message).toBe('job hostile: token request: no complete answer within 500 ms (headers and body together)');
  });
});

describe('fetchToken against a server it cannot talk to', () => {
  it('says the scheme is wrong when https:// meets a plain HTTP server', async () => {
    const source = await issuer(() => ({ json: { access_token: 'abc', token_type: 'Bearer' } }));
    const request = { ...tokenRequest(source, dispatcher), authUrl: source.url.replace('http://', 'https://') };
    const error = await failureOf(fetchToken(request));
    expect(error).toMatchObject({ code: 'source_unreachable' });
    expect(error.message).toMatch(/^job hostile: token request: TLS failed \(ERR_SSL_WRONG_VERSION_NUMBER\); does the URL's scheme match the server/);
    expect(error.message).not.toMatch(/ssl3_get_record|openssl/);
  });

  it('names a host that does not resolve', async () => {
    const error = await failureOf(fetchToken({ ...tokenRequest(await issuer(() => ({ status: 500 })), dispatcher), authUrl: 'https://no-such-host.invalid' }));
    expect(error).toMatchObject({ code: 'source_unreachable', message: expect.stringContaining('host not found (no-such-host.invalid)') });
  });
});
