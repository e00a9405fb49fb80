import { excerpt, isTransientNetworkError, RequestDeadlineError, RETRYABLE_STATUSES, type HttpAnswer } from './http.js';
import { parseJsonBody } from './json-body.js';
import { parseRetryAfter, RetryableFailure } from './retry-policy.js';
import { SourceDeadlineError, SourceRedirectError, SourceRetryAfterError, SourceServerError, SourceTransportError } from './source-errors.js';

/**
 * What to do with one request attempt, decided in one place for the token and the export client:
 * - `ok`: a 2xx whose body is JSON (`value`); what it must contain is the caller's business;
 * - `retry`: another attempt after a backoff (or the source's Retry-After), counted;
 * - `requeue`: turned away for concurrency, sent again without counting (see ExportClient);
 * - `reauth`: the token was refused; fetch a new one and try again;
 * - `fail`: no attempt will do better; `error` names the job, the request and the value (a
 *   redirect is one: never followed, see SourceRedirectError).
 */
export type AnswerVerdict =
  | { kind: 'ok'; status: number; value: unknown }
  | { kind: 'retry'; error: Error; retryAfterMs?: number }
  | { kind: 'requeue'; error: Error; retryAfterMs?: number }
  | { kind: 'reauth'; error: Error }
  | { kind: 'fail'; error: Error };

/** One attempt's outcome: an answer with a status, or an error thrown before a whole answer arrived. */
export type HttpOutcome = { answer: HttpAnswer } | { transportError: unknown };

export interface AnswerContext {
  jobName: string;
  /** The request in messages: "token request", "page 3". */
  what: string;
  /**
   * The error for a non-2xx answer, and the service's own words for it (quoted when the answer
   * is refused for its Retry-After, and in the SourceServerError that a 5xx is, whatever this
   * error would have been); `body` is the answer's JSON when it has any.
   */
  statusError(answer: HttpAnswer, body: unknown): { error: Error; detail: string };
  /** The error for a 2xx answer whose body is not usable JSON. */
  bodyError(answer: HttpAnswer, detail: string): Error;
  /** The longest Retry-After this job waits (retryAfterCeiling of the retry policy). */
  retryAfterCeilingMs: number;
  /** Of a 2xx body: whether its number literals must be read exactly (see parseJsonBody); default yes. */
  literalsMatter?: (value: unknown) => boolean;
  /** Of a 2xx body: the array most of it is, parsed in slices (see parseJsonBytes), e.g. an export page's ['result', 'rows']. */
  slicedArray?: readonly string[];
  /** A 401 means "the token expired" (export endpoint) rather than a refusal (token endpoint). */
  reauthOn401?: boolean;
  /**
   * The attempt was on the wire alongside others of ours: a 429 then says "too many at once"
   * and is requeued rather than retried (ExportClient explains why).
   */
  sharedWire?: boolean;
  now?: () => number;
}

