import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isoTimestampFormatter } from '../../src/sinks/timestamp-text.js';
import { MAX_EPOCH_MS, MIN_EPOCH_MS } from '../../src/value-types/civil-date.js';

describe('isoTimestampFormatter', () => {
  it('writes what toISOString writes for every instant in 0001..9999 (property)', () => {
    const format = isoTimestampFormatter();
    fc.assert(
      fc.property(fc.integer({ min: MIN_EPOCH_MS, max: MAX_EPOCH_MS }), (ms) => {
        expect(format(ms)).toBe(new Date(ms).toISOString());
      }),
      { numRuns: 2000 },
    );
  });

  it('stays right across day boundaries when it reuses the last day', () => {
    const format = isoTimestampFormatter();
    for (let ms = -3 * 86_400_000; ms <= 3 * 86_400_000; ms += 3_599_999) expect(format(ms)).toBe(new Date(ms).toISOString());
  });
});
