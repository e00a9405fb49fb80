import { describe, expect, it } from 'vitest';
import { compileFilter } from './filters.js';
import { relativeWindow } from './relative-window.js';

const NOW = Date.parse('2026-07-01T00:00:00Z');
const DAY = 86_400_000;

describe('compileFilter', () => {
  describe('in', () => {
    it('matches text exactly and case-sensitively', () => {
      const test = compileFilter({ operator: 'in', values: ['resolved', 'mitigated'] }, 'text', NOW);
      expect([test('resolved'), test('mitigated'), test('Resolved'), test('resolved '), test(null)]).toEqual([true, true, false, false, false]);
    });

    it('compares numbers numerically', () => {
      const test = compileFilter({ operator: 'in', values: ['1', '2.50'] }, 'number', NOW);
      expect([test(1), test(2.5), test(3), test(null)]).toEqual([true, true, false, false]);
    });

    it('reads datetime operands as epoch ms or ISO 8601', () => {
      const test = compileFilter({ operator: 'in', values: ['2026-06-30T00:00:00Z', String(NOW)] }, 'datetime', NOW);
      expect([test(NOW - DAY), test(NOW), test(NOW + 1)]).toEqual([true, true, false]);
    });

    it('matches nothing with no operands', () => {
      expect(compileFilter({ operator: 'in', values: [] }, 'text', NOW)('x')).toBe(false);
    });
  });

  describe('ct', () => {
    it('matches a substring of any operand, ignoring case', () => {
      const test = compileFilter({ operator: 'ct', values: ['DATABASE', 'cdn'] }, 'text', NOW);
      expect([test('Primary database failing'), test('CDN edge'), test('Search'), test(null)]).toEqual([true, true, false, false]);
    });

    it('searches numbers as their decimal text', () => {
      expect(compileFilter({ operator: 'ct', values: ['23'] }, 'number', NOW)(1234)).toBe(true);
    });
  });

  describe('gt', () => {
    it('is strictly greater for numbers', () => {
      const test = compileFilter({ operator: 'gt', values: ['2'] }, 'number', NOW);
      expect([test(3), test(2), test(1), test(null)]).toEqual([true, false, false, false]);
    });

    it('is strictly later for datetimes', () => {
      const test = compileFilter({ operator: 'gt', values: ['2026-06-01T00:00:00Z'] }, 'datetime', NOW);
      expect([test(Date.parse('2026-06-01T00:00:00.001Z')), test(Date.parse('2026-06-01T00:00:00Z'))]).toEqual([true, false]);
    });

    it('compares text by code units', () => {
      const test = compileFilter({ operator: 'gt', values: ['SEV1'] }, 'text', NOW);
      expect([test('SEV2'), test('SEV1'), test('SEV0')]).toEqual([true, false, false]);
    });

    it.each([[[]], [['1', '2']], [['abc']]])('refuses operands %j for a number', (values) => {
      expect(() => compileFilter({ operator: 'gt', values }, 'number', NOW)).toThrow(/gt/);
    });
  });

  describe('rw', () => {
    it('includes the start of the window and excludes its end', () => {
      const test = compileFilter({ operator: 'rw', values: ['7', 'days', '1', 'days'] }, 'datetime', NOW);
      const start = NOW - 7 * DAY;
      const end = NOW - DAY;
      expect([test(start - 1), test(start), test(end - 1), test(end), test(null)]).toEqual([false, true, true, false, false]);
    });

    it('accepts the two bounds in either order', () => {
      const a = compileFilter({ operator: 'rw', values: ['0', 'days', '30', 'days'] }, 'datetime', NOW);
      const b = compileFilter({ operator: 'rw', values: ['30', 'days', '0', 'days'] }, 'datetime', NOW);
      for (const t of [NOW - 31 * DAY, NOW - 30 * DAY, NOW - DAY, NOW - 1, NOW]) expect(a(t)).toBe(b(t));
    });

    it('applies only to datetimes', () => {
      expect(() => compileFilter({ operator: 'rw', values: ['1', 'days', '0', 'days'] }, 'number', NOW)).toThrow(
        'rw (relative window) applies to datetime values, not number',
      );
    });
  });

  it('refuses an unknown operator, naming the known ones', () => {
    expect(() => compileFilter({ operator: 'eq', values: ['1'] }, 'number', NOW)).toThrow("unsupported filter operator 'eq'; the sandbox knows in, ct, gt, rw");
  });
});

describe('relativeWindow', () => {
  it('measures weeks, hours and minutes back from now', () => {
    expect(relativeWindow(['2', 'weeks', '0', 'days'], NOW)).toEqual({ start: NOW - 14 * DAY, end: NOW });
    expect(relativeWindow(['90', 'minutes', '1', 'hour'], NOW)).toEqual({ start: NOW - 90 * 60_000, end: NOW - 3_600_000 });
  });

  it('moves months on the calendar, clamping to the end of a shorter month', () => {
    const march31 = Date.parse('2026-03-31T12:00:00Z');
    expect(new Date(relativeWindow(['1', 'months', '0', 'months'], march31).start).toISOString()).toBe('2026-02-28T12:00:00.000Z');
    expect(new Date(relativeWindow(['12', 'months', '0', 'days'], NOW).start).toISOString()).toBe('2025-07-01T00:00:00.000Z');
    expect(new Date(relativeWindow(['1', 'year', '0', 'days'], Date.parse('2028-02-29T00:00:00Z')).start).toISOString()).toBe('2027-02-28T00:00:00.000Z');
  });

  it.each([
    [['30', 'days'], 'rw needs 4 operands'],
    [['-1', 'days', '0', 'days'], "rw amount must be a whole number, got '-1'"],
    [['1.5', 'days', '0', 'days'], 'whole number'],
    [['1', 'fortnights', '0', 'days'], "got 'fortnights'"],
  ])('refuses %j', (values, message) => {
    expect(() => relativeWindow(values, NOW)).toThrow(message);
  });
});