function header(answer: HttpAnswer, name: string): string | undefined {
  const value = answer.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** Turns one attempt's outcome into what to do next. Never throws. */
export function classifyAnswer(outcome: HttpOutcome, context: AnswerContext): AnswerVerdict {
  if ('transportError' in outcome) return classifyTransportError(outcome.transportError, context);
  const { answer } = outcome;

  if (answer.status >= 200 && answer.status < 300) {
    if (answer.undecodable) {
      const error = context.bodyError(answer, answer.undecodable.detail);
      return answer.undecodable.transient ? { kind: 'retry', error } : { kind: 'fail', error };
    }
    const body =
      answer.json === undefined
        ? parseJsonBody(answer.text, context.literalsMatter)
        : answer.json({ literalsMatter: context.literalsMatter, slicedArray: context.slicedArray });
    // A 200 whose JSON is cut short is almost always a dropped connection: retry it. The
    // parser's message quotes the body too, so it is excerpted like the body.
    if (!body.ok)
      return { kind: 'retry', error: context.bodyError(answer, `body is not JSON (${excerpt(body.error)}): ${excerpt(answer.text) || '(empty body)'}`) };
    return { kind: 'ok', status: answer.status, value: body.value };
  }

  // Before the status error: a redirect's body is rarely the service's, and what matters is
  // where it points and that it is not followed (see SourceRedirectError).
  if (answer.status >= 300 && answer.status < 400) {
    const location = header(answer, 'location');
    return {
      kind: 'fail',
      error: new SourceRedirectError(context.jobName, context.what, answer.status, location === undefined ? undefined : excerpt(location, 300)),
    };
  }
  const parsed = answer.undecodable ? undefined : parseJsonBody(answer.text);
  const stated = context.statusError(answer, parsed?.ok ? parsed.value : undefined);
  const { detail } = stated;
  // A 5xx is the server failing, whichever endpoint and whatever its body says (an Error object,
  // an OAuth error): a code of its own, retryable, never the endpoint's refusal of the request.
  const error = answer.status >= 500 && answer.status < 600 ? new SourceServerError(context.jobName, context.what, answer.status, detail) : stated.error;
  if (answer.status === 401 && context.reauthOn401) return { kind: 'reauth', error };
  if (!RETRYABLE_STATUSES.has(answer.status)) return { kind: 'fail', error };

  const retryAfter = header(answer, 'retry-after');
  const retryAfterMs = parseRetryAfter(retryAfter, context.now?.());
  if (retryAfterMs !== undefined && retryAfterMs > context.retryAfterCeilingMs) {
    return {
      kind: 'fail',
      error: new SourceRetryAfterError(context.jobName, context.what, answer.status, retryAfter!.trim(), context.retryAfterCeilingMs, detail),
    };
  }
  const kind = answer.status === 429 && context.sharedWire ? 'requeue' : 'retry';
  return retryAfterMs === undefined ? { kind, error } : { kind, error, retryAfterMs };
}

/** The run was stopped (SIGTERM, the scheduler): the request was cancelled on purpose. */
function isAbort(error: Error): boolean {
  const code = (error as { code?: unknown }).code;
  return error.name === 'AbortError' || code === 'UND_ERR_ABORTED' || code === 'ABORT_ERR';
}

/**
 * A connection that failed for a reason no retry cures, said so a person can act: a TLS failure
 * against a plain HTTP server prints only OpenSSL's "wrong version number" otherwise.
 */
function describeLastingFailure(error: Error & { code: string }): string {
  if (error.code.startsWith('ERR_SSL') || error.code.startsWith('ERR_TLS') || error.code === 'EPROTO') {
    return `TLS failed (${error.code}); does the URL's scheme match the server (https:// for TLS, http:// for plain HTTP)?`;
  }
  if (/CERT|SELF_SIGNED|UNABLE_TO_VERIFY/.test(error.code)) return `the server's TLS certificate was refused (${error.code}): ${error.message}`;
  if (error.code === 'ENOTFOUND') return `host not found (${error.message.replace(/^getaddrinfo ENOTFOUND /, '')}); check the URL in the environment config`;
  return `${error.code}: ${error.message}`;
}

function classifyTransportError(error: unknown, context: AnswerContext): AnswerVerdict {
  if (!isTransientNetworkError(error)) {
    const failure = error instanceof Error ? error : new Error(String(error));
    const code = (failure as { code?: unknown }).code;
    // An abort of the run, or a bug (no system error code): passed on as it is.
    if (isAbort(failure) || typeof code !== 'string') return { kind: 'fail', error: failure };
    return {
      kind: 'fail',
      error: new SourceTransportError(context.jobName, context.what, describeLastingFailure(failure as Error & { code: string }), { cause: failure }),
    };
  }
  const final =
    error instanceof RequestDeadlineError
      ? new SourceDeadlineError(context.jobName, context.what, error.deadlineMs, { cause: error })
      : new SourceTransportError(context.jobName, context.what, error.message, { cause: error });
  return { kind: 'retry', error: final };
}

/**
 * For an operation run by `withRetries`: returns (narrowing the verdict to `ok`) or throws — a
 * RetryableFailure for `retry` / `requeue`, the error for `fail` (and for a `reauth` the caller
 * did not handle).
 */
export function settle(verdict: AnswerVerdict): asserts verdict is Extract<AnswerVerdict, { kind: 'ok' }> {
  switch (verdict.kind) {
    case 'ok':
      return;
    case 'retry':
      throw new RetryableFailure(verdict.error, verdict.retryAfterMs);
    case 'requeue':
      throw new RetryableFailure(verdict.error, verdict.retryAfterMs, { requeue: true });
    case 'reauth':
    case 'fail':
      throw verdict.error;
  }
}
