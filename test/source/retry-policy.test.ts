import { describe, expect, it } from 'vitest';
import { backoffDelay, RetryBudget } from '../../src/retry.js';
import { parseRetryAfter, retryAfterCeiling, RetryableFailure, withSourceRetries, type RetryPolicy } from '../../src/source/retry-policy.js';

const policy = (overrides: Partial<RetryPolicy> = {}): RetryPolicy => ({
  maxAttempts: 4,
  baseDelayMs: 1,
  maxDelayMs: 5,
  budget: new RetryBudget(100),
  random: () => 0.5,
  ...overrides,
});

describe('parseRetryAfter', () => {
  it('reads delay-seconds', () => {
    expect(parseRetryAfter('3')).toBe(3000);
    expect(parseRetryAfter(['0'])).toBe(0);
  });
  it('reads an HTTP-date relative to now', () => {
    const now = Date.parse('2026-11-21T10:00:00Z');
    expect(parseRetryAfter('Sat, 21 Nov 2026 10:00:07 GMT', now)).toBe(7000);
    expect(parseRetryAfter('Sat, 21 Nov 2026 09:00:00 GMT', now)).toBe(0);
  });
  it('ignores absent or garbage values', () => {
    expect(parseRetryAfter(undefined)).toBeUndefined();
    expect(parseRetryAfter('soon')).toBeUndefined();
  });
});

describe('backoffDelay', () => {
  it('grows exponentially with full jitter and respects the cap', () => {
    const p = { baseDelayMs: 100, maxDelayMs: 1000 };
    expect(backoffDelay(1, { ...p, random: () => 0.999 })).toBe(99);
    expect(backoffDelay(3, { ...p, random: () => 0.999 })).toBe(399);
    expect(backoffDelay(10, { ...p, random: () => 0.999 })).toBe(999);
    expect(backoffDelay(3, { ...p, random: () => 0 })).toBe(0);
  });
});

describe('withSourceRetries', () => {
  it('retries a RetryableFailure until the operation succeeds', async () => {
    let calls = 0;
    const result = await withSourceRetries(async () => {
      calls += 1;
      if (calls < 3) throw new RetryableFailure(new Error('503'));
      return 'done';
    }, policy());
    expect(result).toBe('done');
    expect(calls).toBe(3);
  });

  it('throws the final error after maxAttempts', async () => {
    let calls = 0;
    const final = new Error('HTTP 503 on page 2');
    await expect(
      withSourceRetries(async () => {
        calls += 1;
        throw new RetryableFailure(final);
      }, policy()),
    ).rejects.toBe(final);
    expect(calls).toBe(4);
  });

  it('does not retry other errors', async () => {
    let calls = 0;
    await expect(
      withSourceRetries(async () => {
        calls += 1;
        throw new Error('400 invalid id');
      }, policy()),
    ).rejects.toThrow('400 invalid id');
    expect(calls).toBe(1);
  });

  it('stops when the shared budget is spent, across operations', async () => {
    const budget = new RetryBudget(2);
    let calls = 0;
    const failing = () =>
      withSourceRetries(async () => {
        calls += 1;
        throw new RetryableFailure(new Error('429'));
      }, policy({ budget }));
    await expect(failing()).rejects.toThrow('429');
    await expect(failing()).rejects.toThrow('429');
    expect(calls).toBe(4); // 1 + 2 retries, then 1 with no budget left
    expect(budget.used).toBe(2);
  });

  it('waits Retry-After when it is longer than its own backoff', async () => {
    const delays: number[] = [];
    let calls = 0;
    await withSourceRetries(
      async () => {
        calls += 1;
        if (calls === 1) throw new RetryableFailure(new Error('429'), 15);
        return 'ok';
      },
      policy({ baseDelayMs: 10, maxDelayMs: 20 }),
      { onRetry: (event) => delays.push(event.delayMs) },
    );
    expect(delays).toEqual([15]); // backoff would be 0.5 * 10 = 5
  });

  it('waits its own backoff, not 0, after Retry-After: 0', async () => {
    const delays: number[] = [];
    let calls = 0;
    await withSourceRetries(
      async () => {
        calls += 1;
        if (calls <= 2) throw new RetryableFailure(new Error('429'), 0);
        return 'ok';
      },
      policy({ baseDelayMs: 10, maxDelayMs: 20 }),
      { onRetry: (event) => delays.push(event.delayMs) },
    );
    expect(delays).toEqual([5, 10]); // 0.5 * 10, then 0.5 * 20
  });

  it('refuses a Retry-After beyond the ceiling at once instead of waiting it out capped', async () => {
    const budget = new RetryBudget(10);
    const final = new Error('HTTP 429 on page 2');
    const retries: number[] = [];
    let calls = 0;
    await expect(
      withSourceRetries(
        async () => {
          calls += 1;
          throw new RetryableFailure(final, 60_000);
        },
        policy({ maxDelayMs: 20, budget }),
        { onRetry: (event) => retries.push(event.delayMs) },
      ),
    ).rejects.toBe(final);
    expect(calls).toBe(1);
    expect(retries).toEqual([]);
    expect(budget.used).toBe(0);
  });

  it('waits a Retry-After under one second in full although maxDelayMs is shorter: the header cannot say less', async () => {
    expect(retryAfterCeiling({ maxDelayMs: 50 })).toBe(1000);
    expect(retryAfterCeiling({ maxDelayMs: 30_000 })).toBe(30_000);
    const delays: number[] = [];
    let calls = 0;
    await withSourceRetries(
      async () => {
        calls += 1;
        if (calls === 1) throw new RetryableFailure(new Error('429'), 80);
        return 'ok';
      },
      policy({ maxDelayMs: 20 }),
      { onRetry: (event) => delays.push(event.delayMs) },
    );
    expect(delays).toEqual([80]);
  });

  it('refuses a requeue whose Retry-After is beyond maxDelayMs too', async () => {
    const final = new Error('too many at once');
    await expect(withSourceRetries(async () => Promise.reject(new RetryableFailure(final, 5_000, { requeue: true })), policy({ maxDelayMs: 20 }))).rejects.toBe(
      final,
    );
  });
});
