import { setTimeout as sleep } from 'node:timers/promises';
import { messageOf } from './errors.js';

/**
 * The one retry loop of tilehouse, used by the source (token, pages) and by BigQuery alike. What
 * differs between them is only what counts as worth another try, which each passes as `classify`.
 */

/** How often and how long to try: attempt n waits up to base * 2^(n-1), at most maxDelayMs. */
export interface RetryLimits {
  /** Attempts per operation, the first included. */
  maxAttempts: number;
  baseDelayMs: number;
  maxDelayMs: number;
  random?: () => number;
}

/** Caps the retries of a whole run, so a sick service cannot keep a CronJob busy until its deadline. */
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
 * What one failure means. `error` is what the caller sees if this is the end (so the last error
 * names the real fault); `afterMs` is a wait the other side asked for (Retry-After); `requeue`: the
 * attempt was turned away for concurrency, not failed, and goes again without counting.
 */
export type RetryVerdict = { retry: false; error?: unknown } | { retry: true; error?: unknown; afterMs?: number; requeue?: boolean };

export interface RetryEvent {
  attempt: number;
  delayMs: number;
  reason: string;
}

export interface RetryOptions {
  classify: (error: unknown) => RetryVerdict;
  limits: RetryLimits;
  /** Shared by every operation of one run; spent by retries, not by requeues. */
  budget?: RetryBudget;
  signal?: AbortSignal;
  onRetry?: (event: RetryEvent) => void;
}

/**
 * Exponential backoff with full jitter: a uniformly random wait below the exponential ceiling,
 * which spreads the retries of many clients (tiles, pods) that failed at the same moment.
 */
export function backoffDelay(attempt: number, limits: Pick<RetryLimits, 'baseDelayMs' | 'maxDelayMs' | 'random'>): number {
  const ceiling = Math.min(limits.maxDelayMs, limits.baseDelayMs * 2 ** (attempt - 1));
  return Math.floor((limits.random ?? Math.random)() * ceiling);
}

/** Runs `operation` until it succeeds, `classify` says stop, or attempts or budget run out. */
export async function withRetries<T>(operation: (attempt: number) => Promise<T>, options: RetryOptions): Promise<T> {
  const wait = (ms: number) => sleep(ms, undefined, options.signal ? { signal: options.signal } : undefined);
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await operation(attempt);
    } catch (caught) {
      const verdict = options.classify(caught);
      const final = verdict.error ?? caught;
      if (!verdict.retry) throw final;
      if (verdict.requeue === true) {
        attempt -= 1;
        if (verdict.afterMs) await wait(verdict.afterMs);
        continue;
      }
      if (attempt >= options.limits.maxAttempts || (options.budget !== undefined && !options.budget.tryConsume())) throw final;
      // A wait the other side asked for wins when longer; a shorter one (Retry-After: 0 is common)
      // does not shorten ours, or every client it throttled would come back at once.
      const backoff = backoffDelay(attempt, options.limits);
      const delayMs = verdict.afterMs === undefined ? backoff : Math.max(verdict.afterMs, backoff);
      options.onRetry?.({ attempt, delayMs, reason: messageOf(final) });
      await wait(delayMs);
    }
  }
}
