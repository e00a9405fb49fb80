import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { daysFromCivil, daysInMonth, formatCivilDate, MS_PER_DAY } from '../../../src/transform/values/civil-date.js';

describe('civil date arithmetic', () => {
  it('agrees with Date for every day in 0001..9999 (property)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 9999 }), fc.integer({ min: 1, max: 12 }), fc.integer({ min: 1, max: 31 }), (year, month, rawDay) => {
        const day = Math.min(rawDay, daysInMonth(year, month));
        const reference = new Date(0);
        reference.setUTCFullYear(year, month - 1, day);
        const days = daysFromCivil(year, month, day);
        expect(days * MS_PER_DAY).toBe(reference.getTime());
        expect(formatCivilDate(days)).toBe(reference.toISOString().slice(0, 10));
      }),
    );
  });

  it('knows February in leap years', () => {
    expect([daysInMonth(2024, 2), daysInMonth(2023, 2), daysInMonth(1900, 2), daysInMonth(2000, 2)]).toEqual([29, 28, 28, 29]);
  });
});
