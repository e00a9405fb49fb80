import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { shareOf } from '../../../src/pipeline/windows/shard-windows.js';

describe('shareOf', () => {
  it('gives every window to exactly one worker, in order, for any window count and worker count', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 400 }), fc.integer({ min: 1, max: 64 }), (windows, count) => {
        const items = Array.from({ length: windows }, (_, index) => index);
        const shares = Array.from({ length: count }, (_, index) => shareOf(items, { index, count }));
        expect(shares.flat()).toEqual(items);
        const sizes = shares.map((share) => share.length);
        expect(Math.max(...sizes) - Math.min(...sizes)).toBeLessThanOrEqual(1);
        // Contiguous: each share is one range of windows.
        for (const share of shares) if (share.length > 0) expect(share.at(-1)! - share[0]!).toBe(share.length - 1);
      }),
    );
  });

  it('refuses an index outside the count and a count below one', () => {
    expect(() => shareOf([1, 2], { index: 2, count: 2 })).toThrow(RangeError);
    expect(() => shareOf([1, 2], { index: 0, count: 0 })).toThrow(RangeError);
    expect(() => shareOf([1, 2], { index: -1, count: 2 })).toThrow(RangeError);
  });
});
