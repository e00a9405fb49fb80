import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  dayNumberOfCalendarDate,
  daysFromCivil,
  daysInMonth,
  formatCivilDate,
  isCalendarDate,
  isCivilDate,
  MAX_DAY,
  MIN_DAY,
  MS_PER_DAY,
} from '../../src/value-types/civil-date.js';

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

describe('isCalendarDate (the one rule of a calendar date)', () => {
  it.each([
    ['2024-02-29', 'a leap day'],
    ['2000-02-29', 'a leap day of a year divisible by 400'],
    ['0001-01-01', 'the first day BigQuery holds'],
    ['0050-06-15', 'a year below 100 (Date.UTC would read it as 1950)'],
    ['9999-12-31', 'the last day BigQuery holds'],
    ['2026-12-31', 'the last day of a year'],
  ])('accepts %s: %s', (text) => {
    expect(isCalendarDate(text)).toBe(true);
  });

  it.each([
    ['2026-02-30', 'a day February does not have'],
    ['2023-02-29', 'a leap day of a common year'],
    ['1900-02-29', 'a leap day of a century not divisible by 400'],
    ['0000-01-01', 'year zero'],
    ['2026-2-3', 'one-digit month and day'],
    ['2026-13-01', 'month 13'],
    ['2026-00-10', 'month 0'],
    ['2026-01-00', 'day 0'],
    ['2026-04-31', 'the 31st of a 30-day month'],
    ['10000-01-01', 'a five-digit year'],
    ['+002026-01-01', 'an expanded year'],
    [' 2026-01-01', 'a leading space'],
    ['2026-01-01\n', 'a trailing newline'],
    ['2026-01-01T00:00:00Z', 'a date-time'],
    ['２０２６-01-01', 'non-ASCII digits'],
    ['', 'nothing'],
  ])('refuses %j: %s', (text) => {
    expect(isCalendarDate(text)).toBe(false);
    expect(dayNumberOfCalendarDate(text)).toBeUndefined();
  });

  it('accepts exactly the days formatCivilDate writes in 0001..9999, each with its own day number (property)', () => {
    fc.assert(
      fc.property(fc.integer({ min: MIN_DAY, max: MAX_DAY }), (days) => {
        expect(dayNumberOfCalendarDate(formatCivilDate(days))).toBe(days);
      }),
    );
    expect(isCalendarDate(formatCivilDate(MIN_DAY - 1))).toBe(false);
  });

  it('agrees with Date on any YYYY-MM-DD text (property)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 9999 }), fc.integer({ min: 0, max: 99 }), fc.integer({ min: 0, max: 99 }), (year, month, day) => {
        const text = `${String(year).padStart(4, '0')}-${String(month).padStart(2, '0')}-${String(day).padStart(2, '0')}`;
        const reference = new Date(0);
        reference.setUTCFullYear(year, month - 1, day);
        const real = year >= 1 && reference.toISOString().slice(0, 10) === text;
        expect(isCalendarDate(text)).toBe(real);
        expect(isCivilDate(year, month, day)).toBe(real);
      }),
    );
  });
});
