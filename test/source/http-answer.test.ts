import { describe, expect, it } from 'vitest';
import { RequestDeadlineError, type HttpAnswer } from '../../src/source/http.js';
import { classifyAnswer, settle, type AnswerContext } from '../../src/source/http-answer.js';
import { RetryableFailure } from '../../src/source/retry-policy.js';
import { SourceDeadlineError, SourceRedirectError, SourceRetryAfterError, SourceServerError, SourceTransportError } from '../../src/source/source-errors.js';

const context = (overrides: Partial<AnswerContext> = {}): AnswerContext => ({
  jobName: 'j',
  what: 'page 4',
  retryAfterCeilingMs: 30_000,
  statusError: (answer) => ({ error: new Error(`status ${answer.status}`), detail: 'busy' }),
  bodyError: (_answer, detail) => new Error(`body: ${detail}`),
  now: () => Date.parse('2026-11-21T10:00:00Z'),
  ...overrides,
});
const answer = (status: number, text = '', headers: HttpAnswer['headers'] = {}, extra: Partial<HttpAnswer> = {}) => ({
  answer: { status, text, headers, ...extra },
});
const networkError = (code: string) => Object.assign(new Error(`socket ${code}`), { code });

describe('classifyAnswer', () => {
  it('passes the JSON of a 2xx on', () => {
    expect(classifyAnswer(answer(200, '{"ok":true}'), context())).toEqual({ kind: 'ok', status: 200, value: { ok: true } });
  });

  it("parses a 2xx from its bytes when the answer can (json), with the context's sliced array and literalsMatter", () => {
    const asked: unknown[] = [];
    const literalsMatter = () => false;
    const json = (options: unknown) => {
      asked.push(options);
      return { ok: true as const, value: { from: 'bytes' } };
    };
    expect(classifyAnswer(answer(200, '', {}, { json }), context({ slicedArray: ['result', 'rows'], literalsMatter }))).toEqual({
      kind: 'ok',
      status: 200,
      value: { from: 'bytes' },
    });
    expect(asked).toEqual([{ slicedArray: ['result', 'rows'], literalsMatter }]);
    // A failed parse quotes the text, which the answer still holds.
    const failed = classifyAnswer(answer(200, '{"ok":tr', {}, { json: () => ({ ok: false as const, error: 'Unexpected end of JSON input' }) }), context());
    expect(failed.kind !== 'ok' && failed.error.message).toBe('body: body is not JSON (Unexpected end of JSON input): {"ok":tr');
  });

  it('retries a 2xx whose JSON is cut short', () => {
    const verdict = classifyAnswer(answer(200, '{"ok":tr'), context());
    expect(verdict.kind).toBe('retry');
    expect(verdict.kind !== 'ok' && verdict.error.message).toMatch(/^body: body is not JSON \(.*\): \{"ok":tr$/);
  });

  it('retries a body cut short inside its compression, and fails one that is wrong as sent', () => {
    expect(classifyAnswer(answer(200, '', {}, { undecodable: { detail: 'cut', transient: true } }), context()).kind).toBe('retry');
    const wrong = classifyAnswer(answer(200, '', {}, { undecodable: { detail: 'not gzip', transient: false } }), context());
    expect(wrong).toMatchObject({ kind: 'fail', error: { message: 'body: not gzip' } });
  });

  it('asks for a new token on a 401 only where a 401 means an expired token', () => {
    expect(classifyAnswer(answer(401), context({ reauthOn401: true })).kind).toBe('reauth');
    expect(classifyAnswer(answer(401), context()).kind).toBe('fail');
  });

  it.each([400, 403, 404, 409])("fails at once on HTTP %i, with the endpoint's own refusal", (status) => {
    expect(classifyAnswer(answer(status), context())).toMatchObject({ kind: 'fail', error: { message: `status ${status}` } });
  });

  it.each([
    [500, 'retry'],
    [502, 'retry'],
    [503, 'retry'],
    [504, 'retry'],
    [501, 'fail'],
    [505, 'fail'],
  ] as const)("calls HTTP %i a server error (source_server_error), never the endpoint's refusal, quoting its message (%s)", (status, kind) => {
    const verdict = classifyAnswer(answer(status, '{"error":"server_error"}'), context());
    expect(verdict.kind).toBe(kind);
    const error = verdict.kind === 'ok' ? undefined : verdict.error;
    expect(error).toBeInstanceOf(SourceServerError);
    expect(error).toMatchObject({ code: 'source_server_error', status });
    expect(error?.message).toBe(`job j: page 4: the server failed with HTTP ${status}: busy`);
    // What survives the retries: the last attempt's error, thrown by settle once no attempt is left.
    if (verdict.kind === 'retry') expect(() => settle(verdict)).toThrow(expect.objectContaining({ final: error }));
  });

  it.each([301, 302, 303, 307, 308])('fails at once on a redirect (HTTP %i), saying where it points and why it is not followed', (status) => {
    const verdict = classifyAnswer(
      answer(status, '<html>moved</html>', { location: 'https://elsewhere.example/api/v1/topics/incident/execute?tileId=t' }),
      context(),
    );
    expect(verdict.kind === 'fail' && verdict.error).toBeInstanceOf(SourceRedirectError);
    expect(verdict).toMatchObject({
      kind: 'fail',
      error: { code: 'source_redirect', status, location: 'https://elsewhere.example/api/v1/topics/incident/execute?tileId=t' },
    });
    expect(verdict.kind === 'fail' && verdict.error.message).toBe(
      `job j: page 4: HTTP ${status} redirect to https://elsewhere.example/api/v1/topics/incident/execute?tileId=t; tilehouse does not follow redirects, ` +
        'because the request carries a bearer token (or the client secret) that would go to another host; if the service moved, set source.baseUrl (or source.authUrl) to the new address',
    );
  });

  it('says so when a redirect names no Location', () => {
    expect(classifyAnswer(answer(302), context())).toMatchObject({
      kind: 'fail',
      error: { code: 'source_redirect', message: expect.stringContaining('HTTP 302 redirect without a Location header;') },
    });
  });

  it.each([429, 500, 502, 503, 504])('retries HTTP %i, with its Retry-After', (status) => {
    expect(classifyAnswer(answer(status, '', { 'retry-after': '2' }), context())).toMatchObject({ kind: 'retry', retryAfterMs: 2000 });
    expect(classifyAnswer(answer(status), context())).not.toHaveProperty('retryAfterMs');
  });

  it('requeues a 429 sent alongside other attempts, but not a 503', () => {
    expect(classifyAnswer(answer(429, '', { 'retry-after': '0' }), context({ sharedWire: true }))).toMatchObject({ kind: 'requeue', retryAfterMs: 0 });
    expect(classifyAnswer(answer(503), context({ sharedWire: true })).kind).toBe('retry');
  });

  it('fails at once on a Retry-After beyond the ceiling, seconds or HTTP-date, quoting the header', () => {
    const seconds = classifyAnswer(answer(503, '', { 'retry-after': '31' }), context());
    expect(seconds).toMatchObject({ kind: 'fail' });
    expect(seconds.kind === 'fail' && seconds.error).toBeInstanceOf(SourceRetryAfterError);
    expect(seconds).toMatchObject({ error: { code: 'source_retry_after_too_long' } });
    expect(seconds.kind === 'fail' && seconds.error.message).toBe('job j: page 4: HTTP 503 with Retry-After: 31 (more than the 30 s this job waits): busy');
    const date = classifyAnswer(answer(429, '', { 'retry-after': 'Sat, 21 Nov 2026 10:00:31 GMT' }), context({ sharedWire: true }));
    expect(date.kind === 'fail' && date.error.message).toContain('HTTP 429 with Retry-After: Sat, 21 Nov 2026 10:00:31 GMT (more than');
    // Exactly the ceiling is still waited.
    expect(classifyAnswer(answer(503, '', { 'retry-after': '30' }), context())).toMatchObject({ kind: 'retry', retryAfterMs: 30_000 });
  });

  it('ignores a Retry-After it cannot read and falls back to its own backoff', () => {
    expect(classifyAnswer(answer(503, '', { 'retry-after': 'soon' }), context())).toEqual({ kind: 'retry', error: expect.any(Error) });
  });

  it('retries transient transport errors, naming the request', () => {
    const verdict = classifyAnswer({ transportError: networkError('ECONNRESET') }, context());
    expect(verdict).toMatchObject({ kind: 'retry', error: { message: 'job j: page 4: socket ECONNRESET', code: 'source_unreachable' } });
    expect(verdict.kind === 'retry' && verdict.error).toBeInstanceOf(SourceTransportError);
  });

  it('retries a missed deadline and names it as such', () => {
    const verdict = classifyAnswer({ transportError: new RequestDeadlineError(1500) }, context());
    expect(verdict.kind === 'retry' && verdict.error).toBeInstanceOf(SourceDeadlineError);
    expect(verdict).toMatchObject({ error: { code: 'source_deadline_exceeded' } });
    expect(verdict.kind === 'retry' && verdict.error.message).toBe('job j: page 4: no complete answer within 1500 ms (headers and body together)');
  });

  it('passes an abort on as it is', () => {
    const abort = new DOMException('stopped', 'AbortError');
    expect(classifyAnswer({ transportError: abort }, context())).toEqual({ kind: 'fail', error: abort });
  });
});

describe('settle', () => {
  it('returns on ok and throws what withRetries understands otherwise', () => {
    const error = new Error('x');
    expect(() => settle({ kind: 'ok', status: 200, value: 1 })).not.toThrow();
    expect(() => settle({ kind: 'retry', error, retryAfterMs: 5 })).toThrow(expect.objectContaining({ final: error, retryAfterMs: 5, requeue: false }));
    expect(() => settle({ kind: 'requeue', error })).toThrow(RetryableFailure);
    expect(() => settle({ kind: 'requeue', error })).toThrow(expect.objectContaining({ requeue: true }));
    expect(() => settle({ kind: 'fail', error })).toThrow(error);
    expect(() => settle({ kind: 'reauth', error })).toThrow(error);
  });
});
