import { withRetries, type RetryBudget, type RetryEvent, type RetryLimits } from '../retry.js';

/**
 * The retry policy of every call to the source (token and export pages); the loop itself is the
 * one in src/retry.ts.
 *
 * Not undici's RetryAgent: it cannot share a per-run retry budget across requests, and retries
 * below the layer that decides whether a 200 with a truncated body is worth another try.
 * maxDelayMs caps any backoff of ours; a server's Retry-After above it (or above one second,
 * whichever is longer: see retryAfterCeiling) ends the request, never waited out capped.
 */
export interface RetryPolicy extends RetryLimits {
  /** Shared by every request of one tile run. */
  budget: RetryBudget;
}

/**
 * Thrown by an operation to ask for another attempt. `final` is what the caller sees once
 * attempts or budget run out, so the last error names the real fault (status, page, message).
 * `requeue`: the attempt was turned away for concurrency, not failed; it is sent again (after
 * Retry-After, if any) without counting as an attempt or against the budget.
 */
export class RetryableFailure extends Error {
  readonly requeue: boolean;

  constructor(
    readonly final: Error,
    readonly retryAfterMs?: number,
    options: { requeue?: boolean } = {},
  ) {
    super(final.message);
    this.requeue = options.requeue ?? false;
  }
}

/**
 * The longest Retry-After a request waits: the policy's maxDelayMs, but never below one second.
 * Retry-After has one-second resolution (whole delay-seconds, HTTP-dates to the second), so a
 * server cannot ask for less than "1" except by saying "0"; a ceiling below that would refuse
 * the shortest wait it can ask for.
 */
export function retryAfterCeiling(policy: Pick<RetryPolicy, 'maxDelayMs'>): number {
  return Math.max(policy.maxDelayMs, 1000);
}

/**
 * Parses a Retry-After header: delay-seconds or an HTTP-date (RFC 9110 §10.2.3).
 * Returns milliseconds from `now`, or undefined when absent or unparseable.
 */
export function parseRetryAfter(value: string | string[] | undefined, now: number = Date.now()): number | undefined {
  const header = Array.isArray(value) ? value[0] : value;
  if (header === undefined) return undefined;
  const trimmed = header.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000;
  const date = Date.parse(trimmed);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, date - now);
}

/**
 * Runs a source call with the source's policy: an operation asks for another attempt by throwing
 * RetryableFailure; anything else ends it at once.
 */
export function withSourceRetries<T>(
  operation: (attempt: number) => Promise<T>,
  policy: RetryPolicy,
  options: { signal?: AbortSignal; onRetry?: (event: RetryEvent) => void } = {},
): Promise<T> {
  return withRetries(operation, {
    limits: policy,
    budget: policy.budget,
    ...(options.signal ? { signal: options.signal } : {}),
    ...(options.onRetry ? { onRetry: options.onRetry } : {}),
    classify: (error) => {
      if (!(error instanceof RetryableFailure)) return { retry: false };
      // Longer than we wait: classifyAnswer refuses such answers with the header quoted; this is
      // the backstop. Waiting it out capped would be turned away again.
      if (error.retryAfterMs !== undefined && error.retryAfterMs > retryAfterCeiling(policy)) return { retry: false, error: error.final };
      return { retry: true, error: error.final, requeue: error.requeue, ...(error.retryAfterMs === undefined ? {} : { afterMs: error.retryAfterMs }) };
    },
  });
}
