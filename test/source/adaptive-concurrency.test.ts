import { describe, expect, it } from 'vitest';
import { AdaptiveConcurrency } from '../../src/source/adaptive-concurrency.js';

/** One attempt through the gate, ending as `outcome`. */
async function attempt(limiter: AdaptiveConcurrency, outcome: 'succeeded' | 'throttled' | 'failed'): Promise<void> {
  limiter.release(await limiter.acquire(), outcome);
}

describe('AdaptiveConcurrency', () => {
  it('halves the limit on a throttle and never goes below 1', async () => {
    const limiter = new AdaptiveConcurrency(8);
    await attempt(limiter, 'throttled');
    expect(limiter.limit).toBe(4);
    for (let i = 0; i < 10; i += 1) await attempt(limiter, 'throttled');
    expect(limiter.limit).toBe(1);
  });

  it('cuts once for a burst of throttles from requests sent under the same limit', async () => {
    const limiter = new AdaptiveConcurrency(8);
    const permits = await Promise.all(Array.from({ length: 8 }, () => limiter.acquire()));
    for (const permit of permits) limiter.release(permit, 'throttled');
    expect(limiter.limit).toBe(4);
  });

  it('grows by about one per round of successes, up to the maximum; a plain failure does not move it', async () => {
    const limiter = new AdaptiveConcurrency(8);
    await attempt(limiter, 'throttled');
    expect(limiter.limit).toBe(4);
    await attempt(limiter, 'failed');
    expect(limiter.limit).toBe(4);
    for (let i = 0; i < 4; i += 1) await attempt(limiter, 'succeeded');
    expect(limiter.limit).toBe(5);
    for (let i = 0; i < 100; i += 1) await attempt(limiter, 'succeeded');
    expect(limiter.limit).toBe(8);
  });

  it('refuses a limit that is not a positive integer', () => {
    expect(() => new AdaptiveConcurrency(0)).toThrow(RangeError);
  });
});
