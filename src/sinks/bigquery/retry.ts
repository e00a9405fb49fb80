import type { Logger } from 'pino';
import { withRetries, type RetryLimits } from '../../retry.js';
import { apiFailureOf, isTransient } from './api-failure.js';

// BigQuery asks for exponential backoff on rateLimitExceeded/backendError; five tries spread over
// roughly half a minute ride out a short incident without holding a scheduled run for long.
export const DEFAULT_RETRY_LIMITS: RetryLimits = { maxAttempts: 5, baseDelayMs: 1_000, maxDelayMs: 16_000 };

export interface RetryContext {
  limits: RetryLimits;
  logger: Logger;
  signal?: AbortSignal;
}

/**
 * Runs a BigQuery API call with the one retry loop (src/retry.ts): transient failures (5xx,
 * rateLimitExceeded, backendError, resets) are tried again; the last error is rethrown unchanged
 * for the caller to classify.
 */
export function withRetry<T>(operation: string, call: () => Promise<T>, context: RetryContext): Promise<T> {
  return withRetries(call, {
    limits: context.limits,
    ...(context.signal ? { signal: context.signal } : {}),
    classify: (error) => ({ retry: isTransient(apiFailureOf(error)) }),
    onRetry: ({ attempt, delayMs, reason }) => context.logger.warn({ operation, attempt, delayMs, reason }, `BigQuery ${operation} failed transiently; retrying`),
  });
}
