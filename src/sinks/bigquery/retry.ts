import type { Logger } from 'pino';
import { withRetries, type RetryBudget, type RetryLimits } from '../../retry.js';
import { untilAborted } from '../../stop-deadline.js';
import { apiFailureOf, isTransient } from './api-failure.js';
import { unauthorizedVerdict } from '../google/google-credentials.js';

/** The default of `sinks.bigquery.requestTimeoutMs`: far above any answer of BigQuery's API. */
export const DEFAULT_REQUEST_TIMEOUT_MS = 60_000;

/**
 * A request that got no answer within `requestTimeoutMs`. Its `code` is the one a socket timeout
 * has, so it is classified (and retried) as one: every BigQuery write carries a fixed job id or
 * table name, so a second try after a lost answer meets what the first did (409) instead of
 * doing it twice.
 */
export class BigQueryRequestTimeoutError extends Error {
  readonly code = 'ETIMEDOUT';
  constructor(operation: string, timeoutMs: number) {
    super(`BigQuery ${operation}: no answer within ${timeoutMs} ms (sinks.bigquery.requestTimeoutMs)`);
  }
}

/**
 * The client library takes neither a signal nor (its node-fetch 3 ignores `timeout`) a
 * deadline, so both are kept here: the request is no longer waited on, and runs on unobserved.
 */
async function withinRequestTimeout<T>(operation: string, call: () => Promise<T>, timeoutMs: number, signal: AbortSignal | undefined): Promise<T> {
  const timeout = new AbortController();
  const timer = setTimeout(() => timeout.abort(new BigQueryRequestTimeoutError(operation, timeoutMs)), timeoutMs);
  try {
    // The run's signal first: when both fired, the stop is the reason.
    return await untilAborted(untilAborted(call(), timeout.signal), signal);
  } finally {
    clearTimeout(timer);
  }
}

// BigQuery asks for exponential backoff on rateLimitExceeded/backendError; five tries spread over
// roughly half a minute ride out a short incident without holding a scheduled run for long.
export const DEFAULT_RETRY_LIMITS: RetryLimits = { maxAttempts: 5, baseDelayMs: 1_000, maxDelayMs: 16_000 };

export interface RetryContext {
  limits: RetryLimits;
  logger: Logger;
  /** Ends every wait: between tries, and for an answer (the client library takes no signal). */
  signal?: AbortSignal;
  /**
   * How long one request is waited for before it counts as lost (and is tried again, like a
   * reset connection). Default DEFAULT_REQUEST_TIMEOUT_MS.
   */
  requestTimeoutMs?: number;
  /** The run's retry budget, shared with the source, so the summary counts BigQuery's retries too. */
  budget?: RetryBudget;
}

/**
 * Runs a BigQuery API call with the one retry loop (src/retry.ts): transient failures (5xx,
 * rateLimitExceeded, backendError, resets) are tried again; the last error is rethrown unchanged
 * for the caller to classify. A request whose answer does not come is left behind when the signal
 * aborts (each request also has the client's timeout, `requestTimeoutMs`): a stop never waits on
 * the network.
 */
export function withRetry<T>(operation: string, call: () => Promise<T>, context: RetryContext): Promise<T> {
  const timeoutMs = context.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
  let refreshed = false;
  return withRetries(() => withinRequestTimeout(operation, call, timeoutMs, context.signal), {
    limits: context.limits,
    ...(context.signal ? { signal: context.signal } : {}),
    ...(context.budget ? { budget: context.budget } : {}),
    classify: (error) => {
      // 401 on a request with a token: once more with a fresh token, then the identity's failure.
      const unauthorized = unauthorizedVerdict(error, refreshed, `BigQuery ${operation}`);
      if (unauthorized !== undefined) {
        refreshed = true;
        return unauthorized;
      }
      return { retry: isTransient(apiFailureOf(error)) };
    },
    onRetry: ({ attempt, delayMs, reason }) =>
      context.logger.warn({ operation, attempt, delayMs, reason }, `BigQuery ${operation} failed transiently; retrying`),
  });
}
