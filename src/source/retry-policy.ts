import { setTimeout as sleep } from 'node:timers/promises';

/**
 * One retry policy for every call to the source (token and export pages).
 *
 * Not undici's RetryAgent: it cannot share a per-run retry budget across requests, does not use
 * full jitter, and retries below the layer that decides whether a 200 with a truncated body is
 * worth another try. This module is the whole policy, in one place.
 */
export interface RetryPolicy {
  /** Attempts per request, including the first. */
  maxAttempts: number;
  /** Base of the exponential backoff: attempt n waits up to base * 2^(n-1), with full jitter. */
  baseDelayMs: number;
  /**
   * Cap for any backoff of ours. A server's Retry-After above it (or above one second, whichever
   * is longer: see retryAfterCeiling) ends the request; it is never waited out capped.
   */
  maxDelayMs: number;
  /** Shared by every request of one tile run. */
  budget: RetryBudget;
  random?: () => number;
}

/** Caps the retries of a whole run, so a sick source cannot keep a CronJob busy until its deadline. */
export class RetryBudget {
  private spent = 0;
  constructor(readonly limit: number) {}
  get used(): number {
    return this.spent;
  }
  tryConsume(): boolean {
    if (this.spent >= this.limit) return false;
    this.spent += 1;
    return true;
  }
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

export interface RetryEvent {
  attempt: number;
  delayMs: number;
  reason: string;
}

export function backoffDelay(attempt: number, policy: Pick<RetryPolicy, 'baseDelayMs' | 'maxDelayMs' | 'random'>): number {
  const ceiling = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (attempt - 1));
  return Math.floor((policy.random ?? Math.random)() * ceiling);
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

export async function withRetries<T>(
  operation: (attempt: number) => Promise<T>,
  policy: RetryPolicy,
  options: { signal?: AbortSignal; onRetry?: (event: RetryEvent) => void } = {},
): Promise<T> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await operation(attempt);
    } catch (error) {
      if (!(error instanceof RetryableFailure)) throw error;
      // Longer than we wait: the caller (classifyAnswer) refuses such answers with the header
      // quoted; this is the backstop. Waiting it out capped would be turned away again.
      if (error.retryAfterMs !== undefined && error.retryAfterMs > retryAfterCeiling(policy)) throw error.final;
      if (error.requeue) {
        attempt -= 1;
        if (error.retryAfterMs) await sleep(error.retryAfterMs, undefined, { signal: options.signal });
        continue;
      }
      if (attempt >= policy.maxAttempts || !policy.budget.tryConsume()) throw error.final;
      // A server's Retry-After wins over our own backoff when longer; a shorter one (Retry-After:
      // 0 is common) does not shorten it, or every client it throttled would come back at once.
      const backoff = backoffDelay(attempt, policy);
      const delayMs = error.retryAfterMs === undefined ? backoff : Math.max(error.retryAfterMs, backoff);
      options.onRetry?.({ attempt, delayMs, reason: error.final.message });
      await sleep(delayMs, undefined, { signal: options.signal });
    }
  }
}
