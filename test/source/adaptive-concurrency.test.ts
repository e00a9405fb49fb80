import { describe, expect, it } from 'vitest';
import { AdaptiveConcurrency } from '../../src/source/adaptive-concurrency.js';

describe('AdaptiveConcurrency', () => {
  it('halves the limit on a throttle and never goes below 1', () => {
    const limiter = new AdaptiveConcurrency(8);
    limiter.onThrottled(limiter.begin());
    expect(limiter.limit).toBe(4);
    for (let i = 0; i < 10; i += 1) limiter.onThrottled(limiter.begin());
    expect(limiter.limit).toBe(1);
    expect(limiter.minimum).toBe(1);
  });

  it('cuts once for a burst of throttles from requests sent under the same limit', () => {
    const limiter = new AdaptiveConcurrency(8);
    const epochs = Array.from({ length: 8 }, () => limiter.begin());
    for (const epoch of epochs) limiter.onThrottled(epoch);
    expect(limiter.limit).toBe(4);
  });

  it('grows by about one per round of successes, up to the maximum', () => {
    const limiter = new AdaptiveConcurrency(8);
    limiter.onThrottled(limiter.begin());
    expect(limiter.limit).toBe(4);
    for (let i = 0; i < 4; i += 1) limiter.onSuccess();
    expect(limiter.limit).toBe(5);
    for (let i = 0; i < 100; i += 1) limiter.onSuccess();
    expect(limiter.limit).toBe(8);
  });

  it('refuses a limit that is not a positive integer', () => {
    expect(() => new AdaptiveConcurrency(0)).toThrow(RangeError);
  });
});
