import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import { apiFailureOf, isTransient } from './api-failure.js';

/** Exponential backoff for transient BigQuery failures, with a hard cap on attempts. */
export interface RetryPolicy {
  /** Tries in total, the first included. */
  attempts: number;
  initialDelayMs: number;
  maxDelayMs: number;
}

// BigQuery asks for exponential backoff on rateLimitExceeded/backendError; five tries spread over
// roughly half a minute ride out a short incident without holding a scheduled run for long.
export const DEFAULT_RETRY_POLICY: RetryPolicy = { attempts: 5, initialDelayMs: 1_000, maxDelayMs: 16_000 };

export interface RetryContext {
  policy: RetryPolicy;
  logger: Logger;
  signal?: AbortSignal;
}

/**
 * Runs `call` until it succeeds, fails with an error that is not transient, or the attempts run
 * out; the last error is rethrown unchanged for the caller to classify.
 */
export async function withRetry<T>(operation: string, call: () => Promise<T>, context: RetryContext): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await call();
    } catch (error) {
      const failure = apiFailureOf(error);
      if (attempt >= context.policy.attempts || !isTransient(failure)) throw error;
      const delayMs = backoffDelay(context.policy, attempt);
      context.logger.warn(
        { operation, attempt, delayMs, status: failure.status, reasons: failure.reasons },
        `BigQuery ${operation} failed transiently; retrying`,
      );
      await sleep(delayMs, undefined, context.signal ? { signal: context.signal } : undefined);
    }
  }
}

/** Half fixed, half random ("equal jitter"): spreads the retries of tiles hitting the same rate limit. */
export function backoffDelay(policy: RetryPolicy, attempt: number): number {
  const ceiling = Math.min(policy.maxDelayMs, policy.initialDelayMs * 2 ** (attempt - 1));
  return Math.round(ceiling / 2 + (Math.random() * ceiling) / 2);
}
